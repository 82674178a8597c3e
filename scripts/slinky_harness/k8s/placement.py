"""Where a workload's pods landed on a control plane, and why the ones that did not land did not.

The Slinky operator makes a NodeSet's pods (StatefulSet mode: ``replicas`` pods; DaemonSet mode:
one per node whose labels and taints admit the pod) and kube-scheduler places them. A pod left
unplaced has FailedScheduling events saying why (:func:`scheduler_messages`); :class:`PodNeeds`
says which nodes a NodeSet's pods may land on and :func:`settle` waits until each pod is placed or
refused (:func:`settle_nodeset` for a NodeSet). The conformance command (its live phase) and
the cluster tier's operator tests share these.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from slinky_harness.k8s.cluster import Cluster

WORKER_TOLERATION = {"key": "nodeset.slinky.slurm.net/worker", "operator": "Exists"}
"""The toleration the operator adds to every NodeSet pod (v1.2.1, workerbuilder)."""
SETTLE_TIMEOUT = 90.0


def _term_matches(labels: dict[str, str], term: dict[str, Any]) -> bool:
    for expr in term.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }.get(op, True)
        if not ok:
            return False
    return True


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if not tol.get("key"):
            if tol.get("operator") == "Exists":
                return True
            continue
        if tol["key"] != taint.get("key"):
            continue
        if tol.get("operator") == "Exists" or str(tol.get("value", "")) == str(
            taint.get("value", "")
        ):
            return True
    return False


@dataclass
class PodNeeds:
    """The scheduling part of a pod template: node selector, required affinity, tolerations
    and the extended resources (GPUs, EFA, ...) each pod asks for (``gpus``)."""

    selector: dict[str, str]
    affinity: dict[str, Any]
    tolerations: list[dict[str, Any]]
    gpus: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of_nodeset(cls, nodeset: dict[str, Any]) -> PodNeeds:
        spec = nodeset["spec"]
        pod = (spec.get("template") or {}).get("spec") or {}
        resources = (spec.get("slurmd") or {}).get("resources") or {}
        wanted = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        return cls(
            selector={str(k): str(v) for k, v in (pod.get("nodeSelector") or {}).items()},
            affinity=dict(pod.get("affinity") or {}),
            tolerations=[*(pod.get("tolerations") or []), WORKER_TOLERATION],
            gpus={str(r): whole_count(n) for r, n in wanted.items() if "/" in str(r)},
        )

    def label_mismatch(self, node: dict[str, Any]) -> list[str]:
        """The selector keys ``node`` fails (``[]``: it matches)."""
        labels = node["metadata"].get("labels") or {}
        return [k for k, v in self.selector.items() if labels.get(k) != v]

    def affinity_ok(self, node: dict[str, Any]) -> bool:
        labels = node["metadata"].get("labels") or {}
        required = (self.affinity.get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        return not required or any(
            _term_matches(labels, t) for t in required.get("nodeSelectorTerms") or []
        )

    def taints_ok(self, node: dict[str, Any]) -> bool:
        taints = (node.get("spec") or {}).get("taints") or []
        return all(
            tolerates(self.tolerations, t)
            for t in taints
            if t.get("effect") in ("NoSchedule", "NoExecute")
        )

    def admits(self, node: dict[str, Any]) -> bool:
        """Labels, affinity and taints (not resources): the operator's DaemonSet-mode test."""
        return not self.label_mismatch(node) and self.affinity_ok(node) and self.taints_ok(node)

    def fits(self, node: dict[str, Any]) -> bool:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        return all(whole_count(allocatable.get(r, "0")) >= n for r, n in self.gpus.items())


def scheduler_messages(cluster: Cluster, namespace: str) -> dict[str, str]:
    """Pod UID -> the scheduler's last FailedScheduling message, from the namespace's events
    (not the pods' PodScheduled condition: the operator rewrites its pods' conditions)."""
    events = cluster.kubectl_json("get", "events", "-n", namespace)["items"]
    events.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    return {
        str(e["involvedObject"].get("uid", "")): str(e.get("message", "")).strip()
        for e in events
        if e.get("reason") == "FailedScheduling" and e["involvedObject"].get("kind") == "Pod"
    }


@dataclass
class Placed:
    """One workload's pods once settled: placed on nodes, or refused with the scheduler's reason."""

    pods: int = 0
    placed: dict[str, str] = field(default_factory=dict)  # pod -> node
    refused: dict[str, str] = field(default_factory=dict)  # pod -> scheduler message


def settle(  # noqa: PLR0917
    cluster: Cluster,
    namespace: str,
    belongs: Callable[[dict[str, Any]], bool],
    expected: int,
    what: str,
    timeout: float = SETTLE_TIMEOUT,
) -> Placed | str:
    """Wait until ``expected`` pods of ``namespace`` that ``belongs`` picks have each been placed
    or refused by the scheduler; the :class:`Placed` result, or what was missing at the
    time-out. A pod counts once seen placed: the operator deletes and remakes NodeSet pods whose
    slurmd never registers (kwok runs no slurmd), so the pods of one moment may be fewer."""
    deadline = time.monotonic() + timeout
    result = Placed()
    seen: set[str] = set()
    while True:
        pods = [
            p for p in cluster.kubectl_json("get", "pods", "-n", namespace)["items"] if belongs(p)
        ]
        refusals = scheduler_messages(cluster, namespace)
        waiting = []
        for pod in pods:
            name = pod["metadata"]["name"]
            seen.add(name)
            if pod["spec"].get("nodeName"):
                result.placed[name] = pod["spec"]["nodeName"]
                result.refused.pop(name, None)
            elif pod["metadata"]["uid"] in refusals and name not in result.placed:
                result.refused[name] = refusals[pod["metadata"]["uid"]]
            elif name not in result.placed:
                waiting.append(name)
        result.pods = len(seen)
        if len(result.placed) + len(result.refused) >= expected and not (
            waiting and len(result.placed) < expected
        ):
            return result
        if time.monotonic() > deadline:
            made = f"{len(seen)} of {expected} pods made"
            left = f", {', '.join(waiting)} neither placed nor refused" if waiting else ""
            return f"{what}: {made}{left}"
        time.sleep(0.5)


def owned_by(pod: dict[str, Any], kind: str, name: str) -> bool:
    """Whether ``pod`` has an owner reference to ``kind``/``name``."""
    return any(
        o.get("kind") == kind and o.get("name") == name
        for o in pod["metadata"].get("ownerReferences") or []
    )


@dataclass
class NodeSetPods:
    """A NodeSet's pods once settled: what they need of a node, how many the operator makes
    (``replicas``, or in DaemonSet mode one per node that admits them) and where they went."""

    needs: PodNeeds
    expected: int
    placed: Placed


def settle_nodeset(
    cluster: Cluster,
    nodeset: dict[str, Any],
    nodes: list[dict[str, Any]],
    what: str,
    timeout: float = SETTLE_TIMEOUT,
) -> NodeSetPods | str:
    """Wait until each pod the operator makes for ``nodeset`` (an object as the API server has
    it) is placed on one of ``nodes`` or refused by the scheduler (:func:`settle`); what was
    missing at the time-out when they did not settle."""
    needs = PodNeeds.of_nodeset(nodeset)
    spec = nodeset["spec"]
    expected = (
        sum(1 for n in nodes if needs.admits(n))
        if spec.get("scalingMode") == "DaemonSet"
        else int(spec.get("replicas") or 0)
    )
    name = nodeset["metadata"]["name"]
    namespace = nodeset["metadata"]["namespace"]
    placed = settle(
        cluster, namespace, lambda p: owned_by(p, "NodeSet", name), expected, what, timeout
    )
    return placed if isinstance(placed, str) else NodeSetPods(needs, expected, placed)


def whole_count(value: object) -> int:
    """A count as values or a Node's allocatable give it (``2``, ``"8"``); 0 for anything else
    (a quantity such as ``"500m"``)."""
    try:
        return int(str(value))
    except ValueError:
        return 0
