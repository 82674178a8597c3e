"""Fleet files and the demo's fleet, without a cluster: every fleet in tests/data/fleets loads
into Node manifests whose GPU labels match their capacity, and the demo's fleet made from a
fabric reads back (through the Node labels) as that fabric."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from slinky_harness.apps import demo
from slinky_harness.apps.demo.topology import fleet_from_fabric, same_topology
from slinky_harness.k8s.fleet import load_fleet, parse_fleet
from slinky_topology.build import plan
from slinky_topology.pipeline import render_output
from slinky_topology.sources import fabric_file, k8s_nodes

if TYPE_CHECKING:
    from slinky_topology.model import Fabric

FLEETS = sorted((Path(__file__).resolve().parents[2] / "data" / "fleets").glob("*.yaml"))
FABRIC = fabric_file.load_fabric("default")


def static_topology(fabric: Fabric) -> str:
    return render_output(plan(fabric), "topology.yaml", "static").text


@pytest.mark.parametrize("path", FLEETS, ids=[p.stem for p in FLEETS])
def test_fleet_files_load(path: Path) -> None:
    fleet = load_fleet(path)
    nodes = fleet.nodes()
    assert nodes
    for node in nodes:
        labels = node["metadata"]["labels"]
        gpus = node["status"]["capacity"].get("nvidia.com/gpu")
        assert (gpus is not None) == ("nvidia.com/gpu.present" in labels)
        if gpus is not None:
            assert labels["nvidia.com/gpu.count"] == gpus


def test_fleet_made_from_the_fabric_reads_back_as_the_fabric() -> None:
    fleet = fleet_from_fabric(FABRIC)
    nodes = fleet.nodes()
    assert [n["metadata"]["name"] for n in nodes] == [n.name for n in FABRIC.nodes]
    read_back = k8s_nodes.fabric_from_nodes(nodes, preset=demo.PRESET)
    assert same_topology(static_topology(read_back), static_topology(FABRIC)) == []


def test_fleet_check_notices_a_node_on_the_wrong_leaf() -> None:
    nodes = fleet_from_fabric(FABRIC).nodes()
    nodes[0]["metadata"]["labels"][demo.TIER_LABEL.format(0)] = "leaf02"
    read_back = k8s_nodes.fabric_from_nodes(nodes, preset=demo.PRESET)
    problems = same_topology(static_topology(read_back), static_topology(FABRIC))
    assert problems and "topology fabric" in problems[0], problems


def test_every_fleet_node_carries_the_kwok_annotation_whatever_the_fleet_says() -> None:
    """The kwok controller plays kubelet only for nodes annotated ``kwok.x-k8s.io/node=fake``
    (so that a real node beside them keeps its own kubelet): every fleet node carries it, even
    when a group's annotations name another value."""
    from slinky_harness.k8s.cluster import KWOK_NODE_SELECTOR  # noqa: PLC0415

    fleet = parse_fleet(
        {
            "kind": "Fleet",
            "name": "f",
            "nodeGroups": [
                {
                    "name": "g",
                    "count": 2,
                    "namePattern": "n-{n}",
                    "resources": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                    "annotations": {"kwok.x-k8s.io/node": "real", "team": "a"},
                }
            ],
        }
    )
    key, value = KWOK_NODE_SELECTOR.split("=")
    for node in fleet.nodes():
        assert node["metadata"]["annotations"][key] == value
        assert node["metadata"]["annotations"]["team"] == "a"
