"""Slurm-version gates (topology.md b.7): what the target ``slurmVersion`` can load."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slinky_topology.model import BlockSpec, TopologyDoc
from slinky_topology.validate.findings import Findings

if TYPE_CHECKING:
    from slinky_topology.errors import Finding

__all__ = ["version_findings"]


def _version(text: str) -> tuple[int, int] | None:
    major, _, minor = text.partition(".")
    if major.isdigit() and minor.isdigit():
        return int(major), int(minor)
    return None


def _needs(
    doc: TopologyDoc, *, yaml_format: bool, dynamic: bool
) -> list[tuple[tuple[int, int], str]]:
    """(oldest Slurm that loads it, what) for every feature the output uses."""
    needs: list[tuple[tuple[int, int], str]] = []
    if yaml_format:
        needs.append(((25, 5), "topology.yaml"))
    if dynamic:
        needs.append(((25, 5), "dynamic topology (node Topology= / Slinky annotations)"))
    for topo in doc.topologies:
        if isinstance(topo.spec, BlockSpec):
            needs.append(((23, 11), f"block topology {topo.name}"))
            needs.append(((24, 5), f"BlockSizes in topology {topo.name}"))
            base = topo.spec.block_sizes[0] if topo.spec.block_sizes else 0
            if any(0 < len(b.nodes) < base for b in topo.spec.blocks):
                needs.append(
                    ((25, 5), f"blocks smaller than the base size in topology {topo.name}")
                )
    return needs


def version_findings(
    slurm_version: str | None, doc: TopologyDoc, *, yaml_format: bool, dynamic: bool
) -> list[Finding]:
    """What ``slurm_version`` cannot load of ``doc`` (``None``: no target, nothing to check).

    topology.yaml, dynamic topology (node ``Topology=``) and blocks smaller than the base size
    need 25.05; ``BlockSizes`` needs 24.05; ``topology/block`` needs 23.11.
    """
    if slurm_version is None:
        return []
    out = Findings()
    subj = f"slurmVersion {slurm_version}"
    ver = _version(slurm_version)
    if ver is None:
        out.error(subj, "is not MAJOR.MINOR", 'write it like "25.11"')
        return out.items
    for min_ver, what in _needs(doc, yaml_format=yaml_format, dynamic=dynamic):
        if ver < min_ver:
            out.error(
                subj,
                f"{what} needs Slurm >= {min_ver[0]}.{min_ver[1]:02d}",
                "target a newer Slurm or change the output",
            )
    return sorted(set(out.items), key=str)
