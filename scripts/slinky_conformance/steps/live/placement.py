"""Conformance, live phase, ``placement``: every NodeSet's pods and the operator release's
Deployment pods placed by kube-scheduler; for the pods that did not land, what the values should
change: the node selector (no node has the label), the GPU request (no node has that many) or the
tolerations (the nodes are tainted). Waiting and reading the scheduler's verdict is the harness's
(:mod:`slinky_harness.k8s.placement`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from slinky_conformance.context import Outcome, Skipped, StepFailed, say
from slinky_conformance.report import Finding
from slinky_conformance.steps.live.fleet import GPU_RESOURCES
from slinky_conformance.steps.live.install import bound
from slinky_conformance.steps.live.reconcile import start_slurmrestd
from slinky_harness.k8s import operator as slinky_operator
from slinky_harness.k8s import placement
from slinky_harness.k8s.placement import Placed, PodNeeds, tolerates, whole_count

if TYPE_CHECKING:
    from slinky_conformance.context import Context, Doc
    from slinky_conformance.target import Target
    from slinky_harness.k8s.cluster import Cluster


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
            if not tolerates(needs.tolerations, t)
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


def placement_step(ctx: Context) -> Outcome:
    cluster, _ = bound(ctx)
    nodesets: list[Doc] = ctx.extra.get("nodesets") or []
    findings: list[Finding] = []
    lines: list[str] = []
    if nodesets:
        say(
            f"placement: a slurmctld and slurmrestd for the operator, then {len(nodesets)} NodeSets' pods"
        )
        start_slurmrestd(ctx)
    nodes = cluster.kubectl_json("get", "nodes")["items"]
    for nodeset in nodesets:
        findings += _place_nodeset(ctx, cluster, nodeset, nodes, lines)
    findings += _place_deployments(ctx, cluster, lines)
    if not lines:
        raise Skipped("no NodeSet and no operator Deployment to place")
    return Outcome("; ".join(lines), findings)


def _place_nodeset(
    ctx: Context, cluster: Cluster, nodeset: Doc, nodes: list[Doc], lines: list[str]
) -> list[Finding]:
    key = slinky_operator.slurm_nodeset_name(nodeset)
    namespace = nodeset["metadata"].get("namespace") or ctx.extra["namespace"]
    started = time.monotonic()
    settled = placement.settle_nodeset(
        cluster, {**nodeset, "metadata": {**nodeset["metadata"], "namespace": namespace}},
        nodes, f"NodeSet {key}",
    )  # fmt: skip
    if isinstance(settled, str):
        manager = ctx.extra.get("manager")
        log = f"; operator log {manager.log_path}" if manager else ""
        raise StepFailed(f"{settled} in {time.monotonic() - started:.0f}s{log}")
    placed = settled.placed
    lines.append(f"NodeSet {key}: {len(placed.placed)}/{placed.pods} pods placed")
    ctx.extra.setdefault("placed", {})[key] = len(placed.placed)  # the slurm phase's node count
    return nodeset_findings(ctx.target, key, settled.needs, nodes, placed)


def _place_deployments(ctx: Context, cluster: Cluster, lines: list[str]) -> list[Finding]:
    """The operator release's Deployments (operator, webhook): their pods placed."""
    findings = []
    users = ctx.extra.get("operator_release") == (ctx.target.release, ctx.target.namespace)
    for deployment in (
        d for d in ctx.extra.get("operator_objects") or [] if d.get("kind") == "Deployment"
    ):
        name = deployment["metadata"]["name"]
        namespace = deployment["metadata"].get("namespace") or ctx.target.namespace
        selector = deployment["spec"]["selector"].get("matchLabels") or {}

        def mine(pod: Doc, selector: dict[str, str] = selector) -> bool:
            labels = pod["metadata"].get("labels") or {}
            return all(labels.get(k) == v for k, v in selector.items())

        replicas = int(deployment["spec"].get("replicas", 1))
        placed = placement.settle(cluster, namespace, mine, replicas, f"Deployment {name}")
        if isinstance(placed, str):
            raise StepFailed(placed)
        lines.append(f"Deployment {name}: {len(placed.placed)}/{placed.pods} pods placed")
        if placed.refused:
            component = "webhook" if name.endswith("-webhook") else "operator"
            path = ctx.target.path_of("slurm-operator", component, "nodeSelector") if users else ""
            findings.append(Finding(
                path,
                f"Deployment {namespace}/{name}: {len(placed.refused)} of {placed.pods} pods not "
                f"placed (kube-scheduler: {next(iter(placed.refused.values()))})",
                "select labels the nodes carry and tolerate their taints",
            ))  # fmt: skip
    return findings
