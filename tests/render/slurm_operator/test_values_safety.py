"""slurm-operator: values that must never reach a running cluster, and the safe defaults that
replace them.

pprof on localhost unless explicitly opened (and then a NOTES warning), Secrets readable only in
the watched namespaces when those are listed, upstream's keys strict; NetworkPolicies on by
default (the chart knows every peer).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.render.render_support import (
    CHARTS,
    Doc,
    assert_rejected,
    docs_of,
    egress_ports,
    ingress_ports,
    policies,
)
from tests.render.render_support import template as render

from slinky_harness.helm import client as helm


@pytest.mark.parametrize(
    "address", ["0.0.0.0:6060", ":6060", "10.0.0.5:6060", "[::]:6060", "pprof.example.com:6060"]
)
def test_operator_profiling_stays_on_localhost(address: str) -> None:
    """pprof on any non-loopback address needs `operator.profileAllowRemote: true`."""
    values = {"operator": {"profile": True, "profileAddr": address}}
    assert_rejected("slurm-operator", values, "operator.profileAddr")


@pytest.mark.parametrize("address", ["localhost:6060", "127.0.0.1:6060", "[::1]:6060"])
def test_operator_profiling_on_loopback_renders_without_warning(address: str) -> None:
    values = {"operator": {"profile": True, "profileAddr": address}}
    result = helm.dry_run_install(CHARTS["slurm-operator"].path, values)
    assert result.ok, result.describe()
    assert "pprof" not in result.notes


def test_operator_profiling_opened_explicitly_warns_in_notes() -> None:
    values = {
        "operator": {"profile": True, "profileAddr": "0.0.0.0:6060", "profileAllowRemote": True}
    }
    result = helm.dry_run_install(CHARTS["slurm-operator"].path, values)
    assert result.ok, result.describe()
    warnings = result.notes.strip().split("\n\n")[0]
    assert warnings.startswith("WARNINGS") and "0.0.0.0:6060" in warnings, result.notes


@pytest.mark.parametrize(
    ("values", "path"),
    [
        pytest.param({"operator": {"metricsPort": "08080"}}, "operator.metricsPort", id="octal"),
        pytest.param({"webhook": {"metricsPort": 70000}}, "webhook.metricsPort", id="port-range"),
        pytest.param({"operator": {"enabled": "yes"}}, "operator.enabled", id="enabled-string"),
        pytest.param(
            {"operator": {"leaderElection": {"enabled": True}}},
            "operator.leaderElection",
            id="old-leader-election-object",
        ),
        pytest.param({"certManager": {"secretNam": "x"}}, "certManager", id="misspelt-key"),
        pytest.param({"operator": {"namespaces": ["a"]}}, "operator.namespaces", id="list"),
        pytest.param(
            {"extraObjects": [{"kind": "ConfigMap"}]}, "extraObjects.0", id="no-apiVersion"
        ),
        pytest.param({"watchNamespaces": ["a"]}, "", id="removed-key"),
    ],
)
def test_upstream_keys_stay_strict(values: dict[str, Any], path: str) -> None:
    """Upstream's keys are known to the schema, which still refuses a wrong type, an unknown key
    (naming where it is) and a key this chart no longer has."""
    stderr = assert_rejected("slurm-operator", values, path)
    if not path:
        assert "watchNamespaces" in stderr, stderr


def rules_granting(docs: list[Doc], kind: str, resource: str) -> list[Doc]:
    return [
        d
        for d in docs
        if d["kind"] == kind and any(resource in r.get("resources", []) for r in d.get("rules", []))
    ]


def test_operator_secrets_are_namespaced_when_namespaces_are_known() -> None:
    """With operator.namespaces (and webhook.namespaces), only per-namespace Roles grant Secrets; no
    ClusterRole does."""
    result = render(
        "slurm-operator",
        {"operator": {"namespaces": "slurm, team-a"}, "webhook": {"namespaces": "slurm,team-a"}},
    )
    assert result.ok, result.describe()
    assert not rules_granting(result.docs, "ClusterRole", "secrets")
    roles = rules_granting(result.docs, "Role", "secrets")
    assert {r["metadata"]["namespace"] for r in roles} == {"slurm", "team-a"}
    bindings = [
        d
        for d in docs_of(result, "RoleBinding")
        if d["roleRef"]["name"] in {r["metadata"]["name"] for r in roles}
    ]
    assert {b["metadata"]["namespace"] for b in bindings} >= {"slurm", "team-a"}


def test_operator_watching_all_namespaces_warns_about_cluster_wide_secrets() -> None:
    """The all-namespaces default needs a ClusterRole on Secrets; NOTES says so and how to narrow it."""
    result = helm.dry_run_install(CHARTS["slurm-operator"].path, {})
    assert result.ok, result.describe()
    assert rules_granting(result.docs, "ClusterRole", "secrets")
    assert "operator.namespaces" in result.notes.strip().split("\n\n")[0], result.notes


def test_operator_network_policies_are_on_by_default() -> None:
    """Operator and webhook are fenced by default, with the API server, DNS and slurmrestd open."""
    result = render("slurm-operator", {})
    assert result.ok, result.describe()
    found = policies(result)
    assert set(found) == {"operator", "webhook"}, sorted(found)
    for policy in found.values():
        egress = egress_ports(policy)
        assert egress[443] == [] and egress[6443] == [], "the API server address is unknown"
        assert 53 in egress
    assert 6820 in egress_ports(found["operator"])
    webhook_in = ingress_ports(found["webhook"])
    assert webhook_in == {9443: []}, "kube-apiserver must reach the webhook from any source"
    assert ingress_ports(found["operator"]) == {}
