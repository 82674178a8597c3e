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

from slinky_topology.block_layout import block_topology
from slinky_topology.errors import Finding, ValidationError
from slinky_topology.layout import FabricIndex, PlannedTopology, scoped_nodes
from slinky_topology.model import (
    Block,
    BlockOptions,
    BlockSpec,
    Fabric,
    FlatSpec,
    Shape,
    Topology,
    TopologyDoc,
    TopologyRequest,
    TreeSpec,
    TreeSwitch,
    natural_key,
)
from slinky_topology.validate import (
    Findings,
    raise_on_errors,
    validate_fabric,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ConfKind",
    "Plan",
    "PlannedTopology",
    "default_requests",
    "plan",
    "with_block_options",
]

ConfKind = Literal["tree", "block"]


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
    ctx = FabricIndex(fabric)
    notes = Findings()
    notes.extend(f for f in findings if f.severity == "warning")
    notes.extend(fabric.warnings)
    planned: list[PlannedTopology] = []
    for req in _with_default(fabric.topologies or default_requests(fabric)):
        if req.kind == "tree":
            done = _tree(ctx, req)
        elif req.kind == "block":
            done = block_topology(ctx, req, notes)
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


def _tree(ctx: FabricIndex, req: TopologyRequest) -> PlannedTopology:
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
    for node in scoped_nodes(fabric.nodes, req):
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
