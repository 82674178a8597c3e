"""Where the live phase's pods landed, and why the ones that did not land did not.

The operator makes a NodeSet's pods (StatefulSet mode: ``replicas`` pods; DaemonSet mode: one
per node whose labels and taints admit the pod) and kube-scheduler places them on the fake
fleet. A pod left unplaced has FailedScheduling events saying why; this module reads them, and
the Nodes, to say what the values should change: the node selector (no node has the label), the
GPU request (no node has that many) or the tolerations (the nodes are tainted).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slinky_harness.apps.conformance.fleet import GPU_RESOURCES, whole_count
from slinky_harness.apps.conformance.report import Finding

if TYPE_CHECKING:
    from collections.abc import Callable

    from slinky_harness.apps.conformance.target import Target
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


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
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
            _tolerates(self.tolerations, t)
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


def label_values(nodes: list[dict[str, Any]], key: str) -> list[str]:
    return sorted({str((n["metadata"].get("labels") or {})[key]) for n in nodes
                   if key in (n["metadata"].get("labels") or {})})  # fmt: skip


def user_set(block: dict[str, Any], *parts: str) -> bool:
    node: Any = block
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def where_set(target: Target, key: str, *parts: str) -> str:
    """The values path of ``parts`` under NodeSet ``key``: ``nodesets.<key>...`` unless only the
    user's ``nodesetDefaults`` sets it."""
    block = target.user_block("slurm-cluster")
    if not user_set(block, "nodesets", key, *parts) and user_set(block, "nodesetDefaults", *parts):
        return target.path_of("slurm-cluster", "nodesetDefaults", *parts)
    return target.path_of("slurm-cluster", "nodesets", key, *parts)


def gpu_path(target: Target, key: str, resource: str) -> str:
    """Where the NodeSet's per-pod GPU count is set: ``slurmd.resources.limits[...]`` where the
    user wrote it, else ``gpu.count``."""
    for kind in ("limits", "requests"):
        parts = ("slurmd", "resources", kind, resource)
        block = target.user_block("slurm-cluster")
        if user_set(block, "nodesets", key, *parts) or user_set(block, "nodesetDefaults", *parts):
            return where_set(target, key, *parts)
    return where_set(target, key, "gpu", "count")


def nodeset_findings(
    target: Target, key: str, needs: PodNeeds, nodes: list[dict[str, Any]], placed: Placed
) -> list[Finding]:
    """What the values must change so that the NodeSet's refused pods (or, in DaemonSet mode,
    its pods never made) land."""
    admitted = [n for n in nodes if needs.admits(n)]
    said = next(iter(placed.refused.values()), "")
    evidence = f" (kube-scheduler: {said})" if said else ""
    if not admitted:
        matching = [n for n in nodes if not needs.label_mismatch(n)]
        if not matching:
            missing = sorted({k for n in nodes for k in needs.label_mismatch(n)})
            have = "; ".join(
                f"{k}: {', '.join(label_values(nodes, k)) or 'no node has the label'}"
                for k in missing
            )
            wanted = ", ".join(f"{k}={needs.selector[k]}" for k in missing)
            return [Finding(
                where_set(target, key, "podSpec", "nodeSelector"),
                f"NodeSet {key}: no node has {wanted}{evidence}; the fleet has: {have}",
                "select labels the nodes carry (one of the values above), or label the nodes",
            )]  # fmt: skip
        if not any(needs.affinity_ok(n) for n in matching):
            return [Finding(
                where_set(target, key, "podSpec", "affinity"),
                f"NodeSet {key}: no node matching the nodeSelector satisfies the required node "
                f"affinity{evidence}",
                "require labels the nodes carry, or move the rule to preferredDuringScheduling",
            )]  # fmt: skip
        taints = sorted({
            f"{t['key']}={t.get('value', '')}:{t['effect']}"
            for n in matching for t in (n.get("spec") or {}).get("taints") or []
            if not _tolerates(needs.tolerations, t)
        })  # fmt: skip
        return [Finding(
            where_set(target, key, "podSpec", "tolerations"),
            f"NodeSet {key}: every node it selects is tainted {', '.join(taints)}{evidence}",
            f"add tolerations for {', '.join(taints)}",
        )]  # fmt: skip
    for resource, count in needs.gpus.items():
        most = max(
            whole_count((n["status"].get("allocatable") or {}).get(resource, "0")) for n in admitted
        )
        if count > most:
            gpu = resource in GPU_RESOURCES.values()
            path = (
                gpu_path(target, key, resource)
                if gpu
                else where_set(target, key, "slurmd", "resources", "limits", resource)
            )
            return [Finding(
                path,
                f"NodeSet {key}: each pod asks for {count} {resource}, and the most any node it "
                f"selects has is {most}{evidence}",
                (f"ask for at most {most} {'GPUs' if gpu else resource} per pod" if most else
                 f"select nodes that have {resource}, or ask for none"),
            )]  # fmt: skip
    if placed.refused:
        fit = sum(1 for n in admitted if needs.fits(n))
        return [Finding(
            where_set(target, key, "replicas"),
            f"NodeSet {key}: {len(placed.refused)} of {placed.pods} pods not placed{evidence}; "
            f"{fit} nodes fit its pods",
            f"ask for at most {fit} replicas, or add nodes that fit",
        )]  # fmt: skip
    return []
