"""The example umbrella chart (``examples/umbrella``), built in a temporary copy.

The umbrella depends on the suite's charts by ``file://../../charts/<name>``. ``helm dependency
build`` writes ``charts/*.tgz`` and ``Chart.lock`` next to ``Chart.yaml``; the harness never does
that in the checkout (concurrent test runs would race, and the archives must not be committed).
:func:`build` copies the umbrella to ``<dest>/examples/umbrella``, links ``<dest>/charts`` to the
repository's ``charts/`` so the relative ``file://`` paths resolve unchanged, and runs
``helm dependency build`` there. Users who build in place get the same files, which
``.gitignore`` keeps out of commits.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, Any

from slinky_harness.core.errors import HarnessError
from slinky_harness.core.paths import REPO_ROOT
from slinky_harness.helm import charts
from slinky_harness.helm import client as helm

if TYPE_CHECKING:
    from pathlib import Path

UMBRELLA_DIR = REPO_ROOT / "examples" / "umbrella"
BUILD_OUTPUTS = ("charts", "Chart.lock", "tmpcharts")
"""What ``helm dependency build`` leaves in the chart folder (never copied from the checkout)."""


class UmbrellaBuildError(HarnessError):
    """``helm dependency build`` of the umbrella failed."""


def meta(path: Path = UMBRELLA_DIR) -> dict[str, Any]:
    """The umbrella's Chart.yaml."""
    data = charts.load_yaml(path / "Chart.yaml")
    if not isinstance(data, dict):
        raise ValueError(f"{path}/Chart.yaml is not a mapping")
    return data


def dependencies(path: Path = UMBRELLA_DIR) -> list[dict[str, Any]]:
    """The ``dependencies`` entries of the umbrella's Chart.yaml."""
    return list(meta(path).get("dependencies") or [])


def build(dest: Path, *, source: Path = UMBRELLA_DIR, helm_binary: str = "helm") -> Path:
    """Copy the umbrella under ``dest``, build its dependencies there and return the chart path."""
    chart = dest / "examples" / source.name
    if chart.exists():
        shutil.rmtree(chart)
    shutil.copytree(source, chart, ignore=shutil.ignore_patterns(*BUILD_OUTPUTS))
    link = dest / "charts"
    if not link.exists():
        link.symlink_to(charts.CHARTS_DIR, target_is_directory=True)
    result = helm.run(["dependency", "build", str(chart)], helm=helm_binary)
    if not result.ok:
        raise UmbrellaBuildError(result.describe())
    return chart


def subchart_values(profile: dict[str, Any], chart: str) -> dict[str, Any]:
    """The values the umbrella hands ``chart``: its block with the profile's ``global`` merged in."""
    values = dict(profile.get(chart) or {})
    values.pop("enabled", None)
    if "global" in profile:
        values["global"] = profile["global"]
    return values
