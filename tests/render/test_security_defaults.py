"""Security defaults: no profile puts sshd on an open load balancer, and slurm-cluster's
``helm test`` pod holds no ServiceAccount token.

A LoginSet's Service (``loginsets.<n>.service.spec``) is the login pods' sshd; as a
``LoadBalancer`` without ``loadBalancerSourceRanges`` it answers whatever network the load balancer
reaches (often the internet). Every profile in ``values/`` is rendered as the umbrella installs it
(the umbrella's defaults under the profile's block) and each of its LoginSets is checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from slinky_harness.helm import charts, umbrella
from slinky_harness.helm import client as helm
from slinky_harness.helm.values import merge
from slinky_harness.k8s import manifests

ROOT = Path(__file__).resolve().parents[2]
CHART = next(c for c in charts.discover_charts() if c.name == "slurm-cluster")
UMBRELLA: dict[str, Any] = charts.load_yaml(umbrella.UMBRELLA_DIR / "values.yaml")
PROFILES = charts.profiles()

Doc = dict[str, Any]


def open_login_services(docs: list[Doc]) -> list[str]:
    """The LoginSets whose Service is a LoadBalancer any network may reach."""
    return [
        str(doc["metadata"]["name"])
        for doc, _ in manifests.open_load_balancers(docs)
        if doc.get("kind") == "LoginSet"
    ]


@pytest.mark.parametrize(
    ("name", "profile"), [pytest.param(k, v, id=k) for k, v in sorted(PROFILES.items())]
)
def test_no_profile_puts_sshd_on_an_open_load_balancer(name: str, profile: dict[str, Any]) -> None:
    """Invariant: in every profile, a login Service of type LoadBalancer lists
    ``loadBalancerSourceRanges`` (or the Service is not a LoadBalancer at all)."""
    block = merge(UMBRELLA.get("slurm-cluster") or {}, profile.get("slurm-cluster") or {})
    if block.get("enabled") is False:
        pytest.skip(f"{name} installs no slurm-cluster")
    result = helm.template(CHART.path, block)
    assert result.ok, result.describe()
    assert open_login_services(result.docs) == [], (
        f"values/{name}.yaml: the login Service is a LoadBalancer open to any network; set "
        "loginsets.<n>.service.spec.loadBalancerSourceRanges (or type ClusterIP)"
    )


def test_the_check_sees_an_open_load_balancer() -> None:
    """The check above finds a LoadBalancer login Service without ranges (so its pass means
    something), and accepts one with ranges."""
    login = {"loginsets": {"login": {"service": {"spec": {"type": "LoadBalancer"}}}}}
    result = helm.template(CHART.path, login)
    assert result.ok, result.describe()
    assert len(open_login_services(result.docs)) == 1
    ranged = merge(
        login,
        {
            "loginsets": {
                "login": {"service": {"spec": {"loadBalancerSourceRanges": ["10.0.0.0/8"]}}}
            }
        },
    )
    assert open_login_services(helm.template(CHART.path, ranged).docs) == []
    everyone = merge(
        login,
        {
            "loginsets": {
                "login": {"service": {"spec": {"loadBalancerSourceRanges": ["0.0.0.0/0"]}}}
            }
        },
    )
    assert len(open_login_services(helm.template(CHART.path, everyone).docs)) == 1
    internal = merge(
        login,
        {
            "loginsets": {
                "login": {
                    "service": {
                        "metadata": {
                            "annotations": {"networking.gke.io/load-balancer-type": "Internal"}
                        }
                    }
                }
            }
        },
    )
    rendered = helm.template(CHART.path, internal)
    assert rendered.ok, rendered.describe()
    assert open_login_services(rendered.docs) == []


def test_helm_test_pod_mounts_no_service_account_token() -> None:
    """slurm-cluster's connectivity test pod only opens TCP connections: it asks for no
    ServiceAccount token (``automountServiceAccountToken: false``)."""
    result = helm.template(CHART.path, {"tests": {"enabled": True}})
    assert result.ok, result.describe()
    pods = [
        d
        for d in result.docs
        if d["kind"] == "Pod"
        and (d["metadata"].get("annotations") or {}).get("helm.sh/hook") == "test"
    ]
    assert len(pods) == 1, [d["metadata"]["name"] for d in pods]
    assert pods[0]["spec"].get("automountServiceAccountToken") is False
