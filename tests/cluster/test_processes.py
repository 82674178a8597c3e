"""The harness leaves nothing running (``slinky_harness.core.processes``).

A child Python process starts a kwok control plane (``Cluster.start``: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kwok, none of them its children) and a stand-in operator
through ``operator.run_process``, with SIGTERM turned into ``KeyboardInterrupt`` as
``tests/conftest.py`` and the CLIs' ``run_main`` do. The child is then stopped by SIGTERM, by SIGTERM
followed at once by SIGKILL, or by SIGKILL alone; within a few seconds no process whose command line
mentions the child's work folder may remain (counted from ``/proc``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from slinky_harness.core import processes
from slinky_harness.core.processes import die_with_parent

if TYPE_CHECKING:
    from collections.abc import Sequence

CHILD = """
import sys, time
from pathlib import Path
from slinky_harness.k8s.cluster import Cluster
from slinky_harness.core.processes import install_sigterm_as_interrupt
from slinky_harness.k8s.operator import run_process

work = Path(sys.argv[1])
install_sigterm_as_interrupt()
with Cluster.start(work / "cluster", stages=None, timeout=90) as cluster:
    argv = [sys.executable, "-c", "import time; time.sleep(600)", str(work / "operator")]
    with run_process(argv, work / "operator.log", what="stand-in operator"):
        (work / "ready").write_text("ready")
        time.sleep(600)
"""

# The same, as a test run: the fixture holds the cluster and the stand-in; SIGTERM of pytest must
# run the fixture's teardown (tests/conftest.py, loaded with ``-p tests.conftest``).
PYTEST_CHILD = """
import sys, time
from pathlib import Path
import pytest
from slinky_harness.k8s.cluster import Cluster
from slinky_harness.k8s.operator import run_process

@pytest.fixture
def running(tmp_path_factory):
    work = Path(__file__).parent / "work"
    with Cluster.start(work / "cluster", stages=None, timeout=90):
        argv = [sys.executable, "-c", "import time; time.sleep(600)", str(work / "operator")]
        with run_process(argv, work / "operator.log", what="stand-in operator"):
            yield work

def test_sleeps(running):
    (running / "ready").write_text("ready")
    time.sleep(600)
"""


def _child_argv(kind: str, tmp_path: Path, work: Path) -> list[str]:
    if kind == "script":
        return [sys.executable, "-c", CHILD, str(work)]
    test_file = tmp_path / "test_child_run.py"
    test_file.write_text(PYTEST_CHILD)
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "tests.conftest",
        "-p",
        "no:cacheprovider",
        "-q",
        "--rootdir",
        str(tmp_path),
        "-c",
        os.devnull,
        str(test_file),
    ]


@pytest.mark.parametrize(
    ("kind", "signals"),
    [
        pytest.param("script", [signal.SIGTERM], id="sigterm"),
        pytest.param("script", [signal.SIGTERM, signal.SIGKILL], id="sigterm-then-sigkill"),
        pytest.param("script", [signal.SIGKILL], id="sigkill"),
        pytest.param("pytest", [signal.SIGTERM], id="pytest-sigterm"),
        pytest.param("pytest", [signal.SIGKILL], id="pytest-sigkill"),
    ],
)
def test_a_stopped_run_leaves_no_process(
    tmp_path: Path,
    kind: str,
    signals: Sequence[signal.Signals],
    capsys: pytest.CaptureFixture[str],
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    log = (tmp_path / "child.log").open("wb")
    child = subprocess.Popen(
        _child_argv(kind, tmp_path, work),
        cwd=Path(__file__).resolve().parents[2],
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=die_with_parent,  # noqa: PLW1509 (before exec; only prctl)
    )
    try:
        deadline = time.monotonic() + 120
        while not (work / "ready").exists():
            assert child.poll() is None, (tmp_path / "child.log").read_text()
            assert time.monotonic() < deadline, "the child's cluster did not start in 120 s"
            time.sleep(0.2)
        before = sorted(processes.mentioning(work))
        # etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, the stand-in.
        assert len(before) >= 6, before
        began = time.monotonic()
        for sig in signals:
            child.send_signal(sig)
        child.wait(timeout=60)
        left = sorted(processes.mentioning(work))
        while left and time.monotonic() - began < 15:
            time.sleep(0.1)
            left = sorted(processes.mentioning(work))
        took = time.monotonic() - began
        cmdlines = {pid: _cmdline(pid) for pid in left}
        assert left == [], f"{len(left)} processes left {took:.1f}s after {signals}: {cmdlines}"
        with capsys.disabled():
            print(
                f"\n{kind} {'+'.join(s.name for s in signals)}: {len(before)} processes before, "
                f"0 left after {took:.1f}s (child exit {child.returncode})"
            )
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        log.close()
        for pid in sorted(processes.mentioning(work)):
            os.kill(pid, signal.SIGKILL)


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "?"
