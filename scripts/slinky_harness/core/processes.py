"""Leave nothing running: one mechanism for every process the harness starts.

* :func:`die_with_parent` is the ``preexec_fn`` of every child the harness starts directly
  (operator, webhook, bridge components, labelers, Slurm daemons): the kernel SIGKILLs the child
  when this process dies, SIGKILL included.
* :class:`Reaper` covers processes that are not our children (``kwokctl``'s daemons): a small
  Python child holding the read end of a pipe. When this process dies, any way, the pipe closes and
  the reaper ends the pids it was told and every process whose command line mentions its markers.
  :meth:`Reaper.close` (a normal stop) tells it to exit without killing anything.
* :func:`sigterm_as_interrupt` turns SIGTERM into ``KeyboardInterrupt`` so that a SIGTERM shuts
  down like Ctrl-C, with every ``finally`` and fixture teardown run.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from pathlib import Path

__all__ = ["Reaper", "die_with_parent", "reaping", "run_main", "sigterm_as_interrupt"]

_PR_SET_PDEATHSIG = 1

# The reaper: reads "pid N" / "mark TEXT" lines; "stop" ends it quietly; EOF without "stop" means
# the parent died: SIGTERM the pids, their groups and the marked processes, SIGKILL after 5 s.
_REAPER = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pids, marks = set(), []
for line in sys.stdin.buffer:
    word, _, arg = line.rstrip(b"\n").partition(b" ")
    if word == b"stop":
        sys.exit(0)
    if word == b"pid":
        pids.add(int(arg))
    elif word == b"mark":
        marks.append(arg)
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


class Reaper:
    """A watcher child that ends given processes when this process dies; see the module doc."""

    def __init__(self, marks: Iterable[str | Path] = ()) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _REAPER],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # Own session: Ctrl-C in the terminal must not reach it before it is needed.
            start_new_session=True,
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
def reaping(marks: Iterable[str | Path] = ()) -> Iterator[Reaper]:
    """A :class:`Reaper` for the ``with`` block; closed quietly at its end."""
    reaper = Reaper(marks)
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
