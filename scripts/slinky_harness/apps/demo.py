"""The suite's main job on an embedded default: README's first command (``nox -s demo``).

1. ``slinky-topology`` turns a fabric (default: two GB200 NVL72-style racks under two leaf
   switches and a spine, built into the package) into ``topology.yaml``; every chart of the
   suite is rendered with Helm 4 and validated strictly (Kubernetes schemas, our CRDs, the
   render invariants).
2. A kwok control plane starts (real kube-apiserver, controller-manager, scheduler, etcd; built
   once and cached) with a fake fleet made from the same fabric: one GB200 node per fabric node,
   labelled the way topograph's Kubernetes engine labels nodes (``fabric.topograph.run/tier-N``,
   ``accelerator.topograph.run/domain``) plus the GPU feature labels.
3. charts/slurm-operator and charts/slurm-cluster are installed with Helm 4 ``--wait``.
   slurm-cluster gets a GB200 NodeSet and the topology that ``slinky-topology`` generates from
   the *live* Node labels (preset ``topograph``); the nodes get the
   ``topology.slinky.slurm.net/spec`` annotations that the gpu-topology-labeler would write.
4. The real Slinky operator v1.2.1 manager (built from its Go module with the control plane,
   ``slinky_harness.k8s.operator``) runs as a local process with the chart Deployment's arguments,
   as the chart's ServiceAccount (so the chart's RBAC is what it may do), and reconciles the
   installed Controller into its ``slurm.conf`` ConfigMap. Only with ``--no-operator`` is it
   not run (the report says so) and the harness writes a slurm.conf from the installed objects.
5. A real slurmctld 26.05 (Debian sid chroot) loads that slurm.conf (the operator's, localised
   for the chroot, with the Controller's config files and keys; else the harness's) plus one
   dynamic node per Kubernetes node, featured with its Slurm NodeSet name and placed by its
   annotation; the report shows ``sinfo``, ``scontrol show topology`` and where an 18-node job
   lands.

``--keep`` leaves the cluster and its releases running and prints the kubeconfig.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.build import controlplane as cp_build
from slinky_harness.build import slinky, toolchain
from slinky_harness.build.slurm_chroot import chroot_info, ensure_chroot
from slinky_harness.core.errors import HarnessError
from slinky_harness.core.polling import wait_for
from slinky_harness.helm import charts
from slinky_harness.helm import client as helm
from slinky_harness.helm.client import Helm
from slinky_harness.k8s import cluster as controlplane
from slinky_harness.k8s import manifests
from slinky_harness.k8s import operator as slinky_operator
from slinky_harness.k8s import schemas as kubeschema
from slinky_harness.k8s.fleet import Fleet, GpuSpec, NodeGroup
from slinky_harness.slurm import ctld as slurm
from slinky_harness.slurm.conf import parse_records, topology_names
from slinky_topology import cli as topology_cli
from slinky_topology import hostlist
from slinky_topology.errors import TopologyError
from slinky_topology.model import BlockSpec, TreeSpec
from slinky_topology.parse import parse_topology_yaml
from slinky_topology.sources import fabric_file

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from slinky_harness.k8s.cluster import Cluster
    from slinky_harness.slurm.conf import FileSource
    from slinky_topology.model import Fabric

REGISTRY = "registry.demo.invalid"
GPU_SCENARIO = "gpu-topology-values.yaml"

PRESET = "topograph"
"""Label preset of the fleet's nodes (what topograph's ``k8s`` engine writes)."""
TIER_LABEL = "fabric.topograph.run/tier-{}"
DOMAIN_LABEL = "accelerator.topograph.run/domain"
SPEC_ANNOTATION = "topology.slinky.slurm.net/spec"
GPU_PRODUCT = "NVIDIA-GB200"
NODESET = "gb200"

OPERATOR = ("slurm-operator", "slinky")
"""(release, namespace) of charts/slurm-operator."""
SLURM = ("slurm", "slurm")
"""(release, namespace) of charts/slurm-cluster."""
HELM_TIMEOUT = "120s"

OPERATOR_SKIPPED = (
    "operator: NOT RUN (--no-operator), so nothing reconciles Controller/NodeSet, its pods are "
    "kwok fakes and the slurm.conf below is the harness's, not the operator's"
)
OPERATOR_LOG_NOISE = ("no such host", "connection refused", "context canceled")
"""Operator log lines that are expected under kwok: nothing serves slurmrestd, so the NodeSet
reconcile stops at its first Slurm call."""
OPERATOR_TIMEOUT = 60.0

OPERATOR_VALUES: dict[str, Any] = {
    # No webhook server answers under kwok (the pods are fakes). With the chart's
    # failurePolicy: Fail the API server would refuse the slurm-cluster objects; Ignore keeps the
    # configurations installed and a 1 s timeout bounds each call to the unreachable pod IP.
    "webhook": {
        "timeoutSeconds": 1,
        "validating": {"failurePolicy": "Ignore"},
        "mutating": {"failurePolicy": "Ignore"},
    },
}

NODE_CPUS = "144"
NODE_MEMORY = "960Gi"
NODE_MEMORY_MB = 960 * 1024


class DemoError(HarnessError):
    """A step of the demo failed; the message says which and why."""


# --- step 1: topology from the fabric, charts rendered --------------------------------------------


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


# --- step 2: a fleet that is the fabric ----------------------------------------------------------


def fleet_from_fabric(fabric: Fabric) -> Fleet:
    """One fake GB200 node per fabric node, labelled like topograph's Kubernetes engine does.

    ``fabric.topograph.run/tier-<i>`` is the i-th switch above the node (leaf first) and
    ``accelerator.topograph.run/domain`` its NVLink domain, so ``slinky-topology --preset
    topograph`` reads the fabric back from the live Nodes.
    """
    parents = {s.name: s.parent for s in fabric.switches}
    groups = []
    for node in fabric.nodes:
        labels: dict[str, str] = {}
        switch = node.leaf
        tier = 0
        while switch is not None:
            labels[TIER_LABEL.format(tier)] = switch
            switch = parents.get(switch)
            tier += 1
        if node.domain is not None:
            labels[DOMAIN_LABEL] = node.domain
        groups.append(
            NodeGroup(
                name=NODESET,
                count=1,
                name_pattern=node.name.replace("{", "{{").replace("}", "}}"),
                resources={"cpu": NODE_CPUS, "memory": NODE_MEMORY, "pods": "110"},
                block_size=1,
                gpu=GpuSpec(count=4, product=GPU_PRODUCT, memory_mib=189471, family="blackwell"),
                labels=labels,
            )
        )
    if not groups:
        raise DemoError(f"fabric {fabric.name} has no nodes")
    return Fleet(name=f"demo-{fabric.name}", groups=tuple(groups))


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


# --- step 3: installs ----------------------------------------------------------------------------


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
        "nodeSelector": {"nvidia.com/gpu.product": GPU_PRODUCT},
        "partition": {"enabled": True, "config": "Default=YES MaxTime=UNLIMITED"},
    }
    if nvl:
        nodeset["partition"]["topology"] = nvl
    values: dict[str, Any] = {
        "nodesets": {"compute": {"enabled": False}, NODESET: nodeset},
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


# --- step 4: the real operator -------------------------------------------------------------------


@dataclass
class OperatorRun:
    """The operator's manager running for the slurm-operator release, and what it wrote."""

    manager: slinky_operator.Manager
    source: str
    identity: str
    account: str
    config_map: str = ""
    statefulset: str = ""
    slurm_conf: str = ""


def whoami(cluster: Cluster, kubeconfig: Path) -> str:
    """The user the API server authenticates for ``kubeconfig`` (``kubectl auth whoami``)."""
    proc = subprocess.run(
        [
            str(cluster.bindir / "kubectl"),
            f"--kubeconfig={kubeconfig}",
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
        capture_output=True,
        text=True,
        env=cluster.env(),
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        raise DemoError(
            f"kubectl auth whoami with the operator's kubeconfig: {proc.stderr.strip()}"
        )
    return proc.stdout.strip()


def start_operator(
    installer: Installer, stack: contextlib.ExitStack, bindir: Path, workdir: Path
) -> OperatorRun:
    """Run the manager for the installed slurm-operator release; it stops when ``stack`` closes."""
    release, namespace = OPERATOR
    text = installer.helm("get", "manifest", release, "--namespace", namespace)
    manifest = [d for d in yaml.safe_load_all(text) if d]
    try:
        manager = stack.enter_context(
            slinky_operator.run_for_release(installer.cluster, manifest, workdir)
        )
    except slinky.OperatorUnavailable as exc:
        raise DemoError(f"operator: {exc}") from exc
    accounts = {
        f"system:serviceaccount:{d['metadata']['namespace']}:{d['metadata']['name']}"
        for d in manifest
        if d.get("kind") == "ServiceAccount"
    }
    identity = whoami(installer.cluster, workdir / "kubeconfig.yaml")
    if identity not in accounts:
        raise DemoError(
            f"operator: runs as {identity!r}, not as one of the chart's ServiceAccounts "
            f"{sorted(accounts)}"
        )
    return OperatorRun(
        manager=manager,
        source=slinky.source(),
        identity=identity,
        account=identity.rsplit(":", 1)[-1],
    )


def wait_for_operator(
    cluster: Cluster, run: OperatorRun, controller: str, nodesets: Sequence[str], namespace: str
) -> None:
    """Wait until the operator has written the Controller's ConfigMap (with a ``NodeSet=`` line per
    Slurm NodeSet) and StatefulSet; keep the ConfigMap's slurm.conf in ``run``."""
    config_map = f"{controller}-config"
    statefulset = f"{controller}-controller"

    def written(kind: str, name: str) -> dict[str, Any] | None:
        if not run.manager.alive():
            raise DemoError(
                f"operator: the manager exited ({run.manager.proc.returncode}); "
                f"see {run.manager.log_path}"
            )
        text = cluster.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False)
        found: dict[str, Any] | None = json.loads(text) if text.strip() else None
        return found

    def conf_ready() -> str:
        found = written("configmap", config_map)
        conf = str(((found or {}).get("data") or {}).get("slurm.conf", ""))
        lines = set(conf.splitlines())
        if all(any(x.startswith(f"NodeSet={n} ") for x in lines) for n in nodesets):
            return conf
        return ""

    what = f"the operator to write ConfigMap {namespace}/{config_map} with NodeSet {nodesets}"
    run.slurm_conf = wait_for(conf_ready, timeout=OPERATOR_TIMEOUT, what=what)
    owner = written("configmap", config_map) or {}
    owners = {o["kind"] for o in owner.get("metadata", {}).get("ownerReferences") or []}
    if "Controller" not in owners:
        raise DemoError(f"ConfigMap {namespace}/{config_map} is not owned by a Controller")
    what = f"the operator to write StatefulSet {namespace}/{statefulset}"
    wait_for(lambda: written("statefulset", statefulset), timeout=OPERATOR_TIMEOUT, what=what)
    run.config_map = f"{namespace}/{config_map}"
    run.statefulset = f"{namespace}/{statefulset}"


def operator_line(run: OperatorRun, slurm_loaded: bool) -> str:
    """The report's operator line, after checking its log: no RBAC denial, no schema error."""
    if not run.manager.alive():
        raise DemoError(
            f"operator: the manager exited ({run.manager.proc.returncode}); "
            f"see {run.manager.log_path}"
        )
    problems = run.manager.problems(ignore=OPERATOR_LOG_NOISE)
    if problems:
        raise DemoError(
            f"operator: {len(problems)} RBAC or schema problems in {run.manager.log_path}; "
            f"first: {problems[0]}"
        )
    log = run.manager.log_path.read_text(errors="replace").splitlines()
    noise = sum(1 for line in log if any(n in line for n in OPERATOR_LOG_NOISE))
    loaded = (
        "its slurm.conf is the one slurmctld loads below"
        if slurm_loaded
        else "slurmctld not started (--no-slurm)"
    )
    return (
        f"operator: RAN the Slinky slurm-operator {slinky.VERSION} manager, built from "
        f"{run.source}, as {run.identity} (the chart's ServiceAccount {run.account}: TokenRequest "
        f"token, the chart Deployment's args); {len(log)} log lines, no RBAC denial or schema "
        f"error ({noise} expected slurmrestd-unreachable lines under kwok); it wrote ConfigMap "
        f"{run.config_map} (owner: the Controller) and StatefulSet {run.statefulset}; {loaded}"
    )


# --- step 5: slurmctld on the installed objects --------------------------------------------------


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
    job = ctld.run("sbatch", "--test-only", "-N", "18", "-p", partition, "--wrap", "true")
    text = (job.stdout + job.stderr).strip()
    found = re.search(r"on nodes (\S+)", text)
    head = f"  18-node job in partition {partition} (topology {topology})"
    if not found:
        return f"{head}: {text.splitlines()[-1:]}"
    nodes = set(ctld.hostnames(found.group(1)))
    units = _units(ctld, topology) if topology else {}
    inside = sorted((len(members), unit) for unit, members in units.items() if nodes <= members)
    where = f"all in {inside[0][1]}" if inside else "not within one unit"
    return f"{head}: {found.group(1)} ({where})"


# --- the run -------------------------------------------------------------------------------------


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
        fullname = f"{SLURM[0]}-slurm-cluster"
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
            cluster.stop = _leave_running  # type: ignore[method-assign]
            stack.pop_all()
            kwokctl = cluster.bindir / "kwokctl"
            tied = [
                (name, work / name)
                for name, ran in (("slurmctld", not args.no_slurm), ("operator", run is not None))
                if ran
            ]
            stop = (
                f"KWOK_WORKDIR={shlex.quote(str(cluster.kwok_workdir))} "
                f"{shlex.quote(str(kwokctl))} --name={cluster.name} delete cluster"
            )
            lines += [
                "Kept running (--keep):",
                f"  export KUBECONFIG={cluster.kubeconfig}",
                f"  stop: {stop} && rm -rf {shlex.quote(str(work))}",
                f"  ({' and '.join(n for n, _ in tied)} tied to this process and stopped; "
                f"files stay in {' and '.join(str(p) for _, p in tied)})",
            ]
    return lines


def _leave_running() -> None:
    """Stands in for ``Cluster.stop`` under ``--keep``."""


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


if __name__ == "__main__":
    from slinky_harness.core.processes import run_main

    raise SystemExit(run_main(main))
