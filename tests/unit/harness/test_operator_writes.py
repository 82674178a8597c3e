"""What the operator writes for a release, waited for once (``slinky_harness.k8s.objects``) and
a NodeSet's pods settled once (``slinky_harness.k8s.placement.settle_nodeset``): the conformance
command, the cluster tier's operator tests and the demo share them (issue 31, item 2).

A stand-in cluster answers ``kubectl get`` from a script of successive answers per object.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from slinky_harness.core.errors import WaitTimeout
from slinky_harness.k8s import objects, placement


class ScriptedCluster:
    """``kubectl get KIND NAME -n NS -o json --ignore-not-found``: the next answer scripted for
    (KIND, NAME) (the last one repeats; "" is "not found"); pods and events from lists."""

    def __init__(self, answers: dict[tuple[str, str], list[dict[str, Any] | None]]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str]] = []
        self.pods: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []

    def kubectl(self, verb: str, kind: str, name: str, *rest: str, check: bool = True) -> str:
        assert verb == "get" and "--ignore-not-found" in rest and not check
        self.asked.append((kind, name))
        script = self.answers.get((kind, name), [None])
        found = script.pop(0) if len(script) > 1 else script[0]
        return json.dumps(found) if found is not None else ""

    def kubectl_json(self, verb: str, kind: str, *rest: str) -> dict[str, Any]:
        return {"items": self.pods if kind == "pods" else self.events}


def config(conf: str) -> dict[str, Any]:
    return {"metadata": {"name": "c-config"}, "data": {"slurm.conf": conf}}


FIRST = config("ClusterName=x\n")
"""What the operator writes before its cache knows the NodeSets: no NodeSet, no partition."""
FULL = config("NodeSet=gpu Feature=gpu\nPartitionName=gpu Nodes=gpu\nPartitionName=all Nodes=ALL\n")
MADE = {"metadata": {"name": "c-controller"}}


def test_the_config_is_waited_for_until_it_names_every_partition_and_nodeset() -> None:
    cluster = ScriptedCluster({
        ("configmap", "c-config"): [None, FIRST, FULL],
        ("statefulset", "c-controller"): [MADE],
    })  # fmt: skip
    got = objects.wait_controller_config(
        cluster,  # type: ignore[arg-type]
        "c",
        "ns",
        partitions={"gpu", "all"},
        nodesets=["gpu"],
        timeout=10,
    )
    assert got == FULL
    assert cluster.asked == [("configmap", "c-config")] * 3 + [("statefulset", "c-controller")]
    assert objects.conf_partitions(got) == {"gpu", "all"}
    assert objects.conf_nodesets(got) == {"gpu"}


def test_an_external_controller_has_no_statefulset_to_wait_for() -> None:
    cluster = ScriptedCluster({("configmap", "c-config"): [FIRST]})
    got = objects.wait_controller_config(cluster, "c", "ns", external=True, timeout=1)  # type: ignore[arg-type]
    assert got == FIRST
    assert ("statefulset", "c-controller") not in cluster.asked


def test_a_time_out_names_the_object_and_what_it_last_named() -> None:
    cluster = ScriptedCluster({("configmap", "c-config"): [FIRST]})
    with pytest.raises(WaitTimeout) as caught:
        objects.wait_controller_config(cluster, "c", "ns", partitions=["gpu"], timeout=0)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "configmap ns/c-config naming partitions ['gpu']" in message
    assert "last seen: it names partitions [], NodeSets []" in message


def test_a_missing_object_is_said_to_be_not_created() -> None:
    cluster = ScriptedCluster({})
    with pytest.raises(WaitTimeout, match=r"secret ns/keys; last seen: not created"):
        objects.wait_object(cluster, "secret", "keys", "ns", timeout=0)  # type: ignore[arg-type]


def test_the_writer_stopping_ends_the_wait_at_once() -> None:
    class Stopped(Exception):
        pass

    def alive() -> None:
        raise Stopped

    cluster = ScriptedCluster({("configmap", "c-config"): [FULL]})
    with pytest.raises(Stopped):
        objects.wait_controller_config(cluster, "c", "ns", alive=alive, timeout=60)  # type: ignore[arg-type]
    assert cluster.asked == []


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"allocatable": {"nvidia.com/gpu": "8"}},
    }


def nodeset(mode: str, replicas: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"name": "gpu", "namespace": "ns"},
        "spec": {
            "scalingMode": mode,
            "replicas": replicas,
            "template": {"spec": {"nodeSelector": {"pool": "gpu"}}},
        },
    }


def pod(name: str, owner: str, node_name: str | None) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": name,
            "ownerReferences": [{"kind": "NodeSet", "name": owner}],
        },
        "spec": {"nodeName": node_name} if node_name else {},
    }


NODES = [node("a", pool="gpu"), node("b", pool="gpu"), node("c", pool="cpu")]


@pytest.mark.parametrize(
    ("mode", "replicas", "expected"),
    [("DaemonSet", 0, 2), ("StatefulSet", 3, 3)],
    ids=["daemonset-one-per-admitting-node", "statefulset-its-replicas"],
)
def test_a_nodeset_settles_once_its_own_pods_are_placed(
    mode: str, replicas: int, expected: int
) -> None:
    """A DaemonSet-mode NodeSet makes one pod per node that admits it, a StatefulSet-mode one
    its replicas; pods of another NodeSet do not count."""
    cluster = ScriptedCluster({})
    cluster.pods = [pod(f"gpu-{i}", "gpu", "a") for i in range(expected)]
    cluster.pods.append(pod("other-0", "other", "c"))
    settled = placement.settle_nodeset(cluster, nodeset(mode, replicas), NODES, "NodeSet gpu", 1)  # type: ignore[arg-type]
    assert isinstance(settled, placement.NodeSetPods), settled
    assert settled.expected == expected
    assert set(settled.placed.placed) == {f"gpu-{i}" for i in range(expected)}


def test_a_nodeset_short_of_pods_says_what_is_missing() -> None:
    cluster = ScriptedCluster({})
    cluster.pods = [pod("gpu-0", "gpu", "a"), pod("gpu-1", "gpu", None)]
    settled = placement.settle_nodeset(cluster, nodeset("StatefulSet", 3), NODES, "NodeSet gpu", 0)  # type: ignore[arg-type]
    assert settled == "NodeSet gpu: 2 of 3 pods made, gpu-1 neither placed nor refused"
