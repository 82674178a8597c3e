"""Leave nothing running: one mechanism for every process the harness starts and stops.

* :func:`start` starts every long-lived child of the harness (operator, webhook, bridge
  components, labelers, topograph, Slurm daemons, MariaDB, build steps): in a session of its own,
  stdin from ``/dev/null``, output into a log file, with :func:`die_with_parent` as its
  ``preexec_fn``: the kernel SIGKILLs the child when this process dies, SIGKILL included.
  :func:`stop` ends one: SIGTERM to its process group, SIGKILL after a grace period, and SIGKILL
  to anything it left in its group. :func:`run_to_end` runs one to its end (killed on a time-out
  or an interruption); :func:`run_measured` also reports its wall time, CPU time and peak memory.
* :func:`end_pids` ends processes that are not our children (what ``kwokctl`` starts), by pid:
  SIGTERM, then SIGKILL to those still alive after a grace period.
* :class:`Reaper` covers processes that are not our children (``kwokctl``'s daemons): a small
  Python child holding the read end of a pipe. When this process dies, any way, the pipe closes and
  the reaper ends the pids it was told and every process whose command line mentions its markers,
  then runs the commands given to :meth:`Reaper.on_death` (the real node's restore).
  :meth:`Reaper.close` (a normal stop) tells it to exit without killing anything.
* :func:`sigterm_as_interrupt` turns SIGTERM into ``KeyboardInterrupt`` so that a SIGTERM shuts
  down like Ctrl-C, with every ``finally`` and fixture teardown run.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

__all__ = [
    "Measured",
    "Reaper",
    "alive",
    "die_with_parent",
    "end_pids",
    "mentioning",
    "reaping",
    "run_main",
    "run_measured",
    "run_to_end",
    "sigterm_as_interrupt",
    "start",
    "stop",
]

_PR_SET_PDEATHSIG = 1

# The reaper: reads "pid N" / "mark TEXT" / "exec JSON-ARGV" lines; "stop" ends it quietly; EOF
# without "stop" means the parent died: SIGTERM the pids, their groups and the marked processes,
# SIGKILL after 5 s, then run each exec'd command to its end (what restores the machine).
_REAPER = r"""
import json, os, signal, subprocess, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pids, marks, cleanups = set(), [], []
for line in sys.stdin.buffer:
    word, _, arg = line.rstrip(b"\n").partition(b" ")
    if word == b"stop":
        sys.exit(0)
    if word == b"pid":
        pids.add(int(arg))
    elif word == b"mark":
        marks.append(arg)
    elif word == b"exec":
        cleanups.append(json.loads(arg))
me = os.getpid()
def targets():
    found = set(pids)
    for name in os.listdir("/proc"):
        if name.isdigit() and marks:
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if any(m in cmd for m in marks):
                found.add(int(name))
    found.discard(me)
    return found
def zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[-1].startswith("Z")
    except OSError:
        return True
def send(sig):
    alive = set()
    for pid in targets():
        if sig == 0 and zombie(pid):
            continue
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, sig)
            os.kill(pid, sig)
            alive.add(pid)
        except OSError:
            pass
    return alive
send(signal.SIGTERM)
deadline = time.monotonic() + 5
while time.monotonic() < deadline:
    time.sleep(0.2)
    if not send(0):
        break
send(signal.SIGKILL)
for argv in cleanups:
    try:
        subprocess.run(argv, stdin=subprocess.DEVNULL, timeout=300, check=False)
    except (OSError, subprocess.SubprocessError):
        pass
"""


def die_with_parent() -> None:
    """In the child before exec: get SIGKILL when the parent dies (even by SIGKILL).

    The flag is not inherited across fork, so the child's own children are not affected.
    A child that is ``unshare --pid --fork --kill-child`` takes its whole namespace with it.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def start(
    argv: Sequence[str],
    *,
    log: Path | IO[bytes],
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    append: bool = False,
    stderr: IO[bytes] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` as a child that dies with the harness, in a session (process group) of its
    own, stdin from ``/dev/null``, stdout and stderr into ``log`` (a path, truncated unless
    ``append``, or an open binary file; ``stderr``: a file of its own). ``env`` replaces this
    process's environment; ``extra_env`` is added to it (or to ``env``)."""
    environ = dict(os.environ if env is None else env)
    environ.update(extra_env or {})
    with contextlib.ExitStack() as stack:
        if isinstance(log, Path):
            log.parent.mkdir(parents=True, exist_ok=True)
            sink: IO[bytes] = stack.enter_context(log.open("ab" if append else "wb"))
        else:
            sink = log
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT if stderr is None else stderr,
            env=environ,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=die_with_parent,  # noqa: PLW1509 (runs before exec; only prctl)
        )


def _signal_group(proc: subprocess.Popen[bytes], signum: int) -> None:
    """``signum`` to the child's process group (it leads one: :func:`start`), else to the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)


def stop(proc: subprocess.Popen[bytes], *, grace: float = 10.0) -> int:
    """End a child of :func:`start`: SIGTERM to its group, SIGKILL after ``grace`` seconds
    (at once when ``grace`` is 0); then SIGKILL to whatever it left in its group. Return its exit
    status (negative: the signal that ended it)."""
    if proc.poll() is None:
        if grace > 0:
            _signal_group(proc, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=grace)
        if proc.poll() is None:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # anything the child left in its group
    return int(proc.returncode)


def run_to_end(
    argv: Sequence[str],
    *,
    log: Path | IO[bytes],
    timeout: float,
    env: Mapping[str, str] | None = None,
    append: bool = False,
) -> int:
    """Run ``argv`` as :func:`start` does and return its exit status. When it runs past
    ``timeout`` seconds (``subprocess.TimeoutExpired``) or the wait is interrupted, its whole
    process group is killed before the exception goes on."""
    proc = start(argv, log=log, env=env, append=append)
    try:
        return proc.wait(timeout=timeout)
    except BaseException:
        stop(proc, grace=0)
        raise


@dataclass(frozen=True)
class Measured:
    """A child run to its end by :func:`run_measured`."""

    returncode: int
    seconds: float
    """Wall time from start to exit."""
    cpu_seconds: float
    """User plus system CPU time of the child."""
    peak_rss_mib: float
    """Peak resident memory of the child."""
    timed_out: bool


def run_measured(
    argv: Sequence[str],
    *,
    log: IO[bytes],
    timeout: float,
    env: Mapping[str, str] | None = None,
    stderr: IO[bytes] | None = None,
) -> Measured:
    """Run ``argv`` (as :func:`start` does, output into ``log``, ``stderr`` apart when given)
    until it exits, SIGKILLed after ``timeout`` seconds; measure it from the kernel's accounting
    of the child (``wait4``)."""
    started = time.monotonic()
    proc = start(argv, log=log, env=env, stderr=stderr)
    deadline = started + timeout
    timed_out = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            timed_out = True
            _signal_group(proc, signal.SIGKILL)
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    seconds = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Measured(
        returncode=proc.returncode,
        seconds=seconds,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        peak_rss_mib=usage.ru_maxrss / 1024,  # KiB on Linux
        timed_out=timed_out,
    )


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie has)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        if (Path("/proc") / str(pid) / "stat").read_text().rsplit(") ", 1)[-1].startswith("Z"):
            return False
    return True


def mentioning(marker: str | Path, *, include_zombies: bool = False) -> set[int]:
    """Pids of the processes (this one excepted) whose command line holds ``marker`` (a cluster's
    or a work folder), zombies only when ``include_zombies``."""
    needle = str(marker).encode()
    found: set[int] = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if needle in (proc / "cmdline").read_bytes() and (
                include_zombies or alive(int(proc.name))
            ):
                found.add(int(proc.name))
    return found


def end_pids(pids: Iterable[int], *, grace: float = 10.0) -> None:
    """End processes that are not our children: SIGTERM each, SIGKILL those alive after
    ``grace`` seconds."""
    living = {pid for pid in pids if alive(pid)}
    for pid in living:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while living and time.monotonic() < deadline:
        time.sleep(0.2)
        living = {pid for pid in living if alive(pid)}
    for pid in living:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


class Reaper:
    """A watcher child that ends given processes when this process dies; see the module doc."""

    def __init__(self, marks: Iterable[str | Path] = (), hold: Iterable[int] = ()) -> None:
        """``hold``: file descriptors the reaper keeps open until it exits; a ``flock`` taken
        on one stays held after this process dies, until the reaper has run its
        :meth:`on_death` commands (a lock on what they restore is not free before that)."""
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _REAPER],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # Own session: Ctrl-C in the terminal must not reach it before it is needed.
            start_new_session=True,
            pass_fds=tuple(hold),
        )
        self._lock = threading.Lock()
        for mark in marks:
            self._send(f"mark {mark}")

    def _send(self, line: str) -> None:
        stdin = self._proc.stdin
        if stdin is None:
            return
        with self._lock, contextlib.suppress(OSError, ValueError):
            stdin.write(line.encode() + b"\n")
            stdin.flush()

    def watch(self, pids: Iterable[int]) -> None:
        """Add ``pids`` (and their process groups, where they lead one) to what is ended."""
        for pid in pids:
            self._send(f"pid {int(pid)}")

    def on_death(self, argv: Sequence[str]) -> None:
        """Run ``argv`` (to its end, output where the reaper's goes) after the processes are
        ended, should this process die; a normal :meth:`close` never runs it."""
        self._send("exec " + json.dumps(list(argv)))

    def close(self) -> None:
        """A normal stop: the reaper exits without touching anything."""
        self._send("stop")
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


@contextlib.contextmanager
def reaping(marks: Iterable[str | Path] = (), hold: Iterable[int] = ()) -> Iterator[Reaper]:
    """A :class:`Reaper` for the ``with`` block; closed quietly at its end."""
    reaper = Reaper(marks, hold)
    try:
        yield reaper
    finally:
        reaper.close()


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def install_sigterm_as_interrupt() -> bool:
    """Make SIGTERM raise ``KeyboardInterrupt`` (main thread, default action only); say if done."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        return False
    signal.signal(signal.SIGTERM, _raise_interrupt)
    return True


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM shuts down like Ctrl-C inside the block (a CLI's ``main``)."""
    installed = install_sigterm_as_interrupt()
    try:
        yield
    finally:
        if installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_main(main: Callable[[], int]) -> int:
    """A CLI's ``__main__``: SIGTERM and Ctrl-C run every cleanup, then exit 130 (143 for TERM)."""
    with sigterm_as_interrupt():
        try:
            return main()
        except KeyboardInterrupt as exc:
            print(
                f"error: interrupted ({exc or 'SIGINT'}); everything started was stopped",
                file=sys.stderr,
            )
            return 143 if str(exc) == f"signal {int(signal.SIGTERM)}" else 130
