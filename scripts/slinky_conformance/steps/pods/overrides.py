"""What the pods phase changes in the user's values so that their cluster fits on one real node,
and why: every change is a line of :attr:`Plan.overrides` (a values path in the user's terms and
what it became), said in the report's notes, so the user knows what differed from their values.

Pure: the values in, the values to install and the lines out; nothing is started here.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slinky_conformance.steps.pods import gres
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
    slurmd runs, the real node's name for a DaemonSet) or why none runs (``not_run``)."""

    name: str
    path: str
    nodes: tuple[str, ...]
    not_run: str = ""
    gres: str = ""
    """``--gres`` of the NodeSet's job when it has emulated GPUs ("" otherwise)."""


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
    if gpu.get("dra"):
        return "gpu.dra"
    if int(gpu.get("count") or 0) > 0:
        return "gpu.count"
    if gpu.get("gres"):
        return "gpu.gres"
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
    _no_gres_weights(values, plan, path)
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
        "only (the whole cluster shares one node)"
    )
    _gpu_limits(values, plan, path)
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


def _no_gres_weights(values: Values, plan: Plan, path: Any) -> None:
    """Without accounting Slurm tracks no GRES as a TRES, so a GRES weight of
    ``scheduling.priority.weightTRES`` is refused (templates/validate.yaml): the other weights
    stay."""
    priority = (values.get("scheduling") or {}).get("priority") or {}
    weights = str(priority.get("weightTRES") or "")
    kept = [w for w in weights.split(",") if w and not w.lower().startswith("gres/")]
    if weights and len(kept) != len(weights.split(",")):
        priority["weightTRES"] = ",".join(kept)
        plan.overrides.append(
            f"{path('scheduling', 'priority', 'weightTRES')}: {weights} -> {','.join(kept)} "
            "(GRES weights need GRES tracked by accounting, which is off on the real node)"
        )


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
    selects the one node, its Slurm node named after it). A NodeSet that declares GPUs gets
    them emulated (:mod:`.gres`); one whose GRES cannot be, or a second DaemonSet (its slurmd
    would take the first one's node name), runs no pod."""
    defaults = values.setdefault("nodesetDefaults", {})
    if not defaults.get("oversubscribeNode"):
        plan.overrides.append(
            f"{path('nodesetDefaults', 'oversubscribeNode')}: true (every slurmd pod shares "
            "the one real node)"
        )
    defaults["oversubscribeNode"] = True
    defaults["podSpec"] = _pin(defaults.get("podSpec"), node=plan.node)
    daemon_node = plan.node.split(".", 1)[0]
    daemon_taken = ""
    conf: list[str] = []
    for name, block in sorted((values.get("nodesets") or {}).items()):
        if not isinstance(block, dict):
            continue
        merged = merge(defaults, block)
        if merged.get("enabled", True) is False:
            continue
        block["podSpec"] = _pin(block.get("podSpec"), plan.node)
        block["oversubscribeNode"] = True
        daemon = merged.get("scalingMode") == "DaemonSet"
        emulated = gres.emulation(merged) if gpu_declared(merged) else gres.Emulation()
        taken = daemon_taken if daemon else ""
        why = _not_run(merged, emulated, path("nodesets", name), taken, daemon_node)
        if why:
            given = merged.get("replicas", 1)
            block["replicas"] = 0
            # a DaemonSet ignores replicas: no node carries this label
            block["podSpec"]["nodeSelector"] = {NO_NODE_LABEL: "true"}
            plan.overrides.append(
                f"{path('nodesets', name, 'replicas')}: {given} -> 0, no pod on any node ({why})"
            )
            plan.nodesets.append(NodeSetPlan(name, path("nodesets", name), (), why))
            continue
        if daemon:
            daemon_taken = name
            node = daemon_node
            plan.overrides.append(
                f"{path('nodesets', name)}: a DaemonSet, one slurmd on the real node (Slurm "
                f"node {node})"
            )
        else:
            _set_replicas(block, path("nodesets", name), int(defaults.get("replicas", 1)), plan)
            padding = int(merged.get("ordinalPadding") or 0)
            node = f"{name}-{0:0{padding}d}" if padding else f"{name}-0"
        job_gres = _emulate(
            block, emulated, node, plan=plan, conf=conf, where=path("nodesets", name)
        )
        plan.nodesets.append(NodeSetPlan(name, path("nodesets", name), (node,), gres=job_gres))
    if conf:
        _gres_conf(values, plan, path, conf)


def _not_run(merged: Values, emulated: gres.Emulation, where: str, taken: str, node: str) -> str:
    """Why the NodeSet at ``where`` runs no pod on the real node ("" when it runs one); ``taken``:
    the DaemonSet NodeSet whose slurmd already has the Slurm node name ``node``, when this one
    is a DaemonSet too."""
    if emulated.refused:
        key = gpu_declared(merged)
        return (
            f"declares GRES ({where}.{key}) that the real node cannot emulate: "
            f"{emulated.refused}; its pods and its job run on kwok and in the slurm phase only"
        )
    if taken:
        return (
            f"a second DaemonSet: its slurmd would take the Slurm node name {node} of {taken}'s "
            "on the one real node"
        )
    return ""


def _emulate(
    block: Values, emulated: gres.Emulation, node: str, *, plan: Plan, conf: list[str], where: str
) -> str:
    """The emulated GPUs of the NodeSet ``block`` (Slurm node ``node``): its device files, its
    gres.conf lines added to ``conf``, said; the ``--gres`` of its job ("" without GPUs)."""
    if not emulated.gpus:
        return ""
    gres.add_devices(block, emulated.total())
    conf.extend(gres.conf_lines(node, emulated.gpus))
    declared = ", ".join(f"{where}.{key}" for key in emulated.source)
    plan.overrides.append(
        f"{where}: {emulated.total()} emulated GPU device files ({gres.DEVICE_DIR}/gpu*, char "
        f"1:3, made by an init container) for Gres={','.join(g.gres() for g in emulated.gpus)}, "
        f"as declared in {declared} (the real node has no GPUs)"
    )
    return emulated.job_gres()


def _gres_conf(values: Values, plan: Plan, path: Any, lines: list[str]) -> None:
    """gres.conf: the emulated GPUs' ``File=`` lines, then the user's lines that need no real
    hardware (in place of the generated ``AutoDetect``)."""
    files = values.setdefault("configFiles", {})
    given = files.get("gres.conf")
    where = path("configFiles", "gres.conf")
    if given is None:
        autodetect = values.get("gpu", {}).get("autoDetect") or {}
        plan.overrides.append(
            f"{where}: the emulated GPUs' File= lines in place of the generated AutoDetect "
            f"({path('gpu', 'autoDetect')}: {dict(autodetect)}; AutoDetect needs the vendor's "
            f"library and GPUs): {'; '.join(lines)}"
        )
        kept: list[str] = []
    else:
        kept, dropped = gres.kept_conf_lines(str(given))
        plan.overrides.append(
            f"{where}: the emulated GPUs' File= lines ({'; '.join(lines)}) in place of the "
            f"lines that need real GPUs or device files ({'; '.join(dropped) or 'none'})"
        )
    files["gres.conf"] = "\n".join([*lines, *kept]) + "\n"


def _gpu_limits(values: Values, plan: Plan, path: Any) -> None:
    """A device-plugin limit of 0 for each emulated NodeSet whose ``gpu`` the chart turns into
    one (the real node has no device plugin; a limit the values set keeps the chart's off)."""
    defaults = values.get("nodesetDefaults") or {}
    for nodeset in plan.nodesets:
        if not nodeset.gres:
            continue
        block = values["nodesets"][nodeset.name]
        resource = gres.device_resource(merge(defaults, block))
        if resource:
            resources = block.setdefault("slurmd", {}).setdefault("resources", {})
            resources["limits"] = {**(resources.get("limits") or {}), resource: 0}
            plan.overrides.append(
                f"{path('nodesets', nodeset.name, 'slurmd', 'resources', 'limits')}: "
                f"{resource}: 0 (the chart's limit from gpu; no device plugin on the real node)"
            )


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
