"""slurm-bridge: values that must never reach a running cluster, and the safe defaults that
replace them.

Never `default-scheduler`, never an all-namespaces selector without the explicit opt-in, never the
operator's or Slurm's namespace (in whatever form the REST URL names it), leader-election
durations client-go accepts; NetworkPolicies on by default (the chart knows every peer).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from tests.render.render_support import (
    Doc,
    assert_rejected,
    docs_of,
    egress_ports,
    ingress_ports,
    policies,
)
from tests.render.render_support import template as render

from slinky_harness.helm import client as helm


def webhook_namespace_selectors(result: helm.HelmResult) -> list[Doc]:
    selectors = []
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for doc in docs_of(result, kind):
            selectors += [w["namespaceSelector"] for w in doc["webhooks"]]
    return selectors


def excluded_namespaces(selector: Doc) -> set[str]:
    excluded: set[str] = set()
    for expr in selector.get("matchExpressions", []):
        if expr["key"] == "kubernetes.io/metadata.name" and expr["operator"] == "NotIn":
            excluded |= set(expr["values"])
    return excluded


def bridge_config(result: helm.HelmResult) -> Doc:
    (config,) = [d for d in docs_of(result, "ConfigMap") if "config.yaml" in d.get("data", {})]
    data: Doc = yaml.safe_load(config["data"]["config.yaml"])
    return data


@pytest.mark.parametrize(
    ("values", "path"),
    [
        pytest.param(
            {"schedulerConfig": {"schedulerName": "default-scheduler"}},
            "schedulerConfig.schedulerName",
            id="default-scheduler",
        ),
        pytest.param(
            {"admission": {"managedNamespaceSelector": {"matchLabels": {}}}},
            "admission.managedNamespaceSelector",
            id="empty-matchLabels-selector",
        ),
        pytest.param(
            {"admission": {"managedNamespaceSelector": {"matchExpressions": []}}},
            "admission.managedNamespaceSelector",
            id="empty-matchExpressions-selector",
        ),
        pytest.param(
            {"admission": {"managedNamespaceSelector": {"matchLabel": {"team": "a"}}}},
            "admission.managedNamespaceSelector",
            id="misspelled-selector",
        ),
        pytest.param(
            {"admission": {"managedNamespaces": ["slinky"]}},
            "admission.managedNamespaces",
            id="operator-namespace",
        ),
        pytest.param(
            {
                "sharedConfig": {"slurmRestApi": "http://hpc-restapi.hpc:6820"},
                "admission": {"managedNamespaces": ["hpc"]},
            },
            "admission.managedNamespaces",
            id="slurm-namespace",
        ),
        pytest.param(
            {
                "scheduler": {
                    "leaderElect": True,
                    "leaderElection": {"leaseDuration": "10s", "renewDeadline": "15s"},
                }
            },
            "scheduler.leaderElection.leaseDuration",
            id="lease-shorter-than-renew",
        ),
        pytest.param(
            {
                "scheduler": {
                    "leaderElect": True,
                    "leaderElection": {"renewDeadline": "10s", "retryPeriod": "9s"},
                }
            },
            "scheduler.leaderElection.renewDeadline",
            id="renew-within-jittered-retry",
        ),
        pytest.param(
            {"scheduler": {"leaderElection": {"retryPeriod": "0s"}}},
            "scheduler.leaderElection.retryPeriod",
            id="zero-retry",
        ),
    ],
)
def test_bridge_refuses_unsafe_values(values: dict[str, Any], path: str) -> None:
    """The bridge never competes with default-scheduler, bridges every namespace by accident, or
    starts a kube-scheduler that refuses its leader-election settings."""
    assert_rejected("slurm-bridge", values, path)


def test_bridge_never_bridges_operator_or_slurm_namespaces() -> None:
    """The webhooks skip kube-system, the release, Slurm's and the operator's namespaces, also
    under a user namespaceSelector, and config.yaml's selector excludes them too."""
    values = {
        "sharedConfig": {"slurmRestApi": "http://slurm-restapi.slurm.svc:6820"},
        "operatorNamespace": "ops",
        "admission": {
            "managedNamespaceSelector": {"matchLabels": {"team": "hpc"}},
            "namespaceSelector": {"matchLabels": {"bridge": "enabled"}},
        },
    }
    result = render("slurm-bridge", values)
    assert result.ok, result.describe()
    protected = {"kube-system", helm.DEFAULT_NAMESPACE, "slurm", "ops"}
    selectors = webhook_namespace_selectors(result)
    assert selectors
    for selector in selectors:
        assert protected <= excluded_namespaces(selector), selector
        assert selector.get("matchLabels") == {"bridge": "enabled"}
    managed = bridge_config(result)["managedNamespaceSelector"]
    assert managed["matchLabels"] == {"team": "hpc"}
    assert protected <= excluded_namespaces(managed)


def test_bridge_all_namespaces_is_an_explicit_opt_in() -> None:
    """`admission.manageAllNamespaces: true` bridges every namespace but the protected ones."""
    result = render(
        "slurm-bridge", {"admission": {"manageAllNamespaces": True, "managedNamespaces": []}}
    )
    assert result.ok, result.describe()
    managed = bridge_config(result)["managedNamespaceSelector"]
    assert set(managed) == {"matchExpressions"}
    assert {"kube-system", helm.DEFAULT_NAMESPACE, "slinky"} <= excluded_namespaces(managed)
    assert "managedNamespaces" not in bridge_config(result)


SLURM_REST_API_FORMS = [
    pytest.param("http://slurm-restapi.slurm:6820", id="service-namespace"),
    pytest.param("http://slurm-restapi.slurm.svc:6820", id="svc"),
    pytest.param("http://slurm-restapi.slurm.svc.cluster.local:6820", id="cluster-local"),
    pytest.param("http://slurm-restapi.slurm.svc.cluster.local.:6820", id="trailing-dot"),
    pytest.param("http://slurm-restapi.slurm.svc.k8s.example.org:6820", id="custom-domain"),
    pytest.param("http://slurm-restapi.slurm.svc.k8s.example.org.:6820", id="custom-domain-dot"),
    pytest.param("https://SLURM-RESTAPI.SLURM.SVC.CLUSTER.LOCAL:6820", id="upper-case"),
    pytest.param("http://Slurm-RestAPI.Slurm:6820", id="mixed-case"),
    pytest.param(
        "http://slurm-restapi-0.slurm-restapi.slurm.svc.cluster.local:6820", id="headless-pod"
    ),
]


@pytest.mark.parametrize("url", SLURM_REST_API_FORMS)
def test_bridge_protects_slurm_namespace_in_every_url_form(url: str) -> None:
    """However `sharedConfig.slurmRestApi` spells the Service (case, trailing dot, cluster
    domain), its namespace stays protected: `managedNamespaces` may not list it, and neither
    the webhooks nor `manageAllNamespaces` reach it."""
    assert_rejected(
        "slurm-bridge",
        {"sharedConfig": {"slurmRestApi": url}, "admission": {"managedNamespaces": ["slurm"]}},
        "admission.managedNamespaces",
    )
    result = render(
        "slurm-bridge",
        {
            "sharedConfig": {"slurmRestApi": url},
            "admission": {"manageAllNamespaces": True, "managedNamespaces": []},
        },
    )
    assert result.ok, result.describe()
    assert "slurm" in excluded_namespaces(bridge_config(result)["managedNamespaceSelector"])
    for selector in webhook_namespace_selectors(result):
        assert "slurm" in excluded_namespaces(selector), selector


@pytest.mark.parametrize(
    "url",
    ["http://10.1.2.3:6820", "https://slurm.example.com:6820", "http://slurm.example.com.:6820"],
)
def test_bridge_reads_no_namespace_from_hosts_outside_the_cluster(url: str) -> None:
    """An IP address or an external name names no Service: no namespace is taken from it."""
    result = render(
        "slurm-bridge",
        {
            "sharedConfig": {"slurmRestApi": url},
            "admission": {"manageAllNamespaces": True, "managedNamespaces": []},
        },
    )
    assert result.ok, result.describe()
    excluded = excluded_namespaces(bridge_config(result)["managedNamespaceSelector"])
    assert excluded == {
        "kube-system",
        "kube-public",
        "kube-node-lease",
        helm.DEFAULT_NAMESPACE,
        "slinky",
    }


def test_bridge_leader_election_defaults_are_accepted_by_client_go() -> None:
    """The defaults render: 15s > 10s > 1.2 x 2s."""
    result = render("slurm-bridge", {})
    assert result.ok, result.describe()


def test_bridge_network_policies_are_on_by_default() -> None:
    """Scheduler, admission and controllers are fenced by default."""
    result = render("slurm-bridge", {})
    assert result.ok, result.describe()
    found = policies(result)
    assert set(found) == {"scheduler", "admission", "controllers"}, sorted(found)
    for policy in found.values():
        egress = egress_ports(policy)
        assert egress[443] == [] and egress[6443] == [] and 53 in egress
    assert ingress_ports(found["admission"]) == {9443: []}
    for component in ("scheduler", "controllers"):
        peers = egress_ports(found[component])[6820]
        assert peers and all("namespaceSelector" in p for p in peers), peers
