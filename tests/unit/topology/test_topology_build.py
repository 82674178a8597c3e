"""Layout rules of slinky_topology.build (block placement, inference, tree trimming)."""

from __future__ import annotations

import pytest

from slinky_topology.build import default_requests, plan
from slinky_topology.errors import ValidationError
from slinky_topology.model import (
    BlockSpec,
    Fabric,
    Node,
    NvlinkDomain,
    Switch,
    TopologyRequest,
    TreeSpec,
)

SPINE = (Switch("spine1"), Switch("leaf01", "spine1"), Switch("leaf02", "spine1"))


def _racks(spec: list[tuple[str, str, int]], slots: int = 4) -> tuple[Node, ...]:
    nodes: list[Node] = []
    for rack, leaf, count in spec:
        nodes.extend(Node(f"{rack}n{i}", leaf=leaf, domain=rack) for i in range(1, count + 1))
    return tuple(nodes)


def _blocks(fabric: Fabric, name: str = "nvlink") -> BlockSpec:
    spec = plan(fabric).doc().get(name).spec  # type: ignore[union-attr]
    assert isinstance(spec, BlockSpec)
    return spec


def test_racks_under_one_leaf_are_aligned_and_padded() -> None:
    """Three racks on leaf01 take slots 0-3 (slot 3 a placeholder); leaf02's rack starts at 4."""
    nodes = _racks(
        [("ra", "leaf01", 4), ("rb", "leaf01", 4), ("rc", "leaf01", 4), ("rd", "leaf02", 4)]
    )
    spec = _blocks(Fabric(switches=SPINE, nodes=nodes))
    assert [b.name for b in spec.blocks] == [
        "ra",
        "rb",
        "rc",
        "pad0003",
        "rd",
        "pad0005",
        "pad0006",
        "pad0007",
    ]
    assert spec.blocks[3].nodes == ()
    assert spec.block_sizes == (4, 8, 16, 32)


def test_bigger_subtree_goes_first_for_alignment() -> None:
    nodes = _racks([("ra", "leaf02", 2), ("rb", "leaf01", 2), ("rc", "leaf01", 2)])
    spec = _blocks(Fabric(switches=SPINE, nodes=nodes))
    assert [b.name for b in spec.blocks] == ["rb", "rc", "ra", "pad0003"]


def test_no_switches_infers_sizes_from_domain_count() -> None:
    nodes = _racks([(f"r{i}", "", 3) for i in range(5)])
    nodes = tuple(Node(n.name, domain=n.domain) for n in nodes)
    spec = _blocks(Fabric(nodes=nodes))
    assert spec.block_sizes == (3, 6, 12)  # floor(log2(5)) = 2 levels above the base
    assert len(spec.blocks) == 8  # padded to a whole 12-node group


def test_declared_slots_set_the_base() -> None:
    nodes = _racks([("ra", "leaf01", 2)])
    fabric = Fabric(switches=SPINE, nodes=nodes, domains=(NvlinkDomain("ra", slots=18),))
    assert _blocks(fabric).block_sizes == (18,)


def test_explicit_base_too_small_is_an_error_when_asked() -> None:
    nodes = _racks([("ra", "leaf01", 4)])
    reqs = (
        TopologyRequest("b", "block", cluster_default=True, block_sizes=(2, 4), oversized="error"),
    )
    with pytest.raises(ValidationError, match="domain ra: needs 4 node slots"):
        plan(Fabric(switches=SPINE, nodes=nodes, topologies=reqs))


def test_oversized_domain_is_split_into_aligned_base_blocks() -> None:
    """A 5-node rack over base 2 becomes ra-1..ra-3 (natural node order), padded to a window of
    four so its blocks form one aligned level-2 group; the next rack starts after that window."""
    nodes = _racks([("ra", "leaf01", 5), ("rb", "leaf02", 2)])
    reqs = (TopologyRequest("nvlink", "block", cluster_default=True, block_sizes=(2, 4, 8)),)
    spec = _blocks(Fabric(switches=SPINE, nodes=nodes, topologies=reqs))
    assert [(b.name, b.nodes) for b in spec.blocks] == [
        ("ra-1", ("ran1", "ran2")),
        ("ra-2", ("ran3", "ran4")),
        ("ra-3", ("ran5",)),
        ("pad0003", ()),
        ("rb", ("rbn1", "rbn2")),
        ("pad0005", ()),
        ("pad0006", ()),
        ("pad0007", ()),
    ]
    units = plan(Fabric(switches=SPINE, nodes=nodes, topologies=reqs)).topologies[0].units
    assert units["ran3"] == "ra-2" and units["rbn1"] == "rb"


def test_split_keeps_slots_of_absent_nodes_and_declared_slots() -> None:
    """Declared slots set how many pieces a domain gets; an absent node keeps its place."""
    nodes = (
        Node("a1", leaf="leaf01", domain="ra"),
        Node("a2", leaf="leaf01", domain="ra", state="absent"),
        Node("a3", leaf="leaf01", domain="ra"),
    )
    reqs = (TopologyRequest("nvlink", "block", cluster_default=True, block_sizes=(2,)),)
    fabric = Fabric(
        switches=SPINE, nodes=nodes, domains=(NvlinkDomain("ra", slots=6),), topologies=reqs
    )
    spec = _blocks(fabric)
    assert [(b.name, b.nodes) for b in spec.blocks] == [
        ("ra-1", ("a1",)),
        ("ra-2", ("a3",)),
        ("ra-3", ()),
    ]  # no trailing placeholder: BlockSizes has no level above the base


def test_split_name_clash_is_an_error() -> None:
    nodes = (*_racks([("ra", "leaf01", 3)]), Node("x", leaf="leaf02", domain="ra-1"))
    reqs = (TopologyRequest("nvlink", "block", cluster_default=True, block_sizes=(2,)),)
    with pytest.raises(ValidationError, match="ra-1 already names another block"):
        plan(Fabric(switches=SPINE, nodes=nodes, topologies=reqs))


def test_oversized_subdomain_is_split_too() -> None:
    nodes = tuple(
        Node(f"n{i}", leaf="leaf01", domain="ra", subdomain="1" if i < 4 else "2")
        for i in range(1, 6)
    )
    reqs = (
        TopologyRequest(
            "nvlink", "block", cluster_default=True, block_sizes=(2, 4), source="subdomain"
        ),
    )
    spec = _blocks(Fabric(switches=SPINE, nodes=nodes, topologies=reqs))
    listed = {b.name: b.nodes for b in spec.blocks if b.nodes}
    assert listed == {"ra.1-1": ("n1", "n2"), "ra.1-2": ("n3",), "ra.2": ("n4", "n5")}


def test_empty_partition_topology_degrades_to_flat_with_a_warning() -> None:
    """No node of partition gpu is present: its tree and block become flat and say so; the
    unscoped tree is untouched."""
    nodes = (
        *_racks([("ra", "leaf01", 2)]),
        Node("c1", leaf="leaf02", partitions=("cpu",)),
    )
    nodes = tuple(
        Node(n.name, leaf=n.leaf, domain=n.domain, state="absent", partitions=("gpu",))
        if n.domain
        else n
        for n in nodes
    )
    reqs = (
        TopologyRequest("all", "tree", cluster_default=True),
        TopologyRequest("gpu-tree", "tree", partitions=("gpu",)),
        TopologyRequest("gpu-block", "block", partitions=("gpu",)),
    )
    p = plan(Fabric(switches=SPINE, nodes=nodes, topologies=reqs))
    kinds = {t.name: t.kind for t in p.doc().topologies}
    assert kinds == {"all": "tree", "gpu-tree": "flat", "gpu-block": "flat"}
    warned = [w for w in p.warnings if "wrote it as flat" in w.message]
    assert sorted(w.subject for w in warned) == ["topology gpu-block", "topology gpu-tree"]
    assert all("partition gpu" in w.message for w in warned)
    assert p.specs() == {"c1": "all:spine1:leaf02"}
    assert p.doc("dynamic").get("gpu-tree").kind == "flat"  # type: ignore[union-attr]


def test_no_cluster_default_makes_the_first_the_default() -> None:
    reqs = (TopologyRequest("x", "tree"), TopologyRequest("y", "flat"))
    p = plan(Fabric(switches=SPINE, nodes=_racks([("ra", "leaf01", 1)]), topologies=reqs))
    assert [(t.name, t.cluster_default) for t in p.doc().topologies] == [
        ("x", True),
        ("y", False),
    ]


def test_domain_without_nodes_is_a_placeholder_in_place() -> None:
    nodes = _racks([("ra", "leaf01", 2), ("rc", "leaf02", 2)])
    domains = (NvlinkDomain("ra"), NvlinkDomain("rb", slots=2, switch="leaf01"), NvlinkDomain("rc"))
    spec = _blocks(Fabric(switches=SPINE, nodes=nodes, domains=domains))
    assert [(b.name, len(b.nodes)) for b in spec.blocks] == [
        ("ra", 2),
        ("rb", 0),
        ("rc", 2),
        ("pad0003", 0),
    ]


def test_max_tiers_trims_the_top() -> None:
    switches = (
        Switch("core"),
        Switch("spine1", "core"),
        *(Switch(f"leaf{i}", "spine1") for i in (1, 2)),
    )
    nodes = (Node("n1", leaf="leaf1"), Node("n2", leaf="leaf2"))
    reqs = (TopologyRequest("t", "tree", cluster_default=True, max_tiers=2),)
    p = plan(Fabric(switches=switches, nodes=nodes, topologies=reqs))
    spec = p.doc().topologies[0].spec
    assert isinstance(spec, TreeSpec)
    assert [s.name for s in spec.switches] == ["spine1", "leaf1", "leaf2"]
    assert p.specs() == {"n1": "t:spine1:leaf1", "n2": "t:spine1:leaf2"}


def test_partition_tree_is_the_ancestor_closure() -> None:
    switches = (*SPINE, Switch("spine2"), Switch("leaf03", "spine2"))
    nodes = (Node("a", leaf="leaf01", partitions=("p",)), Node("b", leaf="leaf03"))
    reqs = (TopologyRequest("t", "tree", cluster_default=True, partitions=("p",)),)
    spec = plan(Fabric(switches=switches, nodes=nodes, topologies=reqs)).doc().topologies[0].spec
    assert isinstance(spec, TreeSpec)
    assert [(s.name, s.children, s.nodes) for s in spec.switches] == [
        ("spine1", ("leaf01",), ()),
        ("leaf01", (), ("a",)),
    ]


def test_dynamic_shape_drops_node_lists_only() -> None:
    nodes = _racks([("ra", "leaf01", 2)])
    p = plan(Fabric(switches=SPINE, nodes=nodes))
    static, dynamic = p.doc("static"), p.doc("dynamic")
    assert [t.name for t in dynamic.topologies] == [t.name for t in static.topologies]
    for topo in dynamic.topologies:
        if isinstance(topo.spec, TreeSpec):
            assert all(not s.nodes for s in topo.spec.switches)
        if isinstance(topo.spec, BlockSpec):
            assert all(not b.nodes for b in topo.spec.blocks)


def test_conf_specs_use_default_topology_name() -> None:
    nodes = _racks([("ra", "leaf01", 1)])
    p = plan(Fabric(switches=SPINE, nodes=nodes))
    assert p.specs("block") == {"ran1": "default:ra"}
    assert p.specs("tree") == {"ran1": "default:spine1:leaf01"}
    assert p.specs() == {"ran1": "fabric:spine1:leaf01,nvlink:ra"}


def test_default_requests() -> None:
    assert [r.kind for r in default_requests(Fabric(nodes=(Node("a"),)))] == ["flat"]
    both = default_requests(Fabric(switches=SPINE, nodes=(Node("a", leaf="leaf01", domain="d"),)))
    assert [(r.kind, r.cluster_default) for r in both] == [("tree", True), ("block", False)]


@pytest.mark.parametrize(
    ("fabric", "message"),
    [
        pytest.param(
            Fabric(switches=(Switch("a", "b"), Switch("b", "a"))), "loops back", id="cycle"
        ),
        pytest.param(
            Fabric(switches=(Switch("a", "zz"),)), "parent zz is not defined", id="unknown-parent"
        ),
        pytest.param(
            Fabric(switches=SPINE, nodes=(Node("n", leaf="spine1"),)),
            "also has child switches",
            id="node-on-spine",
        ),
        pytest.param(
            Fabric(switches=SPINE, nodes=(Node("n", leaf="nope"),)),
            "leaf switch nope is not defined",
            id="unknown-leaf",
        ),
        pytest.param(Fabric(nodes=(Node("n"), Node("n"))), "defined 2 times", id="dup-node"),
        pytest.param(
            Fabric(nodes=(Node("a", "k"), Node("b", "k"))), "2 Slurm nodes map", id="dup-k8s-name"
        ),
        pytest.param(Fabric(nodes=(Node("bad:name"),)), "not hostlist-safe", id="unsafe-node"),
        pytest.param(
            Fabric(
                nodes=(Node("a", domain="d"), Node("b", domain="d")),
                domains=(NvlinkDomain("d", slots=1),),
            ),
            "only 1 slots",
            id="over-slots",
        ),
        pytest.param(
            Fabric(
                nodes=(Node("a"),),
                topologies=(
                    TopologyRequest("x", "flat", cluster_default=True),
                    TopologyRequest("y", "flat", cluster_default=True),
                ),
            ),
            "2 have clusterDefault",
            id="two-defaults",
        ),
        pytest.param(
            Fabric(
                nodes=(Node("a"),), topologies=(TopologyRequest("x", "tree", cluster_default=True),)
            ),
            "has no switches",
            id="tree-without-switches",
        ),
        pytest.param(
            Fabric(
                nodes=(Node("a"),),
                topologies=(
                    TopologyRequest("x", "block", cluster_default=True, block_sizes=(3, 5)),
                ),
            ),
            "not a multiple",
            id="bad-block-sizes",
        ),
        pytest.param(
            Fabric(
                switches=tuple(Switch(f"s{i}", f"s{i + 1}" if i < 21 else None) for i in range(22))
            ),
            "levels deep",
            id="too-deep",
        ),
    ],
)
def test_fabric_errors(fabric: Fabric, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        plan(fabric)


def test_subdomain_blocks_keep_a_domain_together() -> None:
    """source: subdomain - one base block per clique; a rack's cliques share one aligned window."""
    nodes = (
        *(Node(f"g{i:02d}", leaf="leaf01", domain="rackA", subdomain="1") for i in range(1, 4)),
        Node("g04", leaf="leaf01", domain="rackA", subdomain="2"),
        *(Node(f"g{i:02d}", leaf="leaf01", domain="rackB", subdomain="1") for i in range(5, 8)),
        Node("g08", leaf="leaf01", domain="rackC"),
    )
    reqs = (TopologyRequest("c", "block", cluster_default=True, source="subdomain"),)
    p = plan(Fabric(switches=SPINE, nodes=nodes, topologies=reqs))
    spec = _blocks(Fabric(switches=SPINE, nodes=nodes, topologies=reqs), "c")
    assert [(b.name, len(b.nodes)) for b in spec.blocks] == [
        ("rackA.1", 3),
        ("rackA.2", 1),
        ("rackB.1", 3),
        ("rackC", 1),
    ]
    assert spec.block_sizes == (3, 6, 12)
    assert p.specs()["g04"] == "c:rackA.2"
