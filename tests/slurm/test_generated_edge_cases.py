"""Generated topology on the fabrics real fleets have (issue 19), in real slurmctld 26.05.

* An NVLink domain larger than the base block size is split into base-size blocks: the split blocks
  load as generated, and a job of one base block lands inside one of them even when a block-unaware
  placement would straddle two.
* A partition-scoped topology whose nodes are all absent is written as Slurm's flat topology: the
  file loads with the partition pointing at it, jobs of that partition schedule, and the other
  topologies are untouched.

Expected values come from the fabric written here (read with PyYAML and python-hostlist through
``slinky_harness.slurm_topo``), never from Slurm's output.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
import yaml
from tests.slurm.fabric_support import fabric_nodes, generate

from slinky_harness.slurm.check import check_load
from slinky_harness.slurm.conf import parse_records
from slinky_harness.slurm.topology import (
    BlockTopology,
    TreeTopology,
    assert_blocks_match,
    assert_tree_matches,
    expand,
    parse_topology_conf,
    parse_topology_yaml,
)

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_harness.slurm.ctld import CtldFactory

BASE = 4
SPLIT_FABRIC = f"""\
apiVersion: fabric.example.org/v1alpha1
kind: Fabric
metadata: {{name: oversized}}
spec:
  switches:
    - {{name: spine1}}
    - {{name: leaf1, parent: spine1}}
    - {{name: leaf2, parent: spine1}}
  nvlinkDomains:
    - {{name: big, slots: 8}}
    - {{name: small, slots: 4}}
  nodes:
    - {{name: "gpu[01-08]", leaf: leaf1, nvlinkDomain: big}}
    - {{name: "gpu[09-12]", leaf: leaf2, nvlinkDomain: small}}
  topologies:
    - {{name: nvl, type: block, clusterDefault: true, blockSizes: [{BASE}, {2 * BASE}]}}
    - {{name: fabric, type: tree}}
"""
"""Domain ``big`` holds two base blocks' worth of nodes; ``small`` exactly one."""

DEGRADED_FABRIC = """\
apiVersion: fabric.example.org/v1alpha1
kind: Fabric
metadata: {name: degraded}
spec:
  switches:
    - {name: spine1}
    - {name: leaf1, parent: spine1}
    - {name: leaf2, parent: spine1}
  nvlinkDomains:
    - {name: rack1, slots: 4, switch: leaf2}
  nodes:
    - {name: "cpu[1-2]", leaf: leaf1, partitions: [cpu]}
    - {name: "gpu[01-04]", leaf: leaf2, nvlinkDomain: rack1, state: absent, partitions: [gpu]}
  topologies:
    - {name: fabric, type: tree, clusterDefault: true}
    - {name: gpu-tree, type: tree, partitions: [gpu]}
    - {name: gpu-nvl, type: block, partitions: [gpu]}
"""
"""Every node of partition ``gpu`` is absent (its rack drained out of Kubernetes)."""


def _slurm_conf(nodes: list[str], *extra: str) -> str:
    lines = [f"NodeName={n} CPUs=1 State=CLOUD" for n in nodes]
    return "\n".join([*lines, *extra]) + "\n"


def test_split_domain_blocks_load_and_hold_a_base_block_job(
    start_ctld: CtldFactory, slurm_root: Path, tmp_path: Path
) -> None:
    nodes = fabric_nodes(SPLIT_FABRIC)
    big = expand("gpu[01-08]")
    text = generate(tmp_path, SPLIT_FABRIC, "--shape", "static")
    (nvl,) = [t for t in parse_topology_yaml(text) if t.name == "nvl"]
    model = nvl.model
    assert isinstance(model, BlockTopology)
    # the fabric's 8-node domain is two base blocks, in node order, one aligned pair
    assert model.sizes == [BASE, 2 * BASE]
    assert list(model.blocks)[:2] == ["big-1", "big-2"]
    assert model.blocks["big-1"] + model.blocks["big-2"] == big
    assert all(len(members) <= BASE for members in model.blocks.values())
    assert (2 * BASE, set(big)) in model.aggregated(), "the domain is one aggregated block"

    conf = generate(tmp_path, SPLIT_FABRIC, "--shape", "static", "--format", "topology.conf-block")
    conf_model = parse_topology_conf(conf)
    assert isinstance(conf_model, BlockTopology)
    plain = _slurm_conf(nodes, "PartitionName=all Nodes=ALL Default=YES")
    for files, shown_name, expected in (
        ({"slurm.conf": plain, "topology.yaml": text}, "nvl", model),
        (
            {"slurm.conf": "TopologyPlugin=topology/block\n" + plain, "topology.conf": conf},
            "",
            conf_model,
        ),
    ):
        result = check_load(files, root=slurm_root)
        assert result.accepted, (result.errors, dict(result.failures))
        assert not result.errors, result.errors
        assert_blocks_match(result.topologies[shown_name], expected)

    # One node of big-1 is down: a placement that ignores blocks would take gpu[02-05], across
    # big-1 and big-2; the block plugin must keep a one-base-block job inside one block.
    with start_ctld({"slurm.conf": plain, "topology.yaml": text}) as ctld:
        ctld.scontrol("update", f"NodeName={big[0]}", "State=DRAIN", "Reason=test")
        res = ctld.run("sbatch", "--test-only", "-N", str(BASE), "--wrap", "true")
        found = re.search(r"on nodes (\S+)", res.output)
        assert found, res.output
        placed = set(expand(found.group(1)))
        assert len(placed) == BASE
        holders = [b for b, members in model.blocks.items() if placed <= set(members)]
        assert holders and holders[0] != "big-1", (placed, model.blocks)


@pytest.mark.parametrize("shape", ["static", "dynamic"])
def test_empty_partition_topology_loads_as_flat(
    start_ctld: CtldFactory, slurm_root: Path, tmp_path: Path, shape: str
) -> None:
    text = generate(tmp_path, DEGRADED_FABRIC, "--shape", shape)
    named = {t.name: t for t in parse_topology_yaml(text)}
    assert list(named) == ["fabric", "gpu-tree", "gpu-nvl"]
    assert named["gpu-tree"].model is None and named["gpu-nvl"].model is None, "flat entries"
    items = {item["topology"]: item for item in yaml.safe_load(text)}
    assert items["gpu-tree"]["flat"] is True and items["gpu-nvl"]["flat"] is True
    fabric = named["fabric"].model
    assert isinstance(fabric, TreeTopology)

    conf = _slurm_conf(
        fabric_nodes(DEGRADED_FABRIC),
        "PartitionName=cpu Nodes=cpu[1-2] Default=YES Topology=fabric",
        "PartitionName=gpu Nodes=gpu[01-04] Topology=gpu-nvl",
        "PartitionName=gpu2 Nodes=gpu[01-04] Topology=gpu-tree",
    )
    files = {"slurm.conf": conf, "topology.yaml": text}
    result = check_load(files, root=slurm_root)
    assert result.accepted, (result.errors, dict(result.failures))
    assert not result.errors, result.errors
    for flat in ("gpu-tree", "gpu-nvl"):
        assert parse_records(result.topologies[flat]) == [], "flat topology lists nothing"
    if shape == "static":
        assert_tree_matches(result.topologies["fabric"], fabric)
    assert result.topologies[""] == result.topologies["fabric"], "the default is untouched"

    with start_ctld(files) as ctld:
        for part, topo in (("gpu", "gpu-nvl"), ("gpu2", "gpu-tree")):
            (record,) = parse_records(ctld.scontrol("show", "partition", "-o", part))
            assert record["Topology"] == topo
            res = ctld.run("sbatch", "--test-only", "-p", part, "-N", "3", "--wrap", "true")
            found = re.search(r"on nodes (\S+)", res.output)
            assert found, res.output
            assert set(expand(found.group(1))) <= set(expand("gpu[01-04]"))
