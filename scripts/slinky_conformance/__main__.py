"""``python -m slinky_conformance``: see :mod:`slinky_conformance.cli`."""

from __future__ import annotations

from slinky_conformance.cli import entry

raise SystemExit(entry())
