"""Placement quality: does generated topology keep multi-node jobs in one NVLink domain or leaf?

Runs one fixed, seeded job mix on emulated slurmd (``slurm-wlm-emulator``: one slurmd per node of
a fabric, all on this host) once per mode and reports, for the multi-node jobs, the share placed
inside one NVLink domain (one base block of the generated block topology) and inside one leaf
switch:

* ``block``: ``TopologyPlugin=topology/block`` with the generated ``topology.conf`` (block);
  every job asks ``--segment=<its size>`` (the whole job in one base block);
* ``tree``: ``TopologyPlugin=topology/tree`` with the generated ``topology.conf`` (tree); every
  job asks ``--switches=1@<wait>`` (one leaf, waiting at most ``wait`` for it);
* ``none``: no topology plugin (Slurm's flat default) and no topology options.

The mix: ``jobs`` jobs of 2..16 nodes (at most the smallest NVLink domain), each sleeping a few
seconds, submitted at seeded exponential inter-arrival times so that the queue builds up and jobs
end at different times: the free nodes become fragmented across racks. Sizes, durations and
arrival offsets are fixed by the seed; the wall-clock timing of a loaded host still varies, so
placements can differ slightly between runs of the same seed.

The fabric is a fabric file (``--fabric``); the slurm tier runs it on
``tests/data/fabrics/nvl72-racks.yaml`` (4 GB200 NVL72-style racks of 18 nodes, 2 leaves,
1 spine: 72 slurmd). On a 2-core host the three runs of the default 40-job mix take
about 2 minutes (each: a few seconds to start 72 slurmd, about 30 s of jobs, then the stop);
72 emulated slurmd use about 1.2 GB of memory.

``python -m slinky_harness.apps.placement --fabric FILE [--jobs N] [--seed S] [--modes block,tree,none]
[--json FILE]`` prints the figures (also for ``nox -s bench``); exit 0 when every job of every run
completed, 1 otherwise, 2 on usage errors. Needs root and the Slurm chroot
(:mod:`slinky_harness.slurm.ctld`).
"""

from __future__ import annotations

import json
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from slinky_harness.build.slurm_chroot import SlurmChrootError, chroot_info, ensure_chroot
from slinky_harness.core.polling import wait_for
from slinky_harness.slurm.conf import emulated_nodes, parse_records
from slinky_harness.slurm.ctld import (
    SlurmCommandError,
    SlurmctldStartError,
    SlurmdStartError,
    slurmctld,
)
from slinky_harness.slurm.topology import expand
from slinky_topology.build import plan
from slinky_topology.errors import TopologyError
from slinky_topology.pipeline import render_output
from slinky_topology.sources.fabric_file import load_fabric

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "JOBS",
    "MODES",
    "SEED",
    "FabricUnits",
    "Job",
    "Mode",
    "Placement",
    "RunResult",
    "fabric_units",
    "format_report",
    "job_mix",
    "main",
    "run_mix",
]

Mode = Literal["block", "tree", "none"]
MODES: tuple[Mode, ...] = ("block", "tree", "none")
JOBS = 40
"""Default number of jobs in the mix."""
SEED = 7
"""Default seed of the job mix."""
SWITCH_WAIT = "0:30"
"""``--switches=1@0:30``: a tree job waits at most 30 s for a single leaf, then runs anyway."""


@dataclass(frozen=True)
class Job:
    index: int
    size: int
    duration_s: int
    arrival_s: float
    """Submission offset from the start of the run."""


def job_mix(
    seed: int,
    count: int,
    *,
    min_size: int = 2,
    max_size: int = 16,
    durations: tuple[int, int] = (2, 6),
    mean_gap_s: float = 0.35,
) -> list[Job]:
    """``count`` jobs of ``min_size..max_size`` nodes, fixed by ``seed``.

    Sizes are uniform, durations uniform in ``durations`` (seconds), inter-arrival gaps
    exponential with mean ``mean_gap_s``.
    """
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(count):
        size = rng.randint(min_size, max_size)
        duration = rng.randint(*durations)
        jobs.append(Job(i, size, duration, round(t, 2)))
        t += rng.expovariate(1.0 / mean_gap_s)
    return jobs


@dataclass(frozen=True)
class FabricUnits:
    """A fabric's nodes, their NVLink domain (base block) and leaf switch, and generated files."""

    name: str
    nodes: tuple[str, ...]
    block: Mapping[str, str]
    leaf: Mapping[str, str]
    block_conf: str
    tree_conf: str


def fabric_units(path: Path) -> FabricUnits:
    """Generate the block and tree ``topology.conf`` of a fabric with ``slinky_topology``."""
    p = plan(load_fabric(str(path)))
    block_units = p.conf_topology("block").units
    tree_units = p.conf_topology("tree").units
    nodes = tuple(n.name for n in p.fabric.nodes if n.state != "absent")
    return FabricUnits(
        name=p.fabric.name,
        nodes=nodes,
        block={n: block_units[n] for n in nodes if n in block_units},
        leaf={n: tree_units[n].rsplit(":", 1)[-1] for n in nodes if n in tree_units},
        block_conf=render_output(p, "topology.conf-block").text,
        tree_conf=render_output(p, "topology.conf-tree").text,
    )


@dataclass(frozen=True)
class Placement:
    job: Job
    job_id: str
    state: str
    nodes: tuple[str, ...]
    wait_s: float


@dataclass
class RunResult:
    mode: Mode
    placements: list[Placement] = field(default_factory=list)
    elapsed_s: float = 0.0
    slurmd_start_s: float = 0.0

    @property
    def completed(self) -> int:
        return sum(p.state == "COMPLETED" for p in self.placements)

    def multi_node(self) -> list[Placement]:
        return [p for p in self.placements if p.job.size > 1]

    def inside(self, unit_of: Mapping[str, str]) -> int:
        """Multi-node jobs whose nodes all lie in one unit (one block, one leaf)."""
        return sum(len({unit_of.get(n, f"?{n}") for n in p.nodes}) == 1 for p in self.multi_node())

    def share(self, unit_of: Mapping[str, str]) -> float:
        multi = self.multi_node()
        return self.inside(unit_of) / len(multi) if multi else 1.0

    def mean_wait_s(self) -> float:
        return sum(p.wait_s for p in self.placements) / max(len(self.placements), 1)


def _slurm_conf(mode: Mode, nodes: Sequence[str], max_time_min: int) -> str:
    lines = [f"TopologyPlugin=topology/{mode}"] if mode != "none" else []
    lines += [
        # schedule at once on submit/end and backfill every second; keep finished jobs readable
        "SchedulerParameters=batch_sched_delay=0,bf_interval=1,max_switch_wait=60",
        "MinJobAge=3600",
        emulated_nodes(nodes, cpus=1, memory_mb=100).rstrip("\n"),
        f"PartitionName=all Nodes=ALL Default=YES MaxTime={max_time_min}",
    ]
    return "\n".join(lines) + "\n"


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def run_mix(
    mode: Mode,
    units: FabricUnits,
    jobs: Sequence[Job],
    *,
    root: Path | None = None,
    workdir: Path | None = None,
    timeout_s: float = 300.0,
) -> RunResult:
    """Run ``jobs`` on one emulated slurmd per fabric node in ``mode``; wait until all ended.

    Raises :class:`TimeoutError` when jobs are still queued or running after ``timeout_s``.
    """
    chroot = root if root is not None else ensure_chroot()
    files = {"slurm.conf": _slurm_conf(mode, units.nodes, 5)}
    if mode == "block":
        files["topology.conf"] = units.block_conf
    elif mode == "tree":
        files["topology.conf"] = units.tree_conf
    result = RunResult(mode)
    with slurmctld(files, root=chroot, workdir=workdir, emulator=True) as ctld:
        t0 = time.monotonic()
        ctld.start_slurmd(*units.nodes, timeout=180)
        result.slurmd_start_s = time.monotonic() - t0
        sbatch, squeue = ctld._client("sbatch"), ctld._client("squeue")
        start = time.monotonic()
        ids: dict[str, Job] = {}
        for job in jobs:
            delay = start + job.arrival_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            args = ["-N", str(job.size), "-t", "2", "-J", f"mix{job.index}"]
            if mode == "block":
                args.append(f"--segment={job.size}")
            elif mode == "tree":
                args.append(f"--switches=1@{SWITCH_WAIT}")
            out = ctld.run(sbatch, "--parsable", "-o", "/dev/null", *args, "--wrap",
                           f"sleep {job.duration_s}")  # fmt: skip
            ids[out.stdout.strip().split(";")[0]] = job
        wait_for(
            lambda: not ctld.run(squeue, "-h", "-o", "%i").stdout.strip(),
            timeout=start + timeout_s - time.monotonic(),
            what=f"{mode}: the job mix to end (jobs still queued or running)",
            every=0.5,
        )
        result.elapsed_s = time.monotonic() - start
        records = {r.get("JobId", ""): r for r in parse_records(ctld.scontrol("show", "job", "-o"))}
    for job_id, job in ids.items():
        rec = records.get(job_id, {})
        start_s, submit_s = rec.get("StartTime", ""), rec.get("SubmitTime", "")
        wait = _seconds(start_s) - _seconds(submit_s) if start_s[:1].isdigit() else -1.0
        result.placements.append(
            Placement(
                job,
                job_id,
                rec.get("JobState", "UNKNOWN"),
                tuple(expand(rec.get("NodeList"))),
                wait,
            )
        )
    return result


def format_report(
    units: FabricUnits, jobs: Sequence[Job], runs: Sequence[RunResult], seed: int
) -> str:
    sizes = [j.size for j in jobs]
    domains, leaves = len(set(units.block.values())), len(set(units.leaf.values()))
    lines = [
        f"placement on fabric {units.name}: {len(units.nodes)} emulated slurmd, {domains} NVLink "
        f"domains, {leaves} leaf switches; {len(jobs)} jobs of {min(sizes)}-{max(sizes)} nodes "
        f"(mean {sum(sizes) / len(sizes):.1f}), seed {seed}",
        f"{'mode':<6} {'completed':>9} {'one NVLink domain':>18} {'one leaf':>14} "
        f"{'mean wait':>9} {'makespan':>8} {'slurmd up':>9}",
    ]
    for r in runs:
        multi = len(r.multi_node())
        lines.append(
            f"{r.mode:<6} {r.completed:>4}/{len(r.placements):<4} "
            f"{r.inside(units.block):>7}/{multi:<3} {100 * r.share(units.block):5.1f}% "
            f"{r.inside(units.leaf):>4}/{multi:<3} {100 * r.share(units.leaf):5.1f}% "
            f"{r.mean_wait_s():8.1f}s {r.elapsed_s:7.1f}s {r.slurmd_start_s:8.1f}s"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job mix once per mode and print the placement figures (see the module doc)."""
    import argparse  # noqa: PLC0415 (CLI only)

    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.apps.placement",
        description="Placement quality of generated Slurm topology on emulated slurmd.",
    )
    parser.add_argument("--fabric", type=Path, required=True, help="fabric file")
    parser.add_argument("--jobs", type=int, default=JOBS, help=f"number of jobs (default {JOBS})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"job mix seed (default {SEED})")
    parser.add_argument("--modes", default=",".join(MODES), help="comma list of block,tree,none")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    names = [m for m in str(args.modes).split(",") if m]
    if not names or any(m not in MODES for m in names) or args.jobs < 1:
        sys.stderr.write(f"error: --modes takes {','.join(MODES)}; --jobs at least 1\n")
        return 2
    modes = [cast("Mode", m) for m in names]
    try:
        root = ensure_chroot()
        if not chroot_info(root).emulator:
            sys.stderr.write("error: the Slurm chroot has no slurm-wlm-emulator\n")
            return 1
        units = fabric_units(args.fabric)
        smallest = min(list(units.block.values()).count(b) for b in set(units.block.values()))
        jobs = job_mix(args.seed, args.jobs, max_size=min(16, smallest))
        runs = [run_mix(m, units, jobs, root=root) for m in modes]
    except (
        SlurmChrootError, SlurmCommandError, SlurmctldStartError, SlurmdStartError,
        TimeoutError, TopologyError, OSError, ValueError,
    ) as exc:  # fmt: skip
        sys.stderr.write(f"error: {exc}\n")
        return 1
    sys.stdout.write(format_report(units, jobs, runs, args.seed))
    if args.json:
        data = {
            "fabric": units.name,
            "seed": args.seed,
            "runs": [
                {
                    "mode": r.mode,
                    "completed": r.completed,
                    "jobs": len(r.placements),
                    "share_one_domain": r.share(units.block),
                    "share_one_leaf": r.share(units.leaf),
                    "elapsed_s": r.elapsed_s,
                    "slurmd_start_s": r.slurmd_start_s,
                    "placements": [asdict(p) for p in r.placements],
                }
                for r in runs
            ],
        }
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0 if all(r.completed == len(r.placements) for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
