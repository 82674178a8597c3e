"""The suite's main job on an embedded default, README's first command (``nox -s demo``): the
steps of :mod:`slinky_harness.apps.demo` in order, the report, and the command line."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from slinky_harness.apps.demo import (
    GPU_PRODUCT,
    NODESET,
    OPERATOR,
    OPERATOR_VALUES,
    PRESET,
    SLURM,
    SPEC_ANNOTATION,
    DemoError,
)
from slinky_harness.apps.demo.install import (
    Installer,
    annotate,
    live_topology,
    slurm_cluster_values,
)
from slinky_harness.apps.demo.operator import (
    OPERATOR_SKIPPED,
    operator_line,
    start_operator,
    wait_for_operator,
)
from slinky_harness.apps.demo.slurm import (
    harness_slurm_files,
    operator_slurm_files,
    run_slurm,
    slurm_inputs,
)
from slinky_harness.apps.demo.topology import (
    fleet_from_fabric,
    generate_topology,
    render_suite,
    same_topology,
)
from slinky_harness.build import controlplane as cp_build
from slinky_harness.build import slinky, toolchain
from slinky_harness.core.errors import HarnessError
from slinky_harness.helm.client import Helm
from slinky_harness.k8s import cluster as controlplane
from slinky_harness.k8s import schemas as kubeschema
from slinky_topology.errors import TopologyError
from slinky_topology.parse import parse_topology_yaml
from slinky_topology.sources import fabric_file

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from slinky_topology.model import Fabric


@contextlib.contextmanager
def _workdir(args: argparse.Namespace) -> Iterator[Path]:
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        yield args.out.resolve()
        return
    path = Path(tempfile.mkdtemp(prefix="slinky-demo-"))
    try:
        yield path
    finally:
        if not args.keep:
            shutil.rmtree(path, ignore_errors=True)


def run_cluster(
    args: argparse.Namespace, fabric: Fabric, static_topology: str, work: Path
) -> list[str]:
    """Steps 2-5; return report lines. With ``--keep`` the cluster stays up."""
    lines: list[str] = []
    fleet = fleet_from_fabric(fabric)
    helm_binary = toolchain.ensure("helm")
    operator_bin: Path | None = None
    if not args.no_operator:
        try:
            operator_bin = slinky.ensure_operator()
        except slinky.OperatorUnavailable as exc:
            raise DemoError(f"operator: {exc}") from exc
    stack = contextlib.ExitStack()
    with stack:
        cluster = stack.enter_context(
            controlplane.Cluster.start(work / "cluster", fleet=fleet, name="slinky-demo")
        )
        lines.append(
            f"kwok cluster (Kubernetes {cp_build.K8S_VERSION}): {len(fleet.node_names())} "
            f"fake {GPU_PRODUCT} nodes from the fabric, Ready in {cluster.start_seconds:.1f}s"
        )
        installer = Installer(Helm(helm_binary, cluster, work / "helm"), cluster)
        operator_values = work / "slurm-operator-values.yaml"
        operator_values.write_text(yaml.safe_dump(OPERATOR_VALUES, sort_keys=False))
        installer.install(*OPERATOR, "slurm-operator", [operator_values])
        # The manager stops before --keep hands the cluster over (like slurmctld, it is tied to
        # this process); on errors it stops with the cluster.
        operator_stack = stack.enter_context(contextlib.ExitStack())
        run = (
            start_operator(installer, operator_stack, operator_bin, work / "operator")
            if operator_bin is not None
            else None
        )

        live = live_topology(cluster, work)
        problems = same_topology(live["topology.yaml"], static_topology)
        if problems:
            raise DemoError("the live Node labels and the fabric disagree: " + "; ".join(problems))
        annotate(cluster, live["annotations"])
        values = slurm_cluster_values(live["values"])
        values["nodesets"][NODESET]["replicas"] = sum(
            1 for n in fleet.nodes() if n["metadata"]["labels"].get("nvidia.com/gpu.product")
        )
        cluster_values = work / "slurm-cluster-values.yaml"
        cluster_values.write_text(yaml.safe_dump(values, sort_keys=False))
        installer.install(*SLURM, "slurm-cluster", [cluster_values])

        version = installer.helm("version", "--short").strip()
        lines.append(f"Installed with {version} --wait (objects counted on the API server):")
        for release, namespace in (OPERATOR, SLURM):
            kinds = installer.live_kinds(release, namespace)
            listing = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
            lines.append(
                f"  {release} (ns {namespace}, {installer.timings[release]:.1f}s): {listing}"
            )
        names = [t.name for t in parse_topology_yaml(live["topology.yaml"]).topologies]
        lines.append(
            f"Topology from the live Node labels (slinky-topology --preset {PRESET}, "
            f"{live['nodes']} nodes): {', '.join(names)}; same units and nodes as the fabric; "
            f"{len(live['annotations'])} nodes annotated {SPEC_ANNOTATION}"
        )
        # slurm-cluster names its objects as upstream's `slurm` chart: the release name when it
        # contains "slurm", else "<release>-slurm".
        fullname = SLURM[0] if "slurm" in SLURM[0] else f"{SLURM[0]}-slurm"
        inputs = slurm_inputs(cluster, fullname, SLURM[1])
        if run is not None:
            names = [name for name, _, _ in inputs["nodesets"]]
            wait_for_operator(cluster, run, fullname, names, SLURM[1])
            files, origin = operator_slurm_files(cluster, inputs, run, SLURM[1])
        else:
            lines.append(OPERATOR_SKIPPED)
            files, origin = harness_slurm_files(inputs)
        at = len(lines)
        if not args.no_slurm:
            lines += run_slurm(inputs, files, origin, work / "slurmctld")
        if run is not None:
            lines.insert(at, operator_line(run, not args.no_slurm))
        operator_stack.close()
        if args.keep:
            # Cluster.start's teardown also runs when its generator is finalised (garbage
            # collection, interpreter exit), so popping the stack alone would not keep it.
            stop = cluster.leave_running()
            stack.pop_all()
            tied = [
                (name, work / name)
                for name, ran in (("slurmctld", not args.no_slurm), ("operator", run is not None))
                if ran
            ]
            lines += [
                "Kept running (--keep):",
                f"  export KUBECONFIG={cluster.kubeconfig}",
                f"  stop: {stop} && rm -rf {shlex.quote(str(work))}",
                f"  ({' and '.join(n for n, _ in tied)} tied to this process and stopped; "
                f"files stay in {' and '.join(str(p) for _, p in tied)})",
            ]
    return lines


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nox -s demo --", description=__doc__.splitlines()[0])
    parser.add_argument("--fabric", default="default", help="fabric file, or 'default' (built in)")
    parser.add_argument("--out", type=Path, help="work folder to use and keep (generated files)")
    parser.add_argument(
        "--keep", action="store_true", help="leave the cluster running and print its kubeconfig"
    )
    parser.add_argument("--no-cluster", action="store_true", help="only generate and render")
    parser.add_argument("--no-slurm", action="store_true", help="skip the real slurmctld step")
    parser.add_argument(
        "--no-operator",
        action="store_true",
        help="do not run the Slinky operator (the harness writes slurm.conf instead)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.keep and args.no_cluster:
        parser.error("--keep needs the cluster step (drop --no-cluster)")
    started = time.monotonic()
    with _workdir(args) as work:
        try:
            fabric = fabric_file.load_fabric(args.fabric)  # reports a bad file once, here
            generated = generate_topology(args.fabric, work)
            rows = render_suite(generated["values"])
            cluster_lines = (
                []
                if args.no_cluster
                else run_cluster(args, fabric, generated["topology.yaml"], work)
            )
        except (HarnessError, OSError, RuntimeError, ValueError, TopologyError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    annotations: dict[str, str] = generated["annotations"]
    print("Slinky suite demo")
    kept = work if args.out or args.keep else "(temporary)"
    print(f"  fabric: {args.fabric}; {len(annotations)} nodes; files in {kept}")
    print(f"Charts rendered (Helm 4, Kubernetes {kubeschema.newest_version()}):")
    failed = False
    for name, count, problems in rows:
        status = "valid" if not problems else f"{len(problems)} problems"
        print(f"  {name}: {count} objects, {status}")
        for problem in problems[:5]:
            print(f"    - {problem}")
        failed |= bool(problems)
    for line in cluster_lines:
        print(line)
    print(f"done in {time.monotonic() - started:.1f}s")
    return 1 if failed else 0
