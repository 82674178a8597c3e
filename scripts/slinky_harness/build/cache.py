"""The build cache's two mechanics, used by every build of the harness (Go tools, the control
plane, the Slinky binaries, topograph, the Slurm chroot, the labeler image's base).

* :func:`locked`: one builder at a time per cache entry, across processes (an exclusive ``flock``
  that the kernel drops when the holder dies).
* :func:`staged_folder`: a build writes into a temporary folder beside its destination that
  replaces the destination only when the build succeeds, so that a failed or killed build never
  leaves a half-filled folder that a later run would reuse.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["locked", "staged_folder"]


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (created if needed) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def staged_folder(dest: Path, prefix: str) -> Iterator[Path]:
    """A temporary folder beside ``dest`` that replaces ``dest`` when the block succeeds.

    A build that fails (or is killed) leaves ``dest`` as it was and never a half-filled folder.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{prefix}-", dir=dest.parent))
    try:
        yield staging
        if dest.exists():
            stale = dest.with_name(f".{dest.name}.stale-{os.getpid()}")
            dest.rename(stale)
            shutil.rmtree(stale, ignore_errors=True)
        staging.chmod(0o755)
        staging.rename(dest)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
