"""Parity: how far our charts are from drop-in successors of upstream Slinky's v1.2.1 charts.

For each upstream chart (``slurm``, ``slurm-operator``, ``slurm-bridge``) and ours that succeeds it,
renders upstream's defaults, upstream's values.yaml as a values file, and every test overlay of
upstream's helm-unittest suites with both charts (:mod:`slinky_harness.parity` says how)
and prints per chart: the cases, how many
upstream renders, how many ours accepts, and of those how many render equal or different Slinky
resources, less the documented intentional differences (``--intentional-file``, default
``scripts/slinky_harness/parity/differences.yaml``; each one used is listed with its count of
cases). It is a measurement: it exits 0 unless it could not run, or, with
``--min-accepted-file``, when a count fell below that file's floor.

Usage::

    python -m slinky_harness.apps.parity [--chart slurm] [--verbose] [--json out.json]
    python -m slinky_harness.apps.parity \\
        --min-accepted-file scripts/slinky_harness/parity/floor.yaml

``SLINKY_UPSTREAM_CHARTS`` names where upstream's charts come from (default
``oci://ghcr.io/slinkyproject/charts``; a folder holding ``<name>-1.2.1.tgz`` works too).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from slinky_harness import parity
from slinky_harness.core.errors import HarnessError
from slinky_harness.core.files import write_atomic
from slinky_harness.core.progress import elapsed, heartbeat

if TYPE_CHECKING:
    from collections.abc import Sequence

COLUMNS = ("cases", "upstream_renders", "accepted", "equal", "different")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.apps.parity",
        description="Render upstream Slinky's charts and ours side by side for upstream's cases.",
    )
    parser.add_argument(
        "--chart",
        action="append",
        choices=list(parity.CHARTS),
        help="an upstream chart to measure (repeatable; default: all three)",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="print every case ours refuses or renders otherwise"
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every outcome as JSON")
    parser.add_argument(
        "--min-accepted-file",
        type=Path,
        metavar="FILE",
        help="floor file (scripts/slinky_harness/parity/floor.yaml): exit 1 below it",
    )
    parser.add_argument(
        "--intentional-file",
        type=Path,
        metavar="FILE",
        default=parity.DIFFERENCES_FILE,
        help="intentional differences, per upstream chart (default: %(default)s)",
    )
    parser.add_argument("--workers", type=int, default=None, help="renders at once (default: CPUs)")
    return parser


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _measure(
    chart: str, workers: int | None, intentional: Sequence[parity.Intentional]
) -> parity.ChartReport:
    started = time.monotonic()
    _log(f"{chart}: reading upstream's suites and chart ({parity.reference()})")
    parity.upstream_chart(chart)
    cases = len(parity.all_cases(chart))
    with heartbeat(
        f"{chart}: rendering {cases} cases with upstream's chart and ours", "under 1 min"
    ):
        report = parity.measure(chart, workers=workers, intentional=intentional)
    _log(f"{chart}: measured in {elapsed(time.monotonic() - started)}")
    return report


def print_report(reports: Sequence[parity.ChartReport], verbose: bool, out: TextIO) -> None:
    """The table, the commonest refusals per chart and, when ``verbose``, every failing case."""
    print(f"{'upstream -> ours':34} " + " ".join(f"{c:>16}" for c in COLUMNS), file=out)
    for report in reports:
        counts = report.counts()
        name = f"{report.chart} -> {report.ours}"
        print(f"{name:34} " + " ".join(f"{counts[c]:>16}" for c in COLUMNS), file=out)
    for report in reports:
        uses = report.intentional_uses()
        if uses:
            print(
                f"\n{report.chart}: {report.intentionally_equal} of {report.equal} equal cases "
                "are equal less these intentional differences (cases covered)",
                file=out,
            )
            for key, count in uses:
                print(f"  {count:4}  {key}", file=out)
    for report in reports:
        top = report.top_reasons()
        if top:
            print(f"\n{report.chart}: commonest reasons ours refuses a case", file=out)
            for reason, count in top:
                print(f"  {count:4}  {reason}", file=out)
    if verbose:
        for report in reports:
            print_failures(report, out)


def print_failures(report: parity.ChartReport, out: TextIO) -> None:
    """Every case of ``report`` that ours refuses or renders otherwise than upstream."""
    for outcome in report.outcomes:
        if outcome.status == "not accepted":
            print(f"\n{report.chart} {outcome.case}: NOT ACCEPTED", file=out)
            for reason in outcome.reasons:
                print(f"    {reason}", file=out)
        elif outcome.status == "different":
            print(f"\n{report.chart} {outcome.case}: DIFFERENT", file=out)
            for difference in outcome.differences:
                print(f"    {difference}", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        floor = parity.load_floor(args.min_accepted_file) if args.min_accepted_file else {}
        intentional = parity.load_intentional(args.intentional_file)
        reports = [
            _measure(chart, args.workers, intentional) for chart in args.chart or parity.CHARTS
        ]
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print_report(reports, args.verbose, sys.stdout)
    if args.json is not None:
        document = {"reference": parity.reference(), "charts": [r.as_json() for r in reports]}
        write_atomic(args.json, json.dumps(document, indent=1, sort_keys=True) + "\n")
    failures = [line for report in reports for line in parity.below_floor(report, floor)]
    for line in failures:
        print(f"error: below the floor of {args.min_accepted_file}: {line}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
