"""The kwok control plane behaves like a cluster: version, fake GPU nodes, scheduling, Stages."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes import client

from slinky_harness.build.controlplane import K8S_VERSION, ControlPlaneError
from slinky_harness.core.polling import wait_for
from slinky_harness.k8s.cluster import Cluster, port_in_use
from slinky_harness.k8s.fleet import GROUP_LABEL, FleetError, parse_fleet

if TYPE_CHECKING:
    from slinky_harness.k8s.fleet import Fleet

GPU_PRODUCT = "NVIDIA-H100-80GB-HBM3"
PAUSE = "registry.k8s.io/pause:3.10"


def _container(name: str = "main", gpus: int = 0) -> Any:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else None
    return client.V1Container(
        name=name,
        image=PAUSE,
        resources=client.V1ResourceRequirements(
            requests={"cpu": "100m", "memory": "64Mi"}, limits=limits
        ),
    )


def _pod_phase(core: Any, namespace: str, name: str) -> str:
    return str(core.read_namespaced_pod(name, namespace).status.phase)


def test_server_reports_pinned_version(cluster: Cluster, api_client: Any) -> None:
    info = client.VersionApi(api_client).get_code()
    assert info.git_version == K8S_VERSION
    assert (info.major, info.minor) == ("1", K8S_VERSION.split(".")[1])
    assert info.git_tree_state == "clean"
    versions = json.loads(cluster.kubectl("version", "-o", "json"))
    assert versions["clientVersion"]["gitVersion"] == K8S_VERSION
    assert versions["serverVersion"]["gitVersion"] == K8S_VERSION


def test_fleet_nodes_are_ready_with_gpus_and_labels(core: Any, fleet: Fleet) -> None:
    nodes = {node.metadata.name: node for node in core.list_node().items}
    expected = fleet.nodes()
    assert {n["metadata"]["name"] for n in expected} <= set(nodes)
    for manifest in expected:
        node = nodes[manifest["metadata"]["name"]]
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert ready and ready[0].status == "True", node.metadata.name
        for key, value in manifest["metadata"]["labels"].items():
            assert node.metadata.labels.get(key) == value, (node.metadata.name, key)
        for resource, quantity in manifest["status"]["capacity"].items():
            assert node.status.capacity[resource] == quantity
            assert node.status.allocatable[resource] == quantity
    gpu_nodes = [n for n in nodes.values() if n.metadata.labels.get(GROUP_LABEL) == "h100"]
    assert len(gpu_nodes) == 4
    for node in gpu_nodes:
        labels = node.metadata.labels
        assert node.status.capacity["nvidia.com/gpu"] == "8"
        assert labels["nvidia.com/gpu.present"] == "true"
        assert labels["nvidia.com/gpu.product"] == GPU_PRODUCT
        assert labels["nvidia.com/gpu.count"] == "8"
        rack = labels["topology.slinky.dev/rack"]
        assert labels["nvidia.com/gpu.clique"].endswith(f"{rack[-1]}.1")
    addresses = {
        name: {a.type: a.address for a in node.status.addresses} for name, node in nodes.items()
    }
    assert all(a["Hostname"] == name for name, a in addresses.items())
    internal_ips = [a["InternalIP"] for a in addresses.values()]
    assert len(set(internal_ips)) == len(internal_ips)
    racks = sorted(n.metadata.labels["topology.slinky.dev/rack"] for n in gpu_nodes)
    assert racks == ["rack-0", "rack-0", "rack-1", "rack-1"]
    cpu_node = nodes["cpu-01"]
    assert "nvidia.com/gpu" not in cpu_node.status.capacity
    assert "nvidia.com/gpu.present" not in cpu_node.metadata.labels


def test_deployment_pods_run_on_matching_gpu_nodes(core: Any, apps: Any, namespace: str) -> None:
    labels = {"app": "gpu-burn"}
    deployment = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="gpu-burn"),
        spec=client.V1DeploymentSpec(
            replicas=3,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(
                    node_selector={"nvidia.com/gpu.product": GPU_PRODUCT},
                    containers=[_container(gpus=8)],
                ),
            ),
        ),
    )
    apps.create_namespaced_deployment(namespace, deployment)

    def ready() -> bool:
        status = apps.read_namespaced_deployment_status("gpu-burn", namespace).status
        return bool(status.ready_replicas == 3 and status.available_replicas == 3)

    wait_for(ready, timeout=60, what="3 ready replicas")
    pods = core.list_namespaced_pod(namespace, label_selector="app=gpu-burn").items
    assert len(pods) == 3
    hosts = set()
    for pod in pods:
        assert pod.status.phase == "Running"
        assert pod.status.pod_ip
        assert all(c.ready for c in pod.status.container_statuses)
        node = core.read_node(pod.spec.node_name)
        assert node.metadata.labels["nvidia.com/gpu.product"] == GPU_PRODUCT
        internal = [a.address for a in node.status.addresses if a.type == "InternalIP"]
        assert pod.status.host_ip == internal[0]
        hosts.add(pod.spec.node_name)
    # 8 GPUs per node and 8 per pod: the scheduler must spread them one per node.
    assert len(hosts) == 3


def test_unschedulable_gpu_request_stays_pending(core: Any, namespace: str) -> None:
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="too-many-gpus"),
        spec=client.V1PodSpec(containers=[_container(gpus=9)]),
    )
    core.create_namespaced_pod(namespace, pod)

    def unschedulable() -> bool:
        status = core.read_namespaced_pod("too-many-gpus", namespace).status
        return any(
            c.type == "PodScheduled" and c.reason == "Unschedulable"
            for c in status.conditions or []
        )

    wait_for(unschedulable, timeout=30, what="the scheduler to report Unschedulable")
    assert _pod_phase(core, namespace, "too-many-gpus") == "Pending"


def test_helm_test_hook_pod_succeeds_and_plain_pod_keeps_running(core: Any, namespace: str) -> None:
    hook = client.V1Pod(
        metadata=client.V1ObjectMeta(
            name="release-test-connection",
            annotations={
                "helm.sh/hook": "test",
                "helm.sh/hook-delete-policy": "before-hook-creation",
            },
        ),
        spec=client.V1PodSpec(restart_policy="Never", containers=[_container("wget")]),
    )
    plain = client.V1Pod(
        metadata=client.V1ObjectMeta(name="plain"),
        spec=client.V1PodSpec(containers=[_container()]),
    )
    core.create_namespaced_pod(namespace, hook)
    core.create_namespaced_pod(namespace, plain)
    wait_for(
        lambda: _pod_phase(core, namespace, "release-test-connection") == "Succeeded",
        timeout=30,
        what="the helm test pod to succeed",
    )
    done = core.read_namespaced_pod("release-test-connection", namespace)
    terminated = done.status.container_statuses[0].state.terminated
    assert terminated.exit_code == 0
    assert terminated.reason == "Completed"
    assert _pod_phase(core, namespace, "plain") == "Running"

    core.delete_namespaced_pod("plain", namespace)
    wait_for(
        lambda: "plain" not in {p.metadata.name for p in core.list_namespaced_pod(namespace).items},
        timeout=30,
        what="the deleted pod to disappear",
    )


def test_job_completes(batch: Any, namespace: str) -> None:
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name="once"),
        spec=client.V1JobSpec(
            backoff_limit=0,
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(restart_policy="Never", containers=[_container()])
            ),
        ),
    )
    batch.create_namespaced_job(namespace, job)
    wait_for(
        lambda: (batch.read_namespaced_job_status("once", namespace).status.succeeded or 0) >= 1,
        timeout=60,
        what="the Job to succeed",
    )


def test_second_cluster_on_a_used_port_is_refused(cluster: Cluster, tmp_path: Path) -> None:
    port = cluster.ports.kube_apiserver
    assert port_in_use(port)
    with (
        pytest.raises(ControlPlaneError, match=rf"already in use: kube_apiserver={port}"),
        Cluster.start(tmp_path, kube_apiserver_port=port),
    ):
        pytest.fail("a second cluster started on a port in use")
    assert not (tmp_path / "kwok").exists()
    with (
        pytest.raises(ControlPlaneError, match="already holds cluster"),
        Cluster.start(cluster.workdir),
    ):
        pytest.fail("a second cluster started in the workdir of the first")
    # The first cluster is untouched.
    assert cluster.kubectl("get", "--raw=/readyz").strip() == "ok"


def test_cluster_start_time_is_recorded(cluster: Cluster) -> None:
    assert cluster.start_seconds > 0
    assert set(cluster.timings) >= {"kwokctl_create", "api_ready", "nodes_ready"}


def test_scheduler_and_controller_manager_run_without_leader_election(
    cluster: Cluster, core: Any, namespace: str
) -> None:
    """The one kube-scheduler and kube-controller-manager hold no leader lease: a starved
    machine cannot make them lose one and exit (pods then stay unscheduled for good). Both still
    work: a pod is scheduled after the check."""
    leases = cluster.kubectl_json("get", "leases", "-n", "kube-system")["items"]
    names = {lease["metadata"]["name"] for lease in leases}
    assert not names & {"kube-scheduler", "kube-controller-manager"}, names
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="after-lease-check"),
        spec=client.V1PodSpec(containers=[_container()]),
    )
    core.create_namespaced_pod(namespace, pod)
    wait_for(
        lambda: core.read_namespaced_pod("after-lease-check", namespace).spec.node_name,
        timeout=60,
        what="the pod to be scheduled",
    )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"nodeGroups": []}, "non-empty"),
        ({"nodeGroups": [{"name": "a", "count": 1}]}, "resources.cpu"),
        (
            {
                "nodeGroups": [
                    {
                        "name": "a",
                        "count": 2,
                        "namePattern": "x",
                        "resources": {"cpu": 1, "memory": "1Gi"},
                    }
                ]
            },
            "appears twice",
        ),
        (
            {
                "nodeGroups": [
                    {
                        "name": "a",
                        "count": 1,
                        "resources": {"cpu": 1, "memory": "1Gi"},
                        "gpu": {"count": 8},
                    }
                ]
            },
            "gpu.product",
        ),
        ({"nodeGroups": [{"name": "a", "count": 1, "colour": "red"}]}, "unknown keys"),
    ],
)
def test_bad_fleet_files_are_rejected(document: dict[str, Any], message: str) -> None:
    with pytest.raises(FleetError, match=message):
        parse_fleet(document)


def test_cluster_is_torn_down_when_the_body_fails(cluster: Cluster, tmp_path: Path) -> None:
    started: list[Cluster] = []
    with pytest.raises(RuntimeError, match="boom"), Cluster.start(tmp_path, name="doomed") as c:
        started.append(c)
        assert c.kubectl("get", "--raw=/readyz").strip() == "ok"
        assert c.ports.kube_apiserver != cluster.ports.kube_apiserver
        raise RuntimeError("boom")
    (doomed,) = started
    marker = str(doomed.cluster_dir).encode()
    leftovers = [
        proc.name
        for proc in Path("/proc").iterdir()
        if proc.name.isdigit() and _cmdline(proc).find(marker) >= 0
    ]
    assert leftovers == []
    assert not doomed.cluster_dir.exists()
    assert (tmp_path / "logs" / "kube-apiserver.log").is_file()
    wait_for(
        lambda: not port_in_use(doomed.ports.kube_apiserver),
        timeout=10,
        what="the apiserver port to be free",
    )
    # The session cluster is unaffected.
    assert cluster.kubectl("get", "--raw=/readyz").strip() == "ok"


def _cmdline(proc: Path) -> bytes:
    try:
        return proc.joinpath("cmdline").read_bytes()
    except OSError:
        return b""


HOOK_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: hook-demo\nversion: 0.1.0\nkubeVersion: '>= 1.29.0-0'\n",
    "templates/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {nvidia.com/gpu.present: "true"}
      containers: [{name: web, image: nginx}]
""",
    "templates/tests/test-connection.yaml": """\
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test-connection
  annotations: {helm.sh/hook: test}
spec:
  restartPolicy: Never
  containers: [{name: wget, image: busybox, command: [wget, "{{ .Release.Name }}-web"]}]
""",
}


@pytest.mark.parametrize("helm_name", ["helm", "helm3"])
def test_helm_install_wait_and_helm_test_finish(
    cluster: Cluster, namespace: str, tmp_path: Path, helm_name: str
) -> None:
    from slinky_harness.build import toolchain  # noqa: PLC0415 - builds helm on first use

    helm = toolchain.ensure(helm_name)
    chart = tmp_path / "hook-demo"
    for name, text in HOOK_CHART.items():
        (chart / name).parent.mkdir(parents=True, exist_ok=True)
        (chart / name).write_text(text)
    env = cluster.env()
    for var in ("HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME"):
        env[var] = str(tmp_path / var.lower())
    base = [str(helm), "--kubeconfig", str(cluster.kubeconfig), "-n", namespace]
    for args in (
        ["install", "demo", str(chart), "--wait", "--timeout", "60s"],
        ["test", "demo", "--timeout", "60s"],
    ):
        proc = subprocess.run(
            [*base, *args], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert proc.returncode == 0, proc.stderr
    assert "Phase:          Succeeded" in proc.stdout
