"""Where things are: the repository this harness runs from, and the cache outside it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO_ROOT", "cache_root"]

REPO_ROOT = Path(__file__).resolve().parents[3]
"""The clone: ``scripts/slinky_harness/core/paths.py`` is three folders below it."""


def cache_root() -> Path:
    """The folder, outside the clone, that holds tools, Go caches, the control plane and the Slurm
    chroot: ``$SLINKY_SUITE_CACHE``, else ``$XDG_CACHE_HOME/slinky-suite``, else
    ``~/.cache/slinky-suite``."""
    configured = os.environ.get("SLINKY_SUITE_CACHE")
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "slinky-suite"
