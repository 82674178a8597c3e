"""Hand-written topology files load into real slurmctld 26.05 and read back as written.

Expected values come from the input files (``slinky_harness.slurm.topology``), never from Slurm's text.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from slinky_harness.slurm.check import check_load
from slinky_harness.slurm.conf import parse_records
from slinky_harness.slurm.topology import (
    BlockTopology,
    TreeTopology,
    assert_blocks_match,
    assert_tree_matches,
    default_topology,
    expand,
    parse_topology_conf,
    parse_topology_yaml,
    read_blocks,
    read_tree,
)

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_harness.slurm.ctld import CtldFactory, SlurmCtld


def test_tree_topology_conf_loads(start_ctld: CtldFactory, slurm_data: Path) -> None:
    expected = parse_topology_conf((slurm_data / "tree/topology.conf").read_text())
    assert isinstance(expected, TreeTopology)
    with start_ctld(slurm_data / "tree") as ctld:
        assert_tree_matches(ctld.show_topology(), expected)
        # the single topology of topology.conf is called "default"
        assert_tree_matches(ctld.show_topology("default"), expected)
        # per-unit and per-node queries
        leaf = expected.leaves()[0]
        node = expected.nodes[leaf][0]
        assert set(read_tree(ctld.show_topology(None, f"unit={leaf}"))) == {leaf}
        assert leaf in read_tree(ctld.show_topology(None, f"node={node}"))


def test_block_topology_conf_loads(start_ctld: CtldFactory, slurm_data: Path) -> None:
    expected = parse_topology_conf((slurm_data / "block/topology.conf").read_text())
    assert isinstance(expected, BlockTopology)
    with start_ctld(slurm_data / "block") as ctld:
        shown = ctld.show_topology()
        assert_blocks_match(shown, expected)
        # every aggregated level that BlockSizes asks for is reported with that size
        _, aggregated = read_blocks(shown)
        assert {size for size, _ in aggregated} == set(expected.sizes[1:])


def _check_named(ctld: SlurmCtld, name: str, model: TreeTopology | BlockTopology | None) -> None:
    text = ctld.show_topology(name)
    if isinstance(model, TreeTopology):
        assert_tree_matches(text, model)
    elif isinstance(model, BlockTopology):
        assert_blocks_match(text, model)
    else:  # flat: nothing to list
        assert parse_records(text) == []


def test_topology_yaml_with_named_topologies_loads(
    start_ctld: CtldFactory, slurm_data: Path
) -> None:
    topologies = parse_topology_yaml((slurm_data / "multi/topology.yaml").read_text())
    kinds = {type(t.model) for t in topologies}
    assert {TreeTopology, BlockTopology} <= kinds
    with start_ctld(slurm_data / "multi") as ctld:
        for topo in topologies:
            _check_named(ctld, topo.name, topo.model)
        # no name: the cluster default
        default = default_topology(topologies)
        assert ctld.show_topology() == ctld.show_topology(default.name)


def test_partition_selects_named_topology(start_ctld: CtldFactory, slurm_data: Path) -> None:
    """``PartitionName=... Topology=<name>`` (25.05+) is kept, and jobs in it follow that
    topology: ``sbatch --test-only --segment`` lands on whole base blocks of its block topology."""
    conf = (slurm_data / "multi/slurm.conf").read_text()
    part_topo = dict(re.findall(r"^PartitionName=(\S+)\s.*\bTopology=(\S+)", conf, re.MULTILINE))
    assert part_topo
    multi = parse_topology_yaml((slurm_data / "multi/topology.yaml").read_text())
    topologies = {t.name: t for t in multi}
    with start_ctld(slurm_data / "multi") as ctld:
        for part, topo in part_topo.items():
            (record,) = parse_records(ctld.scontrol("show", "partition", "-o", part))
            assert record["Topology"] == topo
        blocks_part = next(
            p for p, t in part_topo.items() if isinstance(topologies[t].model, BlockTopology)
        )
        model = topologies[part_topo[blocks_part]].model
        assert isinstance(model, BlockTopology)
        base = model.sizes[0]
        for count in (base, 2 * base):
            job = ("-p", blocks_part, "-N", str(count), f"--segment={base}", "--wrap", "true")
            res = ctld.run("sbatch", "--test-only", *job)
            found = re.search(r"on nodes (\S+)", res.output)
            assert found, res.output
            placed = set(expand(found.group(1)))
            assert len(placed) == count
            used = [b for b, nodes in model.blocks.items() if placed & set(nodes)]
            assert placed == {n for b in used for n in model.blocks[b]}, "whole base blocks"
            assert len(used) == count // base


def test_check_load_accepts_every_good_folder(slurm_root: Path, slurm_data: Path) -> None:
    for folder in ("tree", "block", "multi", "dynamic"):
        result = check_load(slurm_data / folder, root=slurm_root)
        assert result.accepted, (folder, result.errors, dict(result.failures))
        assert not [e for e in result.errors if "fatal" in e]
        assert "" in result.topologies
        yaml_file = slurm_data / folder / "topology.yaml"
        if yaml_file.exists():
            names = {t.name for t in parse_topology_yaml(yaml_file.read_text())}
            assert names <= set(result.topologies)


def test_reconfigure_applies_a_new_topology_file(start_ctld: CtldFactory, slurm_data: Path) -> None:
    """Content changes apply on ``scontrol reconfigure`` (how Slinky's sidecar applies them)."""
    text = (slurm_data / "tree/topology.conf").read_text()
    before = parse_topology_conf(text)
    assert isinstance(before, TreeTopology)
    # one more tier: a new top switch over the current roots
    roots = [s for s in before.children if not any(s in c for c in before.children.values())]
    changed = text + f"SwitchName=top Switches={','.join(roots)}\n"
    after = parse_topology_conf(changed)
    assert isinstance(after, TreeTopology)
    with start_ctld(slurm_data / "tree") as ctld:
        assert_tree_matches(ctld.show_topology(), before)
        pid = ctld.pid
        ctld.write_file("topology.conf", changed)
        ctld.reconfigure()
        assert_tree_matches(ctld.show_topology(), after)
        assert ctld.alive() and ctld.pid == pid
