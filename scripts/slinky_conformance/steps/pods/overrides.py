"""What the pods phase changes in the user's values so that their cluster fits on one real node,
and why: every change is a line of :attr:`Plan.overrides` (a values path in the user's terms and
what it became), said in the report's notes, so the user knows what differed from their values.

Pure: the values in, the values to install and the lines out; nothing is started here.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slinky_harness.helm.values import merge

if TYPE_CHECKING:
    from slinky_conformance.target import Target

CLUSTER = "slurm-cluster"
OPERATOR = "slurm-operator"
HOSTNAME_LABEL = "kubernetes.io/hostname"
NO_NODE_LABEL = "conformance.slinky.slurm.net/not-on-real-pods"
"""The node label a NodeSet kept off real pods selects (no node has it)."""
SMALL = {"requests": {"cpu": "50m", "memory": "64Mi"}}
"""The requests of every Slurm container on the real node: a whole cluster shares its CPUs."""
NO_CGROUP_CONF = "CgroupPlugin=disabled\n"
NO_CGROUP_MAP = {"ProctrackType": "proctrack/linuxproc", "TaskPlugin": "task/none"}
"""With ``CgroupPlugin=disabled`` Slurm's defaults (``proctrack/cgroup``, ``task/cgroup``) make
slurmd exit; the chart's documented setting for hosts without cgroup v2."""

Values = dict[str, Any]


@dataclass(frozen=True)
class NodeSetPlan:
    """One NodeSet of the values: its Slurm nodes on real pods (``nodes``: ``<name>-0`` when one
    slurmd runs) or why none runs (``not_run``)."""

    name: str
    path: str
    nodes: tuple[str, ...]
    not_run: str = ""


@dataclass
class Plan:
    """The values to install on the real node, the NodeSets and every override made."""

    node: str
    cluster_values: Values
    operator_values: Values
    nodesets: list[NodeSetPlan] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)

    def slurmd_count(self) -> int:
        return sum(len(n.nodes) for n in self.nodesets)


def gpu_declared(nodeset: Values) -> str:
    """The values key of ``nodeset`` (merged with ``nodesetDefaults``) that declares GPUs or
    other GRES with device files, or "" when none does."""
    gpu = nodeset.get("gpu") or {}
    if int(gpu.get("count") or 0) > 0:
        return "gpu.count"
    for key in ("gres", "dra"):
        if gpu.get(key):
            return f"gpu.{key}"
    conf_map = nodeset.get("extraConfMap") or {}
    if any(str(k).lower() == "gres" and v for k, v in conf_map.items()):
        return "extraConfMap.Gres"
    extra = nodeset.get("extraConf") or ""
    if any(token.lower().startswith("gres=") for token in str(extra).split()):
        return "extraConf"
    return ""


def _pin(pod_spec: Values | None, node: str) -> Values:
    """``pod_spec`` selecting ``node`` by its host name label, its other node labels and its
    affinity dropped (the values installed are the merged values: only the chart's default
    ``kubernetes.io/os: linux`` comes back, which the node has)."""
    spec = dict(pod_spec or {})
    spec["nodeSelector"] = {HOSTNAME_LABEL: node}
    spec["affinity"] = {}
    return spec


def _set_replicas(
    block: Values, path: str, default: int, plan: Plan, *, want: int = 1, why: str = ""
) -> None:
    given = block.get("replicas", default)
    if given != want:
        plan.overrides.append(f"{path}.replicas: {given} -> {want}{why}")
    block["replicas"] = want


def cluster_plan(target: Target, node: str, *, cgroup_v2: bool) -> Plan:
    """The plan of the deployment ``target`` on the real node ``node`` (``cgroup_v2``: the node's
    host has a pure cgroup v2 hierarchy, which Slurm's default cgroup plugin needs)."""
    values = copy.deepcopy(target.chart_values(CLUSTER))
    operator = copy.deepcopy(target.chart_values(OPERATOR)) if target.enabled(OPERATOR) else {}
    plan = Plan(node, values, _operator_values(operator, node))

    def path(*parts: str | int) -> str:
        return target.path_of(CLUSTER, *parts)

    pinned = f"{HOSTNAME_LABEL}={node}"
    plan.overrides.append(
        f"every pod's podSpec.nodeSelector ({path('controller')}, {path('restapi')}, "
        f"{path('loginsets')}, {path('nodesets')}): only {pinned}, affinity cleared "
        "(one real node runs every pod)"
    )
    controller = values.setdefault("controller", {})
    controller["podSpec"] = _pin(controller.get("podSpec"), node)
    if (controller.get("persistence") or {}).get("enabled"):
        plan.overrides.append(
            f"{path('controller', 'persistence', 'enabled')}: false (no storage provisioner)"
        )
    controller["persistence"] = {**(controller.get("persistence") or {}), "enabled": False}
    containers = [("controller", "slurmctld"), ("restapi", "slurmrestd")]
    restapi = values.setdefault("restapi", {})
    restapi["podSpec"] = _pin(restapi.get("podSpec"), node)
    _set_replicas(restapi, path("restapi"), 1, plan)
    accounting = values.setdefault("accounting", {})
    if accounting.get("enabled"):
        plan.overrides.append(
            f"{path('accounting', 'enabled')}: false (no database on the real node; the slurm "
            "phase checks accounting with a real slurmdbd)"
        )
    accounting["enabled"] = False
    defaults = values.setdefault("loginsetDefaults", {})
    defaults["podSpec"] = _pin(defaults.get("podSpec"), node)
    for name, login in (values.get("loginsets") or {}).items():
        if isinstance(login, dict):
            login["podSpec"] = _pin(login.get("podSpec"), node)
            _set_replicas(login, path("loginsets", name), int(defaults.get("replicas", 1)), plan)
            containers.append((f"loginsets.{name}", "login"))
    _nodesets(values, plan, path)
    for block, container in [*containers, *_slurmd_blocks(values)]:
        _small(values, block, container)
    plan.overrides.append(
        f"resources of slurmctld, slurmrestd, login and slurmd: requests {SMALL['requests']} "
        "only (the whole cluster shares one node; GPU limits dropped)"
    )
    if not cgroup_v2:
        files = values.setdefault("configFiles", {})
        files["cgroup.conf"] = NO_CGROUP_CONF
        _no_cgroup_plugins(controller)
        plan.overrides.append(
            f"{path('configFiles', 'cgroup.conf')}: {NO_CGROUP_CONF.strip()} and "
            f"{path('controller', 'extraConfMap')}: "
            f"{', '.join(f'{k}={v}' for k, v in NO_CGROUP_MAP.items())} (this host has no pure "
            "cgroup v2 hierarchy, which Slurm's cgroup/v2 plugin needs)"
        )
    return plan


def _operator_values(operator: Values, node: str) -> Values:
    """The operator release's values: the user's (or the chart's defaults when the deployment
    brings no operator), its pods on the real node and the webhook certificate from the chart."""
    out = dict(operator)
    for part in ("operator", "webhook"):
        block = dict(out.get(part) or {})
        block["nodeSelector"] = {HOSTNAME_LABEL: node}
        block["affinity"] = {}
        block["replicas"] = 1
        out[part] = block
    out["certManager"] = {**(out.get("certManager") or {}), "enabled": False}
    return out


def _nodesets(values: Values, plan: Plan, path: Any) -> None:
    """Each enabled NodeSet: one slurmd on the real node (StatefulSet replicas 1; a DaemonSet
    selects the one node), none for a NodeSet that declares GPUs (the real node has none)."""
    defaults = values.setdefault("nodesetDefaults", {})
    if not defaults.get("oversubscribeNode"):
        plan.overrides.append(
            f"{path('nodesetDefaults', 'oversubscribeNode')}: true (every slurmd pod shares "
            "the one real node)"
        )
    defaults["oversubscribeNode"] = True
    defaults["podSpec"] = _pin(defaults.get("podSpec"), node=plan.node)
    for name, block in sorted((values.get("nodesets") or {}).items()):
        if not isinstance(block, dict):
            continue
        merged = merge(defaults, block)
        if merged.get("enabled", True) is False:
            continue
        block["podSpec"] = _pin(block.get("podSpec"), plan.node)
        block["oversubscribeNode"] = True
        gres = gpu_declared(merged)
        if gres:
            given = merged.get("replicas", 1)
            block["replicas"] = 0
            # a DaemonSet ignores replicas: no node carries this label
            block["podSpec"]["nodeSelector"] = {NO_NODE_LABEL: "true"}
            why = (
                f"declares GPUs ({path('nodesets', name, *gres.split('.'))}) and the real node "
                "has none: its pods and its job run on kwok and in the slurm phase only"
            )
            plan.overrides.append(
                f"{path('nodesets', name, 'replicas')}: {given} -> 0, no pod on any node ({why})"
            )
            plan.nodesets.append(NodeSetPlan(name, path("nodesets", name), (), why))
            continue
        if merged.get("scalingMode") == "DaemonSet":
            plan.overrides.append(
                f"{path('nodesets', name)}: a DaemonSet, one slurmd on the real node"
            )
        else:
            _set_replicas(block, path("nodesets", name), int(defaults.get("replicas", 1)), plan)
        plan.nodesets.append(NodeSetPlan(name, path("nodesets", name), (f"{name}-0",)))


def _slurmd_blocks(values: Values) -> list[tuple[str, str]]:
    return [(f"nodesets.{name}", "slurmd") for name in values.get("nodesets") or {}]


def _small(values: Values, block: str, container: str) -> None:
    node: Values = values
    for part in block.split("."):
        node = node.setdefault(part, {})
    node.setdefault(container, {})["resources"] = copy.deepcopy(SMALL)


def _no_cgroup_plugins(controller: Values) -> None:
    """:data:`NO_CGROUP_MAP` in the controller's settings: in ``extraConf`` when the values use
    it (it wins over ``extraConfMap``), lines naming the same options replaced."""
    extra = controller.get("extraConf")
    if extra:
        kept = [
            line
            for line in str(extra).splitlines()
            if line.split("=", 1)[0].strip() not in NO_CGROUP_MAP
        ]
        controller["extraConf"] = "\n".join(
            [*kept, *(f"{k}={v}" for k, v in NO_CGROUP_MAP.items())]
        )
    else:
        controller["extraConfMap"] = {**(controller.get("extraConfMap") or {}), **NO_CGROUP_MAP}
