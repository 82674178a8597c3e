"""Demo steps 1 and 2: the topology generated from the fabric, every chart rendered and
validated, and a kwok fleet that is the fabric."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.apps.demo import (
    GPU_PRODUCT,
    GPU_SCENARIO,
    NODE_CPUS,
    NODE_MEMORY,
    NODESET,
    REGISTRY,
    DemoError,
)
from slinky_harness.helm import charts
from slinky_harness.helm import client as helm
from slinky_harness.k8s import fleet, manifests
from slinky_harness.k8s import schemas as kubeschema
from slinky_topology import cli as topology_cli
from slinky_topology.parse import parse_topology_yaml

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_harness.k8s.fleet import Fleet
    from slinky_topology.model import Fabric


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


def fleet_from_fabric(fabric: Fabric) -> Fleet:
    """One fake GB200 node per fabric node, labelled like topograph's Kubernetes engine does
    (:func:`slinky_harness.k8s.fleet.fleet_from_fabric`), so ``slinky-topology --preset
    topograph`` reads the fabric back from the live Nodes."""
    try:
        return fleet.fleet_from_fabric(
            fabric,
            group=NODESET,
            resources={"cpu": NODE_CPUS, "memory": NODE_MEMORY, "pods": "110"},
            gpu=fleet.GpuSpec(count=4, product=GPU_PRODUCT, memory_mib=189471, family="blackwell"),
            name=f"demo-{fabric.name}",
        )
    except fleet.FleetError as exc:
        raise DemoError(str(exc)) from exc


def same_topology(from_labels: str, from_fabric: str) -> list[str]:
    """Differences between two static topology.yaml texts, topology names aside."""
    live = parse_topology_yaml(from_labels).topologies
    file = parse_topology_yaml(from_fabric).topologies
    problems = []
    if len(live) != len(file):
        problems.append(f"{len(live)} topologies from the labels, {len(file)} from the fabric")
    for a, b in zip(live, file, strict=False):
        if (a.cluster_default, a.spec) != (b.cluster_default, b.spec):
            problems.append(f"topology {a.name} (labels) differs from {b.name} (fabric)")
    return problems
