"""Render tier: the summary prints each upstream chart's parity report, as measured."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.worker_summary import records

if TYPE_CHECKING:
    import pytest

_PARITY: list[list[str]] = records("render.parity")  # filled by test_parity


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _PARITY:
        return
    terminalreporter.section("parity: upstream Slinky v1.2.1's cases, rendered by both")
    for index, (_, report) in enumerate(sorted(_PARITY)):
        lines = report.rstrip().splitlines()
        for line in lines if index == 0 else lines[1:]:  # the table's header once
            terminalreporter.write_line(line)
