"""Real jobs on emulated nodes (``slurm-wlm-emulator``: several slurmd on one host).

The block topology comes from ``tests/data/slurm/block``; the nodes are re-declared as emulated
nodes (own ports) and expected placements are derived from the blocks in that file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from slinky_harness.build.slurm_chroot import chroot_info
from slinky_harness.slurm.conf import emulated_nodes
from slinky_harness.slurm.ctld import slurmctld
from slinky_harness.slurm.topology import BlockTopology, expand, parse_topology_conf

if TYPE_CHECKING:
    from pathlib import Path


def test_segment_jobs_land_on_whole_blocks(
    slurm_root: Path, slurm_data: Path, tmp_path: Path
) -> None:
    if not chroot_info(slurm_root).emulator:
        pytest.skip("Debian sid has no slurm-wlm-emulator at the moment")
    topology = (slurm_data / "block/topology.conf").read_text()
    model = parse_topology_conf(topology)
    assert isinstance(model, BlockTopology)
    nodes = sorted(model.all_nodes())
    conf = (
        "TopologyPlugin=topology/block\n"
        # start batch jobs at the next scheduler pass (about 1 s) instead of after 3 s
        "SchedulerParameters=batch_sched_delay=0\n"
        + emulated_nodes(nodes, cpus=2, memory_mb=500)
        + "PartitionName=all Nodes=ALL Default=YES MaxTime=5\n"
    )
    files = {"slurm.conf": conf, "topology.conf": topology}
    base = model.sizes[0]
    with slurmctld(files, root=slurm_root, workdir=tmp_path / "jobs", emulator=True) as ctld:
        ctld.start_slurmd(*nodes)
        assert ctld.run("srun", "-N", "2", "true", timeout=60).returncode == 0
        for size in model.sizes:
            job = ctld.run_job("-N", str(size), f"--segment={base}", "--wrap", "true")
            assert job["JobState"] == "COMPLETED", job
            placed = set(expand(job["NodeList"]))
            assert len(placed) == size
            used = [b for b, members in model.blocks.items() if placed & set(members)]
            assert placed == {n for b in used for n in model.blocks[b]}, "whole base blocks"
            if size > base:  # a multi-block job stays inside one aggregated block of its level
                groups = [g for s, g in model.aggregated() if s == size]
                assert any(placed <= g for g in groups), (placed, groups)
