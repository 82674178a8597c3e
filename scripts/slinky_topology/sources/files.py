"""Reading input files: text, and documents that may be JSON or YAML (bounded, see ``limits``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from slinky_topology.errors import InputError
from slinky_topology.limits import MAX_INPUT_BYTES, decode_text, load_structured

__all__ = ["read_structured", "read_text"]


def read_text(path: str) -> str:
    """The UTF-8 text of ``path``; InputError naming the file when it cannot be read.

    Reads at most :data:`~slinky_topology.limits.MAX_INPUT_BYTES` (+1 to tell that it is over),
    so ``/dev/zero`` or a runaway pipe is refused instead of filling memory.
    """
    if not path:
        raise InputError("cannot read: the file name is empty", location="''")
    try:
        with Path(path).open("rb") as fh:
            raw = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", location=path) from None
    return decode_text(raw, path)


def read_structured(path: str) -> Any:
    """The document in ``path``, parsed as JSON, else as YAML; InputError when it is neither."""
    return load_structured(read_text(path), path)
