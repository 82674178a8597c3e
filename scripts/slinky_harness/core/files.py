"""Writing files whole: the one way the harness writes a file that must never be seen half-written
or, for secrets (tokens, kubeconfigs, keys), ever be readable by others.

:func:`write_atomic` writes a temporary file in the destination's folder, created with the final
0600 (so a secret is private from its first byte, never world-readable before a ``chmod``), gives
it its final mode and owner, and renames it over the destination.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(
    path: Path, data: str | bytes, *, mode: int = 0o644, owner: tuple[int, int] | None = None
) -> Path:
    """Write ``data`` to ``path`` atomically, with ``mode`` from creation and, when given, the
    ``(uid, gid)`` ``owner`` (needs root) set before the file takes its name; return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    # mkstemp creates the file 0600 (O_EXCL): private while written; the final mode (0400 too:
    # the descriptor stays writable) and owner are set before the rename gives it its name.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(raw)
            out.flush()
            if owner is not None:
                os.fchown(out.fileno(), *owner)
            os.fchmod(out.fileno(), mode)
        Path(tmp).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise
    return path
