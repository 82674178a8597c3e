"""labeler_bench without a cluster: its fleet and targets; and the labeler's parallel node patches
(``--write-workers``) that the benchmark runs with."""

from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from slinky_harness.apps import labeler_bench as lb
from slinky_topology.labeler.kube import KubeAPIError
from slinky_topology.labeler.metrics import Metrics
from slinky_topology.labeler.publish import Backoff, Publisher, PublishError, TokenBucket
from slinky_topology.labeler.reconcile import NodeChange, Plan

if TYPE_CHECKING:
    from collections.abc import Mapping


def test_bench_fleet_is_nvl72_racks_under_leaves_spines_and_one_core() -> None:
    nodes = lb.bench_fleet(5000).nodes()
    assert len(nodes) == 5000
    labels = [n["metadata"]["labels"] for n in nodes]
    racks = Counter(label["nvidia.com/gpu.clique"] for label in labels)
    assert len(racks) == 278 and max(racks.values()) == 18  # 277 full racks and one of 14
    assert sorted(racks.values())[0] == 5000 - 277 * 18
    assert len({label["fabric.slinky.dev/leaf"] for label in labels}) == 278
    assert len({label["fabric.slinky.dev/spine"] for label in labels}) == 18
    assert {label["fabric.slinky.dev/core"] for label in labels} == {"core"}
    # a rack never spans two leaves (the labeler's block order depends on it)
    leaf_of = {
        (label["nvidia.com/gpu.clique"], label["fabric.slinky.dev/leaf"]) for label in labels
    }
    assert len(leaf_of) == len(racks)


def _figures(**overrides: Any) -> lb.Figures:
    base: dict[str, Any] = {
        "nodes": 10,
        "create_seconds": 1.0,
        "first_pass_seconds": 5.0,
        "first_pass_reported_seconds": 4.0,
        "writes": {"nodes patch": 10, "configmaps create": 1},
        "node_writes": 10,
        "nodes_written": 10,
        "configmap_writes": 1,
        "reported_writes": 11,
        "second_pass_seconds": 1.0,
        "second_pass_writes": 0,
        "peak_memory_mib": 100.0,
        "failed_requests": 0,
        "labeler_cpu_seconds": 1.0,
        "server_cpu_seconds": 2.0,
    }
    return lb.Figures(**{**base, **overrides})


@pytest.mark.parametrize(
    ("overrides", "missed"),
    [
        pytest.param({}, [], id="all-met"),
        pytest.param({"first_pass_seconds": 61.0}, ["first pass took"], id="too-slow"),
        pytest.param({"node_writes": 11, "reported_writes": 12}, ["11 node writes"], id="twice"),
        pytest.param({"second_pass_writes": 1}, ["second pass wrote"], id="second-pass"),
        pytest.param({"reported_writes": 10}, ["the labeler reports 10"], id="disagree"),
        pytest.param({"configmap_writes": 2, "reported_writes": 12}, ["2 ConfigMap"], id="cm"),
        pytest.param({"peak_memory_mib": 501.0}, ["peak memory 501 MiB"], id="memory"),
    ],
)
def test_misses_names_each_target_missed(overrides: dict[str, Any], missed: list[str]) -> None:
    found = lb.misses(_figures(**overrides), 60.0)
    assert len(found) == len(missed)
    for text, want in zip(found, missed, strict=True):
        assert want in text
    assert any(line.startswith("writes per node") for line in _figures().lines())


class _ThreadSafeNodes:
    """Just enough of ClusterAPI for node patches, with a lock (patches come from threads)."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.lock = threading.Lock()
        self.patches: list[str] = []
        self.fail_on = fail_on

    def patch_node(self, name: str, body: Mapping[str, Any]) -> None:
        if name == self.fail_on:
            raise KubeAPIError(f"patch node {name}", "HTTP 422 Unprocessable Entity", status=422)
        with self.lock:
            self.patches.append(name)


def _plan(count: int) -> Plan:
    changes = tuple(
        NodeChange(f"n{i:03d}", "add", {"topology.slinky.slurm.net/leaf": "l1"}, {})
        for i in range(count)
    )
    return Plan(changes, None)


def _publisher(api: _ThreadSafeNodes, workers: int) -> Publisher:
    return Publisher(
        api,  # type: ignore[arg-type]
        namespace="ns",
        configmap="cm",
        limiter=TokenBucket(0, 1),
        backoff=Backoff(attempts=1),
        metrics=Metrics(),
        workers=workers,
    )


def test_parallel_node_patches_write_each_node_once() -> None:
    api = _ThreadSafeNodes()
    publisher = _publisher(api, workers=8)
    assert publisher.apply(_plan(200)) == 200
    assert sorted(api.patches) == [f"n{i:03d}" for i in range(200)]
    assert publisher.metrics.value("slinky_topology_labeler_writes_total", kind="node_add") == 200


def test_parallel_node_patches_stop_at_the_first_failure() -> None:
    api = _ThreadSafeNodes(fail_on="n010")
    with pytest.raises(PublishError, match="patch node n010"):
        _publisher(api, workers=4).apply(_plan(500))
    assert "n010" not in api.patches
    assert len(api.patches) < 500, "no new patch starts after a failure"


# --- labeler behaviour the cluster tier found and relies on ----------------------------------------


def _controller(api: Any) -> Any:
    from slinky_topology.labeler.cli import parse_config  # noqa: PLC0415
    from slinky_topology.labeler.controller import Controller  # noqa: PLC0415

    config = parse_config(["--namespace", "ns", "--qps", "0"], environ={})
    return Controller(config, api, metrics=Metrics(), sleep=lambda _: None)


def test_only_label_and_owned_annotation_changes_trigger_a_pass() -> None:
    from tests.unit.labeler.labeler_support import node  # noqa: PLC0415

    ctl = _controller(None)
    base = node("n1", {"nvidia.com/gpu.clique": "a.1"}, {"node.alpha.kubernetes.io/ttl": "0"})
    ctl.handle_event("ADDED", base)
    ctl.dirty.clear()
    # kube-controller-manager's TTL controller rewrites this on every Node as a cluster grows
    ttl = node("n1", {"nvidia.com/gpu.clique": "a.1"}, {"node.alpha.kubernetes.io/ttl": "30"})
    ctl.handle_event("MODIFIED", ttl)
    assert not ctl.dirty.is_set()
    owned = node(
        "n1",
        {"nvidia.com/gpu.clique": "a.1"},
        {"node.alpha.kubernetes.io/ttl": "30", "topology.slinky.slurm.net/spec": "nvl:a"},
    )
    ctl.handle_event("MODIFIED", owned)
    assert ctl.dirty.is_set(), "someone changed an owned annotation: reconcile it"
    ctl.dirty.clear()
    ctl.handle_event("MODIFIED", node("n1", {"nvidia.com/gpu.clique": "b.1"}, {}))
    assert ctl.dirty.is_set(), "a label changed"


def test_a_failure_that_repeats_is_one_event_and_many_counts() -> None:
    from tests.unit.labeler.labeler_support import FakeCluster, gfd_fleet  # noqa: PLC0415

    api = FakeCluster(gfd_fleet())
    ctl = _controller(api)
    ctl.relist()
    assert ctl.run_pass()
    for item in api.nodes.values():  # a broken GFD rollout: no clique labels any more
        item["metadata"]["labels"].pop("nvidia.com/gpu.clique")
    ctl.relist()
    assert not ctl.run_pass()
    assert not ctl.run_pass()
    assert len(api.events) == 1
    errors = ctl.metrics.value("slinky_topology_labeler_errors_total", kind="validation")
    assert errors == 2
