"""Per-node ``Topology=`` strings against the (skeleton) file they are applied to (b.5, b.8)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from slinky_topology.model import BlockSpec, TopologyDoc, TreeSpec, is_safe_name, natural_key
from slinky_topology.validate.findings import Findings
from slinky_topology.validate.names import SAFE_FIX

if TYPE_CHECKING:
    from collections.abc import Mapping

    from slinky_topology.errors import Finding

__all__ = ["parse_spec", "validate_specs"]


def parse_spec(spec: str) -> list[tuple[str, tuple[str, ...]]]:
    """Split a ``Topology=`` string into ``[(topology, (unit, ...)), ...]``.

    Raise ValueError when an item lacks ``topo:unit``. ``""`` is valid (no topology).
    """
    if spec == "":
        return []
    items: list[tuple[str, tuple[str, ...]]] = []
    for item in spec.split(","):
        parts = item.split(":")
        if len(parts) < 2 or not all(parts):
            raise ValueError(f"item {item!r} is not topology:unit")
        items.append((parts[0], tuple(parts[1:])))
    return items


class _Units:
    """What a node may name: topologies, their blocks, their switches' children."""

    def __init__(self, doc: TopologyDoc) -> None:
        self.topologies = {t.name for t in doc.topologies}
        self.blocks = {
            t.name: {b.name for b in t.spec.blocks}
            for t in doc.topologies
            if isinstance(t.spec, BlockSpec)
        }
        self.children = {
            t.name: {s.name: set(s.children) for s in t.spec.switches}
            for t in doc.topologies
            if isinstance(t.spec, TreeSpec)
        }


def validate_specs(
    doc: TopologyDoc,
    specs: Mapping[str, str],
    *,
    location: str | None = None,
) -> list[Finding]:
    """Check per-node ``Topology=`` strings against the (skeleton) file ``doc`` (b.5).

    Findings come per node, nodes in natural order. Nodes of one rack share one string, so each
    distinct string is checked once and its findings are repeated for every node that carries it.
    """
    out = Findings(location)
    units = _Units(doc)
    problems: dict[str, list[Finding]] = {}
    bad: list[str] = []
    for node, spec in specs.items():
        found = problems.get(spec)
        if found is None:
            found = problems[spec] = _spec_problems(units, spec)
        if found:
            bad.append(node)
    for node in sorted(bad, key=natural_key):
        for finding in problems[specs[node]]:
            out.error(f"node {node}", finding.message, finding.fix)
    return out.items


def _spec_problems(units: _Units, spec: str) -> list[Finding]:
    """What is wrong with one ``Topology=`` string (subjects left empty: the caller names the node)."""
    out = Findings()
    try:
        items = parse_spec(spec)
    except ValueError as exc:
        out.error("", f"annotation {spec!r}: {exc}", "use topology:unit[,topology:unit...]")
        return out.items
    seen: set[str] = set()
    for topo_name, path in items:
        if topo_name in seen:
            out.error("", f"names topology {topo_name} twice", "name each topology once")
        seen.add(topo_name)
        _check_item(out, units, "", topo_name, path)
    return out.items


def _check_item(out: Findings, units: _Units, subj: str, topo: str, path: tuple[str, ...]) -> None:
    if topo not in units.topologies:
        out.error(
            subj,
            f"names unknown topology {topo}",
            f"use one of: {', '.join(sorted(units.topologies)) or '(none)'}",
        )
        return
    for unit in path:
        if not is_safe_name(unit):
            out.error(subj, f"unit {unit!r} is not a safe name", SAFE_FIX)
    if topo in units.blocks:
        if len(path) != 1 or path[0] not in units.blocks[topo]:
            out.error(
                subj,
                f"block {':'.join(path)} does not exist in topology {topo}",
                "blocks are never created dynamically; add it to the file",
            )
    elif topo in units.children:
        _check_path(out, units.children[topo], subj, topo, path)
    else:
        out.error(
            subj, f"topology {topo} is flat and has no units", f"drop {topo} from the annotation"
        )


def _check_path(
    out: Findings, tree: dict[str, set[str]], subj: str, topo: str, path: tuple[str, ...]
) -> None:
    if path[0] not in tree:
        out.error(
            subj,
            f"first switch {path[0]} does not exist in topology {topo}",
            "the first switch of a path must be in the file",
        )
        return
    for up, down in itertools.pairwise(path):
        if up in tree and down in tree and down not in tree[up]:
            out.error(
                subj,
                f"switch {down} is not a child of {up} in topology {topo}",
                "give the path root-first as in the file",
            )
    if tree.get(path[-1]):
        out.error(
            subj,
            f"switch {path[-1]} is not a leaf in topology {topo}",
            "end the path with a leaf switch",
        )
