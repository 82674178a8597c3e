"""Render every chart with every scenario for the oldest and newest Kubernetes, and check the result.

A scenario is the defaults, a ``ci/*-values.yaml`` file, or a ``values/`` profile block. Each
render is validated strictly (built-in kinds against the Kubernetes OpenAPI schema of that
version, custom resources against their CRDs) and must hold every invariant of
:mod:`slinky_harness.k8s.manifests`.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from slinky_harness.helm import charts
from slinky_harness.helm import client as helm
from slinky_harness.k8s import manifests
from slinky_harness.k8s import schemas as kubeschema

SENTINEL_REGISTRY = "registry.suite.invalid"
NEWEST = kubeschema.newest_version()


def _cases() -> list[Any]:
    cases = []
    for chart in charts.discover_charts():
        for scenario in charts.scenarios(chart):
            for kube in sorted({chart.min_kube_version, NEWEST}):
                cases.append(pytest.param(chart, scenario, kube, id=f"{scenario.id}@{kube}"))
    return cases


def with_registry(values: dict[str, Any], registry: str = SENTINEL_REGISTRY) -> dict[str, Any]:
    """``values`` with ``global.imageRegistry`` set, to trace every image back to values."""
    result = copy.deepcopy(values)
    result.setdefault("global", {})["imageRegistry"] = registry
    return result


def render_problems(
    chart: charts.Chart, values: dict[str, Any], kube: str
) -> tuple[helm.HelmResult, list[str]]:
    """Render ``chart`` and return the result with every invariant and schema violation."""
    values = with_registry(values)
    result = helm.template(chart.path, values, kube_version=kube)
    if not result.ok:
        return result, []
    problems = manifests.all_invariants(
        result.docs, namespace=helm.DEFAULT_NAMESPACE, values=values, registry=SENTINEL_REGISTRY
    )
    problems += kubeschema.schema_set(kube).validate_all(result.docs)
    return result, problems


@pytest.mark.parametrize(("chart", "scenario", "kube"), _cases())
def test_render_is_valid(chart: charts.Chart, scenario: charts.Scenario, kube: str) -> None:
    """The scenario renders, validates strictly and holds every render invariant."""
    result, problems = render_problems(chart, scenario.values, kube)
    assert result.ok, result.describe()
    assert result.docs, "the render is empty"
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("chart", "scenario"),
    [pytest.param(c, s, id=s.id) for c in charts.discover_charts() for s in charts.scenarios(c)],
)
def test_notes_show_no_secret_data(chart: charts.Chart, scenario: charts.Scenario) -> None:
    """NOTES.txt renders, says something, and contains no Secret data from the same release."""
    result = helm.dry_run_install(chart.path, scenario.values)
    assert result.ok, result.describe()
    assert result.notes.strip(), "NOTES.txt is empty"
    assert not manifests.check_notes(result.notes, result.docs)


UPSTREAM_NAMES: dict[str, tuple[dict[str, Any], set[tuple[str, str]]]] = {
    "slurm-bridge": (
        {"nameOverride": "other-bridge", "schedulerConfig": {"schedulerName": "other-scheduler"}},
        {("ConfigMap", "slurm-bridge-config"), ("ConfigMap", "scheduler-config")},
    ),
    "slurm-operator": (
        {"nameOverride": "other-operator", "certManager": {"secretName": "other-operator-ca"}},
        set(),
    ),
}
"""Charts that name their objects as upstream's chart does, without the release name (so that
``helm upgrade`` of an upstream release keeps them; charts/slurm-bridge/README.md "Names"): the
values that scope their names instead, and the names upstream fixes, which nothing scopes.
slurm-operator's objects are ``slurm-operator`` and ``slurm-operator-webhook[-...]``, its
certificate Secret ``certManager.secretName``."""


def _names(docs: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {
        (d["kind"], d["metadata"]["name"]) for d in docs if d["kind"] != "CustomResourceDefinition"
    }


@pytest.mark.parametrize("chart", charts.discover_charts(), ids=lambda c: c.name)
def test_release_namespace_and_name_flow_everywhere(chart: charts.Chart) -> None:
    """A different release name and namespace change every object's name or namespace
    accordingly; for a chart in :data:`UPSTREAM_NAMES`, the values listed there change every name
    but the fixed ones listed there."""
    scoping, fixed = UPSTREAM_NAMES.get(chart.name, ({}, set()))
    values = with_registry({})
    scoped = with_registry(scoping)
    result = helm.template(
        chart.path,
        scoped,
        release="other-release",
        namespace="elsewhere",
        kube_version=NEWEST,
    )
    assert result.ok, result.describe()
    problems = manifests.check_namespaces(result.docs, "elsewhere", manifests.value_strings(scoped))
    assert not problems, "\n".join(problems)
    default = helm.template(chart.path, values, kube_version=NEWEST)
    default_names, other_names = _names(default.docs), _names(result.docs)
    assert fixed <= default_names, (
        f"fixed names no longer rendered: {sorted(fixed - default_names)}"
    )
    shared = sorted((default_names & other_names) - fixed)
    assert not shared, f"names not scoped to the release: {shared}"
