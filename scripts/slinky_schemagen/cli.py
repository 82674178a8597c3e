"""``python -m slinky_schemagen [--check] [CHART ...]``: write or check generated values schemas."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from slinky_schemagen.chart import EXTRA_FILE, SCHEMA_FILE, check_chart, is_generated, write_chart
from slinky_schemagen.errors import SchemaGenError, StaleSchemaError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["build_parser", "charts_root", "main"]

PROG = "python -m slinky_schemagen"


def charts_root() -> Path:
    """``charts/`` of the checkout this package lives in (else of the working directory)."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "charts").is_dir() and (parent / "pyproject.toml").is_file():
            return parent / "charts"
    return Path("charts")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Generate each opted-in chart's values.schema.json from its annotated values.yaml and "
            f"its hand-written {EXTRA_FILE}."
        ),
    )
    parser.add_argument(
        "charts",
        nargs="*",
        metavar="CHART",
        help="chart folder or chart name under charts/ (default: every chart of this checkout)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 with a diff when a schema is stale",
    )
    return parser


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def chart_dir(name: str) -> Path:
    """A chart folder, or the name of one under charts/; raises naming what was given."""
    path = Path(name)
    if not (path / "Chart.yaml").is_file():
        path = charts_root() / name
    if not (path / "Chart.yaml").is_file():
        raise SchemaGenError(f"{name}: no chart there (a chart folder or a name under charts/)")
    return path


def _select(names: Sequence[str]) -> tuple[list[Path], list[Path]]:
    """(opted-in charts, hand-written charts) to handle; a named chart must have opted in."""
    if not names:
        every = sorted(Path(_display(p.parent)) for p in charts_root().glob("*/Chart.yaml"))
        return [c for c in every if is_generated(c)], [c for c in every if not is_generated(c)]
    chosen = []
    for name in names:
        path = chart_dir(name)
        if not is_generated(path):
            raise SchemaGenError(
                f"{_display(path)} has a hand-written {SCHEMA_FILE}: create {EXTRA_FILE} there "
                "(at least its `title`) to generate it"
            )
        chosen.append(Path(_display(path)))
    return chosen, []


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns 0 (done / current), 1 (stale or bad input), 2 (usage)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    try:
        generated, hand_written = _select(args.charts)
        if hand_written:
            names = ", ".join(_display(chart) for chart in hand_written)
            sys.stderr.write(
                f"schemagen: hand-written {SCHEMA_FILE} (no {EXTRA_FILE}), left alone: {names}\n"
            )
        stale = []
        for chart in generated:
            if args.check:
                try:
                    check_chart(chart, f"{PROG} {_display(chart)}")
                except StaleSchemaError as exc:
                    stale.append(exc)
            elif write_chart(chart):
                sys.stderr.write(f"schemagen: wrote {_display(chart / SCHEMA_FILE)}\n")
    except SchemaGenError as exc:
        sys.stderr.write(f"schemagen: error: {exc}\n")
        return 1
    for found in stale:
        sys.stderr.write(f"{found.diff}schemagen: {found}\n")
    return 1 if stale else 0
