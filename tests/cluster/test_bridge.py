"""The real slurm-bridge v1.2.1 schedules Kubernetes pods through a real Slurm 26.05.

A control plane of its own (module scope: the bridge controllers taint the Slurm nodes with
``NoExecute``, which must not evict the other cluster-tier tests' pods) with the small GPU fleet
(2 CPU nodes, 4 H100 nodes with 8 GPUs each). The slurm-bridge chart is installed with the
``values/co-location.yaml`` profile's ``slurm-bridge`` block (release ``slurm`` in namespace
``slurm``, as that profile's comments tell users), plus one setting: the JWT comes from a Secret
of the test's (``sharedConfig.slurmJwtSecret``, ``token.create: false``) that holds a token signed
with the controller's ``jwt.key``, where a real cluster's slurm-operator would mint it from the
chart's ``Token``.

Slurm is the chroot's slurmctld 26.05 (emulator build) with one emulated slurmd per H100 node,
named as the Kubernetes node, 8 ``gres/gpu`` each, and the profile's Slurm side: its MCS settings
and its two partitions on the same nodes (the batch partition ``gpu`` and the bridge's
``slurm-bridge``). slurmrestd answers under the Service URL of the chart's ``config.yaml``
through :class:`slinky_harness.k8s.operator.ServiceProxy`.

The bridge's scheduler (the chart's complete KubeSchedulerConfiguration, plugin section
included), admission webhook and controllers run as the chart's ServiceAccounts with the
chart's arguments (:mod:`slinky_harness.k8s.bridge`). Every expectation comes from the values and the
submitted workloads: the partition and MCS label from the chart's values, the node count from
the pods, the GPU counts from their limits, the capacity from the fleet.

JobSet and LeaderWorkerSet are not proven here: their controllers (which create the pods) do not
run in this tier; charts/slurm-bridge/README.md says so.
"""

from __future__ import annotations

import base64
import os
import re
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.cluster import charts_support as support

from slinky_harness.build.gobuild import module_dir
from slinky_harness.build.slurm_chroot import MOUNT_POINT
from slinky_harness.core.polling import wait_for
from slinky_harness.helm import charts
from slinky_harness.helm.client import Helm
from slinky_harness.helm.values import merge
from slinky_harness.k8s import bridge as slinky_bridge
from slinky_harness.k8s import operator as slinky_operator
from slinky_harness.k8s.cluster import Cluster
from slinky_harness.k8s.fleet import load_fleet
from slinky_harness.slurm import ctld as slurm
from slinky_harness.slurm.conf import FileSource, emulated_nodes, parse_records
from slinky_topology import hostlist

if TYPE_CHECKING:
    from collections.abc import Iterator

FLEET_FILE = support.REPO / "tests" / "data" / "fleets" / "small-gpu.yaml"
PROFILE = charts.load_yaml(support.REPO / "values" / "co-location.yaml")
RELEASE, NAMESPACE = "slurm", "slurm"
JWT_SECRET = "slurm-bridge-test-jwt"
MANAGED = str(PROFILE["slurm-bridge"]["admission"]["managedNamespaces"][0])
UNMANAGED = "plain-workloads"
GPU = "nvidia.com/gpu"
SCHEDULER_PLUGINS = ("sigs.k8s.io/scheduler-plugins", "v0.33.5")
"""The module (a dependency of slurm-bridge v1.2.1 in tools/go.mod) whose PodGroup CRD the
coscheduling test applies."""
WAIT = 90.0


@dataclass
class Env:
    cluster: Cluster
    ctld: slurm.SlurmCtld
    bridge: slinky_bridge.Bridge
    values: dict[str, Any]
    """The chart values as installed (chart defaults, the profile's block, the JWT override)."""
    gpu_nodes: dict[str, int]
    """Kubernetes node (= Slurm node) -> GPUs, from the fleet."""
    batch_partition: str


def slurm_conf(gpu_nodes: dict[str, int], partition: str) -> tuple[str, str, str]:
    """(slurm.conf, gres.conf, batch partition) for the profile's Slurm side on ``gpu_nodes``."""
    cluster = PROFILE["slurm-cluster"]
    extra = cluster["controller"]["extraConfMap"]
    batch = next(
        n for n, s in cluster["nodesets"].items() if (s.get("partition") or {}).get("enabled")
    )
    names = hostlist.compress(sorted(gpu_nodes))
    counts = set(gpu_nodes.values())
    assert len(counts) == 1, gpu_nodes
    gpus = counts.pop()
    lines = [
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "DefMemPerNode=1024",
        "GresTypes=gpu",
        "AuthAltTypes=auth/jwt",
        f"AuthAltParameters=jwt_key={MOUNT_POINT}/etc/jwt.key",
        *(f"{k}={v}" for k, v in extra.items()),
        emulated_nodes(sorted(gpu_nodes), cpus=96, memory_mb=1024 * 1024, extra=f"Gres=gpu:{gpus}"),
        f"PartitionName={batch} Nodes={names} {cluster['nodesets'][batch]['partition']['config']}",
        f"PartitionName={partition} Nodes={names} {cluster['partitions'][partition]['config']}",
    ]
    # slurmd ignores a GPU without a device file; empty files stand in for /dev/nvidia*.
    gres = f"NodeName={names} Name=gpu File={MOUNT_POINT}/etc/gpu[0-{gpus - 1}]\n"
    return "\n".join(lines) + "\n", gres, batch


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    from slinky_harness.build import toolchain  # noqa: PLC0415 - builds helm on first use

    work = tmp_path_factory.mktemp("bridge")
    fleet = load_fleet(str(FLEET_FILE))
    with (
        Cluster.start(work / "cluster", fleet=fleet) as cluster,
        slinky_operator.ServiceProxy() as proxy,
    ):
        helm = Helm(toolchain.ensure("helm"), cluster, work / "helm")
        for ns in (NAMESPACE, MANAGED, UNMANAGED):
            cluster.kubectl("create", "namespace", ns)
        defaults = charts.load_yaml(support.CHARTS["slurm-bridge"].path / "values.yaml")
        block = {**PROFILE["slurm-bridge"], "global": PROFILE.get("global", {})}
        override = {"sharedConfig": {"slurmJwtSecret": JWT_SECRET}, "token": {"create": False}}
        values = merge(merge(defaults, block), override)
        values_file = work / "bridge-values.yaml"
        values_file.write_text(yaml.safe_dump(merge(block, override)))
        nodes = cluster.kubectl_json("get", "nodes")["items"]
        gpu_nodes = {
            n["metadata"]["name"]: int(n["status"]["capacity"][GPU])
            for n in nodes
            if GPU in n["status"].get("capacity", {})
        }
        conf, gres, batch = slurm_conf(gpu_nodes, str(values["schedulerConfig"]["partition"]))
        jwt_key = os.urandom(32)
        files: dict[str, FileSource] = {
            "slurm.conf": conf,
            "gres.conf": gres,
            "jwt.key": jwt_key,
            **{f"gpu{i}": "" for i in range(max(gpu_nodes.values()))},
        }
        with slurm.slurmctld(files, workdir=work / "slurmctld", emulator=True) as ctld:
            ctld.start_slurmd(*sorted(gpu_nodes))
            username = str(values["token"]["username"])
            token = slinky_bridge.slurm_jwt(jwt_key, username)
            cluster.apply([{
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": JWT_SECRET, "namespace": NAMESPACE},
                "data": {"auth-token": base64.b64encode(token.encode()).decode()},
            }])  # fmt: skip
            helm.run(
                "install", RELEASE, str(support.CHARTS["slurm-bridge"].path), "-n", NAMESPACE,
                "-f", str(values_file), "--wait", "--timeout", "90s",
            )  # fmt: skip
            manifest = [
                d
                for d in yaml.safe_load_all(
                    helm.run("get", "manifest", RELEASE, "-n", NAMESPACE).stdout
                )
                if d
            ]
            bridge_config = yaml.safe_load(
                next(d for d in manifest if "config.yaml" in d.get("data", {}))["data"][
                    "config.yaml"
                ]
            )
            url = re.match(r"https?://([^/]+)", bridge_config["slurmRestApi"])
            assert url, bridge_config
            host_port = url.group(1) if ":" in url.group(1) else f"{url.group(1)}:80"
            proxy.route(host_port, ctld.start_slurmrestd())
            with slinky_bridge.run_for_release(
                cluster, manifest, work / "bridge", proxy=proxy
            ) as running:
                yield Env(cluster, ctld, running, values, gpu_nodes, batch)


# -- helpers --------------------------------------------------------------------------------------


def jobs(ctld: slurm.SlurmCtld) -> list[dict[str, str]]:
    """Every job slurmctld knows (``scontrol show job -d -o``), one record each."""
    out = ctld.scontrol("show", "job", "-d", "-o")
    return [r for r in parse_records(out) if "JobId" in r]


def job(ctld: slurm.SlurmCtld, job_id: str) -> dict[str, str]:
    found = [r for r in jobs(ctld) if r["JobId"] == job_id]
    assert found, f"no Slurm job {job_id}"
    return found[0]


def gpu_indices(ctld: slurm.SlurmCtld, job_id: str) -> dict[str, set[int]]:
    """Node -> GPU indices a running job holds, from ``scontrol show job -d`` (``GRES=gpu:N(IDX:a-b)``)."""
    out = ctld.scontrol("show", "job", "-d", job_id)
    held: dict[str, set[int]] = {}
    for nodes, idx in re.findall(
        r"Nodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=\S*?\(IDX:([0-9,-]+)\)", out
    ):
        indices: set[int] = set()
        for part in idx.split(","):
            lo, _, hi = part.partition("-")
            indices.update(range(int(lo), int(hi or lo) + 1))
        for node in hostlist.expand(nodes):
            held.setdefault(node, set()).update(indices)
    return held


def pod_spec(
    name: str, *, gpus: int = 0, annotations: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    if gpus:
        resources["limits"] = {GPU: str(gpus)}
    spec: dict[str, Any] = {
        "containers": [
            {"name": "main", "image": "registry.invalid/sleep:1", "resources": resources}
        ],
        "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
        "restartPolicy": "Never",
        **extra,
    }
    return {"metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}


def create_pod(env: Env, namespace: str, name: str, **kwargs: Any) -> None:
    body = pod_spec(name, **kwargs)
    env.cluster.apply([{"apiVersion": "v1", "kind": "Pod", **body,
                        "metadata": {**body["metadata"], "namespace": namespace}}])  # fmt: skip


def get_pod(env: Env, namespace: str, name: str) -> dict[str, Any] | None:
    proc = support.kubectl(env.cluster, "get", "pod", name, "-n", namespace, "-o", "yaml")
    return yaml.safe_load(proc.stdout) if proc.returncode == 0 else None


def wait_bound(env: Env, namespace: str, name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Wait until the pod is bound and carries its Slurm job id; return (pod, job record)."""
    found: dict[str, Any] = {}

    def unbound() -> str:
        pod = get_pod(env, namespace, name)
        if pod is None:
            return "no pod"
        found["pod"] = pod
        if pod["spec"].get("nodeName") and slinky_bridge.JOB_ID_LABEL in pod["metadata"].get(
            "labels", {}
        ):
            return ""
        return str(pod.get("status", {}).get("conditions", "pending"))

    wait_for(
        lambda: not unbound(),
        timeout=WAIT,
        what=f"pod {namespace}/{name} to be bound by the bridge",
        every=0.5,
        detail=unbound,
    )
    pod = found["pod"]
    return pod, job(env.ctld, pod["metadata"]["labels"][slinky_bridge.JOB_ID_LABEL])


def delete_pods(env: Env, namespace: str, *names: str) -> None:
    support.kubectl(
        env.cluster, "delete", "pod", "-n", namespace, "--ignore-not-found", "--wait=false", *names
    )
    wait_for(
        lambda: not ([n for n in names if get_pod(env, namespace, n) is not None]),
        timeout=WAIT,
        what=f"pods {names} to be deleted",
        every=0.5,
        detail=lambda: [n for n in names if get_pod(env, namespace, n) is not None],
    )


def describe_jobs(env: Env) -> str:
    keys = ("JobId", "JobName", "JobState", "Reason", "Partition", "NodeList", "MCS_label",
            "OverSubscribe", "TresPerNode")  # fmt: skip
    return "\n".join(" ".join(f"{k}={r.get(k)}" for k in keys) for r in jobs(env.ctld))


def running_job_ids(env: Env) -> set[str]:
    return {r["JobId"] for r in jobs(env.ctld) if r.get("JobState") == "RUNNING"}


# -- tests ----------------------------------------------------------------------------------------


def test_a_pod_becomes_a_slurm_job_and_is_bound_where_slurm_allocated(env: Env) -> None:
    """A plain pod in the managed namespace: the webhook hands it to the bridge's scheduler, which
    submits one external job to the chart's partition with the chart's MCS label, and binds the
    pod to the node Slurm allocated."""
    name = f"pod-{uuid.uuid4().hex[:6]}"
    create_pod(env, MANAGED, name)
    pod, record = wait_bound(env, MANAGED, name)
    assert pod["spec"]["schedulerName"] == env.bridge.scheduler_name
    assert record["Partition"] == env.values["schedulerConfig"]["partition"], record
    assert record["MCS_label"] == env.values["schedulerConfig"]["mcsLabel"], record
    assert record["JobState"] == "RUNNING", record
    assert f"{MANAGED}/{name}" in record.get("AdminComment", ""), record
    assert hostlist.expand(record["NodeList"]) == [pod["spec"]["nodeName"]], (record, pod["spec"])
    shown = env.ctld.run("squeue", "-h", "-j", record["JobId"], "-o", "%i %P %T %N").stdout.split()
    assert shown == [record["JobId"], record["Partition"], "RUNNING", record["NodeList"]]
    delete_pods(env, MANAGED, name)


def test_each_pod_of_a_batch_job_becomes_a_slurm_job(env: Env) -> None:
    """A ``batch/v1`` Job of two parallel pods: v1.2.1 translates a Job's pods one by one (unlike
    JobSet and PodGroup, which are one Slurm job per group), so each pod is a Slurm job of its own
    in the chart's partition, and each pod is bound to the node its job was allocated."""
    name = f"job-{uuid.uuid4().hex[:6]}"
    template = pod_spec("ignored")["spec"]
    env.cluster.apply([{
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": MANAGED},
        "spec": {"parallelism": 2, "completions": 2, "template": {"spec": template}},
    }])  # fmt: skip

    def pods() -> list[dict[str, Any]]:
        items = env.cluster.kubectl_json("get", "pods", "-n", MANAGED, "-l", f"job-name={name}")[
            "items"
        ]
        return [p for p in items if p["spec"].get("nodeName")]

    wait_for(
        lambda: not (len(pods()) < 2),
        timeout=WAIT,
        what=f"both pods of Job {name} to be bound",
        every=0.5,
        detail=lambda: len(pods()) < 2,
    )
    bound = pods()
    ids = [p["metadata"]["labels"][slinky_bridge.JOB_ID_LABEL] for p in bound]
    assert len(set(ids)) == len(bound) == 2, ids
    for pod, job_id in zip(bound, ids, strict=True):
        record = job(env.ctld, job_id)
        assert record["Partition"] == env.values["schedulerConfig"]["partition"], record
        assert hostlist.expand(record["NodeList"]) == [pod["spec"]["nodeName"]], record
        assert f"{MANAGED}/{pod['metadata']['name']}" in record.get("AdminComment", ""), record
    env.cluster.kubectl(
        "delete", "job", name, "-n", MANAGED, "--cascade=foreground", "--wait=false"
    )
    wait_for(
        lambda: not pods(),
        timeout=WAIT,
        what=f"the pods of Job {name} to go",
        every=0.5,
        detail=pods,
    )
    # Job pods finish at once under kwok: the bridge ends their Slurm jobs.
    wait_for(
        lambda: not (set(ids) & running_job_ids(env)),
        timeout=WAIT,
        what=f"Slurm jobs {ids} to end with their pods",
        every=0.5,
        detail=lambda: set(ids) & running_job_ids(env),
    )


def test_gpu_limits_become_slurm_gres(env: Env) -> None:
    """``nvidia.com/gpu: 3`` becomes ``gres/gpu=3`` per node; the job holds exactly 3 GPU indices
    on the node the pod is bound to."""
    name = f"gpu-{uuid.uuid4().hex[:6]}"
    create_pod(
        env, MANAGED, name, gpus=3, annotations={slinky_bridge.EXCLUSIVE_ANNOTATION: "false"}
    )
    pod, record = wait_bound(env, MANAGED, name)
    assert "gres/gpu=3" in record.get("TresPerNode", "") or "gres/gpu:3" in record.get(
        "TresPerNode", ""
    ), record
    held = gpu_indices(env.ctld, record["JobId"])
    assert {k: len(v) for k, v in held.items()} == {pod["spec"]["nodeName"]: 3}, held
    delete_pods(env, MANAGED, name)


def test_a_pod_asking_more_gpus_than_any_node_stays_pending_with_a_reason(env: Env) -> None:
    most = max(env.gpu_nodes.values())
    name = f"toobig-{uuid.uuid4().hex[:6]}"
    create_pod(env, MANAGED, name, gpus=most + 1)

    def no_reason() -> str:
        pod = get_pod(env, MANAGED, name) or {}
        for cond in pod.get("status", {}).get("conditions", []):
            if cond["type"] == "PodScheduled" and cond["status"] == "False" and cond.get("message"):
                return ""
        return "no PodScheduled=False condition with a message yet"

    wait_for(
        lambda: not no_reason(),
        timeout=WAIT,
        what=f"pod {name} to report why it is not scheduled",
        every=0.5,
        detail=no_reason,
    )
    time.sleep(5)
    pod = get_pod(env, MANAGED, name)
    assert pod is not None and not pod["spec"].get("nodeName"), pod
    assert pod["status"]["phase"] == "Pending", pod["status"]
    delete_pods(env, MANAGED, name)


def test_a_pod_in_an_unmanaged_namespace_is_left_to_the_default_scheduler(env: Env) -> None:
    name = f"plain-{uuid.uuid4().hex[:6]}"
    before = {r["JobId"] for r in jobs(env.ctld)}
    create_pod(env, UNMANAGED, name)

    def unbound() -> bool:
        pod = get_pod(env, UNMANAGED, name)
        return not (pod and pod["spec"].get("nodeName"))

    wait_for(
        lambda: not unbound(),
        timeout=WAIT,
        what=f"pod {name} to be scheduled",
        every=0.5,
        detail=unbound,
    )
    pod = get_pod(env, UNMANAGED, name)
    assert pod is not None
    assert pod["spec"]["schedulerName"] == "default-scheduler"
    assert slinky_bridge.JOB_ID_LABEL not in pod["metadata"].get("labels", {})
    assert pod["spec"]["nodeName"] not in env.gpu_nodes, (
        "a Slurm node was not tainted for the bridge"
    )
    assert {r["JobId"] for r in jobs(env.ctld)} == before
    delete_pods(env, UNMANAGED, name)


def test_deleting_the_pod_ends_its_slurm_job(env: Env) -> None:
    name = f"del-{uuid.uuid4().hex[:6]}"
    create_pod(env, MANAGED, name)
    _, record = wait_bound(env, MANAGED, name)
    delete_pods(env, MANAGED, name)
    wait_for(
        lambda: record["JobId"] not in running_job_ids(env),
        timeout=WAIT,
        what=f"Slurm job {record['JobId']} to end",
        every=0.5,
        detail=lambda: record["JobId"] in running_job_ids(env),
    )


def test_scancel_ends_the_pod(env: Env) -> None:
    name = f"scancel-{uuid.uuid4().hex[:6]}"
    create_pod(env, MANAGED, name)
    _, record = wait_bound(env, MANAGED, name)
    env.ctld.run("scancel", record["JobId"])

    def still_running() -> str:
        pod = get_pod(env, MANAGED, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return ""
        phase = pod.get("status", {}).get("phase", "")
        return "" if phase in ("Failed", "Succeeded") else phase

    wait_for(
        lambda: not still_running(),
        timeout=WAIT,
        what=f"pod {name} to end after scancel {record['JobId']}",
        every=0.5,
        detail=still_running,
    )
    delete_pods(env, MANAGED, name)


def test_a_coscheduling_podgroup_is_one_slurm_job(env: Env) -> None:
    """scheduler-plugins' PodGroup (label ``scheduling.x-k8s.io/pod-group``): its members are one
    Slurm job of as many nodes, each member bound to one of them."""
    crd_file = (
        module_dir(*SCHEDULER_PLUGINS)
        / "config"
        / "crd"
        / "bases"
        / "scheduling.x-k8s.io_podgroups.yaml"
    )
    env.cluster.apply(crd_file)
    env.cluster.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/podgroups.scheduling.x-k8s.io"
    )
    group = f"pg-{uuid.uuid4().hex[:6]}"
    env.cluster.apply([{
        "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": group, "namespace": MANAGED}, "spec": {"minMember": 2},
    }])  # fmt: skip
    names = [f"{group}-{i}" for i in range(2)]
    for name in names:
        body = pod_spec(name)
        body["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": group}
        env.cluster.apply([{"apiVersion": "v1", "kind": "Pod", **body,
                            "metadata": {**body["metadata"], "namespace": MANAGED}}])  # fmt: skip
    bound = [wait_bound(env, MANAGED, n) for n in names]
    ids = {record["JobId"] for _, record in bound}
    assert len(ids) == 1, ids
    record = bound[0][1]
    assert int(record["NumNodes"]) == len(names), record
    assert sorted(hostlist.expand(record["NodeList"])) == sorted(
        p["spec"]["nodeName"] for p, _ in bound
    )
    delete_pods(env, MANAGED, *names)


def test_batch_jobs_and_bridged_pods_never_hold_the_same_gpu(env: Env) -> None:
    """Co-location: Slurm batch jobs (``sbatch --gres``) and bridged pods (GPU limits, shared
    nodes) run on the same GPU nodes at once; on every node the GPU indices of all running jobs
    are disjoint and within the node's GPUs, and the bridged pods' GPU limits on a node never
    exceed its capacity."""
    batch_ids = []
    # More than half a node per batch job puts one on every node; the pods then fill every node's
    # last GPUs, so each must share a node with a batch job and every GPU is held.
    node_gpus = max(env.gpu_nodes.values())
    batch_gpus = node_gpus // 2 + 1
    pod_gpus = node_gpus - batch_gpus
    for index in range(len(env.gpu_nodes)):
        out = env.ctld.run(
            "sbatch", "--parsable", "-o", "/dev/null", "-p", env.batch_partition, "-N", "1",
            f"--gres=gpu:{batch_gpus}", "--wrap", "sleep 300", "-J", f"batch-{index}",
        ).stdout  # fmt: skip
        batch_ids.append(out.strip().split(";")[0])
    names = [f"colo-{uuid.uuid4().hex[:6]}" for _ in range(len(env.gpu_nodes))]
    for name in names:
        create_pod(env, MANAGED, name, gpus=pod_gpus,
                   annotations={slinky_bridge.EXCLUSIVE_ANNOTATION: "false"})  # fmt: skip
    bound = [wait_bound(env, MANAGED, n) for n in names]
    try:
        shared = 0
        for _ in range(5):
            running = running_job_ids(env)
            per_node: dict[str, list[set[int]]] = {}
            for job_id in running:
                for node, held in gpu_indices(env.ctld, job_id).items():
                    per_node.setdefault(node, []).append(held)
            for node, sets in per_node.items():
                union: set[int] = set().union(*sets)
                assert sum(len(s) for s in sets) == len(union), (node, sets)
                assert union <= set(range(env.gpu_nodes[node])), (node, union)
            pods = env.cluster.kubectl_json("get", "pods", "-n", MANAGED)["items"]
            limits: dict[str, int] = {}
            for pod in pods:
                node = pod["spec"].get("nodeName")
                if node:
                    for c in pod["spec"]["containers"]:
                        limits[node] = limits.get(node, 0) + int(
                            (c.get("resources", {}).get("limits") or {}).get(GPU, 0)
                        )
            assert all(limits[n] <= env.gpu_nodes[n] for n in limits), limits
            batch_nodes = {n for j in batch_ids if j in running for n in gpu_indices(env.ctld, j)}
            shared = max(shared, len(batch_nodes & {p["spec"]["nodeName"] for p, _ in bound}))
            time.sleep(1)
        assert shared == len(env.gpu_nodes), (
            "not every GPU node ran a batch job and a bridged pod at once:\n" + describe_jobs(env)
        )
    finally:
        env.ctld.run("scancel", *batch_ids, check=False)
        delete_pods(env, MANAGED, *names)


def test_scheduler_runs_the_charts_complete_configuration(env: Env) -> None:
    """The scheduler process was given the chart's KubeSchedulerConfiguration with the SlurmBridge
    plugin at every extension point the chart enables."""
    profiles = env.bridge.scheduler_config["profiles"]
    assert [p["schedulerName"] for p in profiles] == [env.bridge.scheduler_name]
    plugins = profiles[0]["plugins"]
    points = {
        p
        for p, spec in plugins.items()
        if any(e["name"] == "SlurmBridge" for e in spec.get("enabled", []))
    }
    assert {"preEnqueue", "preFilter", "filter", "postFilter", "preBind"} <= points, points
    assert any(c.get("name") == "SlurmBridge" for c in profiles[0].get("pluginConfig", []))


def test_components_logged_no_rbac_denial(env: Env) -> None:
    """Runs last: nothing the bridge did in this module was denied by the chart's RBAC."""
    for name, component in env.bridge.components().items():
        assert component.alive(), f"{name} exited:\n{component.tail()}"
        problems = component.problems(ignore=slinky_bridge.EXPECTED_NOISE)
        assert not problems, f"{name} log:\n" + "\n".join(problems[:20])
