"""``python -m slinky_harness.apps.conformance``: see :mod:`slinky_harness.apps.conformance.cli`."""

from __future__ import annotations

from slinky_harness.apps.conformance.cli import entry

raise SystemExit(entry())
