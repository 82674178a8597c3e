"""The harness's one-of-each mechanisms (core/): starting and stopping children, waiting with a
time-out, and the one exception base."""

from __future__ import annotations

import importlib
import pkgutil
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

import slinky_harness
from slinky_harness.core import processes
from slinky_harness.core.errors import HarnessError, WaitTimeout
from slinky_harness.core.polling import wait_for

if TYPE_CHECKING:
    from pathlib import Path

IGNORES_TERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('up', flush=True); time.sleep(60)"
)


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_start_logs_output_and_leads_its_own_group(tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    proc = processes.start(
        _python("import sys; print('out'); print('err', file=sys.stderr)"), log=log
    )
    assert proc.wait(timeout=30) == 0
    assert sorted(log.read_text().split()) == ["err", "out"]
    assert processes.stop(proc) == 0  # already ended: its status


def test_stop_kills_a_child_that_ignores_sigterm_after_the_grace(tmp_path: Path) -> None:
    log = tmp_path / "log"
    proc = processes.start(_python(IGNORES_TERM), log=log)
    wait_for(lambda: "up" in log.read_text(), timeout=30, what="the child to start")
    started = time.monotonic()
    assert processes.stop(proc, grace=0.5) == -signal.SIGKILL
    assert 0.5 <= time.monotonic() - started < 20


def test_stop_ends_what_the_child_left_in_its_group(tmp_path: Path) -> None:
    """A grandchild in the child's group dies with it (the child ignores nothing)."""
    pidfile = tmp_path / "pid"
    code = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(60)"
    )
    proc = processes.start(_python(code), log=tmp_path / "log")
    written = wait_for(
        lambda: pidfile.read_text() if pidfile.exists() else None, timeout=30, what="pid"
    )
    grandchild = int(written)
    processes.stop(proc, grace=5)
    wait_for(lambda: not processes.alive(grandchild), timeout=10, what="the grandchild to end")


def test_run_to_end_kills_the_group_on_a_time_out(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        processes.run_to_end(_python(IGNORES_TERM), log=tmp_path / "log", timeout=1)
    assert processes.run_to_end(_python("raise SystemExit(3)"), log=tmp_path / "l", timeout=30) == 3


def test_run_measured_reports_exit_time_and_memory(tmp_path: Path) -> None:
    with (tmp_path / "log").open("wb") as log:
        ran = processes.run_measured(
            _python("x = bytearray(64 << 20); raise SystemExit(2)"), log=log, timeout=60
        )
    assert (ran.returncode, ran.timed_out) == (2, False)
    assert ran.peak_rss_mib >= 64 and ran.seconds > 0
    with (tmp_path / "log2").open("wb") as log:
        slow = processes.run_measured(_python(IGNORES_TERM), log=log, timeout=1)
    assert slow.timed_out and slow.returncode == -signal.SIGKILL


def test_end_pids_ends_a_process_that_is_not_our_child(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    # the shell's child is re-parented when the shell exits: not ours
    subprocess.run(
        ["sh", "-c", f"{sys.executable} -c 'import time; time.sleep(60)' & echo $! > {pidfile}"],
        check=True,
    )
    pid = int(pidfile.read_text())
    assert processes.alive(pid)
    processes.end_pids([pid], grace=5)
    wait_for(lambda: not processes.alive(pid), timeout=10, what="the orphan to end")


def test_wait_for_returns_the_first_truthy_value() -> None:
    values = iter([None, 0, "", "found", "later"])
    slept: list[float] = []
    assert (
        wait_for(lambda: next(values), timeout=60, what="x", every=0.5, sleep=slept.append)
        == "found"
    )
    assert slept == [0.5, 0.5, 0.5]


def test_wait_for_times_out_naming_what_and_the_last_state() -> None:
    with pytest.raises(
        WaitTimeout, match=r"waiting for the pods to go; last seen: \['a'\]"
    ) as info:
        wait_for(
            lambda: False, timeout=0.2, what="the pods to go", every=0.05, detail=lambda: ["a"]
        )
    assert isinstance(info.value, TimeoutError) and isinstance(info.value, HarnessError)


def test_wait_for_probes_once_more_after_a_stall_past_the_deadline() -> None:
    """A probe that turns true while the loop slept past the deadline still counts."""
    calls: list[int] = []

    def probe() -> bool:
        calls.append(1)
        return len(calls) == 2

    assert wait_for(probe, timeout=0.01, what="x", every=0.0, sleep=lambda _: time.sleep(0.05))
    assert len(calls) == 2


def test_every_harness_error_derives_from_harness_error() -> None:
    """Every exception class defined in any harness module is a HarnessError."""
    found = []
    for info in pkgutil.walk_packages(slinky_harness.__path__, "slinky_harness."):
        if info.name.endswith(".__main__"):  # runs its program when imported
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
            ):
                found.append(value)
    assert len(found) >= 15
    assert [e.__qualname__ for e in found if not issubclass(e, HarnessError)] == []


def test_mentioning_finds_live_processes_by_a_marker_on_their_command_line(tmp_path: Path) -> None:
    marker = tmp_path / "cluster-folder"
    proc = processes.start(
        [
            *_python(f"import time, sys; sys.argv.append({str(marker)!r}); time.sleep(60)"),
            str(marker),
        ],
        log=tmp_path / "log",
    )
    try:
        assert proc.pid in processes.mentioning(marker)
        assert processes.mentioning(tmp_path / "nothing-runs-here") == set()
    finally:
        processes.stop(proc, grace=5)
    assert proc.pid not in processes.mentioning(marker, include_zombies=True)


_REAPED_CHILD = """
import os, signal, sys, time
from slinky_harness.core import processes
reaper = processes.Reaper()
reaper.on_death([sys.executable, "-c", "import sys; open(sys.argv[1], 'w').write('ran')", sys.argv[1]])
if sys.argv[2] == "close":
    reaper.close()
print("armed", flush=True)
time.sleep(60)
"""


def _kill_when_armed(code: str, *args: str) -> None:
    """Run ``code`` in a child Python, SIGKILL it once it prints ``armed``, reap it."""
    with subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "armed"
        child.send_signal(signal.SIGKILL)
        child.wait()


@pytest.mark.parametrize("ending", ["sigkill", "close"])
def test_reaper_runs_on_death_commands_only_when_its_parent_dies(
    tmp_path: Path, ending: str
) -> None:
    """A command given to ``Reaper.on_death`` runs after its owner is SIGKILLed, and never after
    a normal ``close``."""
    marker = tmp_path / "ran"
    _kill_when_armed(_REAPED_CHILD, str(marker), ending)
    if ending == "sigkill":
        wait_for(marker.exists, timeout=20, what="the on_death command")
        assert marker.read_text() == "ran"
    else:
        time.sleep(2)
        assert not marker.exists()


_LOCKED_CHILD = """
import fcntl, sys, time
from slinky_harness.core import processes
lock = open(sys.argv[1], "a")
fcntl.flock(lock, fcntl.LOCK_EX)
reaper = processes.Reaper(hold=[lock.fileno()])
slow = "import sys, time; time.sleep(3); open(sys.argv[1], 'w').write('restored')"
reaper.on_death([sys.executable, "-c", slow, sys.argv[2]])
print("armed", flush=True)
time.sleep(60)
"""


def test_a_lock_the_reaper_holds_stays_taken_until_its_on_death_commands_ran(
    tmp_path: Path,
) -> None:
    """Invariant: a ``flock`` whose descriptor the reaper holds is not free after its owner is
    SIGKILLed until the on_death command (a restore) has finished: whoever takes the lock next
    never runs beside the restore."""
    import fcntl  # noqa: PLC0415

    lock_path, restored = tmp_path / "lock", tmp_path / "restored"
    _kill_when_armed(_LOCKED_CHILD, str(lock_path), str(restored))
    with lock_path.open("a") as lock:
        with pytest.raises(BlockingIOError):
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert not restored.exists()
        started = time.monotonic()
        fcntl.flock(lock, fcntl.LOCK_EX)  # blocks until the reaper is done
        assert restored.read_text() == "restored", time.monotonic() - started
