"""Name rules (topology.md b.1, b.2b, f.3): at most 64 characters, hostlist-safe (ours)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slinky_topology.model import is_safe_name

if TYPE_CHECKING:
    from slinky_topology.validate.findings import Findings

__all__ = ["MAX_NAME_LEN", "SAFE_FIX", "check_name", "name_ok"]

MAX_NAME_LEN = 64
SAFE_FIX = "use letters, digits, '.', '_' and '-' only, starting with a letter or digit, max 64"


def name_ok(name: str) -> bool:
    """Whether ``name`` passes :func:`check_name`."""
    return len(name) <= MAX_NAME_LEN and is_safe_name(name)


def check_name(out: Findings, kind: str, name: str, *, line: int | None = None) -> None:
    """Slurm refuses names over 64 characters; we also refuse hostlist or config syntax."""
    if len(name) > MAX_NAME_LEN:
        out.error(
            f"{kind} {name[:20]}...",
            f"name is {len(name)} characters; Slurm allows at most {MAX_NAME_LEN}",
            "shorten the name",
            line=line,
        )
    elif not is_safe_name(name):
        out.error(
            f"{kind} {name!r}",
            "name is not hostlist-safe (ours: no ', : = # [ ]' or whitespace)",
            SAFE_FIX,
            line=line,
        )
