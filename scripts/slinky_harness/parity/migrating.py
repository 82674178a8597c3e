"""MIGRATING.md's section "What differs and why, field by field", generated from
:data:`~slinky_harness.parity.differences.DIFFERENCES_FILE`.

The section sits between :data:`BEGIN` and :data:`END`; everything else in MIGRATING.md is
written by hand. ``python -m slinky_harness.parity.migrating`` rewrites it (``nox -s docs`` runs
that); ``tests/lint/test_migrating_generated.py`` fails when the committed text differs from what
:func:`section` makes of the entries.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from slinky_harness.core.errors import HarnessError
from slinky_harness.core.files import write_atomic
from slinky_harness.core.paths import REPO_ROOT
from slinky_harness.parity.differences import load_intentional
from slinky_harness.parity.source import CHARTS

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from slinky_harness.parity.differences import Intentional

MIGRATING = REPO_ROOT / "MIGRATING.md"
BEGIN = (
    "<!-- parity-differences: generated from scripts/slinky_harness/parity/differences.yaml "
    "by `nox -s docs`; edit the reasons there -->"
)
END = "<!-- parity-differences: end -->"


class MigratingError(HarnessError):
    """MIGRATING.md lacks the markers the generated section goes between."""


def _cell(text: str) -> str:
    """``text`` safe in a Markdown table cell: a ``|`` would end the cell, and outside code spans
    a ``<`` would open an HTML tag (``<fullname>`` would vanish from the page)."""
    parts = text.replace("|", "\\|").split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def _code(text: str) -> str:
    """``text`` as inline code, or "any" for the pattern ``*`` alone."""
    return "any" if text == "*" else f"`{_cell(text)}`"


def section(entries: Sequence[Intentional]) -> str:
    """The generated text between the markers: per upstream chart (in :data:`CHARTS` order), a
    table of its intentional differences, each with its reason, or a line saying it has none."""
    lines: list[str] = []
    for spec in CHARTS.values():
        mine = [entry for entry in entries if spec.name in entry.charts]
        lines += ["", f"### `{spec.name}` -> [`charts/{spec.ours}`](charts/{spec.ours})", ""]
        if not mine:
            lines.append("No field differs on purpose.")
            continue
        lines += ["| kind | name | field | why |", "| --- | --- | --- | --- |"]
        for entry in mine:
            field = _code(entry.path) if entry.path else "the object (only one side renders it)"
            lines.append(
                f"| {_code(entry.kind)} | {_code(entry.name)} | {field} | {_cell(entry.reason)} |"
            )
    return "\n".join(lines) + "\n\n"


def rewrite(text: str, generated: str, where: str = "MIGRATING.md") -> str:
    """``text`` with what lies between :data:`BEGIN` and :data:`END` replaced by ``generated``."""
    head, begin, rest = text.partition(BEGIN + "\n")
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise MigratingError(
            f"{where}: the generated section needs the lines {BEGIN!r} and {END!r}, in that "
            "order; put them where the field-by-field differences go"
        )
    return head + begin + generated + end + tail


def main(argv: Sequence[str] | None = None, path: Path = MIGRATING) -> int:
    """Rewrite the generated section of ``path`` (MIGRATING.md) from the current entries."""
    if argv:
        print("usage: python -m slinky_harness.parity.migrating (takes no arguments)")
        return 2
    try:
        text = path.read_text(encoding="utf-8")
        fresh = rewrite(text, section(load_intentional()), str(path))
    except (OSError, HarnessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if fresh != text:
        write_atomic(path, fresh)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
