"""Parity: our charts against upstream Slinky's v1.2.1 charts, as a ratchet.

Upstream's charts come from ``SLINKY_UPSTREAM_CHARTS`` (default: upstream's OCI registry; CI
points it at ``shared/upstream-charts``) and upstream's helm-unittest suites from the Go module
cache (``go mod download``, with CI's ``GOPROXY``); nothing of upstream is in this repository.
:mod:`slinky_harness.parity` says how the cases are made and compared. Each chart's counts
are printed in the tier's summary (``python -m slinky_harness.apps.parity --verbose`` says why
each case fails) and must not fall below ``scripts/slinky_harness/parity/floor.yaml``.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.worker_summary import records

from slinky_harness import parity
from slinky_harness.apps import parity as parity_app
from slinky_harness.helm import client

if TYPE_CHECKING:
    from pathlib import Path

FLOOR = parity.FLOOR_FILE
INTENTIONAL = parity.DIFFERENCES_FILE
CHARTS = list(parity.CHARTS)
SUMMARY: list[list[str]] = records("render.parity")
"""Per chart, ``[chart, report]``: the tier's summary prints them (``tests/render/conftest.py``)."""

KNOWN_SUITES = {
    "slurm": {"controller_test.yaml", "nodeset_test.yaml", "partitions_test.yaml"},
    "slurm-operator": {"operator_deployment_test.yaml", "webhook_deployment_test.yaml"},
    "slurm-bridge": {"admission_test.yaml", "controllers_test.yaml", "scheduler_test.yaml"},
}
"""Suites upstream's v1.2.1 has for each chart (its helm/<chart>/tests/ folders): a subset, to
show the suites found are upstream's and not some other folder's."""


def _raw_tests(path: Path) -> list[dict[str, Any]]:
    """The entries of a suite's ``tests:`` as plain YAML reads them, apart from the harness."""
    tests = yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]
    assert isinstance(tests, list)
    return tests


@pytest.mark.parametrize("chart", CHARTS)
def test_the_cases_are_upstreams_defaults_and_one_per_test_of_its_suites(chart: str) -> None:
    """One case for upstream's defaults, one for upstream's values.yaml passed as a file (the
    chart's top-level keys, as ``helm show values`` of upstream's chart prints them), then one
    per entry of each suite's ``tests:`` (counted here from the raw files), each test with a
    ``set:`` giving a non-empty values overlay."""
    files = parity.suite_files(chart)
    assert KNOWN_SUITES[chart] <= {f.name for f in files}
    raw = [test for path in files for test in _raw_tests(path)]
    cases = parity.all_cases(chart)
    assert len(cases) == 2 + len(raw)
    assert cases[0].id == "defaults"
    assert cases[0].values == {}
    shown = client.Helm.pinned().run("show", "values", str(parity.upstream_chart(chart)))
    assert cases[1].id == "values.yaml"
    assert set(cases[1].values) == set(yaml.safe_load(shown.stdout)) != set()
    for case, test in zip(cases[2:], raw, strict=True):
        assert case.id.endswith(str(test.get("it", "")))
        assert bool(case.values) == bool(test.get("set") or test.get("values")), case.id


@pytest.mark.parametrize("chart", CHARTS)
def test_upstreams_chart_renders_its_defaults(chart: str) -> None:
    """Upstream's own chart, as the reference gives it, renders with its defaults."""
    result = client.template(parity.upstream_chart(chart), {}, api_versions=())
    assert result.ok, result.describe()
    kinds = {doc.get("kind") for doc in result.docs}
    assert kinds >= ({"Controller", "RestApi"} if chart == "slurm" else {"Deployment"})


@pytest.mark.parametrize("chart", CHARTS)
def test_parity_never_goes_below_its_floor(chart: str) -> None:
    """Of upstream's cases, ours accepts and renders equal at least as many as the floor says;
    every intentional difference listed for this chart still covers a difference."""
    intentional = parity.load_intentional(INTENTIONAL)
    report = parity.measure(chart, intentional=intentional)
    counts = report.counts()
    printed = io.StringIO()
    parity_app.print_report([report], verbose=False, out=printed)
    SUMMARY.append([chart, printed.getvalue()])
    assert counts["upstream_renders"] > 0, f"upstream's {chart} rendered none of its cases"
    floor = parity.load_floor(FLOOR)
    assert chart in floor, f"{FLOOR.name} has no floor for {chart}; add {counts}"
    assert parity.below_floor(report, floor) == [], (
        f"{chart}: {counts}; fewer of upstream's cases accepted or equal than {FLOOR.name} "
        "says; python -m slinky_harness.apps.parity --verbose says which and why"
    )
    used = {key for outcome in report.outcomes for key in outcome.intentional}
    stale = [i.key for i in intentional if chart in i.charts and i.key not in used]
    assert stale == [], (
        f"{INTENTIONAL.name}: {chart}'s entries {stale} cover no difference any more; delete them"
    )
    above = {k: counts[k] for k in parity.FLOOR_KEYS if counts[k] > floor[chart][k]}
    if above:
        print(f"  above the floor: raise {chart} in {FLOOR.name} to {above}")
