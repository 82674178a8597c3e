"""Hypothesis strategies building random but valid fabrics (shared by the property tests)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from slinky_topology.model import (
    Fabric,
    Node,
    NodeState,
    NvlinkDomain,
    Switch,
    TopologyRequest,
)

PREFIXES = ("gpu", "n", "node-", "r1n", "x")


@st.composite
def fabrics(
    draw: st.DrawFn,
    max_racks: int = 12,
    with_partitions: bool = False,
    cliques: bool = False,
    leafless: bool = False,
) -> Fabric:
    """A switch tree (1-3 tiers, 1-2 roots) with NVLink racks hanging from leaves.

    Every domain is declared (with slots) and sits under one leaf, so its placement depends only
    on the switch tree. Some nodes are absent, some have no domain (CPU nodes). ``cliques``:
    nodes get NVLink partitions and the block topology makes one block per partition.
    ``leafless``: up to three more nodes (``loose0``...) have no leaf switch, and a switch may be
    named ``no-topology`` (the catch-all switch's own name).
    """
    tiers = draw(st.integers(1, 3))
    n_roots = draw(st.integers(1, 2))
    switches: list[Switch] = []
    level = [f"t{tiers - 1}s{i}" for i in range(n_roots)]
    switches.extend(Switch(name) for name in level)
    for t in range(tiers - 2, -1, -1):
        nxt: list[str] = []
        for parent in level:
            for _ in range(draw(st.integers(1, 3))):
                name = f"t{t}s{len(switches)}"
                switches.append(Switch(name, parent))
                nxt.append(name)
        level = nxt
    leaves = level
    prefix = draw(st.sampled_from(PREFIXES))
    width = draw(st.integers(1, 4))
    slots = draw(st.integers(1, 8))
    n_racks = draw(st.integers(1, max_racks))
    domains: list[NvlinkDomain] = []
    nodes: list[Node] = []
    counter = draw(st.integers(0, 12))
    for r in range(n_racks):
        leaf = draw(st.sampled_from(leaves))
        dname = f"rack{r:02d}"
        home = leaf if draw(st.booleans()) else None
        domains.append(NvlinkDomain(dname, slots=slots, switch=home))
        size = draw(st.integers(0, slots))
        for _ in range(size):
            counter += draw(st.integers(1, 3))
            state: NodeState = draw(st.sampled_from(("up", "up", "up", "down", "absent")))
            parts = ("gpu",) if draw(st.booleans()) or not with_partitions else ("other",)
            name = f"{prefix}{counter:0{width}d}"
            clique = draw(st.sampled_from((None, "1", "2"))) if cliques else None
            nodes.append(
                Node(name, leaf=leaf, domain=dname, subdomain=clique, state=state, partitions=parts)
            )
    for c in range(draw(st.integers(0, 3))):
        nodes.append(Node(f"cpu{c}", leaf=draw(st.sampled_from(leaves)), partitions=("cpu",)))
    if leafless:
        for c in range(draw(st.integers(0, 3))):
            loose: NodeState = draw(st.sampled_from(("up", "down", "absent")))
            parts = ("gpu",) if draw(st.booleans()) or not with_partitions else ("other",)
            nodes.append(Node(f"loose{c}", state=loose, partitions=parts))
        if draw(st.booleans()):
            taken = draw(st.sampled_from([s.name for s in switches]))
            switches = [_renamed(s, taken, "no-topology") for s in switches]
            nodes = [replace(n, leaf="no-topology") if n.leaf == taken else n for n in nodes]
            domains = [
                replace(d, switch="no-topology") if d.switch == taken else d for d in domains
            ]
    topologies = (
        TopologyRequest("fabric", "tree", cluster_default=True),
        TopologyRequest(
            "nvl",
            "block",
            partitions=("gpu",) if with_partitions else (),
            source="subdomain" if cliques else "domain",
        ),
        TopologyRequest("all", "flat"),
    )
    return Fabric(
        name="prop",
        switches=tuple(switches),
        domains=tuple(domains),
        nodes=tuple(nodes),
        topologies=topologies,
    )


def _renamed(switch: Switch, old: str, new: str) -> Switch:
    name = new if switch.name == old else switch.name
    return Switch(name, new if switch.parent == old else switch.parent)


def permuted(fabric: Fabric, data: st.DataObject) -> Fabric:
    """The same fabric with nodes, switches, domains and topology order shuffled
    (topology order is part of the output, so it stays)."""
    return replace(
        fabric,
        nodes=tuple(data.draw(st.permutations(fabric.nodes))),
        switches=tuple(data.draw(st.permutations(fabric.switches))),
        domains=tuple(data.draw(st.permutations(fabric.domains))),
    )
