"""The gpu-topology-labeler (``python -m slinky_topology.labeler``) as a local process against a
control plane: one measured ``--once`` pass (:func:`run_labeler`) or a long-running replica
(:func:`start_labeler`), and its JSON log lines (:func:`parse_logs`).

The labeler benchmark and the cluster tier's labeler tests both run it this way; they give it a
kubeconfig of its own (:mod:`slinky_harness.k8s.accounts`) and count its writes in the API
server's audit log (:mod:`slinky_harness.k8s.audit`).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slinky_harness.core import processes
from slinky_harness.core.paths import REPO_ROOT

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Sequence
    from pathlib import Path

__all__ = ["LabelerRun", "child_env", "labeler_argv", "parse_logs", "run_labeler", "start_labeler"]


@dataclass
class LabelerRun:
    """One ``python -m slinky_topology.labeler`` process that has ended."""

    argv: list[str]
    returncode: int
    seconds: float
    """Wall time of the whole process."""
    peak_rss_mib: float
    """Peak resident memory of the process."""
    cpu_seconds: float
    """User plus system CPU time of the process."""
    stdout: str
    stderr: str
    logs: list[dict[str, Any]] = field(default_factory=list)
    """Its JSON log lines (stderr), decoded."""

    def last(self, msg: str) -> dict[str, Any]:
        """The last log line with message ``msg`` (``{}`` when none)."""
        found = [line for line in self.logs if line.get("msg") == msg]
        return found[-1] if found else {}

    def describe(self) -> str:
        return (
            f"`{' '.join(self.argv)}` exited {self.returncode} after {self.seconds:.1f}s\n"
            f"stderr (tail):\n{self.stderr[-3000:]}"
        )


def labeler_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "slinky_topology.labeler", *args]


def child_env() -> dict[str, str]:
    """The environment for a labeler process: this interpreter's import path included."""
    env = dict(os.environ)
    scripts = str(REPO_ROOT / "scripts")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (scripts, env.get("PYTHONPATH")) if p)
    return env


def run_labeler(args: Sequence[str], *, timeout: float = 600.0) -> LabelerRun:
    """Run the labeler as a separate process with ``args`` until it exits (killed after
    ``timeout`` seconds); measure it."""
    argv = labeler_argv(*args)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        measured = processes.run_measured(
            argv, log=out, stderr=err, timeout=timeout, env=child_env()
        )
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    return LabelerRun(
        argv=argv,
        returncode=measured.returncode,
        seconds=measured.seconds,
        peak_rss_mib=measured.peak_rss_mib,
        cpu_seconds=measured.cpu_seconds,
        stdout=stdout,
        stderr=stderr,
        logs=parse_logs(stderr),
    )


def start_labeler(args: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    """A long-running labeler with ``args``, its output in ``log``; end it with
    :func:`slinky_harness.core.processes.stop`."""
    return processes.start(labeler_argv(*args), log=log, env=child_env())


def parse_logs(text: str) -> list[dict[str, Any]]:
    """The JSON log lines of a labeler's stderr (other lines are skipped)."""
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out
