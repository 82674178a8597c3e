"""Node topology strings, as Slinky applies the ``topology.slinky.slurm.net/spec`` annotation.

Recipe (see ``slinky_harness.slurm.ctld``): a skeleton ``topology.yaml`` plus ``MaxNodeCount``; nodes are
created with ``scontrol create NodeName=... State=CLOUD Topology=...`` and moved with ``scontrol
update``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from slinky_harness.slurm.ctld import SlurmCommandError
from slinky_harness.slurm.topology import (
    BlockTopology,
    NamedTopology,
    TreeTopology,
    parse_topology_conf,
    parse_topology_yaml,
    read_blocks,
    read_tree,
)

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_harness.slurm.ctld import CtldFactory, SlurmCtld


def _skeleton(slurm_data: Path) -> tuple[str, TreeTopology, str, BlockTopology]:
    topologies: list[NamedTopology] = parse_topology_yaml(
        (slurm_data / "dynamic/topology.yaml").read_text()
    )
    tree = next(t for t in topologies if isinstance(t.model, TreeTopology))
    block = next(t for t in topologies if isinstance(t.model, BlockTopology))
    assert isinstance(tree.model, TreeTopology) and isinstance(block.model, BlockTopology)
    return tree.name, tree.model, block.name, block.model


def _placement(ctld: SlurmCtld, tree: str, block: str, node: str) -> tuple[set[str], set[str]]:
    """Leaves and base blocks that list ``node``."""
    switches = read_tree(ctld.show_topology(tree))
    blocks, _ = read_blocks(ctld.show_topology(block))
    leaves = {s for s, v in switches.items() if not v.switches and node in v.nodes}
    return leaves, {b for b, nodes in blocks.items() if node in nodes}


def test_dynamic_nodes_join_and_move(start_ctld: CtldFactory, slurm_data: Path) -> None:
    tree_name, tree, block_name, block = _skeleton(slurm_data)
    leaves, blocks = tree.leaves(), list(block.blocks)
    with start_ctld(slurm_data / "dynamic") as ctld:
        # one node per leaf, spread over the blocks, as an annotation would place them
        placed = {}
        for i, leaf in enumerate(leaves):
            node, blk = f"gpu-{i}.pod.local", blocks[i % len(blocks)]
            ctld.create_node(node, f"{tree_name}:{leaf},{block_name}:{blk}")
            placed[node] = (leaf, blk)
        for node, (leaf, blk) in placed.items():
            assert ctld.node_topology(node) == f"{tree_name}:{leaf},{block_name}:{blk}"
            assert _placement(ctld, tree_name, block_name, node) == ({leaf}, {blk})
        # the spine above each leaf now reaches its node
        switches = read_tree(ctld.show_topology(tree_name))
        for node, (leaf, _) in placed.items():
            parents = [s for s, kids in tree.children.items() if leaf in kids]
            assert all(node in switches[p].nodes for p in parents)

        # update moves a node; the string replaces the whole placement (block dropped here)
        node = next(iter(placed))
        ctld.set_node_topology(node, f"{tree_name}:{leaves[-1]}")
        assert _placement(ctld, tree_name, block_name, node) == ({leaves[-1]}, set())

        # an empty string takes the node out of every topology
        ctld.set_node_topology(node, "")
        assert ctld.node_topology(node) == ""
        assert _placement(ctld, tree_name, block_name, node) == (set(), set())


def test_tree_path_creates_missing_leaf(start_ctld: CtldFactory, slurm_data: Path) -> None:
    tree_name, tree, _, _ = _skeleton(slurm_data)
    spine = next(s for s, kids in tree.children.items() if kids)
    new_leaf = "leaf-new"
    assert new_leaf not in tree.children
    with start_ctld(slurm_data / "dynamic") as ctld:
        ctld.create_node("x1", f"{tree_name}:{spine}:{new_leaf}")
        switches = read_tree(ctld.show_topology(tree_name))
        assert switches[new_leaf].nodes == {"x1"}
        assert new_leaf in switches[spine].switches


def test_unknown_units_are_refused(start_ctld: CtldFactory, slurm_data: Path) -> None:
    """A block must exist; a topology name must exist (the operator's annotation would fail)."""
    tree_name, tree, block_name, block = _skeleton(slurm_data)
    with start_ctld(slurm_data / "dynamic") as ctld:
        ctld.create_node("y1", f"{tree_name}:{tree.leaves()[0]}")
        for bad in (f"{block_name}:no-such-block", f"no-such-topology:{next(iter(block.blocks))}"):
            with pytest.raises(SlurmCommandError) as err:
                ctld.set_node_topology("y1", bad)
            assert err.value.returncode != 0
        assert ctld.node_topology("y1") == f"{tree_name}:{tree.leaves()[0]}"  # unchanged


def test_static_node_update_moves_it(start_ctld: CtldFactory, slurm_data: Path) -> None:
    """Static nodes of slurm.conf move too; topology.conf's single topology is named ``default``."""
    model = parse_topology_conf((slurm_data / "tree/topology.conf").read_text())
    assert isinstance(model, TreeTopology)
    first, last = model.leaves()[0], model.leaves()[-1]
    node = model.nodes[first][0]
    with start_ctld(slurm_data / "tree") as ctld:
        ctld.set_node_topology(node, f"default:{last}")
        switches = read_tree(ctld.show_topology())
        assert node in switches[last].nodes
        assert node not in switches[first].nodes
        assert ctld.node_topology(node) == f"default:{last}"
