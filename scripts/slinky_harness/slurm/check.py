"""Does slurmctld accept a config? :func:`check_load` starts one on the config, reads every
topology back and stops it; :func:`main` is the command line (``python -m
slinky_harness.slurm.check DIR [DIR ...]``)."""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from slinky_harness.build.slurm_chroot import ensure_chroot
from slinky_harness.core.errors import HarnessError
from slinky_harness.slurm.conf import ConfigFiles, read_files, topology_names
from slinky_harness.slurm.ctld import SlurmctldStartError, slurmctld

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["MACHINE_LOAD_NOISE", "LoadResult", "check_load", "main"]


@dataclass(frozen=True)
class LoadResult:
    """What :func:`check_load` found."""

    accepted: bool
    """slurmctld started and ``scontrol show topology`` (default and each named one) succeeded."""
    started: bool
    errors: tuple[str, ...]
    """Log lines with ``fatal`` or ``error`` (for a rejected config: why)."""
    warnings: tuple[str, ...]
    """Log lines with ``warning:``."""
    topologies: Mapping[str, str]
    """``scontrol show topology [name]`` output; key ``""`` is the default topology."""
    log: str
    failures: Mapping[str, str] = field(default_factory=dict)
    """Topology name (``""`` default) -> scontrol error, for reads that failed."""


MACHINE_LOAD_NOISE = re.compile(r"High latency for \d+ calls to gettimeofday")
"""slurmctld's clock self-test logs this as an error on a busy machine; it says nothing of the config."""


def check_load(
    files: ConfigFiles,
    *,
    root: Path | None = None,
    workdir: Path | None = None,
    timeout: float = 30.0,
) -> LoadResult:
    """Does slurmctld accept this config? Start it, read every topology back, stop it.

    Accepted means: slurmctld started, and ``scontrol show topology`` plus ``scontrol show topology
    <name>`` for every topology named in ``topology.yaml`` succeeded. Rejected results carry the log
    lines saying why.
    """
    data = read_files(files)
    names = topology_names(data["topology.yaml"]) if "topology.yaml" in data else []
    topologies: dict[str, str] = {}
    failures: dict[str, str] = {}
    try:
        with slurmctld(data, root=root, workdir=workdir, timeout=timeout) as ctld:
            for name in ["", *names]:
                args = ("show", "topology", *([name] if name else []))
                res = ctld.run(ctld._client("scontrol"), *args, check=False)
                if res.ok:
                    topologies[name] = res.stdout
                else:
                    failures[name] = res.output.strip()
            log = ctld.log()
        started = True
    except SlurmctldStartError as exc:
        log, started = exc.log, False
    lines = log.splitlines()
    errors = tuple(
        ln
        for ln in lines
        if re.search(r"\b(fatal|error)\b", ln, re.IGNORECASE) and not MACHINE_LOAD_NOISE.search(ln)
    )
    warnings = tuple(ln for ln in lines if "warning:" in ln.lower())
    return LoadResult(
        accepted=started and not failures,
        started=started,
        errors=errors,
        warnings=warnings,
        topologies=topologies,
        log=log,
        failures=failures,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m slinky_harness.slurm.check DIR [DIR ...]``: load each config folder into a fresh
    slurmctld and print accepted/rejected with Slurm's reasons. Exit 0 when every folder was
    accepted, 1 otherwise, 2 on usage errors."""
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.slurm.check",
        description="Does slurmctld accept these config folders?",
    )
    parser.add_argument("folders", nargs="+", type=Path)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    lines: list[str] = []
    status = 0
    try:
        root = ensure_chroot()
        for folder in args.folders:
            result = check_load(folder, root=root)
            verdict = "accepted" if result.accepted else "REJECTED"
            lines.append(f"{folder}: {verdict}")
            shown = result.errors if not result.accepted else result.warnings
            lines += [f"  {ln}" for ln in shown]
            status = status or (0 if result.accepted else 1)
    except (HarnessError, ValueError, OSError) as exc:
        lines.append(f"error: {exc}")
        status = 1
    sys.stderr.write("\n".join(lines) + "\n")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
