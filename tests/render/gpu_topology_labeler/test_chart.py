"""The gpu-topology-labeler chart's side of the controller's timeouts and its NetworkPolicies:
the flags it renders, the grace period sized to the request timeout, the checks of
templates/validate.yaml, the RBAC of the ConfigMap watch, the NetworkPolicies."""

from __future__ import annotations

from typing import Any

import pytest
from tests.render.render_support import CHARTS, one, render, template

from slinky_harness.helm import charts
from slinky_harness.helm.charts import image_ref
from slinky_topology.labeler.cli import parse_config
from slinky_topology.model import BlockOptions

LABELER = "gpu-topology-labeler"
NAME = "lab-gpu-topology-labeler"


def _render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return render(LABELER, values or {}, release="lab", namespace="gpu")


def _one(docs: list[dict[str, Any]], kind: str, name: str = NAME) -> dict[str, Any]:
    return one(docs, kind, name)


def _controller(docs: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    pod = _one(docs, "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return pod, [str(a) for a in container["args"]]


def test_defaults_render_the_timeouts_and_a_grace_period_sized_to_them() -> None:
    pod, args = _controller(_render())
    assert "--request-timeout=10" in args and "--watch-timeout=60" in args
    assert "--write-workers=1" in args, "one node patch at a time unless the values say more"
    assert not [a for a in args if a.startswith("--stuck-seconds")], "the labeler's default"
    # the write in flight, then the Lease released (two calls): 3 x 10 s, plus 5 s
    assert pod["terminationGracePeriodSeconds"] == 35
    config = parse_config(args, environ={"POD_NAMESPACE": "gpu", "POD_NAME": "lab-0"})
    assert config.request_timeout + config.retry_period < config.lease_duration
    assert config.stuck_after == 140 and config.namespace == "gpu" and config.identity == "lab-0"


@pytest.mark.parametrize(
    ("values", "grace", "flag"),
    [
        pytest.param({"requestTimeoutSeconds": 3}, 14, "--request-timeout=3", id="short"),
        pytest.param(
            {"requestTimeoutSeconds": 3, "terminationGracePeriodSeconds": 60},
            60,
            "--request-timeout=3",
            id="longer-grace-kept",
        ),
        pytest.param(
            {"stuckSeconds": 71, "terminationGracePeriodSeconds": 35},
            35,
            "--stuck-seconds=71",
            id="stuck-seconds",
        ),
        pytest.param({"writeWorkers": 8}, 35, "--write-workers=8", id="write-workers"),
    ],
)
def test_grace_period_and_flags_follow_the_values(
    values: dict[str, Any], grace: int, flag: str
) -> None:
    pod, args = _controller(_render({"controller": values}))
    assert pod["terminationGracePeriodSeconds"] == grace
    assert flag in args
    config = parse_config(args, environ={})
    if "writeWorkers" in values:
        assert config.write_workers == values["writeWorkers"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param(
            {"controller": {"terminationGracePeriodSeconds": 30}},
            "controller.terminationGracePeriodSeconds (30) is less than 35",
            id="grace-too-short",
        ),
        pytest.param(
            {"controller": {"requestTimeoutSeconds": 13}},
            "controller.requestTimeoutSeconds (13) plus controller.leaderElection."
            "retryPeriodSeconds (2) must be less than leaseDurationSeconds (15)",
            id="timeout-outlasts-the-lease",
        ),
        pytest.param(
            {"controller": {"stuckSeconds": 70}},
            "controller.stuckSeconds (70) must exceed 70",
            id="stuck-below-a-quiet-watch",
        ),
        pytest.param(
            {"networkPolicy": {"apiServer": {"ports": []}}},
            "networkPolicy.apiServer.ports is empty",
            id="no-api-server-port",
        ),
    ],
)
def test_inconsistent_values_fail_with_the_charts_message(
    values: dict[str, Any], message: str
) -> None:
    result = template(LABELER, values, release="lab", namespace="gpu")
    assert not result.ok
    assert message in result.stderr, result.stderr


def test_a_long_timeout_passes_with_a_long_lease_or_without_election() -> None:
    long_lease = {"leaseDurationSeconds": 40, "renewDeadlineSeconds": 30}
    _render({"controller": {"requestTimeoutSeconds": 30, "leaderElection": long_lease}})
    _render({"controller": {"requestTimeoutSeconds": 30, "leaderElection": {"enabled": False}}})


def test_the_controller_may_watch_its_own_configmap_only() -> None:
    role = _one(_render({"topology": {"configMapName": "topo"}}), "Role")
    watching = [r for r in role["rules"] if "watch" in r["verbs"]]
    assert watching == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["topo"],
            "verbs": ["get", "list", "watch", "update", "patch"],
        }
    ]
    dry = _one(_render({"controller": {"dryRun": True}}), "Role")
    assert not [r for r in dry["rules"] if "watch" in r["verbs"]], "dry run: nothing to restore"


def test_network_policy_by_default_api_server_and_dns_out_metrics_port_in() -> None:
    docs = _render()
    policy = _one(docs, "NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "controller"
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    assert policy["ingress"] == [{"ports": [{"port": "metrics", "protocol": "TCP"}]}]
    api, dns = policy["egress"]
    assert api == {"ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}]}
    assert dns["ports"] == [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]
    assert dns["to"] == [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ]
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "NetworkPolicy"] == [NAME]


def test_network_policy_narrowed_extended_or_off() -> None:
    prometheus = {"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}
    extra = {"ports": [{"port": 4317, "protocol": "TCP"}]}
    values = {
        "networkPolicy": {
            "apiServer": {"cidrs": ["10.0.0.1/32"], "ports": [6443]},
            "dns": {"enabled": False},
            "metrics": {"from": [prometheus]},
            "extraEgress": [extra],
        },
        "discovery": {"enabled": True},
    }
    docs = _render(values)
    controller = _one(docs, "NetworkPolicy")["spec"]
    assert controller["ingress"] == [
        {"ports": [{"port": "metrics", "protocol": "TCP"}], "from": [prometheus]}
    ]
    api_only = {
        "ports": [{"port": 6443, "protocol": "TCP"}],
        "to": [{"ipBlock": {"cidr": "10.0.0.1/32"}}],
    }
    assert controller["egress"] == [api_only, extra]
    discovery = _one(docs, "NetworkPolicy", f"{NAME}-discovery")["spec"]
    assert discovery["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "discovery"
    assert discovery["ingress"] == [] and discovery["egress"] == [api_only, extra]

    off = _render({"networkPolicy": {"enabled": False}, "discovery": {"enabled": True}})
    assert not [d for d in off if d["kind"] == "NetworkPolicy"]


@pytest.mark.parametrize("workers", [0, 65, "8"])
def test_the_schema_refuses_write_workers_out_of_range(workers: object) -> None:
    result = template(LABELER, {"controller": {"writeWorkers": workers}}, release="lab")
    assert not result.ok
    assert "writeWorkers" in result.stderr, result.stderr


def _block_args(args: list[str]) -> list[str]:
    return [a for a in args if a.startswith(("--block-", "--oversized-", "--label-map"))]


def test_block_values_render_the_flags_the_controller_parses_into_block_options() -> None:
    _, defaults = _controller(_render())
    assert _block_args(defaults) == ["--block-source=domain", "--oversized-domains=split"]
    assert parse_config(defaults, environ={}).block_options == BlockOptions(), "library defaults"
    topology = {
        "blockSizes": [18, 36, 72],
        "blockSource": "subdomain",
        "oversizedDomains": "error",
        "labelMap": {"accelerator": "example.com/domain", "subdomain": "example.com/clique"},
    }
    _, args = _controller(_render({"topology": topology}))
    assert _block_args(args) == [
        "--label-map=accelerator=example.com/domain,subdomain=example.com/clique",
        "--block-sizes=18,36,72",
        "--block-source=subdomain",
        "--oversized-domains=error",
    ]
    config = parse_config(args, environ={})
    assert config.block_options == BlockOptions(
        block_sizes=(18, 36, 72), source="subdomain", oversized="error"
    )
    assert config.label_map == "accelerator=example.com/domain,subdomain=example.com/clique"


def test_a_fabric_configmap_renders_no_block_flag() -> None:
    _, args = _controller(_render({"topology": {"fabricConfigMap": {"name": "fabric"}}}))
    assert _block_args(args) == []
    config = parse_config(args, environ={})
    assert config.fabric_configmap == "fabric" and config.block_options is None


@pytest.mark.parametrize(
    ("topology", "paths"),
    [
        pytest.param({"blockSizes": [8]}, "topology.blockSizes set", id="sizes"),
        pytest.param({"blockSource": "subdomain"}, "topology.blockSource set", id="source"),
        pytest.param(
            {"blockSizes": [8], "oversizedDomains": "error"},
            "topology.blockSizes, topology.oversizedDomains set",
            id="two",
        ),
    ],
)
def test_block_values_with_a_fabric_configmap_fail_naming_the_values(
    topology: dict[str, Any], paths: str
) -> None:
    values = {"topology": {"fabricConfigMap": {"name": "fabric"}, **topology}}
    result = template(LABELER, values, release="lab", namespace="gpu")
    assert not result.ok
    assert f"{paths} together with topology.fabricConfigMap.name" in result.stderr, result.stderr
    assert "the fabric file sets blockSizes" in result.stderr


@pytest.mark.parametrize(
    ("topology", "path"),
    [
        pytest.param({"blockSizes": [0]}, "/topology/blockSizes/0", id="zero"),
        pytest.param({"blockSizes": "18,36"}, "/topology/blockSizes", id="string"),
        pytest.param({"blockSizes": [18, 18]}, "/topology/blockSizes", id="repeated"),
        pytest.param({"blockSource": "rack"}, "/topology/blockSource", id="source"),
        pytest.param({"oversizedDomains": "drop"}, "/topology/oversizedDomains", id="policy"),
    ],
)
def test_the_schema_refuses_bad_block_values(topology: dict[str, Any], path: str) -> None:
    result = template(LABELER, {"topology": topology}, release="lab")
    assert not result.ok
    assert path in result.stderr, result.stderr


def _images(docs: list[dict[str, Any]]) -> set[str]:
    return {
        c["image"]
        for d in docs
        if d["kind"] in ("Deployment", "DaemonSet")
        for c in d["spec"]["template"]["spec"]["containers"]
    }


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param(
            {"image": {"repository": "ghcr.io/acme/labeler", "tag": "1.0"}},
            "ghcr.io/acme/labeler:1.0",
            id="host-in-repository",
        ),
        pytest.param(
            {
                "global": {"imageRegistry": "mirror.example.com"},
                "image": {"repository": "ghcr.io/acme/labeler", "tag": "1.0"},
            },
            "mirror.example.com/acme/labeler:1.0",
            id="global-replaces-that-host",
        ),
        pytest.param(
            {"image": {"registry": "registry.example.com:5000", "repository": "acme/labeler"}},
            f"registry.example.com:5000/acme/labeler:{CHARTS[LABELER].meta['appVersion']}",
            id="registry-for-a-repository-without-host",
        ),
        pytest.param(
            {"image": {"repository": "localhost/acme/labeler", "digest": "sha256:" + "0" * 64}},
            "localhost/acme/labeler@sha256:" + "0" * 64,
            id="localhost-is-a-host",
        ),
    ],
)
def test_a_repository_that_names_its_host_keeps_one_host(
    values: dict[str, Any], expected: str
) -> None:
    """The labeler reads an image as every chart of the suite does: a repository's first path
    element that names a host is the registry (the default `registry: ghcr.io` is not put in
    front of it), and global.imageRegistry replaces it; the harness's image_ref agrees."""
    assert _images(_render(values)) == {expected}
    defaults = charts.load_yaml(CHARTS[LABELER].path / "values.yaml")
    assert image_ref(defaults, values, str(CHARTS[LABELER].meta["appVersion"])) == expected
