"""Pure data of the topology pipeline; no I/O.

Two families of types live here:

* the *fabric* (input side): :class:`Fabric` with its :class:`Node`, :class:`Switch`,
  :class:`NvlinkDomain` and the :class:`TopologyRequest` list saying what to emit;
* the *Slurm topology* (output side, also what the parsers return): :class:`TopologyDoc` holding
  :class:`Topology` entries whose plugin is a :class:`TreeSpec`, :class:`BlockSpec` or
  :class:`FlatSpec`. Node lists are expanded, in canonical hostlist order.

Switch tiers are numbered closest-first: tier 0 is the leaf a node hangs from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Collection

    from slinky_topology.errors import Finding

__all__ = [
    "NAME_RE",
    "NO_TOPOLOGY",
    "OVERSIZED_POLICIES",
    "Block",
    "BlockOptions",
    "BlockSource",
    "BlockSpec",
    "Fabric",
    "FlatSpec",
    "Node",
    "NodeState",
    "NvlinkDomain",
    "OversizedPolicy",
    "Shape",
    "Switch",
    "Topology",
    "TopologyDoc",
    "TopologyKind",
    "TopologyRequest",
    "TreeSpec",
    "TreeSwitch",
    "catch_all_switch",
    "is_safe_name",
    "natural_key",
]

NodeState = Literal["up", "down", "absent"]
TopologyKind = Literal["tree", "block", "flat"]
Shape = Literal["static", "dynamic"]
BlockSource = Literal["domain", "subdomain"]
OversizedPolicy = Literal["split", "error"]
#: What to do with an NVLink domain (or sub-domain) holding more node slots than the base block
#: size: ``split`` it into consecutive base-size blocks (the default), or refuse (``error``).
OVERSIZED_POLICIES: tuple[OversizedPolicy, ...] = ("split", "error")

#: Names we generate and accept for switches, blocks, domains and topologies: hostlist-safe,
#: free of Slurm config syntax (``, : = # [ ]`` and whitespace), at most 64 characters.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SPLIT_DIGITS = re.compile(r"(\d+)")
#: The catch-all switch of tree topologies: nodes without a leaf switch hang from it, so they stay
#: schedulable (topograph names its pseudo-switch the same). See :func:`catch_all_switch`.
NO_TOPOLOGY = "no-topology"


def is_safe_name(name: str) -> bool:
    """Return whether ``name`` matches :data:`NAME_RE` in full."""
    return NAME_RE.fullmatch(name) is not None


def catch_all_switch(switches: Collection[str]) -> str:
    """The name of the catch-all switch for a fabric whose switches are ``switches``:
    :data:`NO_TOPOLOGY`, or ``no-topology-1``, ``no-topology-2``, ... when a real switch has it."""
    name = NO_TOPOLOGY
    i = 0
    while name in switches:
        i += 1
        name = f"{NO_TOPOLOGY}-{i}"
    return name


def natural_key(name: str) -> tuple[tuple[str | int, ...], str]:
    """Sort key putting ``leaf2`` before ``leaf10``; ties broken by the raw string."""
    parts = _SPLIT_DIGITS.split(name)
    key: list[str | int] = []
    for i, part in enumerate(parts):
        key.append(int(part) if i % 2 else part)
    return tuple(key), name


# --------------------------------------------------------------------------- fabric (input)


@dataclass(frozen=True, slots=True)
class Node:
    """A compute node.

    ``name`` is the Slurm node name; ``k8s_name`` the Kubernetes Node carrying its annotation
    (``None``: same as ``name``). ``leaf`` is the closest switch; ``domain`` the NVLink
    (accelerator) domain, ``subdomain`` a partition (clique) inside it. ``absent`` nodes keep
    their domain's slot but appear in no node list.
    """

    name: str
    k8s_name: str | None = None
    leaf: str | None = None
    domain: str | None = None
    subdomain: str | None = None
    state: NodeState = "up"
    partitions: tuple[str, ...] = ()

    @property
    def kube_name(self) -> str:
        """The Kubernetes Node name (defaults to the Slurm name)."""
        return self.k8s_name if self.k8s_name is not None else self.name


@dataclass(frozen=True, slots=True)
class Switch:
    """A network switch; ``parent`` is the next switch toward the core (``None`` for a root)."""

    name: str
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class NvlinkDomain:
    """An NVLink / accelerator domain (e.g. one GB200 NVL72 rack of 18 nodes).

    ``slots``: expected node count (partial racks keep room). ``switch``: the switch the domain
    sits under, used to place it when it has no nodes yet (default: common ancestor of its nodes).
    """

    name: str
    slots: int | None = None
    switch: str | None = None


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """One topology to emit.

    ``block_sizes`` ``None`` means infer; ``max_tiers`` keeps only the lowest tiers of a tree;
    ``partitions`` restricts the topology to nodes of those Slurm partitions. ``source``
    ``subdomain`` makes one base block per NVLink partition (clique) instead of per domain.
    ``oversized``: see :data:`OVERSIZED_POLICIES` (split blocks are named ``<unit>-<i>``, 1-based).
    """

    name: str
    kind: TopologyKind
    cluster_default: bool = False
    block_sizes: tuple[int, ...] | None = None
    max_tiers: int | None = None
    partitions: tuple[str, ...] = ()
    source: BlockSource = "domain"
    oversized: OversizedPolicy = "split"


@dataclass(frozen=True, slots=True)
class BlockOptions:
    """How the default block topology of a label (or ibnetdiscover) input is laid out.

    The same knobs a fabric file sets per topology (``blockSizes``, ``source``,
    ``oversizedDomains``), for inputs that carry no topology requests. ``block_sizes`` ``None``
    means infer.
    """

    block_sizes: tuple[int, ...] | None = None
    source: BlockSource = "domain"
    oversized: OversizedPolicy = "split"


@dataclass(frozen=True, slots=True)
class Fabric:
    """A cluster fabric: switches, NVLink domains, nodes, and the topologies wanted from them.

    An empty ``topologies`` means the defaults: a ``fabric`` tree when nodes have leaves, an
    ``nvlink`` block topology when nodes have domains, else a ``flat`` one. With no topology
    marked ``cluster_default`` the first one is the cluster default.

    ``skipped``: input objects the source could not place (Kubernetes Nodes without the Slurm
    node name), and ``warnings``: what the source wants the user to know; both are reported with
    the plan's warnings.
    """

    name: str = "fabric"
    switches: tuple[Switch, ...] = ()
    domains: tuple[NvlinkDomain, ...] = ()
    nodes: tuple[Node, ...] = ()
    topologies: tuple[TopologyRequest, ...] = ()
    tiers: tuple[str, ...] = ("leaf", "spine", "core")
    slurm_version: str | None = None
    skipped: tuple[str, ...] = ()
    warnings: tuple[Finding, ...] = ()


# ------------------------------------------------------------------- Slurm topology (output)


@dataclass(frozen=True, slots=True)
class TreeSwitch:
    """One ``SwitchName=`` line / ``switches[]`` item. ``line`` is ignored by ``==``."""

    name: str
    children: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    line: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class TreeSpec:
    """``topology/tree``: switches in file order."""

    switches: tuple[TreeSwitch, ...]


@dataclass(frozen=True, slots=True)
class Block:
    """One base block; no nodes = placeholder that keeps later blocks aligned."""

    name: str
    nodes: tuple[str, ...] = ()
    line: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class BlockSpec:
    """``topology/block``: base blocks in locality order and ``BlockSizes`` (empty = absent)."""

    block_sizes: tuple[int, ...]
    blocks: tuple[Block, ...]
    line: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class FlatSpec:
    """``topology/flat``."""


@dataclass(frozen=True, slots=True)
class Topology:
    """One named topology (a topology.yaml item; topology.conf holds one named ``default``)."""

    name: str
    cluster_default: bool
    spec: TreeSpec | BlockSpec | FlatSpec
    line: int | None = field(default=None, compare=False)

    @property
    def kind(self) -> TopologyKind:
        if isinstance(self.spec, TreeSpec):
            return "tree"
        if isinstance(self.spec, BlockSpec):
            return "block"
        return "flat"


@dataclass(frozen=True, slots=True)
class TopologyDoc:
    """A whole topology file's content."""

    topologies: tuple[Topology, ...]

    def get(self, name: str) -> Topology | None:
        for topo in self.topologies:
            if topo.name == name:
                return topo
        return None
