"""The block layout of :mod:`slinky_topology.build` (:func:`block_topology`): one base block per
NVLink domain (or sub-domain), placed by a buddy layout over the switch tree so that no
aggregated block straddles two subtrees unless it covers them whole; oversized domains split
into base-size pieces; gaps become placeholder blocks."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from slinky_topology import hostlist
from slinky_topology.layout import FabricIndex, PlannedTopology, in_scope, scoped_nodes
from slinky_topology.model import (
    Block,
    BlockSpec,
    Node,
    Topology,
    TopologyRequest,
    is_safe_name,
    natural_key,
)
from slinky_topology.validate import MAX_BLOCK_LEVEL, Findings, raise_on_errors

if TYPE_CHECKING:
    from slinky_topology.errors import Finding

_DOMAIN_KEY = "\x00"  # marks a domain group (sub-domain blocks) in the layout trie
_PIECES_KEY = "\x01"  # marks the base blocks of one split domain in the layout trie


class _Group:
    __slots__ = ("children", "units")

    def __init__(self) -> None:
        self.units: list[str] = []
        self.children: dict[str, _Group] = {}


def _layout(group: _Group) -> list[str | None]:
    items: list[tuple[int, tuple[tuple[str | int, ...], str], list[str | None]]] = []
    for unit in group.units:
        items.append((1, natural_key(unit), [unit]))
    for name, sub in group.children.items():
        slots = _layout(sub)
        items.append((len(slots), natural_key(name), slots))
    # Largest first: with power-of-two sizes in descending order every item starts aligned.
    items.sort(key=lambda it: (-it[0], it[1]))
    out: list[str | None] = []
    for _, _, slots in items:
        out.extend(slots)
    size = 1
    while size < len(out):
        size *= 2
    out.extend([None] * (size - len(out)))
    return out


@dataclass(slots=True)
class _Unit:
    """One base block to be: its node slots, every node it holds (absent ones too) and the
    in-scope ones that the block lists."""

    slots: int
    nodes: list[str]
    scoped: list[str]


class _BlockLayout:
    """The units of one block topology, in a trie over the switch tree (see :func:`_layout`)."""

    def __init__(self, ctx: FabricIndex, req: TopologyRequest) -> None:
        self.req = req
        self.root = _Group()
        self.units: dict[str, _Unit] = {}
        fabric = ctx.fabric
        declared = {d.name: d for d in fabric.domains}
        all_nodes: dict[str, list[Node]] = defaultdict(list)
        for node in fabric.nodes:
            if node.domain is not None:
                all_nodes[node.domain].append(node)
        for d in self._domains(set(declared) | set(all_nodes), all_nodes):
            members = all_nodes.get(d, [])
            home = declared[d].switch if d in declared else None
            if home is not None:
                path: tuple[str, ...] = ctx.path(home)
            else:
                leaves = {n.leaf for n in members if n.leaf is not None}
                path = _common_prefix([ctx.path(leaf) for leaf in leaves])
            expected = declared[d].slots if d in declared else None
            self._add_domain(d, path, members, expected)

    def _domains(self, names: set[str], all_nodes: dict[str, list[Node]]) -> set[str]:
        if not self.req.partitions:
            return names
        # Drop only domains whose present nodes are all outside the partitions; a domain with
        # no present node (not delivered yet) keeps its placeholder.
        return {
            d
            for d in names
            if any(in_scope(n, self.req) for n in all_nodes.get(d, ()))
            or not any(n.state != "absent" for n in all_nodes.get(d, ()))
        }

    def _add_domain(
        self, d: str, path: tuple[str, ...], members: list[Node], expected: int | None
    ) -> None:
        subs = sorted({n.subdomain or "" for n in members}, key=natural_key)
        if self.req.source == "subdomain" and any(subs):
            # One base block per sub-domain; the domain's blocks share one aligned window.
            path = (*path, _DOMAIN_KEY + d)
            parts = {s: [n for n in members if (n.subdomain or "") == s] for s in subs}
            slots = {s: len(parts[s]) for s in subs}
        else:
            parts = {"": members}
            slots = {"": max(expected or 0, len(members), 1)}
        group = self.root
        for key in path:
            group = group.children.setdefault(key, _Group())
        for s, nodes in parts.items():
            unit = _unit_name(d, s)
            scoped = [n.name for n in scoped_nodes(nodes, self.req)]
            self.units[unit] = _Unit(slots[s], [n.name for n in nodes], scoped)
            group.units.append(unit)

    def check_names(self) -> None:
        bad = sorted(u for u in self.units if not is_safe_name(u))
        if bad:
            out = Findings()
            for u in bad:
                out.error(
                    f"block {u!r}",
                    "the domain (.subdomain, -part) is not a safe block name",
                    "use shorter domain/partition ids",
                )
            raise_on_errors(out.items, what=f"topology {self.req.name}")

    def block_sizes(self) -> tuple[int, ...]:
        """The requested sizes, or base = the largest unit up to the widest root subtree."""
        if self.req.block_sizes is not None:
            return self.req.block_sizes
        base = max((u.slots for u in self.units.values()), default=1)
        if self.root.children:
            widest = max(len(_layout(g)) for g in self.root.children.values())
        else:
            widest = len(self.root.units)
        level = min(max(widest, 1).bit_length() - 1, MAX_BLOCK_LEVEL)
        return tuple(base << j for j in range(level + 1))

    def fit(self, base: int) -> None:
        """Split (or refuse, per the request) units holding more node slots than ``base``."""
        too_big = [u for u in sorted(self.units, key=natural_key) if self.units[u].slots > base]
        if not too_big:
            return
        if self.req.oversized == "error":
            out = Findings()
            for u in too_big:
                out.error(
                    f"domain {u}",
                    f"needs {self.units[u].slots} node slots, more than the base block size {base}",
                    "raise the first BlockSizes value, or let it be split "
                    "(oversizedDomains: split, --oversized-domains split)",
                )
            raise_on_errors(out.items, what=f"topology {self.req.name}")
        taken = set(self.units)
        for u in too_big:
            self._split(self.root, u, base, taken)
        self.check_names()

    def _split(self, group: _Group, unit: str, base: int, taken: set[str]) -> bool:
        if unit in group.units:
            group.units.remove(unit)
            whole = self.units.pop(unit)
            pieces = _Group()
            group.children[_PIECES_KEY + unit] = pieces
            count = -(-whole.slots // base)
            scoped = set(whole.scoped)
            nodes = hostlist.sort_hosts(whole.nodes)
            for i in range(count):
                name = f"{unit}-{i + 1}"
                if name in taken:
                    raise_on_errors(_clash(self.req, unit, name), what=f"topology {self.req.name}")
                taken.add(name)
                chunk = list(nodes[i * base : (i + 1) * base])
                self.units[name] = _Unit(base, chunk, [n for n in chunk if n in scoped])
                pieces.units.append(name)
            return True
        return any(self._split(sub, unit, base, taken) for sub in group.children.values())


def _clash(req: TopologyRequest, unit: str, name: str) -> list[Finding]:
    out = Findings()
    out.error(
        f"domain {unit}",
        f"is split into base blocks, but {name} already names another block",
        "rename that domain, or raise the first BlockSizes value so nothing is split",
    )
    return out.items


def _unit_name(domain: str, sub: str) -> str:
    return f"{domain}.{sub}" if sub else domain


def block_topology(ctx: FabricIndex, req: TopologyRequest, notes: Findings) -> PlannedTopology:
    layout = _BlockLayout(ctx, req)
    layout.check_names()
    block_sizes = layout.block_sizes()
    base = block_sizes[0]
    layout.fit(base)
    largest = max((u.slots for u in layout.units.values()), default=base)
    if base > largest:  # only explicit sizes: an inferred base is the largest unit
        what = "NVLink sub-domain" if req.source == "subdomain" else "NVLink domain"
        notes.warning(
            f"topology {req.name}",
            f"the base block size {base} is larger than every {what} (the largest has "
            f"{largest} node slots): a job of {largest + 1} to {base} nodes could never run, "
            "since Slurm puts a job no larger than the base block inside one base block",
            f"lower the first BlockSizes value to {largest} (blockSizes, --block-sizes)",
        )
    slots = _layout(layout.root)
    # Trailing placeholders only up to a whole group of the largest level (as topograph pads).
    used = len(slots)
    while used and slots[used - 1] is None:
        used -= 1
    top = max(block_sizes[-1] // base, 1) if base > 0 else 1
    total = max(-(-used // top) * top, 1)
    slots = (slots[:used] + [None] * total)[:total]

    taken = set(layout.units)
    blocks: list[Block] = []
    for index, slot in enumerate(slots):
        if slot is None:
            pad = f"pad{index:04d}"
            while pad in taken:
                pad += "x"
            taken.add(pad)
            blocks.append(Block(pad))
        else:
            blocks.append(Block(slot, ctx.sort(layout.units[slot].scoped)))
    units = {n: name for name, unit in layout.units.items() for n in unit.scoped}
    topo = Topology(req.name, req.cluster_default, BlockSpec(tuple(block_sizes), tuple(blocks)))
    return PlannedTopology(topo, units)


def _common_prefix(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    if not paths:
        return ()
    first = min(paths)
    last = max(paths)
    n = 0
    while n < len(first) and n < len(last) and first[n] == last[n]:
        n += 1
    return first[:n]
