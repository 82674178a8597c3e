"""A chart that changed since the merge base with the target branch has a higher version."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from slinky_harness.core.paths import REPO_ROOT
from slinky_harness.helm import charts

CHARTS = charts.discover_charts()
TARGET = "origin/main"


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )


def _semver(text: str) -> tuple[int, int, int, bool]:
    core, _, pre = text.partition("-")
    major, minor, patch = (int(x) for x in core.split("."))
    return major, minor, patch, not pre  # a release sorts after its pre-releases


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_version_bumped_when_chart_changed(chart: charts.Chart) -> None:
    """ct's version-increment rule, against the merge base (a fresh clone of main has nothing to compare)."""
    base = _git("merge-base", "HEAD", TARGET)
    if base.returncode != 0:
        pytest.skip(f"no {TARGET} to compare with: the version-bump rule does not apply")
    commit = base.stdout.strip()
    rel = chart.path.relative_to(REPO_ROOT)
    if _git("diff", "--quiet", commit, "--", str(rel)).returncode == 0:
        return  # unchanged since the merge base
    old = _git("show", f"{commit}:{rel}/Chart.yaml")
    if old.returncode != 0:
        return  # a new chart
    old_version = str(yaml.safe_load(old.stdout)["version"])
    assert _semver(chart.version) > _semver(old_version), (
        f"{rel} changed since {commit[:10]} but its version is still {chart.version} (was {old_version}): "
        "bump it in Chart.yaml and add a CHANGELOG entry"
    )
