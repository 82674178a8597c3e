"""Slurm-version gates: what the target ``slurmVersion`` can load.

Only the Slurm series of :data:`PROVEN_SLURM_VERSIONS` are accepted as targets: the real-Slurm tier
(``tests/slurm/test_slurm_versions.py``) runs the slurmctld of each (Debian trixie: 24.11, Debian
sid: 26.05) on one generated case per rule of :data:`VERSION_RULES` and checks that the generator
refuses exactly what that daemon refuses. Each rule's ``since`` is the release that introduced the
feature (topology.md b.7); between two proven series it is Slurm's changelog, not a measurement,
which is why other targets are refused.

Observed with slurmctld 24.11.5 (fatal at start-up unless noted): a leaf switch with neither
switches nor nodes ("switch ... has neither child switches nor nodes"), a block without nodes
("block ... hasn't got nodes"), a block with fewer nodes than the base size ("children count lower
than bblock_node_cnt"); ``topology.yaml`` is not read (no topology); ``scontrol create`` and
``update`` refuse ``Topology=``. Slurm 26.05.5 loads all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slinky_topology.model import BlockSpec, TopologyDoc, TreeSpec
from slinky_topology.validate.findings import Findings

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from slinky_topology.errors import Finding

__all__ = [
    "PROVEN_SLURM_VERSIONS",
    "VERSION_RULES",
    "features_used",
    "loads",
    "unproven_version",
    "version_findings",
]

PROVEN_SLURM_VERSIONS: tuple[str, ...] = ("24.11", "26.05")
"""The Slurm series whose real slurmctld the slurm tier runs against every rule below: the only
``slurmVersion`` values the generator accepts."""

VERSION_RULES: Mapping[str, tuple[tuple[int, int], str]] = {
    "block": ((23, 11), "block topology"),
    "block-sizes": ((24, 5), "BlockSizes"),
    "topology.yaml": ((25, 5), "topology.yaml"),
    "dynamic": ((25, 5), "dynamic topology (node Topology= / Slinky annotations)"),
    "small-block": ((25, 5), "a block with fewer nodes than the base block size"),
    "empty-block": ((25, 5), "a block without nodes (placeholder)"),
    "empty-leaf": ((25, 5), "a leaf switch without nodes"),
}
"""Feature -> (oldest Slurm that loads it, what it is, for messages)."""


def _version(text: str) -> tuple[int, int] | None:
    major, _, minor = text.partition(".")
    if major.isdigit() and minor.isdigit():
        return int(major), int(minor)
    return None


def loads(slurm_version: str, feature: str) -> bool:
    """Does Slurm ``slurm_version`` (``MAJOR.MINOR``) load ``feature`` (a :data:`VERSION_RULES`
    key)? Raises ``ValueError`` for a malformed version and ``KeyError`` for an unknown feature."""
    ver = _version(slurm_version)
    if ver is None:
        raise ValueError(f"Slurm version {slurm_version!r} is not MAJOR.MINOR")
    return ver >= VERSION_RULES[feature][0]


def unproven_version(slurm_version: str) -> str | None:
    """``None`` when ``slurm_version`` is proven, else the sentence that refuses it."""
    if slurm_version in PROVEN_SLURM_VERSIONS:
        return None
    return (
        f"slurmVersion {slurm_version!r} is not one this project proves on a real slurmctld; "
        f"use one of {', '.join(PROVEN_SLURM_VERSIONS)} (or leave slurmVersion out: no version "
        "gates)"
    )


def features_used(
    doc: TopologyDoc, *, yaml_format: bool, dynamic: bool
) -> Iterator[tuple[str, str]]:
    """``(feature, where)`` for every :data:`VERSION_RULES` feature ``doc`` uses (``where``:
    ``topology NAME``, or ``""`` for a feature of the whole output)."""
    if yaml_format:
        yield "topology.yaml", ""
    if dynamic:
        yield "dynamic", ""
    for topo in doc.topologies:
        where = f"topology {topo.name}"
        spec = topo.spec
        if isinstance(spec, TreeSpec):
            if any(not sw.children and not sw.nodes for sw in spec.switches):
                yield "empty-leaf", where
        elif isinstance(spec, BlockSpec):
            yield "block", where
            if spec.block_sizes:
                yield "block-sizes", where
            base = spec.block_sizes[0] if spec.block_sizes else 0
            if any(0 < len(b.nodes) < base for b in spec.blocks):
                yield "small-block", where
            if any(not b.nodes for b in spec.blocks):
                yield "empty-block", where


def version_findings(
    slurm_version: str | None, doc: TopologyDoc, *, yaml_format: bool, dynamic: bool
) -> list[Finding]:
    """What ``slurm_version`` cannot load of ``doc`` (``None``: no target, nothing to check).

    A version outside :data:`PROVEN_SLURM_VERSIONS` is an error of its own; otherwise one error per
    feature of :data:`VERSION_RULES` the output uses and the version does not load.
    """
    if slurm_version is None:
        return []
    out = Findings()
    subj = f"slurmVersion {slurm_version}"
    refused = unproven_version(slurm_version)
    if refused is not None:
        out.error(subj, "is not a proven Slurm version", refused)
        return out.items
    for feature, where in features_used(doc, yaml_format=yaml_format, dynamic=dynamic):
        if not loads(slurm_version, feature):
            (major, minor), what = VERSION_RULES[feature]
            out.error(
                subj,
                f"{what}{f' in {where}' if where else ''} needs Slurm >= {major}.{minor:02d}",
                "target a newer Slurm or change the output",
            )
    return sorted(set(out.items), key=str)
