"""The conformance command as a user runs it, for the cluster tier's conformance tests: a
subprocess of ``python -m slinky_conformance`` writing JUnit XML, read back with junitparser as a
CI system reads it; each run's exit and phase times go to the tier's summary."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from junitparser import JUnitXml
from tests.worker_summary import records

from slinky_harness.core.paths import REPO_ROOT

if TYPE_CHECKING:
    from pathlib import Path

_SUMMARY: list[str] = records("cluster.summary")


@dataclass(frozen=True)
class Run:
    returncode: int
    output: str
    junit: JUnitXml

    def cases(self) -> dict[str, object]:
        return {case.name: case for suite in self.junit for case in suite}


def conformance(tmp_path: Path, *args: str, timeout: float, label: str = "conformance") -> Run:
    """``python -m slinky_conformance ARGS --junit <tmp_path>/report.xml`` (TMPDIR in
    ``tmp_path``); fails unless the report was written."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    junit = tmp_path / "report.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "slinky_conformance", *args, "--junit", str(junit)],
        cwd=REPO_ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = f"{proc.stdout}\n{proc.stderr}"
    assert junit.is_file(), f"no JUnit XML written (exit {proc.returncode}):\n{output}"
    xml = JUnitXml.fromfile(str(junit))
    phases = ", ".join(f"{s.name.removeprefix('conformance.')} {s.time:.0f}s" for s in xml)
    _SUMMARY.append(f"{label} {' '.join(args)}: exit {proc.returncode}; {phases}")
    return Run(proc.returncode, output, xml)
