"""What the layouts of :mod:`slinky_topology.build` share: indexes over a validated fabric
(:class:`FabricIndex`), which nodes a topology request covers (:func:`in_scope`,
:func:`scoped_nodes`), and the result of one layout (:class:`PlannedTopology`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from slinky_topology import hostlist
from slinky_topology.model import (
    Fabric,
    Node,
    Topology,
    TopologyRequest,
    catch_all_switch,
    natural_key,
)

if TYPE_CHECKING:
    from collections.abc import Iterable


@dataclass(frozen=True, slots=True)
class PlannedTopology:
    """A static topology plus ``units``: Slurm node name -> unit (block name or root:..:leaf).

    ``layout``: for a partition-scoped topology written flat because no node is placed in it,
    the tree or block it replaces; topology.conf, which has no partitions, writes that one.
    """

    topology: Topology
    units: dict[str, str]
    layout: Topology | None = None


class FabricIndex:
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


def in_scope(node: Node, req: TopologyRequest) -> bool:
    if node.state == "absent":
        return False
    return not req.partitions or any(p in req.partitions for p in node.partitions)


def scoped_nodes(nodes: Iterable[Node], req: TopologyRequest) -> list[Node]:
    """The nodes of ``nodes`` in the scope of ``req`` (see :func:`in_scope`), in order."""
    if not req.partitions:
        return [n for n in nodes if n.state != "absent"]
    return [n for n in nodes if in_scope(n, req)]
