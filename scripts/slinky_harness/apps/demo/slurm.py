"""Demo step 5: a real slurmctld loads the operator's (or the harness's) slurm.conf with one
dynamic node per Kubernetes node; the report lines."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from slinky_harness.apps.demo import (
    NODE_CPUS,
    NODE_MEMORY_MB,
    SPEC_ANNOTATION,
    DemoError,
)
from slinky_harness.build.slurm_chroot import chroot_info, ensure_chroot
from slinky_harness.k8s import operator as slinky_operator
from slinky_harness.slurm import ctld as slurm
from slinky_harness.slurm.conf import parse_records, topology_names
from slinky_topology import hostlist
from slinky_topology.parse import parse_topology_yaml

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_harness.apps.demo.operator import OperatorRun
    from slinky_harness.k8s.cluster import Cluster
    from slinky_harness.slurm.conf import FileSource


def slurm_inputs(cluster: Cluster, fullname: str, namespace: str) -> dict[str, Any]:
    """What the harness's slurm.conf is made of, read back from the API server."""
    controller = cluster.kubectl_json(
        "get", "controllers.slinky.slurm.net", fullname, "-n", namespace
    )
    nodesets = cluster.kubectl_json("get", "nodesets.slinky.slurm.net", "-n", namespace)["items"]
    topology_yaml = ""
    for ref in controller["spec"].get("configFileRefs") or []:
        config = cluster.kubectl_json("get", "configmap", ref["name"], "-n", namespace)
        topology_yaml = (config.get("data") or {}).get("topology.yaml", "") or topology_yaml
    nodes = cluster.kubectl_json("get", "nodes")["items"]
    groups = []
    for item in nodesets:
        spec = item["spec"]
        pod = spec.get("template", {}).get("spec", {})
        name = slinky_operator.slurm_nodeset_name(item)
        selector = pod.get("nodeSelector") or {}
        members = [
            n
            for n in nodes
            if all(n["metadata"].get("labels", {}).get(k) == v for k, v in selector.items())
        ]
        groups.append((name, spec.get("partition") or {}, members))
    return {
        "controller": controller,
        "extraConf": controller["spec"].get("extraConf", ""),
        "topology.yaml": topology_yaml,
        "nodesets": groups,
    }


def harness_slurm_conf(inputs: dict[str, Any]) -> str:
    lines = [
        "# Written by slinky_harness.apps.demo, NOT by the Slinky operator (which is not run here).",
        "# NodeSet and PartitionName lines follow what the operator writes for the installed",
        "# NodeSet objects; the rest is the installed Controller's spec.extraConf verbatim.",
        f"MaxNodeCount={sum(len(m) for _, _, m in inputs['nodesets']) + 16}",
    ]
    for name, partition, _ in inputs["nodesets"]:
        lines.append(f"NodeSet={name} Feature={name}")
        if partition.get("enabled"):
            lines.append(
                f"PartitionName={name} Nodes={name} {partition.get('config', '')}".rstrip()
            )
    return "\n".join(lines) + "\n" + str(inputs["extraConf"])


def operator_slurm_files(
    cluster: Cluster, inputs: dict[str, Any], run: OperatorRun, namespace: str
) -> tuple[dict[str, FileSource], str]:
    """The operator's slurm.conf (localised) and the Controller's files; and whose they are."""
    files = slinky_operator.slurmctld_files(
        cluster, namespace, inputs["controller"]["spec"], run.slurm_conf
    )
    kept = {line.split("=", 1)[0] for line in str(files["slurm.conf"]).splitlines()}
    dropped = sorted(
        {
            key
            for line in run.slurm_conf.splitlines()
            if "=" in line and (key := line.split("=", 1)[0]) not in kept
        }
    )
    others = ", ".join(sorted(n for n in files if n != "slurm.conf"))
    accounting = (
        "; accounting_storage/slurmdbd -> none, no slurmdbd here"
        if "accounting_storage/slurmdbd" in run.slurm_conf
        else ""
    )
    origin = (
        f"the operator's slurm.conf from ConfigMap {run.config_map}, localised (harness owns "
        f"{', '.join(dropped)}; container paths under the chroot mount{accounting}), "
        f"with {others}"
    )
    return files, origin


def harness_slurm_files(inputs: dict[str, Any]) -> tuple[dict[str, FileSource], str]:
    """The harness's own slurm.conf and the chart's topology.yaml; and whose they are."""
    files: dict[str, FileSource] = {
        "slurm.conf": harness_slurm_conf(inputs),
        "topology.yaml": inputs["topology.yaml"],
    }
    return files, "the harness's slurm.conf (not the operator's), with topology.yaml"


def run_slurm(
    inputs: dict[str, Any], files: dict[str, FileSource], origin: str, workdir: Path
) -> list[str]:
    """Load ``files`` into a real slurmctld, add the dynamic nodes; return report lines."""
    root = ensure_chroot()
    version = chroot_info(root).slurm_version
    lines = [f"slurmctld {version} (Debian sid chroot) on {origin}:"]
    given = str(files["slurm.conf"])
    topology_yaml = str(files.get("topology.yaml", ""))
    with slurm.slurmctld(files, root=root, workdir=workdir) as ctld:
        loaded = (ctld.etc_dir / "slurm.conf").read_text()
        if not loaded.endswith("\n\n" + given.rstrip("\n") + "\n"):
            raise DemoError(f"slurmctld's {ctld.etc_dir / 'slurm.conf'} is not the one given")
        placed = 0
        for name, _, members in inputs["nodesets"]:
            by_spec: dict[str, list[str]] = defaultdict(list)
            for node in members:
                spec = (node["metadata"].get("annotations") or {}).get(SPEC_ANNOTATION, "")
                by_spec[spec].append(node["metadata"]["name"])
            for spec, names in sorted(by_spec.items()):
                settings = [
                    f"NodeName={hostlist.compress(names)}",
                    f"Features={name}",
                    f"CPUs={NODE_CPUS}",
                    f"RealMemory={NODE_MEMORY_MB}",
                    "State=CLOUD",
                ]
                ctld.scontrol("create", *settings, *([f"Topology={spec}"] if spec else []))
                placed += len(names)
        lines.append(
            f"  {placed} dynamic nodes created (scontrol create ... Topology=<node annotation>)"
        )
        lines.append("  $ sinfo")
        lines += [f"    {row}" for row in ctld.sinfo().rstrip().splitlines()]
        topologies = topology_names(topology_yaml)
        for topology in topologies:
            lines.append(f"  $ scontrol show topology {topology}")
            shown = ctld.show_topology(topology).rstrip().splitlines()
            lines += [f"    {_shorten(row)}" for row in shown]
        default = next(
            (t.name for t in parse_topology_yaml(topology_yaml).topologies if t.cluster_default),
            None,
        )
        for record in parse_records(ctld.scontrol("show", "partition", "-o")):
            unit_topology = record.get("Topology") or default
            lines.append(_job_line(ctld, record["PartitionName"], unit_topology))
    return lines


def _shorten(row: str) -> str:
    return " ".join(w for w in row.split() if not w.startswith("LinkSpeed="))


def _units(ctld: Any, topology: str) -> dict[str, set[str]]:
    """Switch or block name -> its nodes (aggregated blocks left out)."""
    return {
        unit: set(ctld.hostnames(record["Nodes"]))
        for record in parse_records(ctld.show_topology(topology))
        if (unit := record.get("BlockName") or record.get("SwitchName")) and record.get("Nodes")
    }


def _job_line(ctld: Any, partition: str, topology: str | None) -> str:
    """Where ``sbatch --test-only -N 18`` would start in ``partition``, and in which unit."""
    job = ctld.test_only("-N", "18", "-p", partition)
    head = f"  18-node job in partition {partition} (topology {topology})"
    if not job.ok:
        return f"{head}: {job.text.splitlines()[-1:]}"
    nodes = set(ctld.hostnames(job.nodes))
    units = _units(ctld, topology) if topology else {}
    inside = sorted((len(members), unit) for unit, members in units.items() if nodes <= members)
    where = f"all in {inside[0][1]}" if inside else "not within one unit"
    return f"{head}: {job.nodes} ({where})"
