"""The suite's main job on an embedded default: README's first command (``nox -s demo``).

1. ``slinky-topology`` turns a fabric (default: two GB200 NVL72-style racks under two leaf
   switches and a spine, built into the package) into ``topology.yaml``, the per-node
   ``topology.slinky.slurm.net/spec`` annotations and slurm-cluster chart values.
2. Every chart of the suite is rendered with Helm 4 (slurm-cluster with those topology values
   on top of its GPU scenario) and validated strictly: Kubernetes schemas, our CRDs, and the
   render invariants.
3. A real slurmctld 26.05 (Debian sid chroot, built once and cached) loads the generated
   topology; the report shows what Slurm made of it and where an 18-node job would land.

The cluster tier (a real control plane with kwok nodes and the real Slinky operator) will
replace step 3's hand-made slurm.conf with the operator's own once it exists.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness import charts, helm, kubeschema, manifests
from slinky_topology import cli as topology_cli

if TYPE_CHECKING:
    from collections.abc import Sequence

REGISTRY = "registry.demo.invalid"
GPU_SCENARIO = "gpu-topology-values.yaml"


class DemoError(RuntimeError):
    """A step of the demo failed; the message says which and why."""


def generate_topology(fabric: str, out: Path) -> dict[str, Any]:
    """Run ``slinky-topology`` for ``fabric``; return the generated texts and annotations."""
    outputs = {
        "topology.yaml": ["generate", "--fabric", fabric, "--shape", "static"],
        "topology-values.yaml": [
            "generate",
            "--fabric",
            fabric,
            "--format",
            "values",
            "--shape",
            "dynamic",
        ],
        "annotations.json": ["annotations", "--fabric", fabric],
    }
    for name, args in outputs.items():
        if topology_cli.main([*args, "-o", str(out / name)]) != 0:
            raise DemoError(f"slinky-topology {' '.join(args)} failed (see the error above)")
    return {
        "topology.yaml": (out / "topology.yaml").read_text(),
        "values": yaml.safe_load((out / "topology-values.yaml").read_text()),
        "annotations": json.loads((out / "annotations.json").read_text()),
    }


def render_suite(topology_values: dict[str, Any]) -> list[tuple[str, int, list[str]]]:
    """Render every chart (newest Kubernetes); return (chart, objects, problems) rows."""
    rows = []
    schemas = kubeschema.schema_set(kubeschema.newest_version())
    for chart in charts.discover_charts():
        values: dict[str, Any] = {}
        if chart.name == "slurm-cluster":
            scenario = chart.path / "ci" / GPU_SCENARIO
            values = charts.load_yaml(scenario) or {} if scenario.is_file() else {}
            values.update(topology_values)
        values.setdefault("global", {})["imageRegistry"] = REGISTRY
        result = helm.template(chart.path, values, kube_version=kubeschema.newest_version())
        if not result.ok:
            rows.append((chart.name, 0, [result.stderr.strip()]))
            continue
        problems = manifests.all_invariants(
            result.docs, namespace=helm.DEFAULT_NAMESPACE, values=values, registry=REGISTRY
        )
        problems += schemas.validate_all(result.docs)
        rows.append((chart.name, len(result.docs), problems))
    return rows


def load_in_slurm(topology_yaml: str, workdir: Path) -> list[str]:
    """Load the topology into a real slurmctld 26.05; return report lines."""
    from slinky_harness import slurm, slurm_topo  # noqa: PLC0415 - heavy, optional step

    topologies = slurm_topo.parse_topology_yaml(topology_yaml)
    nodes = sorted({n for t in topologies if t.model is not None for n in t.model.all_nodes()})
    blocks = [t for t in topologies if isinstance(t.model, slurm_topo.BlockTopology)]
    partition_topology = f" Topology={blocks[0].name}" if blocks else ""
    slurm_conf = (
        f"MaxNodeCount={len(nodes) + 16}\n"
        f"NodeName={','.join(nodes)} CPUs=4 RealMemory=4000 State=CLOUD\n"
        f"PartitionName=gpu Nodes=ALL Default=YES{partition_topology}\n"
    )
    root = slurm.ensure_chroot()
    lines = [f"slurmctld {slurm.chroot_info(root).slurm_version} (Debian sid chroot {root})"]
    files = {"slurm.conf": slurm_conf, "topology.yaml": topology_yaml}
    with slurm.slurmctld(files, root=root, workdir=workdir / "slurmctld") as ctld:
        for topology in topologies:
            records = slurm.parse_records(ctld.show_topology(topology.name))
            units = [u for r in records if (u := r.get("SwitchName") or r.get("BlockName"))]
            lines.append(
                f"  topology {topology.name}: {len(units)} units "
                f"({', '.join(units[:6])}{' ...' if len(units) > 6 else ''})"
            )
        job = ctld.run("sbatch", "--test-only", "-N", "18", "--wrap", "true", check=False)
        lines.append(
            f"  sbatch --test-only -N 18: {(job.stdout + job.stderr).strip().splitlines()[-1:]}"
        )
    return lines


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nox -s demo --", description=__doc__.splitlines()[0])
    parser.add_argument("--fabric", default="default", help="fabric file, or 'default' (built in)")
    parser.add_argument("--out", type=Path, help="keep generated files in this folder")
    parser.add_argument("--no-slurm", action="store_true", help="skip the real slurmctld step")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="slinky-demo-") as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        try:
            generated = generate_topology(args.fabric, out)
            rows = render_suite(generated["values"])
            slurm_lines = [] if args.no_slurm else load_in_slurm(generated["topology.yaml"], out)
        except (DemoError, OSError, RuntimeError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    annotations: dict[str, str] = generated["annotations"]
    print("Slinky suite demo")
    print(
        f"  fabric: {args.fabric}; {len(annotations)} nodes; files in {out if args.out else '(temporary)'}"
    )
    sample = sorted(annotations.items())[:3]
    for node, spec in sample:
        print(f"  annotation {node}: topology.slinky.slurm.net/spec={spec}")
    print(f"Charts (Helm 4, Kubernetes {kubeschema.newest_version()}):")
    failed = False
    for name, count, problems in rows:
        status = "valid" if not problems else f"{len(problems)} problems"
        print(f"  {name}: {count} objects, {status}")
        for problem in problems[:5]:
            print(f"    - {problem}")
        failed |= bool(problems)
    for line in slurm_lines:
        print(line)
    print(f"done in {time.monotonic() - started:.1f}s")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
