"""Conformance, slurm phase, ``partitions``: the values' partitions, their members and
topologies, as slurmctld shows them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from slinky_conformance.context import Outcome
from slinky_conformance.report import Finding
from slinky_conformance.steps.slurm.state import (
    Controller,
    not_here,
    plural,
    state_of,
)
from slinky_conformance.target import CLUSTER
from slinky_conformance.trace import file_paths
from slinky_harness.slurm import release
from slinky_harness.slurm import topology as slurm_topo

if TYPE_CHECKING:
    from collections.abc import Mapping

    from slinky_conformance.context import Context


def _partition_path(ctx: Context, values: Mapping[str, Any], name: str, *parts: str) -> str:
    """The values path of a partition: ``partitions.<name>`` or a NodeSet's own partition."""
    if name in (values.get("partitions") or {}):
        return ctx.target.path_of(CLUSTER, "partitions", name, *parts)
    return ctx.target.path_of(CLUSTER, "nodesets", name, "partition", *parts)


def _topology_findings(ctx: Context, state: Controller, values: Mapping[str, Any]) -> list[Finding]:
    """Partitions naming a topology topology.yaml lacks or slurmctld does not show, and
    topologies slurmctld shows unlike the file (plus the placed nodes)."""
    findings: list[Finding] = []
    got = release.partition_topologies(state.ctld)
    named = slurm_topo.parse_topology_yaml(state.topology_yaml) if state.topology_yaml else []
    known = [t.name for t in named]
    for name, topology in release.expected_partition_topology(values).items():
        if topology not in known:
            problem = (
                f"partition {name} names topology {topology}, which topology.yaml does not have "
                "(slurmctld takes the name as given)"
            )
        elif name in got and got[name] != topology:
            problem = (
                f"partition {name} has topology {got[name] or '(default)'}, the values ask for "
                f"{topology}"
            )
        else:
            continue
        findings.append(
            Finding(
                _partition_path(ctx, values, name, "topology"),
                problem,
                f"name one of topology.yaml's topologies: {', '.join(known) or '(none)'}",
            )
        )
    differences = release.topology_differences(
        state.ctld, state.topology_yaml, set(state.hosts), state.placement
    )
    block = ctx.target.user_block(CLUSTER)
    findings += [
        Finding(
            ctx.target.path_of(CLUSTER, *file_paths(block, "topology.yaml")[0]),
            f"slurmctld shows topology {topology} unlike topology.yaml: {'; '.join(lines)}",
            "correct topology.yaml so that every unit and node appears once",
        )
        for topology, lines in differences.items()
    ]
    return findings


def partitions(ctx: Context) -> Outcome:
    """The values' partitions, their members and topologies, as slurmctld shows them."""
    if why := not_here(ctx):
        return Outcome(why)
    state = state_of(ctx)
    values = ctx.target.chart_values(CLUSTER)
    wanted = release.expected_partitions(values)
    got = release.partitions_of(state.ctld)
    findings = [
        Finding(
            _partition_path(ctx, values, name),
            f"slurmctld has no partition {name}",
            "check that the partition is enabled and names NodeSets that exist",
        )
        for name in sorted(set(wanted) - set(got))
    ]
    for name in sorted(set(wanted) & set(got)):
        members = {h for h, nodeset in state.hosts.items() if nodeset in wanted[name]}
        if got[name] != members:
            findings.append(
                Finding(
                    _partition_path(ctx, values, name, "nodesets"),
                    f"partition {name} holds {sorted(got[name]) or 'no node'}, the values ask "
                    f"for the nodes of NodeSets {sorted(wanted[name]) or '(none)'}: "
                    f"{sorted(members) or 'no node'}",
                    f"list the NodeSets partition {name} should hold",
                )
            )
    findings += _topology_findings(ctx, state, values)
    extra = sorted(set(got) - set(wanted))
    details = [f"also in slurm.conf (not from partitions or NodeSets): {', '.join(extra)}"]
    named = slurm_topo.parse_topology_yaml(state.topology_yaml) if state.topology_yaml else []
    topologies = "1 topology" if len(named) == 1 else f"{len(named)} topologies"
    return Outcome(
        f"{plural(len(wanted), 'partition')} as the values ask, with their NodeSets' nodes; "
        f"{topologies} as topology.yaml gives them",
        findings,
        details if extra else [],
    )
