"""Conformance, static phase: what slurmctld will be given (``slurm-conf``): partitions, a
default partition, ``GresTypes`` for every NodeSet's ``Gres``, and a priority plugin that
slurm-bridge can read when the deployment installs it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from slinky_conformance.context import Context, Outcome
from slinky_conformance.report import Finding
from slinky_conformance.steps.static.references import cluster_values
from slinky_conformance.target import CLUSTER
from slinky_harness.k8s import operator as slinky_operator

if TYPE_CHECKING:
    from slinky_conformance.target import Target


# -- what slurmctld will be given -----------------------------------------------------------------

_CONF_ITEM = re.compile(r"(?i)(?:^|\s)([A-Za-z]+)=(\S+)")
GPU_HOOKS = (("vendor", "nvidia", "dcgm", "enabled"),)
"""Vendor hooks that only serve GPU nodes: on without a GPU NodeSet, they do nothing."""


def _conf_items(text: str) -> dict[str, str]:
    """``Key=Value`` items of a slurm.conf line (keys lower-cased)."""
    return {k.lower(): v for k, v in _CONF_ITEM.findall(text)}


def _slurm_partitions(controller: dict[str, Any], nodesets: list[dict[str, Any]]) -> dict[str, str]:
    """Partition -> its slurm.conf items, as the operator writes them: the Controller's
    ``PartitionName=`` lines and one partition per NodeSet with ``partition.enabled``."""
    out: dict[str, str] = {}
    for line in str(controller.get("extraConf") or "").splitlines():
        items = _conf_items(line)
        name = items.get("partitionname", "")
        if name and name.upper() != "DEFAULT":
            out[name] = line
    for nodeset in nodesets:
        partition = nodeset["spec"].get("partition") or {}
        if partition.get("enabled"):
            out[slinky_operator.slurm_nodeset_name(nodeset)] = str(partition.get("config") or "")
    return out


def _gres_source(target: Target, nodeset: str) -> str:
    block = target.user_block(CLUSTER)
    entry = ((block.get("nodesets") or {}).get(nodeset)) or {}
    for key in ("extraConfMap", "extraConf", "gpu"):
        if isinstance(entry, dict) and key in entry:
            return target.path_of(CLUSTER, "nodesets", nodeset, key)
    return target.path_of(CLUSTER, "nodesets", nodeset)


def gres_findings(
    target: Target, controller: dict[str, Any], nodesets: list[dict[str, Any]]
) -> list[Finding]:
    """A NodeSet's nodes declare GRES (``Gres=gpu:8``) that slurm.conf's ``GresTypes`` does not
    name: slurmctld gives them no GPUs (``Gres=(null)``), and a ``--gres=gpu`` job never runs."""
    types: set[str] = set()
    for line in str(controller.get("extraConf") or "").splitlines():
        if "grestypes" in _conf_items(line):
            types |= {t.strip() for t in _conf_items(line)["grestypes"].split(",")}
    findings = []
    for nodeset in nodesets:
        name = slinky_operator.slurm_nodeset_name(nodeset)
        gres = _conf_items(str(nodeset["spec"].get("extraConf") or "")).get("gres", "")
        if gres.lower() in ("", "(null)", "none"):
            continue
        missing = sorted({g.split(":")[0] for g in gres.split(",")} - types)
        if missing:
            other_case = sorted(t for t in types if t.lower() in {m.lower() for m in missing})
            cased = (
                f" (it has GresTypes={','.join(other_case)}: GRES names are case-sensitive)"
                if other_case
                else ""
            )
            findings.append(
                Finding(
                    _gres_source(target, name),
                    f"NodeSet {name}'s nodes declare Gres={gres}, but slurm.conf has no "
                    f"GresTypes={','.join(missing)}{cased}: slurmctld gives them no GPUs "
                    "(Gres=(null)) and a --gres job is never placed",
                    f"declare the GPUs with {target.path_of(CLUSTER, 'nodesets', name, 'gpu')} "
                    "(the chart then sets GresTypes=gpu), or add GresTypes="
                    f"{','.join(missing)} ({target.path_of(CLUSTER, 'controller', 'extraConfMap', 'GresTypes')})",
                )
            )
    return findings


def partition_default_findings(
    target: Target, partitions: dict[str, str], nodesets: int
) -> list[Finding]:
    """No partition (with NodeSets to run on), or none marked ``Default=YES``: a job without
    ``-p`` is refused ("No partition specified or system default partition")."""
    at = target.path_of(CLUSTER, "partitions")
    if not partitions:
        if not nodesets:
            return []
        return [
            Finding(
                at,
                "slurmctld gets no partition: every job is refused, its nodes idle",
                f"enable {target.path_of(CLUSTER, 'partitions', 'all', 'enabled')} (nodesets: "
                "[ALL]) or a NodeSet's own partition (nodesets.<name>.partition.enabled)",
            )
        ]
    if any(_conf_items(conf).get("default", "").upper() == "YES" for conf in partitions.values()):
        return []
    return [
        Finding(
            at,
            f"no partition is the default (none of {', '.join(sorted(partitions))} has "
            "Default=YES): a job without -p is refused",
            "add Default=YES to one partition's config (partitions.<name>.config, or "
            "nodesets.<name>.partition.config)",
        )
    ]


BRIDGE = "slurm-bridge"
BASIC_PRIORITY = "priority/basic"


def bridge_priority_findings(target: Target, controller: dict[str, Any]) -> list[Finding]:
    """slurm-bridge (1.2.1) reads a job's priority as an int32; ``priority/basic`` (the ``fifo``
    preset's) numbers jobs from 4294901759 down, so the bridge's job cache fails and no bridged
    pod is ever placed (seen on real pods: tests/cluster/test_real_slurm.py)."""
    if not target.enabled(BRIDGE):
        return []
    types = [
        _conf_items(line)["prioritytype"]
        for line in str(controller.get("extraConf") or "").splitlines()
        if "prioritytype" in _conf_items(line)
    ]
    if not types or types[-1] != BASIC_PRIORITY:
        return []
    scheduling = (cluster_values(target) or {}).get("scheduling") or {}
    paths = list(target.where(BASIC_PRIORITY))
    if not paths and scheduling.get("preset") == "fifo":
        paths = [target.path_of(CLUSTER, "scheduling", "preset")]
    at = paths[0] if paths else target.path_of(CLUSTER, "controller", "extraConf")
    return [
        Finding(
            at,
            f"PriorityType={BASIC_PRIORITY} with slurm-bridge: Slurm numbers jobs from "
            "4294901759 down, which slurm-bridge 1.2.1 reads as an int32, so its job cache "
            "fails and no bridged pod is ever placed",
            f"use priority/multifactor ({target.path_of(CLUSTER, 'scheduling', 'priority', 'type')}"
            f", or {target.path_of(CLUSTER, 'scheduling', 'preset')}: fairshare or none)",
        )
    ]


def check_slurm_conf(ctx: Context) -> Outcome:
    controllers = [d for d in ctx.rendered if d.get("kind") == "Controller"]
    if not controllers or (controllers[0].get("spec") or {}).get("external"):
        return Outcome("the release runs no slurmctld of its own: nothing to check")
    controller = controllers[0]["spec"]
    nodesets = [d for d in ctx.rendered if d.get("kind") == "NodeSet"]
    partitions = _slurm_partitions(controller, nodesets)
    findings = partition_default_findings(ctx.target, partitions, len(nodesets))
    findings += gres_findings(ctx.target, controller, nodesets)
    findings += bridge_priority_findings(ctx.target, controller)
    details = []
    values = cluster_values(ctx.target) or {}
    gpu_nodesets = [
        n for n in nodesets
        if _conf_items(str(n["spec"].get("extraConf") or "")).get("gres", "").lower().startswith("gpu")
    ]  # fmt: skip
    for hook in GPU_HOOKS:
        node: Any = values
        for part in hook:
            node = node.get(part) if isinstance(node, dict) else None
        if node is True and not gpu_nodesets:
            details.append(
                f"warning: {ctx.target.path_of(CLUSTER, *hook)} is on, but no NodeSet has GPUs "
                "(nodesets.<name>.gpu): the hook serves no node"
            )
    return Outcome(
        f"{len(partitions)} partitions, a default among them; every NodeSet's GRES named in "
        "GresTypes",
        findings,
        details,
    )
