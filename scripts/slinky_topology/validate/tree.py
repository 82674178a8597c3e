"""``topology/tree`` rules (topology.md b.1, b.2a): switch names, children, levels, leaves."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from slinky_topology.model import natural_key
from slinky_topology.validate.names import check_name

if TYPE_CHECKING:
    from slinky_topology.model import TreeSpec
    from slinky_topology.validate.findings import Findings

__all__ = ["MAX_FAST_SWITCHES", "MAX_TREE_DEPTH", "check_tree_spec"]

MAX_TREE_DEPTH = 20
"""Passes slurmctld makes to resolve switch levels before it calls the config "not a tree"."""
MAX_FAST_SWITCHES = 1000
"""Above this many tree switches slurmctld load time grows noticeably (topology.md f.5)."""


def check_tree_spec(out: Findings, topo: str, spec: TreeSpec, *, conf: bool) -> None:
    """Switches of one tree topology; ``conf``: topology.conf syntax (both kinds of child fatal)."""
    if not spec.switches:
        out.error(
            f"topology {topo}", "has no switches (slurmctld fatal)", "define at least one switch"
        )
        return
    defined = _check_lines(out, spec, conf=conf)
    parents = _check_children(out, spec, defined)
    unresolved = _check_levels(out, spec, defined)
    roots = [n for n in defined if n not in parents]
    if len(roots) > 1 and not unresolved:
        out.warning(
            f"topology {topo}",
            f"{len(roots)} root switches; jobs cannot span them (unless TopologyParam=TopoOptional)",
            "add one top-level switch above the roots",
        )
    if len(spec.switches) > MAX_FAST_SWITCHES:
        out.warning(
            f"topology {topo}",
            f"{len(spec.switches)} switches; slurmctld computes all switch distances "
            "(O(S^3)) at load and for each dynamically created switch",
            "keep leaves plus one aggregation tier (topologies[].maxTiers: 2)",
        )
    _check_leaves(out, topo, spec)


def _check_lines(out: Findings, spec: TreeSpec, *, conf: bool) -> dict[str, int | None]:
    """Names, duplicates and switches with both children and nodes; return name -> first line."""
    defined: dict[str, int | None] = {}
    both = (
        "has both Switches= and Nodes= (slurmctld parse error)"
        if conf
        else "has both children and nodes (Slurm ignores children; ours: error)"
    )
    for sw in spec.switches:
        check_name(out, "switch", sw.name, line=sw.line)
        if sw.name in defined:
            out.error(
                f"switch {sw.name}",
                "has already been defined",
                "merge the two switch lines",
                line=sw.line,
            )
        defined.setdefault(sw.name, sw.line)
        if sw.children and sw.nodes:
            out.error(f"switch {sw.name}", both, "put nodes only on leaf switches", line=sw.line)
    return defined


def _check_children(
    out: Findings, spec: TreeSpec, defined: dict[str, int | None]
) -> dict[str, list[str]]:
    """Every child must be another defined switch; warn on several parents. Return the parents."""
    parents: dict[str, list[str]] = defaultdict(list)
    for sw in spec.switches:
        for child in sw.children:
            if child == sw.name or child not in defined:
                out.error(
                    f"switch {sw.name}",
                    f"invalid child {child} (not a defined switch)",
                    f"define switch {child} or remove it from the list",
                    line=sw.line,
                )
            else:
                parents[child].append(sw.name)
    for child, ps in sorted(parents.items()):
        if len(ps) > 1:
            out.warning(
                f"switch {child}",
                f"has {len(ps)} parents ({', '.join(sorted(ps))})",
                "keep one parent so the switches form a tree",
                line=defined[child],
            )
    return parents


def _check_levels(out: Findings, spec: TreeSpec, defined: dict[str, int | None]) -> list[str]:
    """Slurm resolves levels bottom-up; anything unresolved after MAX_TREE_DEPTH passes is fatal.

    Return the unresolved switches.
    """
    kids = {
        sw.name: [c for c in sw.children if c in defined and c != sw.name] for sw in spec.switches
    }
    level: dict[str, int] = {n: 0 for n, ks in kids.items() if not ks}
    for _ in range(MAX_TREE_DEPTH + 1):
        changed = False
        for name, ks in kids.items():
            if name not in level and ks and all(k in level for k in ks):
                level[name] = 1 + max(level[k] for k in ks)
                changed = True
        if not changed:
            break
    unresolved = sorted(set(kids) - set(level), key=natural_key)
    if unresolved:
        out.error(
            f"switch {unresolved[0]}",
            f"switch configuration is not a tree (cycle or deeper than {MAX_TREE_DEPTH} levels)",
            "remove the cycle or flatten the tree",
            line=defined[unresolved[0]],
        )
    return unresolved


def _check_leaves(out: Findings, topo: str, spec: TreeSpec) -> None:
    listed = [node for sw in spec.switches for node in sw.nodes]
    if len(set(listed)) == len(listed):
        return  # every node under one switch line
    leaf_of: dict[str, str] = {}
    multi: set[str] = set()
    for sw in spec.switches:
        for node in sw.nodes:
            if node in leaf_of and leaf_of[node] != sw.name:
                multi.add(node)
            leaf_of.setdefault(node, sw.name)
    if multi:
        sample = ", ".join(sorted(multi, key=natural_key)[:5])
        out.warning(
            f"topology {topo}",
            f"{len(multi)} nodes are under several leaf switches ({sample})",
            "list each node under one leaf switch",
        )
