"""Turn a :class:`~slinky_topology.model.Fabric` into Slurm topologies and per-node units.

Pure functions. :func:`plan` validates the fabric, then lays out every requested topology:

* **tree**: the switch forest (optionally trimmed to the lowest ``max_tiers`` tiers, or to the
  ancestor closure of a partition's nodes), written depth-first from each root; leaves list their
  nodes. Nodes without a leaf switch hang from one more root, the catch-all switch
  ``no-topology`` (:func:`~slinky_topology.model.catch_all_switch`), so Slurm still runs
  multi-node jobs on them; their unit is that switch.
* **block**: one base block per NVLink domain. Domains are placed by a buddy layout over the switch
  tree: every switch's subtree gets a power-of-two run of base-block slots aligned to its size, so
  an aggregated block of Slurm level *j* (2^j consecutive base blocks) never straddles two
  subtrees unless it covers them whole. Gaps become placeholder blocks (``pad0003``); a domain
  with no nodes keeps its block as a placeholder, so node churn never moves another domain.
  Inferred ``BlockSizes`` go from the base (largest domain) up to the largest subtree under one
  root switch. With explicit sizes, a domain holding more node slots than the base is split into
  blocks ``<domain>-1..k`` (node order) sharing one aligned window, or refused
  (``TopologyRequest.oversized``).
* **flat**: no units. A partition-scoped tree or block with no placed node is written flat too,
  with a warning (topology.conf keeps the tree or block: :attr:`PlannedTopology.layout`).

Each planned topology also records the unit of every member node, the source of the
``topology.slinky.slurm.net/spec`` annotations.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from slinky_topology import hostlist
from slinky_topology.errors import Finding, ValidationError
from slinky_topology.model import (
    Block,
    BlockOptions,
    BlockSpec,
    Fabric,
    FlatSpec,
    Node,
    Shape,
    Topology,
    TopologyDoc,
    TopologyRequest,
    TreeSpec,
    TreeSwitch,
    catch_all_switch,
    is_safe_name,
    natural_key,
)
from slinky_topology.validate import (
    MAX_BLOCK_LEVEL,
    Findings,
    raise_on_errors,
    validate_fabric,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "ConfKind",
    "Plan",
    "PlannedTopology",
    "default_requests",
    "plan",
    "with_block_options",
]

ConfKind = Literal["tree", "block"]
_DOMAIN_KEY = "\x00"  # marks a domain group (sub-domain blocks) in the layout trie
_PIECES_KEY = "\x01"  # marks the base blocks of one split domain in the layout trie


@dataclass(frozen=True, slots=True)
class PlannedTopology:
    """A static topology plus ``units``: Slurm node name -> unit (block name or root:..:leaf).

    ``layout``: for a partition-scoped topology written flat because no node is placed in it,
    the tree or block it replaces; topology.conf, which has no partitions, writes that one.
    """

    topology: Topology
    units: dict[str, str]
    layout: Topology | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything the emitters need, for one fabric."""

    fabric: Fabric
    topologies: tuple[PlannedTopology, ...]
    warnings: tuple[Finding, ...] = ()
    hostlists: Mapping[tuple[str, ...], str] = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )
    """Node and switch lists of the layout -> their compressed hostlist, computed while sorting
    them, so the emitters do not compress them a second time."""

    def doc(self, shape: Shape = "static") -> TopologyDoc:
        """The topology.yaml content; ``dynamic`` drops node lists (a skeleton)."""
        return TopologyDoc(tuple(_shaped(p.topology, shape) for p in self.topologies))

    def conf_topology(self, kind: ConfKind) -> PlannedTopology:
        """The first planned topology of ``kind`` (topology.conf holds only one)."""
        for planned in self.topologies:
            if planned.topology.kind == kind:
                return planned
            if planned.layout is not None and planned.layout.kind == kind:
                return PlannedTopology(planned.layout, planned.units)
        out = Findings()
        out.error(
            f"fabric {self.fabric.name}",
            f"no {kind} topology to write as topology.conf",
            f"add a topology of type {kind} to spec.topologies, or pick another format",
        )
        raise ValidationError(out.items)

    def conf_doc(self, kind: ConfKind, shape: Shape = "static") -> TopologyDoc:
        """The topology.conf content: one topology named ``default``."""
        planned = self.conf_topology(kind)
        topo = Topology("default", True, planned.topology.spec)
        return TopologyDoc((_shaped(topo, shape),))

    def specs(self, conf: ConfKind | None = None) -> dict[str, str]:
        """Kubernetes node name -> ``Topology=`` string, for every present node.

        ``conf`` ``None``: topology.yaml syntax ``topo:unit[,topo:unit...]``; otherwise the
        single topology.conf topology, always named ``default``. Nodes in no unit get ``""``.
        """
        present = [n for n in self.fabric.nodes if n.state != "absent"]
        names = [n.name for n in present]
        kube = [n.name if n.k8s_name is None else n.k8s_name for n in present]
        # Per-node work stays in C (map, zip, dict lookups); strings are built per distinct unit.
        values: list[str]
        if conf is not None:
            units = self.conf_topology(conf).units
            label: dict[str | None, str] = {u: f"default:{u}" if u else "" for u in units.values()}
            label[None] = ""
            values = list(map(label.__getitem__, map(units.get, names)))
        elif self.topologies:
            columns = [map(p.units.get, names) for p in self.topologies]
            keys = list(zip(*columns, strict=True))
            joined = {key: self._spec_of(key) for key in set(keys)}
            values = list(map(joined.__getitem__, keys))
        else:
            values = [""] * len(names)
        out = dict(zip(kube, values, strict=True))
        return {name: out[name] for name in sorted(out)}

    def _spec_of(self, units: tuple[str | None, ...]) -> str:
        """``topo:unit,...`` for one node's unit in each topology (``None``: not in it)."""
        return ",".join(
            f"{p.topology.name}:{unit}"
            for p, unit in zip(self.topologies, units, strict=True)
            if unit is not None
        )


def _shaped(topo: Topology, shape: Shape) -> Topology:
    if shape == "static":
        return topo
    spec = topo.spec
    if isinstance(spec, TreeSpec):
        spec = TreeSpec(tuple(TreeSwitch(s.name, s.children) for s in spec.switches))
    elif isinstance(spec, BlockSpec):
        spec = BlockSpec(spec.block_sizes, tuple(Block(b.name) for b in spec.blocks))
    return Topology(topo.name, topo.cluster_default, spec)


def default_requests(
    fabric: Fabric, options: BlockOptions | None = None
) -> tuple[TopologyRequest, ...]:
    """Topologies emitted when the fabric asks for none (see :class:`Fabric`).

    ``options`` shape the ``nvlink`` block topology (BlockSizes, block source, oversized domains).
    """
    has_tree = any(n.leaf for n in fabric.nodes) or bool(fabric.switches)
    has_block = any(n.domain for n in fabric.nodes) or bool(fabric.domains)
    block = options or BlockOptions()
    reqs: list[TopologyRequest] = []
    if has_tree:
        reqs.append(TopologyRequest("fabric", "tree", cluster_default=True))
    if has_block:
        reqs.append(
            TopologyRequest(
                "nvlink",
                "block",
                cluster_default=not has_tree,
                block_sizes=block.block_sizes,
                source=block.source,
                oversized=block.oversized,
            )
        )
    if not reqs:
        reqs.append(TopologyRequest("flat", "flat", cluster_default=True))
    return tuple(reqs)


def with_block_options(fabric: Fabric, options: BlockOptions) -> Fabric:
    """``fabric`` asking for its default topologies laid out with ``options``.

    For inputs without topology requests (Kubernetes Nodes, ibnetdiscover); a fabric that names
    its topologies keeps them (its file sets these per topology).
    """
    if fabric.topologies:
        return fabric
    return dataclasses.replace(fabric, topologies=default_requests(fabric, options))


def _with_default(requests: tuple[TopologyRequest, ...]) -> tuple[TopologyRequest, ...]:
    """Exactly one cluster default: with none marked, the first (Slurm's own choice then)."""
    if not requests or any(r.cluster_default for r in requests):
        return requests
    return (dataclasses.replace(requests[0], cluster_default=True), *requests[1:])


def plan(fabric: Fabric) -> Plan:
    """Validate ``fabric`` and lay out its topologies; raise ValidationError on any error.

    A partition-scoped tree or block topology in which no node is placed (every node of the
    partitions absent, or, for a block topology, without an NVLink domain) is written as Slurm's
    flat topology, with a warning naming it, so that the other topologies are still published
    (topology.conf, which has no partitions, keeps the tree or block: see ``layout``).
    """
    findings = validate_fabric(fabric)
    raise_on_errors(findings, what=f"fabric {fabric.name}")
    ctx = _Context(fabric)
    notes = Findings()
    notes.extend(f for f in findings if f.severity == "warning")
    notes.extend(fabric.warnings)
    planned: list[PlannedTopology] = []
    for req in _with_default(fabric.topologies or default_requests(fabric)):
        if req.kind == "tree":
            done = _tree(ctx, req)
        elif req.kind == "block":
            done = _block(ctx, req, notes)
        else:
            done = _flat(req)
        if req.partitions and req.kind != "flat" and not done.units:
            _warn_degraded(notes, req)
            done = dataclasses.replace(_flat(req), layout=done.topology)
        planned.append(done)
    return Plan(fabric, tuple(planned), tuple(notes.items), ctx.hostlists)


def _flat(req: TopologyRequest) -> PlannedTopology:
    return PlannedTopology(Topology(req.name, req.cluster_default, FlatSpec()), {})


def _warn_degraded(notes: Findings, req: TopologyRequest) -> None:
    parts = ", ".join(req.partitions)
    # A tree places every present node (those without a leaf under the catch-all switch).
    why = "all absent" if req.kind == "tree" else "all absent, or none with an NVLink domain yet"
    notes.warning(
        f"topology {req.name}",
        f"no node of partition {parts} is placed in this {req.kind} topology ({why}); "
        "wrote it as flat (topology/flat) so the rest still loads",
        f"bring up or label nodes of partition {parts}; the {req.kind} comes back on the next run",
    )


class _Context:
    """Indexes over a validated fabric shared by the layouts."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self.parent: dict[str, str | None] = {s.name: s.parent for s in fabric.switches}
        self.children: dict[str, list[str]] = defaultdict(list)
        for s in fabric.switches:
            if s.parent is not None:
                self.children[s.parent].append(s.name)
        for kids in self.children.values():
            kids.sort(key=natural_key)
        self.roots = sorted((s.name for s in fabric.switches if s.parent is None), key=natural_key)
        self.catch_all = catch_all_switch(self.parent)
        self._paths: dict[str, tuple[str, ...]] = {}
        self.hostlists: dict[tuple[str, ...], str] = {}
        self.height: dict[str, int] = {}
        for root in self.roots:
            self._height(root)

    def _height(self, root: str) -> int:
        # iterative post-order: height 0 for switches without child switches
        stack: list[tuple[str, bool]] = [(root, False)]
        while stack:
            name, done = stack.pop()
            if done:
                kids = self.children.get(name, [])
                self.height[name] = 1 + max(self.height[k] for k in kids) if kids else 0
            else:
                stack.append((name, True))
                stack.extend((k, False) for k in self.children.get(name, []))
        return self.height[root]

    def sort(self, names: Iterable[str]) -> tuple[str, ...]:
        """``names`` in canonical hostlist order; their hostlist text is kept for the emitters."""
        hosts, text = hostlist.canonical(names)
        if hosts:
            self.hostlists[hosts] = text
        return hosts

    def path(self, switch: str) -> tuple[str, ...]:
        """Root-first switch path ending at ``switch``."""
        cached = self._paths.get(switch)
        if cached is not None:
            return cached
        up: list[str] = []
        cur: str | None = switch
        while cur is not None:
            up.append(cur)
            cur = self.parent[cur]
        result = tuple(reversed(up))
        self._paths[switch] = result
        return result


def _in_scope(node: Node, req: TopologyRequest) -> bool:
    if node.state == "absent":
        return False
    return not req.partitions or any(p in req.partitions for p in node.partitions)


def _scoped(nodes: Iterable[Node], req: TopologyRequest) -> list[Node]:
    """The nodes of ``nodes`` in the scope of ``req`` (see :func:`_in_scope`), in order."""
    if not req.partitions:
        return [n for n in nodes if n.state != "absent"]
    return [n for n in nodes if _in_scope(n, req)]


def _tree(ctx: _Context, req: TopologyRequest) -> PlannedTopology:
    fabric = ctx.fabric
    keep_tiers = req.max_tiers

    def kept(name: str) -> bool:
        return keep_tiers is None or ctx.height[name] < keep_tiers

    def kept_path(leaf: str) -> tuple[str, ...]:
        return tuple(s for s in ctx.path(leaf) if kept(s))

    leaf_nodes: dict[str, list[str]] = defaultdict(list)
    leaf_unit: dict[str, str] = {}  # leaf -> its unit, computed once per leaf
    units: dict[str, str] = {}
    unplaced: list[str] = []  # in-scope nodes without a leaf switch: under the catch-all
    for node in _scoped(fabric.nodes, req):
        leaf = node.leaf
        if leaf is None:
            unplaced.append(node.name)
            units[node.name] = ctx.catch_all
            continue
        leaf_nodes[leaf].append(node.name)
        unit = leaf_unit.get(leaf)
        if unit is None:
            unit = leaf_unit[leaf] = ":".join(kept_path(leaf))
        units[node.name] = unit
    if req.partitions:
        members: set[str] = set()
        for leaf in leaf_nodes:
            members.update(kept_path(leaf))
    else:
        members = {s.name for s in fabric.switches if kept(s.name)}
    switches: list[TreeSwitch] = []
    roots = sorted(
        (s for s in members if ctx.parent[s] is None or ctx.parent[s] not in members),
        key=natural_key,
    )
    stack = list(reversed(roots))
    while stack:
        name = stack.pop()
        kids = [k for k in ctx.children.get(name, []) if k in members]
        nodes = ctx.sort(leaf_nodes.get(name, ()))
        switches.append(TreeSwitch(name, ctx.sort(kids), nodes))
        stack.extend(reversed(kids))
    if unplaced:
        # A root of its own, after the fabric: Slurm keeps these nodes schedulable (jobs among
        # them), where a node under no switch would be left out of every multi-node job.
        switches.append(TreeSwitch(ctx.catch_all, (), ctx.sort(unplaced)))
    topo = Topology(req.name, req.cluster_default, TreeSpec(tuple(switches)))
    return PlannedTopology(topo, units)


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

    def __init__(self, ctx: _Context, req: TopologyRequest) -> None:
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
            if any(_in_scope(n, self.req) for n in all_nodes.get(d, ()))
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
            scoped = [n.name for n in _scoped(nodes, self.req)]
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


def _block(ctx: _Context, req: TopologyRequest, notes: Findings) -> PlannedTopology:
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
