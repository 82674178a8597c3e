"""The example umbrella chart and the ``values/`` profiles: helm lint and static shape.

helm lint --strict (Helm 4 and Helm 3, subcharts included) runs on a temporary build of the
umbrella (``slinky_harness.helm.umbrella.build``), with its defaults and with every profile.
"""

from __future__ import annotations

import re
import subprocess
import tarfile
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from slinky_harness.core import paths
from slinky_harness.helm import charts, umbrella
from slinky_harness.helm import client as helm

if TYPE_CHECKING:
    from pathlib import Path

CHARTS = {c.name: c for c in charts.discover_charts()}
PROFILE_FILES = sorted(charts.PROFILES_DIR.glob("*.yaml"))
REQUIRED_PROFILES = {
    "kind",
    "cpu-only",
    "dgx-h100-superpod",
    "gb200-nvl72",
    "gke-a3-ultra",
    "eks-p5",
    "amd-mi300x",
    "co-location",
}


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return umbrella.build(tmp_path_factory.mktemp("umbrella"))


def _lint_cases() -> list[Any]:
    return [
        pytest.param(values, binary, id=f"{values.stem if values else 'defaults'}-{binary}")
        for values in [None, *PROFILE_FILES]
        for binary in ("helm", "helm3")
    ]


@pytest.mark.parametrize(("values", "binary"), _lint_cases())
def test_helm_lint_strict(chart: Path, values: Path | None, binary: str) -> None:
    """helm lint --strict passes for the umbrella's oldest Kubernetes version. Without a profile
    the packaged subcharts are linted too (``--with-subcharts`` hands a values file to every
    subchart unchanged, so it only fits the defaults)."""
    meta = umbrella.meta()
    kube = charts.Chart(str(meta["name"]), umbrella.UMBRELLA_DIR, meta).min_kube_version
    args = ["lint", str(chart), "--strict", "--kube-version", kube]
    args += ["-f", str(values)] if values else ["--with-subcharts"]
    result = helm.run(args, helm=binary)
    assert result.ok, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout, result.stdout


def test_depends_on_every_chart_by_path_with_a_condition() -> None:
    deps = {str(d["name"]): d for d in umbrella.dependencies()}
    vendored = charts.dependents(list(CHARTS.values()))
    assert vendored == {"slurm-operator-crds": "slurm-operator"}, vendored
    assert set(deps) == set(CHARTS) - set(vendored), (
        "the umbrella must depend on every chart of charts/ that no other chart brings"
    )
    for name, dep in deps.items():
        assert dep["repository"] == f"file://../../charts/{name}", dep
        assert dep["condition"] == f"{name}.enabled", dep
        assert "enabled" in (charts.load_yaml(CHARTS[name].path / "values.yaml") or {}), name


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_version_constraint_admits_the_chart(chart: Path, name: str) -> None:
    """``helm dependency build`` picked the chart of charts/ (its current version); a chart that
    comes with another one is inside that one's archive, at its current version."""
    parent = charts.dependents(list(CHARTS.values())).get(name)
    if parent is None:
        assert (chart / "charts" / f"{name}-{CHARTS[name].version}.tgz").is_file()
        return
    archive = chart / "charts" / f"{parent}-{CHARTS[parent].version}.tgz"
    with tarfile.open(archive) as tar:
        member = tar.extractfile(f"{parent}/charts/{name}/Chart.yaml")
        assert member is not None, f"{archive} lacks {name}"
        assert yaml.safe_load(member.read())["version"] == CHARTS[name].version


def test_build_output_is_ignored_by_git() -> None:
    for path in (
        "examples/umbrella/charts/slurm-cluster-0.1.0.tgz",
        "examples/umbrella/Chart.lock",
    ):
        proc = subprocess.run(["git", "check-ignore", "-q", path], cwd=paths.REPO_ROOT, check=False)
        assert proc.returncode == 0, f"{path} is not gitignored"


def test_required_profiles_exist() -> None:
    assert {p.stem for p in PROFILE_FILES} >= REQUIRED_PROFILES


@pytest.mark.parametrize("path", PROFILE_FILES, ids=lambda p: p.stem)
def test_profile_shape(path: Path) -> None:
    """A profile opens with when to use it, and holds only `global` and chart blocks."""
    first = path.read_text().splitlines()[0]
    assert re.match(r"^# Use this profile (for|on|to|when|in) ", first), first
    data = charts.load_yaml(path)
    assert isinstance(data, dict)
    assert set(data) <= {"global", *CHARTS}, f"unknown top-level keys {set(data) - set(CHARTS)}"


def test_readme_covers_every_profile() -> None:
    readme = (umbrella.UMBRELLA_DIR / "README.md").read_text()
    for path in PROFILE_FILES:
        assert f"values/{path.name}" in readme, f"{path.name} is not in the umbrella README"
