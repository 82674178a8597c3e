"""Test oracle: what ``scontrol show topology`` must list for a hand-written topology file.

Reads ``topology.conf`` (tree or block) and ``topology.yaml`` into small models and derives what
slurmctld should report (nodes under every switch, switch levels, base and aggregated blocks), and
reads ``scontrol show topology`` output back into the same shapes, so tests compare input against
Slurm's view without hard-coding Slurm's text. Deliberately independent of ``slinky_topology`` (the
product) so the real Slurm tier checks the product, not itself. Hostlists are expanded with
python-hostlist (a test dependency).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import hostlist
import yaml

from slinky_harness.slurm.conf import parse_records

__all__ = [
    "BlockTopology",
    "NamedTopology",
    "TreeTopology",
    "assert_blocks_match",
    "assert_tree_matches",
    "block_differences",
    "default_topology",
    "expand",
    "parse_topology_conf",
    "parse_topology_yaml",
    "read_blocks",
    "read_tree",
    "tree_differences",
]


def expand(expr: str | None) -> list[str]:
    """Expand a Slurm hostlist (``n[1-3],m1``); ``None``/empty/``(null)`` -> ``[]``."""
    if not expr or expr == "(null)":
        return []
    return [str(h) for h in hostlist.expand_hostlist(expr)]


@dataclass
class TreeTopology:
    """Switches in file order: name -> (child switch names, node names)."""

    children: dict[str, list[str]] = field(default_factory=dict)
    nodes: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, children: str | None, nodes: str | None) -> None:
        self.children[name] = expand(children)
        self.nodes[name] = expand(nodes)

    def leaves(self) -> list[str]:
        return [s for s, c in self.children.items() if not c]

    def level(self, switch: str, _depth: int = 0) -> int:
        """0 for a leaf, else 1 + the highest child level."""
        if _depth > 64:
            raise ValueError("switch cycle")
        kids = self.children[switch]
        return 0 if not kids else 1 + max(self.level(k, _depth + 1) for k in kids)

    def reach(self, switch: str, _depth: int = 0) -> set[str]:
        """Every node below ``switch``."""
        if _depth > 64:
            raise ValueError("switch cycle")
        out = set(self.nodes[switch])
        for kid in self.children[switch]:
            out |= self.reach(kid, _depth + 1)
        return out

    def all_nodes(self) -> set[str]:
        return {n for ns in self.nodes.values() for n in ns}


@dataclass
class BlockTopology:
    """Base blocks in file order and the BlockSizes line (empty when absent)."""

    blocks: dict[str, list[str]] = field(default_factory=dict)
    sizes: list[int] = field(default_factory=list)

    def aggregated(self) -> list[tuple[int, set[str]]]:
        """``(BlockSize, nodes)`` of every aggregated block the sizes ask for.

        Level ``s`` groups ``s / base`` consecutive base blocks starting at an index divisible by
        that count; only whole groups are returned (keep test data to whole groups).
        """
        if not self.sizes:
            raise ValueError("expected aggregated blocks need an explicit BlockSizes")
        names = list(self.blocks)
        base = self.sizes[0]
        out = []
        for size in self.sizes[1:]:
            k = size // base
            for start in range(0, len(names) - k + 1, k):
                group = names[start : start + k]
                out.append((size, {n for b in group for n in self.blocks[b]}))
        return out

    def all_nodes(self) -> set[str]:
        return {n for ns in self.blocks.values() for n in ns}


def _conf_pairs(line: str) -> dict[str, str]:
    return {
        k.lower(): v for k, _, v in (tok.partition("=") for tok in line.split()) if k and _ == "="
    }


def parse_topology_conf(text: str) -> TreeTopology | BlockTopology:
    """Parse a ``topology.conf``: a tree (``SwitchName=``) or a block (``BlockName=``) file."""
    tree, block = TreeTopology(), BlockTopology()
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        kv = _conf_pairs(line)
        if "switchname" in kv:
            tree.add(kv["switchname"], kv.get("switches"), kv.get("nodes"))
        elif "blockname" in kv:
            block.blocks[kv["blockname"]] = expand(kv.get("nodes"))
        elif "blocksizes" in kv:
            block.sizes = [int(x) for x in kv["blocksizes"].split(",")]
    if tree.children and block.blocks:
        raise ValueError("topology.conf mixes switches and blocks")
    return tree if tree.children else block


@dataclass
class NamedTopology:
    name: str
    cluster_default: bool
    model: TreeTopology | BlockTopology | None
    """``None`` for ``flat`` (and other kinds this oracle does not model)."""


def parse_topology_yaml(text: str) -> list[NamedTopology]:
    """Parse a ``topology.yaml`` (a list of named topologies) in file order."""
    doc: Any = yaml.safe_load(text)
    out = []
    for item in doc:
        model: TreeTopology | BlockTopology | None = None
        if "tree" in item:
            model = TreeTopology()
            for sw in item["tree"].get("switches") or []:
                model.add(str(sw["switch"]), sw.get("children"), sw.get("nodes"))
        elif "block" in item:
            model = BlockTopology(sizes=[int(s) for s in item["block"].get("block_sizes") or []])
            for b in item["block"].get("blocks") or []:
                model.blocks[str(b["block"])] = expand(b.get("nodes"))
        out.append(NamedTopology(str(item["topology"]), bool(item.get("cluster_default")), model))
    return out


def default_topology(topologies: list[NamedTopology]) -> NamedTopology:
    """The first ``cluster_default: true`` topology, else the first one."""
    return next((t for t in topologies if t.cluster_default), topologies[0])


@dataclass(frozen=True)
class SwitchView:
    level: int
    nodes: frozenset[str]
    switches: frozenset[str]


def read_tree(show_topology: str) -> dict[str, SwitchView]:
    """``scontrol show topology`` of a tree -> switch -> level, nodes reached, child switches."""
    out = {}
    for rec in parse_records(show_topology):
        if "SwitchName" in rec:
            out[rec["SwitchName"]] = SwitchView(
                int(rec.get("Level", "0")),
                frozenset(expand(rec.get("Nodes"))),
                frozenset(expand(rec.get("Switches"))),
            )
    return out


def read_blocks(show_topology: str) -> tuple[dict[str, frozenset[str]], list[tuple[int, set[str]]]]:
    """``scontrol show topology`` of a block topology -> (base block -> nodes, aggregated blocks).

    Aggregated blocks are ``(BlockSize, nodes)`` in Slurm's order.
    """
    base: dict[str, frozenset[str]] = {}
    agg: list[tuple[int, set[str]]] = []
    for rec in parse_records(show_topology):
        if "BlockName" in rec:
            base[rec["BlockName"]] = frozenset(expand(rec.get("Nodes")))
        elif "AggregatedBlock" in rec:
            agg.append(
                (
                    int(re.sub(r"\D", "", rec.get("BlockSize", "0")) or 0),
                    set(expand(rec.get("Nodes"))),
                )
            )
    return base, agg


def tree_differences(
    shown_text: str, expected: TreeTopology, present: set[str] | None = None
) -> list[str]:
    """How ``scontrol show topology`` output of a tree differs from the file model (switches,
    nodes reached, child switches, levels); empty when it matches. ``present``: the nodes
    slurmctld knows, when the file may name others (a static topology of machines whose slurmd
    has not registered yet): Slurm leaves those out of every switch."""
    shown = read_tree(shown_text)
    if set(shown) != set(expected.children):
        return [f"switch names: shown {sorted(shown)}, expected {sorted(expected.children)}"]
    out = []
    for name, view in shown.items():
        reach = expected.reach(name)
        if present is not None:
            reach &= present
        if view.nodes != reach:
            out.append(
                f"nodes reached by {name}: shown {sorted(view.nodes)}, expected {sorted(reach)}"
            )
        if view.switches != set(expected.children[name]):
            out.append(
                f"children of {name}: shown {sorted(view.switches)}, "
                f"expected {sorted(expected.children[name])}"
            )
        if view.level != expected.level(name):
            out.append(f"level of {name}: shown {view.level}, expected {expected.level(name)}")
    return out


def block_differences(shown_text: str, expected: BlockTopology) -> list[str]:
    """How ``scontrol show topology`` output of a block topology differs from the file model
    (base blocks in file order, their nodes, the aggregated blocks when the file gives
    ``block_sizes``); empty when it matches."""
    base, aggregated = read_blocks(shown_text)
    if list(base) != list(expected.blocks):
        return [f"base blocks, in file order: shown {list(base)}, expected {list(expected.blocks)}"]
    out = [
        f"nodes of {name}: shown {sorted(nodes)}, expected {sorted(expected.blocks[name])}"
        for name, nodes in base.items()
        if nodes != set(expected.blocks[name])
    ]
    if not expected.sizes:  # Slurm's own default sizes: not modelled here
        return out
    want = sorted((size, sorted(nodes)) for size, nodes in expected.aggregated())
    got = sorted((size, sorted(nodes)) for size, nodes in aggregated)
    if got != want:
        out.append(f"aggregated blocks: shown {got}, expected {want}")
    return out


def assert_tree_matches(
    shown_text: str, expected: TreeTopology, present: set[str] | None = None
) -> None:
    """``scontrol show topology`` output of a tree equals the file model (:func:`tree_differences`)."""
    differences = tree_differences(shown_text, expected, present)
    assert not differences, "; ".join(differences)


def assert_blocks_match(shown_text: str, expected: BlockTopology) -> None:
    """``scontrol show topology`` output of a block topology equals the file model, aggregates
    included (:func:`block_differences`)."""
    differences = block_differences(shown_text, expected)
    assert not differences, "; ".join(differences)
