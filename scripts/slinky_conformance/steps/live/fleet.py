"""The fake Node fleet of the live phase when neither ``--fabric`` nor ``--nodes`` is given:
made from the values, so that a deployment whose values are consistent finds the nodes it asks
for.

Each enabled NodeSet (slurm-cluster's ``nodesets.<name>`` merged over ``nodesetDefaults``) gets
as many nodes as it has replicas (two for a DaemonSet NodeSet), carrying the labels of its
``podSpec.nodeSelector`` and of the first term of its required node affinity, a taint for each
toleration it has, its per-pod GPU request (``slurmd.resources`` ``nvidia.com/gpu`` /
``amd.com/gpu``, else ``gpu.count`` of ``gpu.vendor``) as allocatable GPUs, and the other extended
resources slurmd asks for (EFA, RDMA devices) as allocatable too. The other
components (the operator and its webhook, slurmctld, slurmrestd, the bridge, the labeler) get
:data:`SYSTEM_NODES` untainted nodes with the operator's and webhook's node selector labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slinky_harness.helm.values import merge
from slinky_harness.k8s.fleet import Fleet, NodeGroup
from slinky_harness.k8s.placement import whole_count

if TYPE_CHECKING:
    from slinky_conformance.target import Target

GPU_RESOURCES = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}
"""Extended resource of each ``gpu.vendor``: what the vendor's device plugin advertises."""
NODE_RESOURCES = {"cpu": "256", "memory": "2Ti", "pods": "110"}
"""CPU and memory of every node made from values: more than any pod here asks for."""
SYSTEM_NODES = 3
DAEMONSET_NODES = 2
MAX_NODES_PER_NODESET = 64
"""A NodeSet with more replicas gets this many nodes (a bound on the control plane's start)."""


@dataclass(frozen=True)
class NodeSetWants:
    """What one enabled NodeSet's pods ask of a node, read from the merged values."""

    key: str
    replicas: int
    daemonset: bool
    selector: dict[str, str]
    affinity: dict[str, Any]
    tolerations: list[dict[str, Any]]
    gpu_resource: str = ""
    gpus: int = 0
    values: dict[str, Any] = field(default_factory=dict, compare=False)


def nodeset_values(target: Target) -> dict[str, dict[str, Any]]:
    """Enabled NodeSets by key: ``nodesetDefaults`` under ``nodesets.<key>``, as the chart
    merges them (empty when the deployment has no slurm-cluster)."""
    if not target.enabled("slurm-cluster"):
        return {}
    values = target.chart_values("slurm-cluster")
    defaults = values.get("nodesetDefaults") or {}
    out: dict[str, dict[str, Any]] = {}
    for key, given in (values.get("nodesets") or {}).items():
        merged = merge(defaults, given or {})
        if merged.get("enabled", True) is not False:
            out[str(key)] = merged
    return out


def gpu_request(merged: dict[str, Any]) -> tuple[str, int]:
    """(extended resource, count) a NodeSet's slurmd asks for per pod; ("", 0) for none."""
    resources = (merged.get("slurmd") or {}).get("resources") or {}
    for kind in ("limits", "requests"):
        for resource in GPU_RESOURCES.values():
            if resource in (resources.get(kind) or {}):
                return resource, whole_count(resources[kind][resource])
    gpu = merged.get("gpu") or {}
    count = whole_count(gpu.get("count") or 0)
    if count and not gpu.get("dra"):
        return GPU_RESOURCES.get(str(gpu.get("vendor") or "nvidia"), "nvidia.com/gpu"), count
    return "", 0


def extended_resources(merged: dict[str, Any]) -> dict[str, str]:
    """Extended resources (``vendor.example/name``: EFA, RDMA, GPUs) slurmd asks for per pod."""
    resources = (merged.get("slurmd") or {}).get("resources") or {}
    wanted = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
    return {str(k): str(v) for k, v in wanted.items() if "/" in str(k)}


def wants(key: str, merged: dict[str, Any]) -> NodeSetWants:
    pod = merged.get("podSpec") or {}
    resource, count = gpu_request(merged)
    return NodeSetWants(
        key=key,
        replicas=max(whole_count(merged.get("replicas") or 0), 0),
        daemonset=merged.get("scalingMode") == "DaemonSet",
        selector={str(k): str(v) for k, v in (pod.get("nodeSelector") or {}).items()},
        affinity=dict(pod.get("affinity") or {}),
        tolerations=list(pod.get("tolerations") or []),
        gpu_resource=resource,
        gpus=count,
        values=merged,
    )


def affinity_labels(affinity: dict[str, Any]) -> dict[str, str]:
    """Labels that satisfy the first term of a required node affinity (``In``: its first value,
    ``Exists``: ``"true"``)."""
    required = (affinity.get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    labels: dict[str, str] = {}
    for expr in (terms[0].get("matchExpressions") or []) if terms else []:
        if expr.get("operator") == "In" and expr.get("values"):
            labels[str(expr["key"])] = str(expr["values"][0])
        elif expr.get("operator") == "Exists":
            labels[str(expr["key"])] = "true"
    return labels


def tolerated_taints(tolerations: list[dict[str, Any]]) -> list[dict[str, str]]:
    """A taint for each toleration that names a key (an ``Equal`` one with its value)."""
    taints = []
    for toleration in tolerations:
        if not toleration.get("key"):
            continue
        taint = {"key": str(toleration["key"]), "effect": str(toleration.get("effect") or "")}
        if not taint["effect"]:
            taint["effect"] = "NoSchedule"
        if toleration.get("operator", "Equal") == "Equal" and toleration.get("value"):
            taint["value"] = str(toleration["value"])
        taints.append(taint)
    return taints


def _group_name(text: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return name[:40].strip("-") or "nodes"


def system_labels(target: Target) -> dict[str, str]:
    """Node selector labels of the operator and its webhook (when the deployment brings them)."""
    labels: dict[str, str] = {}
    if target.enabled("slurm-operator"):
        values = target.chart_values("slurm-operator")
        for component in ("operator", "webhook"):
            selector = (values.get(component) or {}).get("nodeSelector") or {}
            labels.update({str(k): str(v) for k, v in selector.items()})
    return labels


def fleet_from_values(target: Target) -> Fleet:
    """The fleet the values ask for (see the module doc)."""
    groups = [
        NodeGroup(
            name="system",
            count=SYSTEM_NODES,
            name_pattern="system-{n}",
            resources=dict(NODE_RESOURCES),
            block_size=SYSTEM_NODES,
            labels=system_labels(target),
        )
    ]
    for key, merged in nodeset_values(target).items():
        want = wants(key, merged)
        count = DAEMONSET_NODES if want.daemonset else max(want.replicas, 1)
        resources = {**NODE_RESOURCES, **extended_resources(merged)}
        if want.gpu_resource:
            resources[want.gpu_resource] = str(want.gpus)
        name = _group_name(f"nodeset-{key}")
        groups.append(
            NodeGroup(
                name=name,
                count=min(count, MAX_NODES_PER_NODESET),
                name_pattern=f"{name}-{{n}}",
                resources=resources,
                block_size=count,
                labels={**affinity_labels(want.affinity), **want.selector},
                taints=tuple(tolerated_taints(want.tolerations)),
            )
        )
    return Fleet(name="from-values", groups=tuple(groups))


def describe(fleet: Fleet) -> str:
    """``system: 3, nodeset-gpu: 2 (nvidia.com/gpu=8; scheduler...=worker)``: the groups."""
    parts = []
    for group in fleet.groups:
        extra = [f"{k}={v}" for k, v in sorted(group.resources.items()) if "/" in k]
        extra += [f"{k}={v}" for k, v in sorted(group.labels.items())][:4]
        extra += [f"taint {t['key']}:{t['effect']}" for t in group.taints]
        parts.append(f"{group.name}: {group.count}" + (f" ({'; '.join(extra)})" if extra else ""))
    return ", ".join(parts)
