"""Turn a :class:`~slinky_topology.model.Fabric` into Slurm topologies and per-node units.

Pure functions. :func:`plan` validates the fabric, then lays out every requested topology:

* **tree**: the switch forest (optionally trimmed to the lowest ``max_tiers`` tiers, or to the
  ancestor closure of a partition's nodes), written depth-first from each root; leaves list their
  nodes.
* **block**: one base block per NVLink domain. Domains are placed by a buddy layout over the switch
  tree: every switch's subtree gets a power-of-two run of base-block slots aligned to its size, so
  an aggregated block of Slurm level *j* (2^j consecutive base blocks) never straddles two
  subtrees unless it covers them whole. Gaps become placeholder blocks (``pad0003``); a domain
  with no nodes keeps its block as a placeholder, so node churn never moves another domain.
  Inferred ``BlockSizes`` go from the base (largest domain) up to the largest subtree under one
  root switch.
* **flat**: no units.

Each planned topology also records the unit of every member node, the source of the
``topology.slinky.slurm.net/spec`` annotations.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

from slinky_topology import hostlist
from slinky_topology.errors import Finding, ValidationError
from slinky_topology.model import (
    Block,
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
    is_safe_name,
    natural_key,
)
from slinky_topology.validate import validate_fabric

__all__ = ["ConfKind", "Plan", "PlannedTopology", "default_requests", "plan"]

ConfKind = Literal["tree", "block"]
MAX_BLOCK_LEVEL = 15
_DOMAIN_KEY = "\x00"  # marks a domain group (sub-domain blocks) in the layout trie


@dataclass(frozen=True, slots=True)
class PlannedTopology:
    """A static topology plus ``units``: Slurm node name -> unit (block name or root:..:leaf)."""

    topology: Topology
    units: dict[str, str]


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything the emitters need, for one fabric."""

    fabric: Fabric
    topologies: tuple[PlannedTopology, ...]
    warnings: tuple[Finding, ...] = ()

    def doc(self, shape: Shape = "static") -> TopologyDoc:
        """The topology.yaml content; ``dynamic`` drops node lists (a skeleton)."""
        return TopologyDoc(tuple(_shaped(p.topology, shape) for p in self.topologies))

    def conf_topology(self, kind: ConfKind) -> PlannedTopology:
        """The first planned topology of ``kind`` (topology.conf holds only one)."""
        for planned in self.topologies:
            if planned.topology.kind == kind:
                return planned
        raise ValidationError(
            [
                Finding(
                    "error",
                    f"fabric {self.fabric.name}",
                    f"no {kind} topology to write as topology.conf",
                    fix=f"add a topology of type {kind} to spec.topologies, or pick another format",
                )
            ]
        )

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
        out: dict[str, str] = {}
        if conf is not None:
            units = self.conf_topology(conf).units
            for node in self.fabric.nodes:
                if node.state != "absent":
                    unit = units.get(node.name)
                    out[node.kube_name] = f"default:{unit}" if unit else ""
            return dict(sorted(out.items()))
        for node in self.fabric.nodes:
            if node.state == "absent":
                continue
            parts = [
                f"{p.topology.name}:{p.units[node.name]}"
                for p in self.topologies
                if node.name in p.units
            ]
            out[node.kube_name] = ",".join(parts)
        return dict(sorted(out.items()))


def _shaped(topo: Topology, shape: Shape) -> Topology:
    if shape == "static":
        return topo
    spec = topo.spec
    if isinstance(spec, TreeSpec):
        spec = TreeSpec(tuple(TreeSwitch(s.name, s.children) for s in spec.switches))
    elif isinstance(spec, BlockSpec):
        spec = BlockSpec(spec.block_sizes, tuple(Block(b.name) for b in spec.blocks))
    return Topology(topo.name, topo.cluster_default, spec)


def default_requests(fabric: Fabric) -> tuple[TopologyRequest, ...]:
    """Topologies emitted when the fabric asks for none (see :class:`Fabric`)."""
    has_tree = any(n.leaf for n in fabric.nodes) or bool(fabric.switches)
    has_block = any(n.domain for n in fabric.nodes) or bool(fabric.domains)
    reqs: list[TopologyRequest] = []
    if has_tree:
        reqs.append(TopologyRequest("fabric", "tree", cluster_default=True))
    if has_block:
        reqs.append(TopologyRequest("nvlink", "block", cluster_default=not has_tree))
    if not reqs:
        reqs.append(TopologyRequest("flat", "flat", cluster_default=True))
    return tuple(reqs)


def plan(fabric: Fabric) -> Plan:
    """Validate ``fabric`` and lay out its topologies; raise ValidationError on any error."""
    findings = validate_fabric(fabric)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise ValidationError(errors, what=f"fabric {fabric.name}")
    ctx = _Context(fabric)
    requests = fabric.topologies or default_requests(fabric)
    planned: list[PlannedTopology] = []
    for req in requests:
        if req.kind == "tree":
            planned.append(_tree(ctx, req))
        elif req.kind == "block":
            planned.append(_block(ctx, req))
        else:
            planned.append(PlannedTopology(Topology(req.name, req.cluster_default, FlatSpec()), {}))
    warnings = tuple(f for f in findings if f.severity == "warning")
    return Plan(fabric, tuple(planned), warnings)


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
        self._paths: dict[str, tuple[str, ...]] = {}
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


def _tree(ctx: _Context, req: TopologyRequest) -> PlannedTopology:
    fabric = ctx.fabric
    keep_tiers = req.max_tiers

    def kept(name: str) -> bool:
        return keep_tiers is None or ctx.height[name] < keep_tiers

    def kept_path(leaf: str) -> tuple[str, ...]:
        return tuple(s for s in ctx.path(leaf) if kept(s))

    leaf_nodes: dict[str, list[str]] = defaultdict(list)
    units: dict[str, str] = {}
    for node in fabric.nodes:
        if node.leaf is None or not _in_scope(node, req):
            continue
        leaf_nodes[node.leaf].append(node.name)
        units[node.name] = ":".join(kept_path(node.leaf))
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
        nodes = hostlist.sort_hosts(leaf_nodes.get(name, ()))
        switches.append(TreeSwitch(name, hostlist.sort_hosts(kids), nodes))
        stack.extend(reversed(kids))
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


def _block(ctx: _Context, req: TopologyRequest) -> PlannedTopology:
    fabric = ctx.fabric
    declared = {d.name: d for d in fabric.domains}
    all_nodes: dict[str, list[Node]] = defaultdict(list)
    for node in fabric.nodes:
        if node.domain is not None:
            all_nodes[node.domain].append(node)
    names = set(declared) | set(all_nodes)
    scoped: dict[str, list[str]] = defaultdict(list)
    for node in fabric.nodes:
        if node.domain is not None and _in_scope(node, req):
            scoped[node.domain].append(node.name)
    if req.partitions:
        # Drop only domains whose present nodes are all outside the partitions; a domain with
        # no present node (not delivered yet) keeps its placeholder.
        names = {
            d
            for d in names
            if scoped.get(d) or not any(n.state != "absent" for n in all_nodes.get(d, ()))
        }
    # unit name -> (node slots, in-scope member names)
    units_of: dict[str, tuple[int, list[str]]] = {}
    root = _Group()
    for d in names:
        home = declared[d].switch if d in declared else None
        if home is not None:
            path: tuple[str, ...] = ctx.path(home)
        else:
            paths = [ctx.path(n.leaf) for n in all_nodes.get(d, ()) if n.leaf is not None]
            path = _common_prefix(paths)
        expected = declared[d].slots if d in declared else None
        subs = sorted({n.subdomain or "" for n in all_nodes.get(d, ())}, key=natural_key)
        if req.source == "subdomain" and any(subs):
            # One base block per sub-domain; the domain's blocks share one aligned window.
            path = (*path, _DOMAIN_KEY + d)
            scoped_names = set(scoped.get(d, ()))
            for s in subs:
                unit = f"{d}.{s}" if s else d
                members = [n for n in all_nodes[d] if (n.subdomain or "") == s]
                units_of[unit] = (len(members), [n.name for n in members if n.name in scoped_names])
        else:
            units_of[d] = (max(expected or 0, len(all_nodes.get(d, ())), 1), scoped.get(d, []))
            subs = [""]
        group = root
        for key in path:
            group = group.children.setdefault(key, _Group())
        group.units.extend(f"{d}.{s}" if s else d for s in subs)
    bad_names = sorted(u for u in units_of if not is_safe_name(u))
    if bad_names:
        raise ValidationError(
            [
                Finding(
                    "error",
                    f"block {u!r}",
                    "domain.subdomain is not a safe block name",
                    fix="use shorter domain/partition ids",
                )
                for u in bad_names
            ],
            what=f"topology {req.name}",
        )
    sizes = {u: size for u, (size, _) in units_of.items()}
    slots = _layout(root)

    if req.block_sizes is not None:
        block_sizes = req.block_sizes
    else:
        base = max(sizes.values(), default=1)
        widest = (
            max(len(_layout(g)) for g in root.children.values())
            if root.children
            else len(root.units)
        )
        level = min(max(widest, 1).bit_length() - 1, MAX_BLOCK_LEVEL)
        block_sizes = tuple(base << j for j in range(level + 1))
    base = block_sizes[0]
    too_big = [d for d in sorted(sizes, key=natural_key) if sizes[d] > base]
    if too_big:
        raise ValidationError(
            [
                Finding(
                    "error",
                    f"domain {d}",
                    f"needs {sizes[d]} node slots, more than the base block size {base}",
                    fix="raise the first BlockSizes value or split the domain",
                )
                for d in too_big
            ],
            what=f"topology {req.name}",
        )

    # Trailing placeholders only up to a whole group of the largest level (as topograph pads).
    used = len(slots)
    while used and slots[used - 1] is None:
        used -= 1
    top = max(block_sizes[-1] // base, 1) if base > 0 else 1
    total = max(-(-used // top) * top, 1)
    slots = (slots[:used] + [None] * total)[:total]

    taken = set(units_of)
    blocks: list[Block] = []
    for index, slot in enumerate(slots):
        if slot is None:
            pad = f"pad{index:04d}"
            while pad in taken:
                pad += "x"
            taken.add(pad)
            blocks.append(Block(pad))
        else:
            blocks.append(Block(slot, hostlist.sort_hosts(units_of[slot][1])))
    units = {n: u for u, (_, members) in units_of.items() for n in members}
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
