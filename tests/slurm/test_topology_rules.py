"""Generated topology against Slurm's own rules (issue 30 items 6 and 7), in real slurmctld 26.05.

* Nodes without a leaf switch hang from the catch-all switch ``no-topology``. Without it slurmctld
  logs "switches lack access to N nodes", refuses ``sbatch -N2 -w`` on such nodes and leaves an
  unpinned two-node job pending while they are idle. Here both jobs run, with topology.yaml and
  topology.conf, on emulated slurmd; the dynamic skeleton plus the annotations place the nodes
  under the same switch.
* BlockSizes: the largest base block the generator writes (65535) loads; a base larger than every
  NVLink domain, which the generator warns about, leaves a job of one domain plus one node unable
  to run.

Expected values come from the fabric written here (read with PyYAML and python-hostlist through
``slinky_harness.slurm.topology``), never from Slurm's output.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import pytest
from tests.slurm.fabric_support import fabric_nodes, generate

from slinky_harness.build.slurm_chroot import chroot_info
from slinky_harness.slurm.check import check_load
from slinky_harness.slurm.conf import emulated_nodes
from slinky_harness.slurm.ctld import slurmctld
from slinky_harness.slurm.topology import (
    BlockTopology,
    assert_blocks_match,
    expand,
    parse_topology_yaml,
    read_tree,
)
from slinky_topology import cli

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_harness.slurm.ctld import CtldFactory

CATCH_ALL = "no-topology"
UNPLACED_FABRIC = """\
apiVersion: fabric.example.org/v1alpha1
kind: Fabric
metadata: {name: unplaced}
spec:
  switches:
    - {name: spine1}
    - {name: leaf1, parent: spine1}
    - {name: leaf2, parent: spine1}
  nodes:
    - {name: "gb[01-02]", leaf: leaf1}
    - {name: "gb[03-04]", leaf: leaf2}
    - {name: "loose[1-2]"}
  topologies:
    - {name: fabric, type: tree, clusterDefault: true}
"""
"""Two nodes (``loose1``, ``loose2``) have no leaf switch."""


@pytest.mark.parametrize("fmt", ["topology.yaml", "topology.conf-tree"])
def test_nodes_without_a_leaf_switch_run_multi_node_jobs(
    slurm_root: Path, tmp_path: Path, fmt: str
) -> None:
    if not chroot_info(slurm_root).emulator:
        pytest.skip("Debian sid has no slurm-wlm-emulator at the moment")
    loose = fabric_nodes(UNPLACED_FABRIC, leaf=False)
    placed = fabric_nodes(UNPLACED_FABRIC, leaf=True)
    nodes = placed + loose
    text = generate(tmp_path, UNPLACED_FABRIC, "--shape", "static", "--format", fmt)
    conf = fmt != "topology.yaml"
    slurm_conf = (
        ("TopologyPlugin=topology/tree\n" if conf else "")
        + "SchedulerParameters=batch_sched_delay=0\n"
        + emulated_nodes(nodes, cpus=1, memory_mb=500)
        + "PartitionName=all Nodes=ALL Default=YES MaxTime=5\n"
    )
    files = {"slurm.conf": slurm_conf, ("topology.conf" if conf else "topology.yaml"): text}
    with slurmctld(files, root=slurm_root, workdir=tmp_path / "ctld", emulator=True) as ctld:
        ctld.start_slurmd(*nodes)
        pinned = ctld.run_job("-N", "2", "-w", ",".join(loose), "--wrap", "true")
        assert pinned["JobState"] == "COMPLETED", pinned
        assert set(expand(pinned["NodeList"])) == set(loose)

        # every node with a leaf drained: an unpinned two-node job must take the idle loose ones
        ctld.scontrol("update", f"NodeName={','.join(placed)}", "State=DRAIN", "Reason=test")
        free = ctld.run_job("-N", "2", "--wrap", "true")
        assert free["JobState"] == "COMPLETED", free
        assert set(expand(free["NodeList"])) == set(loose)

        switches = read_tree(ctld.show_topology())
        assert switches[CATCH_ALL].nodes == set(loose)
        assert not switches[CATCH_ALL].switches
        assert all(set(loose).isdisjoint(v.nodes) for s, v in switches.items() if s != CATCH_ALL)
        assert "lack access" not in ctld.log()


def test_dynamic_nodes_without_a_leaf_join_the_catch_all_switch(
    start_ctld: CtldFactory, tmp_path: Path
) -> None:
    """The skeleton lists the catch-all switch; the annotations put the nodes under it."""
    loose = fabric_nodes(UNPLACED_FABRIC, leaf=False)
    skeleton = generate(tmp_path, UNPLACED_FABRIC, "--shape", "dynamic")
    fabric = tmp_path / "fabric.yaml"
    annotations = tmp_path / "annotations.json"
    assert cli.main(["annotations", "--fabric", str(fabric), "-o", str(annotations)]) == 0
    specs: dict[str, str] = json.loads(annotations.read_text())
    assert {specs[n] for n in loose} == {f"fabric:{CATCH_ALL}"}
    (tree,) = parse_topology_yaml(skeleton)
    files = {"slurm.conf": "MaxNodeCount=16\n", "topology.yaml": skeleton}
    with start_ctld(files) as ctld:
        for node, spec in specs.items():
            ctld.create_node(node, spec)
        for node in loose:
            assert ctld.node_topology(node) == f"fabric:{CATCH_ALL}"
        switches = read_tree(ctld.show_topology(tree.name))
        assert switches[CATCH_ALL].nodes == set(loose)
        assert switches["spine1"].nodes == set(fabric_nodes(UNPLACED_FABRIC, leaf=True))


BLOCK_FABRIC = """\
apiVersion: fabric.example.org/v1alpha1
kind: Fabric
metadata: {{name: blocks}}
spec:
  nvlinkDomains: [{{name: r1, slots: 4}}, {{name: r2, slots: 4}}]
  nodes:
    - {{name: "gb[01-04]", nvlinkDomain: r1}}
    - {{name: "gb[05-08]", nvlinkDomain: r2}}
  topologies:
    - {{name: nvl, type: block, clusterDefault: true, blockSizes: {sizes}}}
"""


def test_the_largest_base_block_loads(slurm_root: Path, tmp_path: Path) -> None:
    """65535, the largest base the generator accepts (65536 crashes slurmctld), loads as written."""
    text = generate(tmp_path, BLOCK_FABRIC.format(sizes="[65535]"), "--shape", "static")
    (nvl,) = parse_topology_yaml(text)
    assert isinstance(nvl.model, BlockTopology) and nvl.model.sizes == [65535]
    nodes = fabric_nodes(BLOCK_FABRIC.format(sizes="[65535]"))
    conf = "".join(f"NodeName={n} CPUs=1 State=CLOUD\n" for n in nodes)
    result = check_load({"slurm.conf": conf, "topology.yaml": text}, root=slurm_root)
    assert result.accepted, (result.errors, dict(result.failures))
    assert_blocks_match(result.topologies["nvl"], nvl.model)
    fabric = tmp_path / "fabric.yaml"
    fabric.write_text(BLOCK_FABRIC.format(sizes="[65536]"))
    assert cli.main(["generate", "--fabric", str(fabric), "-o", str(tmp_path / "no")]) == 1


def test_a_base_over_every_domain_strands_a_domain_plus_one_job(
    start_ctld: CtldFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the warning says, in slurmctld: domains of 4, base 8; a 5-node job never starts while
    base 4 (no warning) runs it on two blocks."""
    nodes = fabric_nodes(BLOCK_FABRIC.format(sizes="[8, 16]"))
    conf = "".join(f"NodeName={n} CPUs=1 State=CLOUD\n" for n in nodes) + (
        "PartitionName=all Nodes=ALL Default=YES\n"
    )
    outcomes = {}
    for sizes, warned in (("[8, 16]", True), ("[4, 8]", False)):
        capsys.readouterr()
        text = generate(tmp_path, BLOCK_FABRIC.format(sizes=sizes), "--shape", "static")
        assert ("larger than every NVLink domain" in capsys.readouterr().err) == warned
        with start_ctld({"slurm.conf": conf, "topology.yaml": text}) as ctld:
            res = ctld.run("sbatch", "--test-only", "-N", "5", "--wrap", "true", check=False)
            outcomes[sizes] = f"exit {res.returncode}: {res.output}"
    assert not re.search(r"on nodes \S+", outcomes["[8, 16]"]), outcomes
    found = re.search(r"on nodes (\S+)", outcomes["[4, 8]"])
    assert found, outcomes
    assert len(expand(found.group(1))) == 5
