"""The shell commands the suite's Markdown documents give, found and run exactly as written.

A fenced code block is a *command block* when one of its lines calls ``helm`` or ``kubectl``
(after an optional ``$`` prompt). Every command block carries a mark, an HTML comment on the
last non-blank line above its fence, that says whether the cluster tier runs it:

    <!-- cluster-tier: runs -->
    <!-- cluster-tier: not run: <why, and what checks it instead> -->

``tests/lint/test_doc_commands.py`` fails on a command block of :data:`DOCUMENTS` without a mark
(or with a ``not run`` mark that gives no reason), so no new command goes untested by accident;
``tests/cluster/test_doc_commands.py`` runs each document's ``runs`` blocks, in order, with
``bash -euo pipefail`` in a copy of the checkout against a control plane of the document's own.
A chart README is generated from its ``README.md.gotmpl`` by helm-docs, which keeps the marks.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from slinky_harness.core.errors import HarnessError
from slinky_harness.core.paths import REPO_ROOT

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

DOCUMENTS = (
    "README.md", "MIGRATING.md", "docs/*.md", "charts/*/README.md", "examples/*/README.md"
)  # fmt: skip
"""The documents whose command blocks must be marked (globs under the repository root)."""

COPIED = ("charts", "examples", "values")
"""What of the checkout a document's commands may name (``./charts/...``, ``-f values/...``):
copied, links kept, into the folder the commands run in, so that nothing they write (``helm
dependency build``'s archives) lands in the checkout."""

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_MARK = re.compile(r"^<!--\s*cluster-tier:\s*(?P<body>.*?)\s*-->$")
_COMMAND = re.compile(r"^\s*(?:\$\s+)?(?:helm|kubectl)\s")

Mark = Literal["runs", "not run"]


class DocCommandError(HarnessError):
    """A document's commands could not be read, or one of them failed; the message names the
    document and line, and what to do."""


@dataclass(frozen=True)
class Block:
    """One fenced code block of a document: where its fence is, its info string (``sh``), its
    text, and its mark (None: unmarked) with the reason of a ``not run`` mark."""

    document: Path
    line: int
    info: str
    text: str
    mark: Mark | None = None
    reason: str = ""

    @property
    def where(self) -> str:
        """``<document>:<line>``, the document relative to the repository when it is inside."""
        try:
            shown = self.document.relative_to(REPO_ROOT)
        except ValueError:
            shown = self.document
        return f"{shown}:{self.line}"

    @property
    def is_command(self) -> bool:
        """Whether a line of the block calls helm or kubectl."""
        return any(_COMMAND.match(line) for line in self.text.splitlines())


def _closes(line: str, fence: str) -> bool:
    """Whether ``line`` closes a block opened by ``fence``: only that character, as many or more."""
    text = line.strip()
    return len(text) >= len(fence) and set(text) == {fence[0]}


def _mark(previous: str, where: str) -> tuple[Mark | None, str]:
    found = _MARK.match(previous.strip())
    if not found:
        return None, ""
    body = found.group("body")
    if body == "runs":
        return "runs", ""
    if body.startswith("not run"):
        return "not run", body.removeprefix("not run").lstrip(" :").strip()
    raise DocCommandError(
        f"{where}: unknown mark {previous.strip()!r}; write <!-- cluster-tier: runs --> or "
        "<!-- cluster-tier: not run: <why> -->"
    )


def blocks(document: Path) -> list[Block]:
    """Every fenced code block of ``document``, in order, with its mark."""
    try:
        lines = document.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DocCommandError(f"{document}: cannot read it: {exc}") from exc
    found: list[Block] = []
    index = 0
    previous = ""
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            if lines[index].strip():
                previous = lines[index]
            index += 1
            continue
        fence = opening.group("fence")
        start = index
        body: list[str] = []
        index += 1
        while index < len(lines) and not _closes(lines[index], fence):
            body.append(lines[index])
            index += 1
        if index == len(lines):
            raise DocCommandError(f"{document}:{start + 1}: code fence never closed")
        where = f"{document}:{start + 1}"
        mark, reason = _mark(previous, where)
        info = opening.group("info").strip()
        found.append(Block(document, start + 1, info, "\n".join(body) + "\n", mark, reason))
        previous = lines[index]
        index += 1
    return found


def documents(root: Path = REPO_ROOT) -> list[Path]:
    """The files of :data:`DOCUMENTS` under ``root``, sorted."""
    return sorted({path for pattern in DOCUMENTS for path in root.glob(pattern) if path.is_file()})


def command_blocks(document: Path) -> list[Block]:
    """The command blocks of ``document``."""
    return [block for block in blocks(document) if block.is_command]


def unmarked(document: Path) -> list[str]:
    """Why each command block of ``document`` is not properly marked (empty: all are)."""
    problems = []
    for block in command_blocks(document):
        if block.mark is None:
            problems.append(
                f"{block.where}: a helm/kubectl block without a mark; put "
                "<!-- cluster-tier: runs --> (the cluster tier runs it as written) or "
                "<!-- cluster-tier: not run: <why> --> on the line above its fence"
            )
        elif block.mark == "not run" and not block.reason:
            problems.append(f"{block.where}: 'not run' needs its reason after a colon")
    return problems


def runnable(document: Path) -> list[Block]:
    """The blocks of ``document`` the cluster tier runs, in order."""
    return [block for block in blocks(document) if block.mark == "runs"]


def workspace(dest: Path, root: Path = REPO_ROOT) -> Path:
    """A folder holding a copy of :data:`COPIED` of ``root`` (links kept), for commands to run
    in as if in the checkout."""
    for name in COPIED:
        if (root / name).exists():
            shutil.copytree(root / name, dest / name, symlinks=True)
    return dest


@dataclass(frozen=True)
class Ran:
    """One block run: its output (stdout and stderr together) and seconds taken."""

    block: Block
    output: str
    seconds: float


def run(block: Block, cwd: Path, env: Mapping[str, str], *, timeout: float = 600) -> Ran:
    """Run ``block`` with ``bash -euo pipefail`` in ``cwd``; :class:`DocCommandError` naming the
    block and showing its output when it fails or runs past ``timeout`` seconds."""
    began = time.monotonic()
    try:
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.text],
            cwd=cwd,
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise DocCommandError(
            f"{block.where}: ran past {timeout:.0f} s:\n{block.text}{_text(exc.stdout)}"
            f"{_text(exc.stderr)}"
        ) from exc
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise DocCommandError(
            f"{block.where}: exit {proc.returncode}; the commands, as the document gives them:\n"
            f"{block.text}--- their output ---\n{output[-4000:]}"
        )
    return Ran(block, output, time.monotonic() - began)


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data or ""


def tool_path(binaries: Sequence[Path], base: Mapping[str, str]) -> str:
    """``PATH`` with the folder of each of ``binaries`` first, in order (the pinned helm as
    ``helm``, the pinned kubectl), then ``base``'s."""
    folders = [str(binary.parent) for binary in binaries]
    return os.pathsep.join([*dict.fromkeys(folders), base.get("PATH", "")])
