"""Demo step 3: the charts installed with Helm 4 on the kwok cluster, the slurm-cluster values
from the live Node labels, and the labeler's annotations."""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.apps.demo import (
    GPU_PRODUCT,
    HELM_TIMEOUT,
    NODESET,
    PRESET,
    SPEC_ANNOTATION,
    DemoError,
)
from slinky_harness.helm import charts
from slinky_topology import cli as topology_cli
from slinky_topology.model import BlockSpec, TreeSpec
from slinky_topology.parse import parse_topology_yaml

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_harness.helm.client import Helm
    from slinky_harness.k8s.cluster import Cluster


@dataclass
class Installer:
    """Helm 4 bound to the demo cluster (its state in the work folder), timing the installs."""

    client: Helm
    cluster: Cluster
    timings: dict[str, float] = field(default_factory=dict)

    def helm(self, *args: str) -> str:
        """``helm ARGS``' output; :class:`~slinky_harness.helm.client.HelmError` on failure."""
        return self.client.run(*args).stdout

    def install(self, release: str, namespace: str, chart: str, values: list[Path]) -> None:
        started = time.monotonic()
        files = [arg for path in values for arg in ("-f", str(path))]
        self.helm(
            "install",
            release,
            str(charts.CHARTS_DIR / chart),
            "--namespace",
            namespace,
            "--create-namespace",
            *files,
            "--wait",
            "--timeout",
            HELM_TIMEOUT,
        )
        self.timings[release] = time.monotonic() - started

    def live_kinds(self, release: str, namespace: str) -> Counter[str]:
        """Kinds of the release's objects, counted from what the API server returns for them."""
        manifest = self.helm("get", "manifest", release, "--namespace", namespace)
        wanted = len([d for d in yaml.safe_load_all(manifest) if d])
        found = json.loads(self.cluster.kubectl("get", "-f", "-", "-o", "json", input=manifest))
        items = found.get("items", [found]) if found.get("kind") == "List" else [found]
        if len(items) != wanted:
            raise DemoError(
                f"release {release}: {wanted} objects in the manifest, {len(items)} live"
            )
        return Counter(str(i["kind"]) for i in items)


def slurm_cluster_values(topology_values: dict[str, Any]) -> dict[str, Any]:
    """One GB200 NodeSet on the fleet's GPU nodes, a partition per topology."""
    topologies = parse_topology_yaml(topology_values["topology"]["yaml"]).topologies
    tree = next((t.name for t in topologies if isinstance(t.spec, TreeSpec)), None)
    nvl = next((t.name for t in topologies if isinstance(t.spec, BlockSpec)), None)
    nodeset: dict[str, Any] = {
        "replicas": 0,  # set by the caller: one per GPU node
        "gpu": {"vendor": "nvidia", "type": "gb200", "count": 4},
        "podSpec": {"nodeSelector": {"nvidia.com/gpu.product": GPU_PRODUCT}},
        "partition": {"enabled": True, "config": "Default=YES MaxTime=UNLIMITED"},
    }
    if nvl:
        nodeset["partition"]["topology"] = nvl
    values: dict[str, Any] = {
        "nodesets": {NODESET: nodeset},
        **topology_values,
    }
    if tree:
        values["partitions"] = {
            "all": {"nodesets": ["ALL"], "config": "MaxTime=1-00:00:00", "topology": tree}
        }
    return values


def live_topology(cluster: Cluster, out: Path) -> dict[str, Any]:
    """``slinky-topology`` on the Nodes read from the API server (preset ``topograph``)."""
    from kubernetes import client  # noqa: PLC0415 - heavy, only with a cluster

    from slinky_topology.sources import k8s_nodes  # noqa: PLC0415

    api = cluster.api_client()
    try:
        nodes = k8s_nodes.read_cluster_nodes(client.CoreV1Api(api))
    finally:
        api.close()
    source = out / "live-nodes.json"
    source.write_text(json.dumps({"kind": "List", "items": nodes}, default=str))
    inputs = ["--from-nodes", str(source), "--preset", PRESET]
    runs = {
        "live-topology.yaml": ["generate", *inputs, "--shape", "static"],
        "live-topology-values.yaml": ["generate", *inputs, "--format", "values"],
        "live-annotations.json": ["annotations", *inputs],
    }
    for name, args in runs.items():
        if topology_cli.main([*args, "-o", str(out / name)]) != 0:
            raise DemoError(f"slinky-topology {' '.join(args)} failed (see the error above)")
    return {
        "nodes": len(nodes),
        "topology.yaml": (out / "live-topology.yaml").read_text(),
        "values": yaml.safe_load((out / "live-topology-values.yaml").read_text()),
        "annotations": json.loads((out / "live-annotations.json").read_text()),
    }


def annotate(cluster: Cluster, annotations: dict[str, str]) -> None:
    """Write the topology spec annotations, one kubectl call per distinct value."""
    by_value: dict[str, list[str]] = defaultdict(list)
    for node, spec in annotations.items():
        by_value[spec].append(node)
    for spec, nodes in sorted(by_value.items()):
        cluster.kubectl("annotate", "--overwrite", "node", *nodes, f"{SPEC_ANNOTATION}={spec}")
