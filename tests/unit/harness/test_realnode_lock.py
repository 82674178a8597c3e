"""One real node per machine (``slinky_harness.k8s.realnode``): a second run waits its turn for
the lock up to the time it is given, then fails naming the lock."""

from __future__ import annotations

import fcntl
import threading
from typing import TYPE_CHECKING

import pytest

from slinky_harness.k8s import realnode

if TYPE_CHECKING:
    from pathlib import Path


def test_a_held_lock_is_waited_for_then_taken(tmp_path: Path) -> None:
    """While another holder has the lock, ``wait=0`` fails at once; with time to wait, the lock
    is taken once the holder lets go (two test files of the cluster tier take turns)."""
    path = tmp_path / "realnode.lock"
    with path.open("a") as holder, path.open("a") as second:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(realnode.RealNodeError, match="another real node runs"):
            realnode._take(second, 0)
        release = threading.Timer(1.0, fcntl.flock, (holder, fcntl.LOCK_UN))
        release.start()
        realnode._take(second, 30)
        release.join()
        with pytest.raises(BlockingIOError):
            fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
