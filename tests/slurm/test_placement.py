"""Placement quality with real jobs on emulated slurmd (issue 6 item 8).

One fixed, seeded job mix (``slinky_harness.apps.placement``: 40 jobs of 2-16 nodes, arriving faster
than they finish so the free nodes fragment) runs three times on one emulated slurmd per node of
``tests/data/fabrics/nvl72-racks.yaml`` (4 GB200 NVL72-style racks of 18 nodes under 2 leaves,
72 slurmd): with the generated block topology (``--segment``), with the generated tree
(``--switches=1``) and with no topology plugin. About 2 minutes on a 2-core host.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from slinky_harness.apps.placement import (
    JOBS,
    MODES,
    SEED,
    fabric_units,
    format_report,
    job_mix,
    main,
    run_mix,
)
from slinky_harness.build.slurm_chroot import chroot_info
from slinky_harness.core.paths import REPO_ROOT

if TYPE_CHECKING:
    from pathlib import Path

FABRIC = REPO_ROOT / "tests" / "data" / "fabrics" / "nvl72-racks.yaml"


def test_generated_topology_places_jobs_at_least_as_well_as_none(
    slurm_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every job completes in every mode; the share of multi-node jobs inside one NVLink domain
    (block topology) and inside one leaf (tree) is at least that of the run without topology;
    ``--segment=<job size>`` keeps every job in one base block."""
    if not chroot_info(slurm_root).emulator:
        pytest.skip("Debian sid has no slurm-wlm-emulator at the moment")
    units = fabric_units(FABRIC)
    assert len(units.nodes) >= 64
    assert len(set(units.block.values())) >= 4 and len(set(units.leaf.values())) >= 2
    jobs = job_mix(SEED, JOBS)
    runs = {m: run_mix(m, units, jobs, root=slurm_root, workdir=tmp_path / m) for m in MODES}
    report = format_report(units, jobs, list(runs.values()), SEED)
    with capsys.disabled():
        print("\n" + report)
    for mode, run in runs.items():
        assert run.completed == len(jobs), (
            mode,
            [p for p in run.placements if p.state != "COMPLETED"],
        )
        assert all(len(p.nodes) == p.job.size for p in run.placements), mode
    block, tree, none = runs["block"], runs["tree"], runs["none"]
    assert block.share(units.block) == 1.0, report
    assert block.share(units.block) >= none.share(units.block), report
    assert tree.share(units.leaf) >= none.share(units.leaf), report


def test_main_prints_figures_and_writes_json(
    slurm_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m slinky_harness.apps.placement`` (a short run: 4 jobs, block mode only)."""
    if not chroot_info(slurm_root).emulator:
        pytest.skip("Debian sid has no slurm-wlm-emulator at the moment")
    out = tmp_path / "placement.json"
    assert (
        main(["--fabric", str(FABRIC), "--modes", "block", "--jobs", "4", "--json", str(out)]) == 0
    )
    printed = capsys.readouterr().out
    assert "block" in printed and "4/4" in printed, printed
    data = json.loads(out.read_text())
    (run,) = data["runs"]
    assert run["mode"] == "block" and run["completed"] == run["jobs"] == 4
    assert run["share_one_domain"] == 1.0
