"""Nodes without a leaf switch in tree topologies (issue 30 item 6).

Slurm leaves a node that no switch lists out of every multi-node job ("switches lack access to N
nodes"), so such nodes hang from a catch-all switch ``no-topology`` (a root of its own) in every
tree: topology.yaml (partition trees too), topology.conf and the dynamic skeleton, whose node
annotations then name it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import yaml

from slinky_topology import cli
from slinky_topology.build import plan
from slinky_topology.model import (
    Fabric,
    Node,
    Switch,
    TopologyRequest,
    TreeSpec,
    TreeSwitch,
)
from slinky_topology.parse import parse_topology_conf
from slinky_topology.pipeline import render_annotations_output, render_output
from slinky_topology.validate import validate_specs

if TYPE_CHECKING:
    from pathlib import Path

SPINE = (Switch("spine1"), Switch("leaf01", "spine1"), Switch("leaf02", "spine1"))
NODES = (
    Node("a1", leaf="leaf01", partitions=("gpu",)),
    Node("a2", leaf="leaf02", partitions=("cpu",)),
    Node("x1", partitions=("gpu",)),
    Node("x2", partitions=("cpu",)),
    Node("x3", state="absent", partitions=("gpu",)),
)
REQUESTS = (
    TopologyRequest("fabric", "tree", cluster_default=True),
    TopologyRequest("gpu-tree", "tree", partitions=("gpu",)),
)


def _tree(fabric: Fabric, name: str, shape: str = "static") -> TreeSpec:
    topo = plan(fabric).doc(shape).get(name)  # type: ignore[arg-type]
    assert topo is not None
    assert isinstance(topo.spec, TreeSpec)
    return topo.spec


def test_nodes_without_a_leaf_hang_from_the_catch_all_switch_in_every_tree() -> None:
    fabric = Fabric(switches=SPINE, nodes=NODES, topologies=REQUESTS)
    whole = _tree(fabric, "fabric")
    assert whole.switches[-1] == TreeSwitch("no-topology", (), ("x1", "x2"))
    assert [s.name for s in whole.switches] == ["spine1", "leaf01", "leaf02", "no-topology"]
    part = _tree(fabric, "gpu-tree")  # only the partition's nodes; absent x3 nowhere
    assert [(s.name, s.children, s.nodes) for s in part.switches] == [
        ("spine1", ("leaf01",), ()),
        ("leaf01", (), ("a1",)),
        ("no-topology", (), ("x1",)),
    ]
    specs = plan(fabric).specs()
    assert specs["x1"] == "fabric:no-topology,gpu-tree:no-topology"
    assert specs["x2"] == "fabric:no-topology"
    assert "x3" not in specs


def test_the_dynamic_skeleton_keeps_the_catch_all_switch_and_annotations_name_it() -> None:
    fabric = Fabric(switches=SPINE, nodes=NODES, topologies=REQUESTS)
    for name in ("fabric", "gpu-tree"):
        skeleton = _tree(fabric, name, "dynamic")
        assert TreeSwitch("no-topology") in skeleton.switches
    out = render_annotations_output(plan(fabric))
    assert json.loads(out.text)["x2"] == "fabric:no-topology"
    assert not validate_specs(out.doc, json.loads(out.text)), "every unit exists in the skeleton"
    conf = render_annotations_output(plan(fabric), "topology.conf-tree")
    assert json.loads(conf.text)["x1"] == "default:no-topology"


def test_topology_conf_lists_the_catch_all_switch() -> None:
    fabric = Fabric(switches=SPINE, nodes=NODES, topologies=REQUESTS)
    text = render_output(plan(fabric), "topology.conf-tree").text
    assert "SwitchName=no-topology Nodes=x[1-2]\n" in text
    doc = parse_topology_conf(text, "topology.conf")
    spec = doc.topologies[0].spec
    assert isinstance(spec, TreeSpec)
    assert {n for s in spec.switches for n in s.nodes} == {"a1", "a2", "x1", "x2"}


def test_a_real_switch_named_no_topology_keeps_its_name() -> None:
    """The catch-all switch takes the first free name of no-topology, no-topology-1, ..."""
    switches = (*SPINE, Switch("no-topology", "spine1"), Switch("no-topology-1"))
    nodes = (Node("a1", leaf="no-topology"), Node("x1"))
    fabric = Fabric(switches=switches, nodes=nodes, topologies=REQUESTS[:1])
    spec = _tree(fabric, "fabric")
    by_name = {s.name: s for s in spec.switches}
    assert by_name["no-topology"].nodes == ("a1",)
    assert by_name["no-topology-2"] == TreeSwitch("no-topology-2", (), ("x1",))
    assert [s.name for s in spec.switches].count("no-topology-2") == 1
    assert plan(fabric).specs() == {"a1": "fabric:spine1:no-topology", "x1": "fabric:no-topology-2"}
    from slinky_topology.model import catch_all_switch  # noqa: PLC0415 (new in issue 30)

    assert catch_all_switch(set()) == "no-topology"


def test_the_warning_names_the_nodes_and_the_catch_all_switch() -> None:
    fabric = Fabric(switches=SPINE, nodes=NODES, topologies=REQUESTS)
    (warning,) = [w for w in plan(fabric).warnings if "no leaf switch" in w.message]
    assert "2 nodes" in warning.message and "x1, x2" in warning.message
    assert "catch-all switch no-topology" in warning.message


def test_a_partition_tree_of_unplaced_nodes_is_a_tree_not_flat() -> None:
    """Before: a partition whose present nodes all lack a leaf was written flat; now its tree
    holds them under the catch-all switch, so multi-node jobs of the partition still run."""
    nodes = (
        Node("a1", leaf="leaf01"),
        Node("x1", partitions=("gpu",)),
        Node("x2", partitions=("gpu",)),
    )
    fabric = Fabric(switches=SPINE, nodes=nodes, topologies=REQUESTS)
    part = _tree(fabric, "gpu-tree")
    assert part.switches == (TreeSwitch("no-topology", (), ("x1", "x2")),)
    assert not [w for w in plan(fabric).warnings if "wrote it as flat" in w.message]


def test_generate_writes_the_catch_all_switch(tmp_path: Path) -> None:
    """The command line, end to end, from a fabric file."""
    fabric = tmp_path / "fabric.yaml"
    fabric.write_text(
        "apiVersion: fabric.example.org/v1alpha1\nkind: Fabric\nmetadata: {name: f}\nspec:\n"
        "  switches: [{name: leaf1}]\n"
        "  nodes: [{name: 'n[1-2]', leaf: leaf1}, {name: 'm[1-2]'}]\n"
        "  topologies: [{name: fabric, type: tree, clusterDefault: true}]\n"
    )
    out = tmp_path / "topology.yaml"
    assert cli.main(["generate", "--fabric", str(fabric), "--shape", "static", "-o", str(out)]) == 0
    (item,) = yaml.safe_load(out.read_text())
    assert item["tree"]["switches"][-1] == {"switch": "no-topology", "nodes": "m[1-2]"}
