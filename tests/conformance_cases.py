"""The conformance command's test cases, shared by the tiers that run it: the ``values/``
profiles (with ``values/prerequisites/<profile>.yaml`` where a profile's header asks for objects
made first) and the broken values files of ``tests/data/conformance/broken/``, whose header says
what must be caught::

    # expect-step: live/placement
    # expect-path: slurm-cluster.nodesets.gpu.podSpec.nodeSelector
    # args: --nodes tests/data/conformance/nodes.json

The expectations are read from the files, never written into a test.
"""

from __future__ import annotations

import itertools
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from slinky_harness.core.paths import REPO_ROOT

if TYPE_CHECKING:
    from pathlib import Path

PROFILES = sorted((REPO_ROOT / "values").glob("*.yaml"))
PREREQUISITES = REPO_ROOT / "values" / "prerequisites"
BROKEN = sorted((REPO_ROOT / "tests" / "data" / "conformance" / "broken").glob("*.yaml"))


def prerequisites(profile: Path) -> Path | None:
    """The ``--existing`` file of a profile, if its header asks for objects made first."""
    path = PREREQUISITES / profile.name
    return path if path.is_file() else None


@dataclass(frozen=True)
class Expected:
    """What a broken values file must fail: ``steps`` (``phase/name``) naming every path of
    ``paths``; ``args``: further command-line arguments the case needs (a Nodes dump, say)."""

    steps: tuple[str, ...]
    paths: tuple[str, ...]
    args: tuple[str, ...]

    @property
    def chart(self) -> str | None:
        return self.args[self.args.index("--chart") + 1] if "--chart" in self.args else None

    @property
    def existing(self) -> list[Path]:
        """The ``--existing`` files of ``args`` (relative to the repository root)."""
        return [REPO_ROOT / b for a, b in itertools.pairwise(self.args) if a == "--existing"]


def expectations(path: Path) -> Expected:
    """The ``# expect-step:``, ``# expect-path:`` and ``# args:`` lines of a broken file's
    header (the comment lines it starts with)."""
    fields: dict[str, list[str]] = {"expect-step": [], "expect-path": [], "args": []}
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        key, sep, value = line.lstrip("# ").partition(":")
        if sep and key in fields:
            fields[key].append(value.strip())
    assert fields["expect-step"] and fields["expect-path"], f"{path}: header lacks expectations"
    args = tuple(a for line in fields["args"] for a in shlex.split(line))
    return Expected(tuple(fields["expect-step"]), tuple(fields["expect-path"]), args)
