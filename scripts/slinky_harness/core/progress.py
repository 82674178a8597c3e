"""Long steps speak: what runs, how long it should take, then the elapsed time every 30 s."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from collections.abc import Iterator

EVERY = 30.0
"""Seconds between two progress lines."""


def elapsed(seconds: float) -> str:
    """``42s``, ``3m05s``."""
    whole = int(seconds)
    return f"{whole}s" if whole < 60 else f"{whole // 60}m{whole % 60:02d}s"


@contextlib.contextmanager
def heartbeat(
    what: str,
    expected: str,
    *,
    every: float = EVERY,
    quiet_for: float = 0.0,
    stream: TextIO | None = None,
) -> Iterator[None]:
    """Say ``what`` starts and how long it should take (``expected``, e.g. "about 8 min on 2
    cores"), then print the elapsed time every ``every`` seconds until the block ends, and how long
    it took (or that it failed). Lines go to ``stream`` (default: standard error), flushed.

    ``quiet_for``: a step that is usually instant (a cache hit) says nothing unless it runs
    longer than that many seconds; then it says what it is, and goes on as above."""
    out = stream if stream is not None else sys.stderr
    started = time.monotonic()
    done = threading.Event()
    spoke = threading.Event()

    def start() -> None:
        print(f"{what}: started; expected {expected}", file=out, flush=True)
        spoke.set()

    if quiet_for <= 0:
        start()

    def beat() -> None:
        if quiet_for > 0:
            if done.wait(quiet_for):
                return
            start()
        while not done.wait(every):
            print(
                f"{what}: still running, {elapsed(time.monotonic() - started)} so far "
                f"(expected {expected})",
                file=out,
                flush=True,
            )

    thread = threading.Thread(target=beat, name=f"heartbeat: {what}", daemon=True)
    thread.start()
    ok = False
    try:
        yield
        ok = True
    finally:
        done.set()
        thread.join()
        if spoke.is_set():
            took = elapsed(time.monotonic() - started)
            print(f"{what}: {'done' if ok else 'FAILED'} after {took}", file=out, flush=True)
