"""Generated files are current: chart READMEs (helm-docs) and the slinky.slurm.net CRDs."""

from __future__ import annotations

import shutil
import subprocess
from typing import TYPE_CHECKING

import pytest

from slinky_crdgen import cli as crdgen
from slinky_harness.build import toolchain
from slinky_harness.helm import charts

if TYPE_CHECKING:
    from pathlib import Path

CHARTS = charts.discover_charts()


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_readme_is_generated_from_values(chart: charts.Chart, tmp_path: Path) -> None:
    """helm-docs on a copy of the chart reproduces the committed README.md byte for byte."""
    copy = tmp_path / chart.path.name
    shutil.copytree(chart.path, copy)
    proc = subprocess.run(
        [
            str(toolchain.ensure("helm-docs")),
            "--chart-search-root",
            str(copy),
            "--log-level",
            "warning",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    fresh = (copy / "README.md").read_text()
    committed = (chart.path / "README.md").read_text()
    assert fresh == committed, (
        f"{chart.path}/README.md is stale: run `nox -s docs` (helm-docs) and commit the result"
    )


def test_crds_are_current() -> None:
    """The committed CRDs are what the generator makes from the Slinky API model."""
    assert crdgen.main(["--check"]) == 0, "run `python -m slinky_crdgen` and commit the CRDs"
