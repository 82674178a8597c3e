"""``nox -s conformance -- -f my-values.yaml ...`` and ``slinky-conformance``: the command line.

Exit status: 0 when every step passed, 1 when a step failed or was skipped (the report says
which and why), 2 on a usage error (a missing file, --chart and --umbrella together).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from slinky_harness.apps.conformance import live, slurm, static
from slinky_harness.apps.conformance.context import Context, run_steps, say
from slinky_harness.apps.conformance.report import PHASES, render_text, write_junit
from slinky_harness.apps.conformance.target import TargetError, load_manifests, resolve
from slinky_harness.k8s import schemas as kubeschema

if TYPE_CHECKING:
    from collections.abc import Sequence

    from slinky_harness.apps.conformance.context import Step

STEPS: dict[str, tuple[Step, ...]] = {
    "static": static.STEPS,
    "live": live.STEPS,
    "slurm": slurm.STEPS,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="slinky-conformance",
        description="Prove a deployment's values on the suite's real parts before it ships: "
        "static checks, a kwok control plane with the real operator, and a real slurmctld 26.05.",
    )
    parser.add_argument(
        "-f", "--values", dest="values", action="append", type=Path, default=[], metavar="FILE",
        help="values file, as helm install -f (repeat: later files win)",
    )  # fmt: skip
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--chart", help="the values are for this suite chart (e.g. slurm-cluster)")
    which.add_argument(
        "--umbrella", type=Path, metavar="PATH",
        help="the values are for this umbrella chart (default: examples/umbrella, for values "
        "shaped like a values/ profile)",
    )  # fmt: skip
    fleet = parser.add_mutually_exclusive_group()
    fleet.add_argument(
        "--fabric", type=Path, metavar="FILE",
        help="the cluster's fabric (slinky-topology fabric file): the fake fleet is made from it",
    )  # fmt: skip
    fleet.add_argument(
        "--nodes", type=Path, metavar="FILE",
        help="the cluster's Nodes (kubectl get nodes -o json): the fake fleet copies them",
    )  # fmt: skip
    parser.add_argument(
        "--existing", action="append", type=Path, default=[], metavar="FILE",
        help="objects your cluster already has that the values refer to (a Secret with the "
        "database password, the database's Service): YAML manifests, repeat for more files; "
        "they count as present in every phase and are applied before the install",
    )  # fmt: skip
    parser.add_argument(
        "--kube-version", default=kubeschema.newest_version(),
        help=f"Kubernetes version to check against (default: {kubeschema.newest_version()}; "
        f"known: {', '.join(kubeschema.known_versions())})",
    )  # fmt: skip
    parser.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML here")
    parser.add_argument(
        "--keep", action="store_true",
        help="leave the control plane running; the report says how to reach and stop it",
    )  # fmt: skip
    parser.add_argument("--release", default="slurm", help="release name (default: slurm)")
    parser.add_argument("--namespace", default="slurm", help="namespace (default: slurm)")
    parser.add_argument(
        "--phases", default=",".join(PHASES),
        help=f"comma-separated phases to run (default: {','.join(PHASES)}); a phase left out "
        "is reported as skipped, so the run does not pass",
    )  # fmt: skip
    parser.add_argument(
        "--out", type=Path, help="work folder to use and keep (rendered files, logs)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = [p for p in phases if p not in PHASES]
    if unknown:
        parser.error(f"--phases: unknown {', '.join(unknown)} (phases: {', '.join(PHASES)})")
    if args.kube_version not in kubeschema.known_versions():
        parser.error(
            f"--kube-version {args.kube_version}: no schemas for it; use one of "
            f"{', '.join(kubeschema.known_versions())}"
        )
    for path in [*args.values, *args.existing, args.fabric, args.nodes]:
        if path is not None and not path.is_file():
            parser.error(f"{path}: no such file")
    try:
        target = resolve(
            args.values, chart=args.chart, umbrella=args.umbrella,
            release=args.release, namespace=args.namespace,
        )  # fmt: skip
        existing = [doc for path in args.existing for doc in load_manifests(path)]
    except TargetError as exc:
        parser.error(str(exc))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        work = args.out.resolve()
    else:
        work = Path(tempfile.mkdtemp(prefix="slinky-conformance-"))
    ctx = Context(
        target=target, work=work, kube_version=args.kube_version,
        fabric=args.fabric, nodes=args.nodes, keep=args.keep, existing=existing,
    )  # fmt: skip
    steps = [step for phase in PHASES for step in STEPS[phase]]
    say(f"{target.describe()}; work folder {work}")
    try:
        # With --keep the control plane outlives the stack (Cluster.leave_running); the
        # processes tied to this one (operator, webhook, slurmctld) stop with it.
        with ctx.stack:
            report = run_steps(ctx, _only(steps, phases), target.describe())
    finally:
        if args.out is None and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    report.epilogue.extend(ctx.epilogue)
    sys.stdout.write(render_text(report))
    if args.junit is not None:
        write_junit(report, args.junit)
        say(f"JUnit XML written to {args.junit}")
    return 0 if report.passed else 1


def _only(steps: list[Step], phases: list[str]) -> list[Step]:
    """Steps of phases left out become steps that skip, saying so."""
    from slinky_harness.apps.conformance.context import Skipped, Step  # noqa: PLC0415

    def left_out(phase: str) -> Step:
        def run(_: Context) -> object:
            raise Skipped(f"the {phase} phase was left out (--phases)")

        return Step(phase, "(phase)", run)  # type: ignore[arg-type]

    out: list[Step] = []
    for phase in PHASES:
        mine = [s for s in steps if s.phase == phase]
        out.extend(mine if phase in phases else [left_out(phase)])
    return out


def entry() -> int:
    """The ``slinky-conformance`` console script: :func:`main` with SIGTERM and Ctrl-C cleanup."""
    from slinky_harness.core.processes import run_main  # noqa: PLC0415

    return run_main(main)
