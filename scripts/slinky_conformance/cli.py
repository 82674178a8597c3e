"""``nox -s conformance -- -f my-values.yaml ...`` and ``slinky-conformance``: the command line.

Exit status: 0 when every step run passed (phases left out with ``--phases`` are reported as
not run, not as failures), 1 when a step failed or was skipped (the report says which and why),
2 when the command line or an input file cannot be used (a missing, binary or oversized file, a
report path that cannot be written): those are refused, on one line, before anything runs.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from slinky_conformance.context import Context, run_steps, say
from slinky_conformance.report import PHASES, render_text, write_junit
from slinky_conformance.steps import live, pods, slurm, static
from slinky_conformance.target import TargetError, load_manifests, resolve
from slinky_harness.core.errors import HarnessError
from slinky_harness.k8s import fleet as k8s_fleet
from slinky_harness.k8s import realpods
from slinky_harness.k8s import schemas as kubeschema
from slinky_topology.errors import TopologyError
from slinky_topology.sources import fabric_file

if TYPE_CHECKING:
    from collections.abc import Sequence

    from slinky_conformance.context import Step
    from slinky_conformance.report import Report

STEPS: dict[str, tuple[Step, ...]] = {
    "static": static.STEPS,
    "live": live.STEPS,
    "slurm": slurm.STEPS,
    "pods": pods.STEPS,
}
REAL_PODS = ("auto", "always", "never")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="slinky-conformance",
        description="Prove a deployment's values on the suite's real parts before it ships: "
        "static checks, a kwok control plane with the real operator, a real slurmctld 26.05, "
        "and, where a real node can run (root on Linux), the cluster as real pods.",
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
        "is reported as not run: --phases static is the quick check, with no control plane "
        "and no Slurm",
    )  # fmt: skip
    parser.add_argument(
        "--real-pods", choices=REAL_PODS, default="auto",
        help="the pods phase (the cluster as real pods on a real node, one job per NodeSet): "
        "auto (default) runs it when a real node can start here and reports it as not run, "
        "with the reason, when not; always refuses to run without one; never leaves it out",
    )  # fmt: skip
    parser.add_argument(
        "--out", type=Path, help="work folder to use and keep (rendered files, logs)"
    )
    return parser


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class UsageError(HarnessError):
    """An input the run cannot use; the message is the one line printed."""


def _check_namespace(namespace: str) -> None:
    if len(namespace) > 63 or not _DNS_LABEL.match(namespace):
        raise UsageError(
            f"--namespace {namespace!r}: not a DNS-1123 label, so Kubernetes refuses it; use at "
            "most 63 lower-case letters, digits and '-', starting and ending with a letter or digit"
        )


def _nearest_existing(path: Path) -> Path:
    for folder in [path, *path.parents]:
        if os.path.lexists(folder):
            return folder
    return Path("/")


def _probe_folder(folder: Path, flag: str, given: Path) -> None:
    """A file can be made in ``folder``: made and removed, so /proc, a read-only mount or a
    missing permission is refused now, not after the run."""
    try:
        fd, name = tempfile.mkstemp(prefix=".slinky-conformance-probe-", dir=folder)
    except OSError as exc:
        raise UsageError(
            f"{flag} {given}: cannot write in {folder} ({exc.strerror or exc})"
        ) from None
    os.close(fd)
    Path(name).unlink()


def _check_report_path(given: Path) -> None:
    """``--junit``: a file (or a link to one, written through; a FIFO or device as it is) whose
    folder exists or can be made and takes a new file."""
    real = Path(os.path.realpath(given))
    if real.is_dir():
        raise UsageError(f"--junit {given}: is a folder; name the report file to write")
    if real.exists() and not real.is_file():
        return  # a FIFO or a device: written as it is
    anchor = _nearest_existing(real.parent)
    if not anchor.is_dir():
        raise UsageError(f"--junit {given}: {anchor} is not a folder; name a file in a folder")
    _probe_folder(anchor, "--junit", given)


def _check_out(given: Path) -> Path:
    """``--out``: a folder that exists or can be made, and takes files; returns it, made."""
    real = Path(os.path.realpath(given))
    if real.exists() and not real.is_dir():
        raise UsageError(
            f"--out {given}: is a file, not a folder; name a folder for the work files"
        )
    anchor = _nearest_existing(real)
    if not anchor.is_dir():
        raise UsageError(f"--out {given}: {anchor} is not a folder; name a folder in a folder")
    _probe_folder(anchor, "--out", given)
    try:
        real.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {given}: cannot make the folder ({exc.strerror or exc})") from None
    _probe_folder(real, "--out", given)
    return real


def _check_fleet_files(nodes: Path | None, fabric: Path | None) -> None:
    """``--nodes`` and ``--fabric`` read now (the live phase reads them again), so that a file
    that is no Nodes dump or fabric is refused before the run, not in its middle."""
    flag, path = ("--nodes", nodes) if nodes is not None else ("--fabric", fabric)
    try:
        if nodes is not None:
            k8s_fleet.load_nodes(nodes)
        if fabric is not None:
            fabric_file.load_fabric(str(fabric))
    except (k8s_fleet.FleetError, TopologyError) as exc:
        raise UsageError(f"{flag} {path}: {' '.join(str(exc).split())}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{flag} {path}: not UTF-8 text (offset {exc.start})") from None
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{flag} {path}: cannot be read ({type(exc).__name__})") from None


def _phases(parser: argparse.ArgumentParser, text: str) -> list[str]:
    phases = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in phases if p not in PHASES]
    if unknown or not phases:
        parser.error(f"--phases: unknown {', '.join(unknown)} (phases: {', '.join(PHASES)})")
    return phases


def pods_not_run(mode: str, phases: Sequence[str], unavailable: str | None) -> str | None:
    """Why the pods phase does not run (None: it runs): ``mode`` is ``--real-pods``,
    ``unavailable`` why no real node can start here (None: one can). ``always`` without a node,
    or with the phase left out, is a :class:`UsageError`."""
    if "pods" not in phases:
        if mode == "always":
            raise UsageError("--real-pods always: --phases leaves out the pods phase; add pods")
        return "left out with --phases"
    if mode == "never":
        return "left out with --real-pods never"
    if unavailable is None:
        return None
    if mode == "always":
        raise UsageError(f"--real-pods always: no real node here: {unavailable}")
    return f"no real node here: {unavailable}"


def _steps(phases: Sequence[str], pods_why: str | None) -> list[Step]:
    """The steps of ``phases`` in run order, the pods phase's only when it runs."""
    run = [p for p in PHASES if p in phases and (p != "pods" or pods_why is None)]
    return [step for phase in run for step in STEPS[phase]]


def _assemble(report: Report, ctx: Context, phases: Sequence[str], pods_why: str | None) -> None:
    """What the run left out and why, where it ran on real pods, its caveats and epilogue."""
    report.not_run = {p: "left out with --phases" for p in PHASES if p not in phases}
    if pods_why is not None:
        report.not_run["pods"] = pods_why
    if "real_pods_where" in ctx.extra:
        report.real_pods["pods"] = ctx.extra["real_pods_where"]
    report.notes.extend(ctx.caveats)
    report.epilogue.extend(ctx.epilogue)


def _usage(message: str) -> int:
    print(f"slinky-conformance: error: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    phases = _phases(parser, args.phases)
    if args.kube_version not in kubeschema.known_versions():
        parser.error(
            f"--kube-version {args.kube_version}: no schemas for it; use one of "
            f"{', '.join(kubeschema.known_versions())}"
        )
    for path in [*args.values, *args.existing, args.fabric, args.nodes]:
        if path is not None and not path.is_file():
            parser.error(f"{path}: no such file")
    try:
        _check_namespace(args.namespace)
        if args.junit is not None:
            _check_report_path(args.junit)
        target = resolve(
            args.values, chart=args.chart, umbrella=args.umbrella,
            release=args.release, namespace=args.namespace,
        )  # fmt: skip
        existing = [doc for path in args.existing for doc in load_manifests(path)]
        if args.nodes is not None or args.fabric is not None:
            _check_fleet_files(args.nodes, args.fabric)
        pods_why = pods_not_run(
            args.real_pods, phases, realpods.unavailable() if args.real_pods != "never" else None
        )
        work = (
            _check_out(args.out)
            if args.out is not None
            else Path(tempfile.mkdtemp(prefix="slinky-conformance-"))
        )
    except (TargetError, UsageError) as exc:
        return _usage(str(exc))
    ctx = Context(
        target=target, work=work, kube_version=args.kube_version,
        fabric=args.fabric, nodes=args.nodes, keep=args.keep, existing=existing,
    )  # fmt: skip
    steps = _steps(phases, pods_why)
    say(f"{target.describe()}; work folder {work}")
    try:
        # With --keep the control plane outlives the stack (Cluster.leave_running); the
        # processes tied to this one (operator, webhook, slurmctld) stop with it.
        with ctx.stack:
            report = run_steps(ctx, steps, target.describe())
    finally:
        if args.out is None and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    _assemble(report, ctx, phases, pods_why)
    sys.stdout.write(render_text(report))
    if args.junit is not None:
        try:
            Path(os.path.realpath(args.junit)).parent.mkdir(parents=True, exist_ok=True)
            write_junit(report, args.junit)
        except (OSError, TopologyError) as exc:
            return _usage(f"--junit {args.junit}: {exc}")
        say(f"JUnit XML written to {args.junit}")
    return 0 if report.passed else 1


def entry() -> int:
    """The ``slinky-conformance`` console script: :func:`main` with SIGTERM and Ctrl-C cleanup."""
    from slinky_harness.core.processes import run_main  # noqa: PLC0415

    return run_main(main)
