"""The base the version-bump check compares with: the merge base of ``HEAD`` and the target branch.

CI fetches the target branch and sets ``SLINKY_REQUIRE_VERSION_BASE=1``, so that a checkout
without it fails the check instead of skipping it. ``SLINKY_VERSION_BASE`` names another target
(any revision ``git merge-base`` takes, e.g. ``main`` in a worktree that has no ``origin``).
"""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

TARGET = "origin/main"
"""ct.yaml's ``remote`` and ``target-branch``."""
REQUIRE_ENV = "SLINKY_REQUIRE_VERSION_BASE"
TARGET_ENV = "SLINKY_VERSION_BASE"


class MissingBaseError(Exception):
    """The target is not in the clone, and the environment requires it."""


def target(env: Mapping[str, str]) -> str:
    """The revision to compare with: ``SLINKY_VERSION_BASE``, else ``origin/main``."""
    return env.get(TARGET_ENV) or TARGET


def required(env: Mapping[str, str]) -> bool:
    """Whether the environment requires a base (``SLINKY_REQUIRE_VERSION_BASE=1``)."""
    return env.get(REQUIRE_ENV, "") == "1"


def merge_base(repo: Path, env: Mapping[str, str]) -> str | None:
    """The merge base of ``HEAD`` and the target in ``repo``; None when there is none and the
    environment does not require one; :class:`MissingBaseError` when it does."""
    revision = target(env)
    proc = subprocess.run(
        ["git", "merge-base", "HEAD", revision],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode == 0:
        return proc.stdout.strip()
    if required(env):
        raise MissingBaseError(
            f"{repo} has no merge base with {revision} ({proc.stderr.strip() or 'no common commit'}), "
            f"and {REQUIRE_ENV}=1 requires the version-bump check: fetch the target branch "
            "(actions/checkout with `fetch-depth: 0`, or `git fetch origin main`), or name a revision "
            f"that is there with {TARGET_ENV}"
        )
    return None
