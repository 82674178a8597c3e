"""Lint tier: one summary line on which charts still keep a hand-written values schema."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slinky_harness.helm import charts
from slinky_schemagen.chart import is_generated

if TYPE_CHECKING:
    import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    every = charts.discover_charts()
    generated = [c.name for c in every if is_generated(c.path)]
    hand = [c.name for c in every if not is_generated(c.path)]
    terminalreporter.write_line(
        f"values.schema.json generated (slinky_schemagen, drift-checked): {', '.join(generated) or 'none'}; "
        f"hand-written: {', '.join(hand) or 'none'}"
    )
