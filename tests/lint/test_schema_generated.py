"""Generated values schemas are current, and only the known charts keep a hand-written one.

A chart opts in to ``python -m slinky_schemagen`` with ``values.schema.extra.yaml`` (the
hand-written part of its schema). The charts whose values layout is still to be rewritten to
upstream's keep their hand-written ``values.schema.json`` until then (issue 15); the lint tier
prints one line naming them (``tests/lint/conftest.py``).
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import pytest

from slinky_harness.helm import charts
from slinky_schemagen import main as schemagen
from slinky_schemagen.chart import EXTRA_FILE, SCHEMA_FILE, is_generated

if TYPE_CHECKING:
    from pathlib import Path

CHARTS = charts.discover_charts()
GENERATED = [chart for chart in CHARTS if is_generated(chart.path)]
HAND_WRITTEN: frozenset[str] = frozenset()
"""Charts allowed a hand-written schema: none (a new chart opts in from its first version)."""


@pytest.mark.parametrize("chart", GENERATED, ids=lambda c: c.name)
def test_generated_schema_is_current(chart: charts.Chart, tmp_path: Path) -> None:
    """Regenerating into a copy of the chart reproduces the committed values.schema.json."""
    copy = tmp_path / chart.path.name
    shutil.copytree(chart.path, copy)
    assert schemagen([str(copy)]) == 0, f"the generator failed on {chart.path}"
    fresh = (copy / SCHEMA_FILE).read_text()
    committed = (chart.path / SCHEMA_FILE).read_text()
    assert fresh == committed, (
        f"charts/{chart.name}/{SCHEMA_FILE} is stale: run `python -m slinky_schemagen "
        f"charts/{chart.name}` (or `nox -s docs`) and commit the result"
    )


@pytest.mark.parametrize("chart", GENERATED, ids=lambda c: c.name)
def test_annotations_stay_out_of_the_readme(chart: charts.Chart) -> None:
    """helm-docs prints no `# @schema` annotation (the README itself is checked by test_generated)."""
    assert "@schema" not in (chart.path / "README.md").read_text()


def test_only_the_known_charts_keep_a_hand_written_schema() -> None:
    hand_written = {chart.name for chart in CHARTS if not is_generated(chart.path)}
    assert GENERATED, f"no chart has {EXTRA_FILE}: the generator is checked on nothing"
    assert hand_written <= HAND_WRITTEN, (
        f"{sorted(hand_written - HAND_WRITTEN)} must generate {SCHEMA_FILE}: add {EXTRA_FILE} "
        "and `# @schema` annotations (CONTRIBUTING.md), then run `python -m slinky_schemagen`"
    )
