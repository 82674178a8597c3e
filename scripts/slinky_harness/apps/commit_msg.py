"""``python -m slinky_harness.apps.commit_msg MSGFILE``: the commit rule of CONTRIBUTING.md.

The ``commit-msg`` hook of ``.pre-commit-config.yaml`` runs it on the message git is about to
record. The subject (the first line) is at most :data:`MAX_SUBJECT` characters and not empty;
a body, when there is one, is separated from the subject by a blank line. Lines git strips
(``#`` comments, everything below the ``git commit -v`` scissors line) are not part of the message.
Exit status 1 names each broken rule and how to fix it; 2 is a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

MAX_SUBJECT = 72
"""The longest subject, in characters."""

SCISSORS = "# ------------------------ >8 ------------------------"
"""The line ``git commit -v`` writes above the diff; git drops it and everything below."""


def message_lines(text: str) -> list[str]:
    """The lines of ``text`` that git records: no ``#`` comment lines, nothing from the scissors
    line on, no trailing blank lines."""
    lines = []
    for line in text.splitlines():
        if line.rstrip() == SCISSORS:
            break
        if not line.startswith("#"):
            lines.append(line.rstrip())
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def problems(text: str) -> list[str]:
    """What breaks the commit rule in the message ``text`` (empty: nothing)."""
    lines = message_lines(text)
    if not lines:
        return ["the message is empty: write a subject of at most 72 characters"]
    out = []
    subject = lines[0]
    if len(subject) > MAX_SUBJECT:
        out.append(
            f"the subject is {len(subject)} characters, more than {MAX_SUBJECT}: shorten it and "
            "move the detail to the body"
        )
    if len(lines) > 1 and lines[1]:
        out.append("line 2 is not blank: leave one blank line between the subject and the body")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.apps.commit_msg", description=__doc__.splitlines()[0]
    )
    parser.add_argument("message", type=Path, help="the commit message file git passes")
    args = parser.parse_args(argv)
    try:
        text = args.message.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        print(f"error: {args.message}: {exc.strerror}", file=sys.stderr)
        return 2
    found = problems(text)
    for problem in found:
        print(f"commit message: {problem} (CONTRIBUTING.md, Commits)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
