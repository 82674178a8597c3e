"""Conformance, slurm phase: what its steps share: the slurmctld ``load`` leaves running
(:class:`Controller`), the slurmdbd beside it, and the release's objects and values paths.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slinky_conformance.context import StepFailed
from slinky_conformance.target import CLUSTER
from slinky_conformance.trace import has_path
from slinky_harness.build.slurm_chroot import SlurmChrootError, chroot_info, ensure_chroot
from slinky_harness.core.errors import HarnessError
from slinky_harness.k8s import operator as slinky_operator
from slinky_harness.slurm.dbd_conf import rendered_secret

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_conformance.context import Context
    from slinky_harness.slurm import dbd as slurmdbd
    from slinky_harness.slurm.ctld import (
        SlurmCtld,
    )

Doc = dict[str, Any]


NODES_PER_NODESET = 4
"""Dynamic nodes made per NodeSet (its replicas, at least one, at most this many): enough for a
partition's members and a block job, few enough to keep the phase at seconds."""


@dataclass
class Controller:
    """What ``load`` leaves for the later steps (``ctx.extra["slurm"]``)."""

    ctld: SlurmCtld
    hosts: dict[str, str]
    """Slurm node -> its NodeSet (the dynamic nodes made)."""
    placement: dict[str, str]
    """Slurm node -> the topology string it was created with (``nvl:b1``)."""
    topology_yaml: str
    version: str
    accounting: SlurmdbdRun | None = None
    gpus: dict[str, int] = field(default_factory=dict)
    """NodeSet -> the GPUs each of its nodes declares (its ``Gres``; NodeSets with none left
    out)."""


@dataclass
class SlurmdbdRun:
    """The slurmdbd slurmctld reports to (slurmctld 26.05 starts only when its slurmdbd
    answers): the release's own on the operator's slurmdbd.conf, or a stand-in for an external
    one or when the release's refused its configuration (``refused``: why)."""

    dbd: slurmdbd.Slurmdbd
    stand_in: bool
    conf: str | None
    password: str | None
    refused: slurmdbd.SlurmdbdStartError | None = None


# -- helpers ----------------------------------------------------------------------------------


def objects_of(ctx: Context, kind: str) -> list[Doc]:
    return [d for d in ctx.objects if d.get("kind") == kind]


def not_here(ctx: Context) -> str:
    """Why this deployment runs no slurmctld of its own ("" when it does): then there is
    nothing for the phase to check, and its steps pass saying so (a skipped step would fail
    the run)."""
    if CLUSTER not in ctx.target.charts():
        return f"the deployment installs no {CLUSTER}: no slurmctld to check"
    found = objects_of(ctx, "Controller")
    if not found:
        raise StepFailed(f"the live phase handed over no Controller object of {CLUSTER}")
    if (found[0].get("spec") or {}).get("external"):
        return (
            f"the Controller is external ({ctx.target.path_of(CLUSTER, 'controller', 'external')}):"
            " its slurmctld runs elsewhere and holds the partitions; nothing to run here"
        )
    return ""


def state_of(ctx: Context) -> Controller:
    state = ctx.extra.get("slurm")
    if not isinstance(state, Controller):
        raise StepFailed("slurm/load left no running slurmctld")
    return state


def known_objects(ctx: Context) -> list[Doc]:
    """Objects without a control plane: the release's and what the user's cluster already has
    (``--existing``)."""
    existing: list[Doc] = list(ctx.existing)
    return [*ctx.objects, *existing]


def secret_of(ctx: Context, namespace: str, name: str, key: str) -> bytes | None:
    """A Secret's value: from the control plane when there is one, else from the objects."""
    if ctx.cluster is not None:
        text = ctx.cluster.kubectl(
            "get", "secret", name, "-n", namespace, "-o", "json", "--ignore-not-found"
        )
        data = (json.loads(text).get("data") or {}) if text.strip() else {}
        return base64.b64decode(data[key]) if key in data else None
    secrets = [
        d for d in known_objects(ctx)
        if d.get("kind") == "Secret"
        and (d.get("metadata") or {}).get("namespace", namespace) == namespace
    ]  # fmt: skip
    return rendered_secret(secrets, name, key)


def chroot() -> tuple[Path, str]:
    try:
        root = ensure_chroot()
    except (SlurmChrootError, HarnessError, OSError) as exc:
        raise StepFailed(f"no Slurm 26.05 chroot to run slurmctld in: {exc}") from None
    return root, chroot_info(root).slurm_version


def nodesets_of(ctx: Context) -> list[tuple[str, int, Doc]]:
    """(Slurm NodeSet name, nodes, object): as many nodes join as live/placement placed pods
    for the NodeSet (a pod left Pending runs no slurmd, so it never joins, and the two counts
    must agree); without a placement count, its replicas."""
    placed: dict[str, int] = ctx.extra.get("placed") or {}
    out = []
    for nodeset in objects_of(ctx, "NodeSet"):
        name = slinky_operator.slurm_nodeset_name(nodeset)
        nodes = placed[name] if name in placed else int(nodeset["spec"].get("replicas") or 0)
        out.append((name, nodes, nodeset))
    return out


KEY_VALUE = "write space-separated Key=Value items, as slurmd --conf takes them"


def nodeset_source(ctx: Context, nodeset: str) -> str:
    """The values path that makes a NodeSet's slurmd --conf: its extraConf (or extraConfMap),
    its GPUs, or the NodeSet itself."""
    block = ctx.target.user_block(CLUSTER)
    for parts in (("extraConf",), ("extraConfMap",), ("gpu",)):
        if has_path(block, ("nodesets", nodeset, *parts)):
            return nodeset_path(ctx, nodeset, *parts)
    return nodeset_path(ctx, nodeset)


def plural(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def nodeset_path(ctx: Context, slurm_name: str, *parts: str) -> str:
    """The values path of a NodeSet by its Slurm name (slurm-cluster's NodeSets take their
    values key as the Slurm name)."""
    return ctx.target.path_of(CLUSTER, "nodesets", slurm_name, *parts)
