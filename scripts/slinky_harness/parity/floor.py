"""The ratchet: per upstream chart, the least number of cases ours accepts and renders equal.

:data:`FLOOR_FILE` holds the counts; they only ever go up (the render tier and
``python -m slinky_harness.apps.parity --min-accepted-file`` fail below them).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from slinky_harness.parity.source import CHARTS, UpstreamError, load_yaml

if TYPE_CHECKING:
    from collections.abc import Mapping

    from slinky_harness.parity.measure import ChartReport

FLOOR_FILE = Path(__file__).with_name("floor.yaml")
"""The floor of the render tier's parity test (see :func:`load_floor`)."""
FLOOR_KEYS = ("accepted", "equal")


def load_floor(path: Path = FLOOR_FILE) -> dict[str, dict[str, int]]:
    """The floor file: per upstream chart, the least ``accepted`` and ``equal`` counts."""
    raw = load_yaml(path)
    if not isinstance(raw, dict):
        raise UpstreamError(f"{path}: expected a mapping of upstream chart names to counts")
    floor: dict[str, dict[str, int]] = {}
    for chart, counts in raw.items():
        if chart not in CHARTS:
            raise UpstreamError(f"{path}: {chart!r} is not an upstream chart ({', '.join(CHARTS)})")
        if not isinstance(counts, dict) or set(counts) != set(FLOOR_KEYS):
            raise UpstreamError(f"{path}: {chart} must give exactly {' and '.join(FLOOR_KEYS)}")
        for key, value in counts.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise UpstreamError(f"{path}: {chart}.{key} must be a non-negative integer")
        floor[str(chart)] = {str(k): int(v) for k, v in counts.items()}
    return floor


def below_floor(report: ChartReport, floor: Mapping[str, Mapping[str, int]]) -> list[str]:
    """What of ``report`` fell below its floor (nothing when the chart has none)."""
    counts = report.counts()
    return [
        f"{report.chart}: {key} {counts[key]} < floor {least}"
        for key, least in floor.get(report.chart, {}).items()
        if counts[key] < least
    ]
