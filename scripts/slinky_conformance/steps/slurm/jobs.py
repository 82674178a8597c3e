"""Conformance, slurm phase, ``jobs``: one job per partition and one per GPU NodeSet, placed by
slurmctld's scheduler (``sbatch --test-only``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from slinky_conformance.context import Outcome
from slinky_conformance.report import Finding
from slinky_conformance.steps.slurm.load import gres_path
from slinky_conformance.steps.slurm.state import (
    Controller,
    nodeset_path,
    not_here,
    plural,
    state_of,
)
from slinky_conformance.target import CLUSTER
from slinky_harness.slurm import release
from slinky_harness.slurm import topology as slurm_topo

if TYPE_CHECKING:
    from collections.abc import Mapping

    from slinky_conformance.context import Context
    from slinky_harness.slurm.ctld import (
        SlurmCtld,
    )


def _block_model(ctld: SlurmCtld, topology: str) -> dict[str, frozenset[str]] | None:
    """Base block -> nodes of ``topology`` when it is a block topology, else None."""
    shown = ctld.show_topology(topology) if topology else ctld.show_topology()
    if "BlockName=" not in shown:
        return None
    return slurm_topo.read_blocks(shown)[0]


def _default_topology(topology_yaml: str) -> str:
    named = slurm_topo.parse_topology_yaml(topology_yaml) if topology_yaml.strip() else []
    return slurm_topo.default_topology(named).name if named else ""


@dataclass(frozen=True)
class Landing:
    """Where one partition's job landed (``nodes`` empty: it did not); ``problem`` and
    ``where`` (the values key below the partition) when it is a finding."""

    args: tuple[str, ...]
    nodes: str = ""
    block: str = ""
    problem: str = ""
    where: str = ""
    fix: str = ""


def land_job(ctld: SlurmCtld, partition: str, members: set[str], topology: str) -> Landing:
    """``sbatch --test-only`` of one job in ``partition``: one node, or on a block topology
    as many nodes as one base block holds of the partition's, with ``--segment`` of that size;
    it must land (inside one base block)."""
    blocks = _block_model(ctld, topology) if topology else None
    args: tuple[str, ...] = ("-N", "1")
    if blocks:
        size = max(len(nodes & members) for nodes in blocks.values()) or 1
        args = ("-N", str(size), f"--segment={size}")
    placed = ctld.test_only("-p", partition, *args)
    if not placed.ok:
        return Landing(
            args,
            problem=f"a job ({' '.join(args)}) does not land in partition {partition}",
            where="config",
            fix=f"correct the partition's limits: sbatch says: {placed.said}",
        )
    if not blocks:
        return Landing(args, placed.nodes)
    nodes = set(ctld.hostnames(placed.nodes))
    inside = sorted(b for b, held in blocks.items() if nodes <= held)
    if not inside:
        return Landing(
            args,
            placed.nodes,
            problem=f"a {' '.join(args)} job in partition {partition} spans blocks "
            f"({placed.nodes}) of topology {topology}",
            where="topology",
            fix="give the partition a block topology whose base blocks hold its nodes",
        )
    return Landing(args, placed.nodes, block=f"{inside[0]} of topology {topology}")


def gpu_job(
    ctld: SlurmCtld, partition: str, nodes: set[str], others: set[str], gpus: int
) -> Landing:
    """``sbatch --test-only`` of a one-node job in ``partition`` that asks for ``gpus`` GPUs
    (``--gres=gpu:N``), the partition's ``others`` nodes excluded: it must land on ``nodes``."""
    args: tuple[str, ...] = ("-N", "1", f"--gres=gpu:{gpus}")
    if others:
        args += ("--exclude", ",".join(sorted(others)))
    placed = ctld.test_only("-p", partition, *args)
    if placed.ok and set(ctld.hostnames(placed.nodes)) <= nodes:
        return Landing(args[:3], placed.nodes)
    return Landing(args[:3], problem=placed.said)


def _gpu_jobs(ctx: Context, state: Controller, got: Mapping[str, set[str]]) -> tuple[
    list[Finding], list[str]
]:  # fmt: skip
    """Per NodeSet whose nodes declare GPUs: a job asking for all of them lands on its nodes."""
    findings: list[Finding] = []
    details: list[str] = []
    for nodeset, gpus in sorted(state.gpus.items()):
        nodes = {h for h, n in state.hosts.items() if n == nodeset}
        if not nodes:
            continue  # no pod placed: the partitions' findings say so
        holding = sorted(p for p, members in got.items() if members & nodes)
        if not holding:
            findings.append(
                Finding(
                    nodeset_path(ctx, nodeset, "partition"),
                    f"NodeSet {nodeset}'s nodes ({gpus} GPUs each) are in no partition: no job "
                    "can ask for their GPUs",
                    f"enable {nodeset_path(ctx, nodeset, 'partition', 'enabled')}, or list "
                    f"{nodeset} in a partition's nodesets",
                )
            )
            continue
        # its own partition first; it is enough that one partition takes the job
        holding.sort(key=lambda p: p != nodeset)
        tried: list[tuple[str, Landing]] = []
        for partition in holding:
            tried.append(
                (partition, gpu_job(state.ctld, partition, nodes, got[partition] - nodes, gpus))
            )
            if not tried[-1][1].problem:
                break
        partition, landing = tried[-1] if not tried[-1][1].problem else tried[0]
        asked = f"sbatch -p {partition} {' '.join(landing.args)}"
        if landing.problem:
            findings.append(
                Finding(
                    gres_path(ctx, nodeset),
                    f"a job asking for the {gpus} GPUs NodeSet {nodeset} declares ({asked}) "
                    f"lands on none of its nodes (partitions tried: {', '.join(p for p, _ in tried)})",
                    "give the nodes GPUs slurmctld counts (GresTypes names each GRES of Gres) and "
                    f"a partition that lets a job have them: sbatch says: {landing.problem}",
                )
            )
            continue
        details.append(f"{partition}: {asked} -> {landing.nodes} (NodeSet {nodeset}'s GPUs)")
    return findings, details


def default_job(ctld: SlurmCtld) -> str:
    """Why a job without ``-p`` is refused ("" when it lands): ``sbatch --test-only`` with no
    partition, as a user's first job is."""
    placed = ctld.test_only("-N", "1")
    return "" if placed.ok else placed.said


def _default_job_findings(ctx: Context, ctld: SlurmCtld) -> list[Finding]:
    refused = default_job(ctld)
    if not refused:
        return []
    return [
        Finding(
            ctx.target.path_of(CLUSTER, "partitions"),
            f"a job without -p is refused (sbatch says: {refused})",
            "mark one partition Default=YES (partitions.<name>.config, or "
            "nodesets.<name>.partition.config)",
        )
    ]


def jobs(ctx: Context) -> Outcome:
    """One job per partition, placed by slurmctld's scheduler; ``--segment`` inside one block
    on block topologies."""
    if why := not_here(ctx):
        return Outcome(why)
    state = state_of(ctx)
    block = ctx.target.user_block(CLUSTER)
    got = release.partitions_of(state.ctld)
    topologies = release.partition_topologies(state.ctld)
    default = _default_topology(state.topology_yaml)
    findings: list[Finding] = []
    details: list[str] = []

    def path(name: str, *parts: str) -> str:
        if name in (block.get("partitions") or {}):
            return ctx.target.path_of(CLUSTER, "partitions", name, *parts)
        if name in state.hosts.values() or name in (block.get("nodesets") or {}):
            return ctx.target.path_of(CLUSTER, "nodesets", name, "partition", *parts)
        return ctx.target.path_of(CLUSTER, "controller", "extraConf")

    segmented = 0
    unplaced = sorted(n for n, count in (ctx.extra.get("placed") or {}).items() if not count)
    for name, members in sorted(got.items()):
        if not members and unplaced:
            findings.append(
                Finding(
                    ctx.target.path_of(CLUSTER, "nodesets", unplaced[0]),
                    f"partition {name} has no node: no pod of NodeSet {', '.join(unplaced)} was "
                    "placed (live/placement), so none joined and no job can land",
                    "make the NodeSets' pods placeable, as live/placement's finding says",
                )
            )
            continue
        if not members:
            findings.append(
                Finding(
                    path(name, "nodesets"),
                    f"partition {name} has no node: no job can land",
                    "list a NodeSet that is enabled, or disable the partition",
                )
            )
            continue
        landing = land_job(state.ctld, name, members, topologies.get(name) or default)
        if landing.problem:
            findings.append(Finding(path(name, landing.where), landing.problem, landing.fix))
            continue
        segmented += bool(landing.block)
        inside = f", inside block {landing.block}" if landing.block else ""
        details.append(f"{name}: sbatch {' '.join(landing.args)} -> {landing.nodes}{inside}")
    gpu_problems, gpu_details = _gpu_jobs(ctx, state, got)
    findings += gpu_problems
    details += gpu_details
    no_partition = ""
    if any(got.values()):
        refused = _default_job_findings(ctx, state.ctld)
        findings += refused
        no_partition = "" if refused else "; a job without -p lands"
    return Outcome(
        f"{plural(len(got), 'partition')}, one job each, placed by slurmctld's scheduler "
        f"(sbatch --test-only on the NodeSets' nodes); {segmented} with --segment inside one "
        f"block; {plural(len(state.gpus), 'GPU NodeSet')}, one --gres=gpu:N job each"
        f"{no_partition}",
        findings,
        details,
    )
