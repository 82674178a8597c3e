"""Data package: the compact API models (``<version>.yaml``) read by :mod:`..dsl`."""
