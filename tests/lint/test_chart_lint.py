"""ct lint and helm lint --strict (Helm 4 and Helm 3) over every chart and ci scenario."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from slinky_harness.build import toolchain
from slinky_harness.core import paths
from slinky_harness.helm import charts
from slinky_harness.helm import client as helm

CHARTS = charts.discover_charts()
REPO = paths.REPO_ROOT


def _lint_cases() -> list[Any]:
    cases: list[Any] = []
    for chart in CHARTS:
        for values in [None, *chart.ci_files]:
            for binary in ("helm", "helm3"):
                label = values.name if values else "defaults"
                cases.append(
                    pytest.param(chart, values, binary, id=f"{chart.name}-{label}-{binary}")
                )
    return cases


def test_there_are_charts() -> None:
    assert CHARTS, "no chart found under charts/"


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_ct_lint(chart: charts.Chart) -> None:
    """chart-testing's lint (Chart.yaml schema, yamllint, helm lint per ci file) passes."""
    etc = toolchain.ct_config_dir()
    env = toolchain.tool_env()
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"  # yamllint and yamale
    proc = subprocess.run(
        [
            str(toolchain.ensure("ct")),
            "lint",
            "--config",
            str(REPO / "ct.yaml"),
            "--charts",
            str(chart.path.relative_to(REPO)),
            "--chart-yaml-schema",
            str(etc / "chart_schema.yaml"),
            "--lint-conf",
            str(etc / "lintconf.yaml"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "All charts linted successfully" in proc.stdout + proc.stderr


@pytest.mark.parametrize(("chart", "values", "binary"), _lint_cases())
def test_helm_lint_strict(chart: charts.Chart, values: Path | None, binary: str) -> None:
    """helm lint --strict passes for the oldest supported Kubernetes version."""
    result = helm.lint(chart.path, values, helm=binary, kube_version=chart.min_kube_version)
    assert result.ok, result.stdout + result.stderr
