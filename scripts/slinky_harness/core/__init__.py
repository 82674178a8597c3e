"""Mechanisms every part of the harness shares (one implementation each)."""
