"""Reading input files: text, and documents that may be JSON or YAML (bounded, see ``limits``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from slinky_topology import limits
from slinky_topology.errors import InputError
from slinky_topology.limits import decode_text, load_structured

__all__ = ["read_structured", "read_text"]


def read_text(path: str) -> str:
    """The UTF-8 text of ``path``; InputError naming the file when it cannot be read.

    Reads at most :data:`~slinky_topology.limits.MAX_INPUT_BYTES` (+1 to tell that it is over),
    so ``/dev/zero`` or a runaway pipe is refused instead of filling memory.
    """
    if not path:
        raise InputError("cannot read: the file name is empty", location="''")
    limit = limits.MAX_INPUT_BYTES
    chunks: list[bytes] = []
    total = 0
    try:
        with Path(path).open("rb") as fh:
            st = os.fstat(fh.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                raise limits.too_large(path)
            while total <= limit:  # in pieces: read(limit) would allocate the limit at once
                chunk = fh.read(min(1 << 20, limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            if total > limit:  # a stream that goes on (/dev/zero): refuse before joining
                raise limits.too_large(path)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", location=path) from None
    return decode_text(b"".join(chunks), path)


def read_structured(path: str) -> Any:
    """The document in ``path``, parsed as JSON, else as YAML; InputError when it is neither."""
    return load_structured(read_text(path), path)
