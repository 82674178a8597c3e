"""A real Slurm cluster from ``helm install``: slurm-operator's operator and webhook run as pods
on the real node (slinky_harness.k8s.realnode), then slurm-cluster with the ``kind`` profile and
the overrides of :func:`cluster_values`; the operator makes the slurmctld, slurmd, slurmrestd and
login pods from the images of slinky_harness.build.images, and Slurm runs jobs in them.

One real node per machine: the whole file runs in one worker (``--dist loadscope``) on the
module's node. What the overrides change, and why a real node needs it:

* every pod selects the real node (``nodeSelector``): the kwok nodes beside it run nothing;
* ``nodesetDefaults.oversubscribeNode: true``: all slurmd pods share the one real node (the
  operator otherwise keeps NodeSet pods apart with anti-affinity);
* ``controller.persistence.enabled: false``: the cluster has no storage provisioner;
* ``cgroup.conf`` ``CgroupPlugin=disabled``: the operator's default ``cgroup/v2`` cannot run on
  this machine's hybrid cgroup v1 hierarchy (slurmd exits); then ``ProctrackType`` and
  ``TaskPlugin`` must not be cgroup's (Slurm's defaults are, and the operator sets neither: slurmd
  exits with "Trying to initialize cgroups but CgroupPlugin=disabled");
* accounting (the last test, by ``helm upgrade``) needs a database the chart does not deploy:
  MariaDB from the builder's image, applied by the test;
* the ``gpu`` NodeSet declares two emulated GPUs (``Gres=gpu:emu:2``) whose device files an init
  container makes (``mknod``) in a folder the slurmd container mounts at ``/dev/emu``.

gpu-topology-labeler (after accounting, before the bridge): the chart is installed in the
cluster's namespace, its controller on the real node, from the podman-built labeler image
imported under the chart's reference. What that needs:

* the real node carries the fabric labels a provider would put on it (:data:`FABRIC`, leaf and
  spine through ``topology.labelMap``), and ``topology.nodeSelector`` keeps the kwok nodes (no
  slurmd) out of the fabric;
* the labeler writes topology.yaml in the dynamic shape (switches, no node names: Slurm's names
  are slurmd pod hostnames) and the node's ``topology.slinky.slurm.net/spec``; the operator gives
  that spec to every Slurm node whose pod runs on the node;
* ``helm upgrade --reuse-values`` (the accounting upgrade's values kept) adds
  ``topology.configMapRef.name``: the operator rolls slurmctld, which loads the labeler's file.

slurm-bridge (the last tests): the chart is installed beside the cluster (release ``slurm`` in
``slurm``, so its ``Token`` is minted by the real operator), its three pods on the real node. The
real node becomes a Slurm *external* node (upstream's first mode: the node labelled
``scheduler.slinky.slurm.net/external-node``, its partitions annotated); the Kubernetes node that
Slurm allocates is then the node the pod's container really runs on. What that needs:

* ``NodeSet=bridged Feature=slurm-bridge`` and the bridge partition on it (upstream's docs), and
  the annotation set before the label: Slurm puts a dynamic node in a NodeSet by the features it
  is created with, and the features the bridge sets afterwards leave the partition empty;
* ``MCSPlugin=mcs/label`` for the MCS label of the bridge's jobs (the ``co-location`` profile's);
* ``PriorityType=priority/multifactor``: priority/basic (the ``fifo`` preset) gives jobs
  priorities near 2^32, which slurm-bridge 1.2.1 reads as an int32; its job cache fails and no pod
  is ever placed;
* the bridge's controllers taint the node ``slinky.slurm.net/managed-node:NoExecute``: every pod
  on the real node (the operator's, Slurm's, MariaDB, CoreDNS, the bridge's own) tolerates it, or
  the taint evicts it.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from slinky_harness.build.images import LOGFILE_IMAGE, MARIADB_IMAGE, ensure_images
from slinky_harness.core.polling import wait_for
from slinky_harness.helm.charts import published_ref
from slinky_harness.helm.client import Helm, install_past_webhook_race, values_text
from slinky_harness.k8s import realpods

if TYPE_CHECKING:
    from collections.abc import Iterator


REPO = Path(__file__).resolve().parents[2]
NS = "slurm"
OPERATOR_NS = "slinky"
RELEASE = "slurm"
NODE_NAME = realpods.node_name()
"""The real node's name, or the kind worker's when ``SLINKY_REAL_PODS=kind:<cluster>`` (nox -s kind)."""
ON_REAL_NODE = {"kubernetes.io/hostname": NODE_NAME}
BRIDGED_TAINT = "slinky.slurm.net/managed-node"
"""slurm-bridge's NoExecute taint on a Kubernetes node that is also a Slurm node."""
TOLERATE_BRIDGED = [{"key": BRIDGED_TAINT, "operator": "Exists", "effect": "NoExecute"}]
BRIDGE_RELEASE = "slurm-bridge"
BRIDGE_PARTITION = "slurm-bridge"
MANAGED_NS = "bridged"
EXTERNAL_NODE_LABEL = "scheduler.slinky.slurm.net/external-node"
EXTERNAL_NODE_PARTITIONS = "scheduler.slinky.slurm.net/external-node-partitions"
JOB_ID_LABEL = "scheduler.slinky.slurm.net/slurm-jobid"
LABELER_RELEASE = "gtl"
TOPOLOGY_CONFIGMAP = "slurm-topology"
TOPOLOGY_SPEC = "topology.slinky.slurm.net/spec"
LEAF_LABEL = "fabric.slinky.dev/leaf"
SPINE_LABEL = "fabric.slinky.dev/spine"
FABRIC = {LEAF_LABEL: "leaf-real", SPINE_LABEL: "spine-real"}
"""The fabric labels a provider would put on the real node: its leaf switch and the spine above."""
PROFILE = REPO / "values" / "kind.yaml"
FLEET = REPO / "tests" / "data" / "fleets" / "small-gpu.yaml"
APP = "app.kubernetes.io/name"
WAIT = 1200
"""Seconds to wait for another test file's real node (one per machine: test_real_node.py) to end:
under ``--dist loadscope`` the two files may start at once in two workers; they take turns."""


def _profile(section: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(PROFILE.read_text())[section]
    return data


def operator_values() -> dict[str, Any]:
    """The ``kind`` profile's slurm-operator section, its pods on the real node."""
    values = _profile("slurm-operator")
    for part in ("operator", "webhook"):
        values[part]["nodeSelector"] = ON_REAL_NODE
        values[part]["tolerations"] = TOLERATE_BRIDGED
    return values


def cluster_values(compute: int = 2) -> dict[str, Any]:
    """The ``kind`` profile's slurm-cluster section and the overrides of the module docstring."""
    values = _profile("slurm-cluster")
    values["controller"]["persistence"] = {"enabled": False}
    on_real_node = {"nodeSelector": ON_REAL_NODE, "tolerations": TOLERATE_BRIDGED}
    values["controller"]["podSpec"] = on_real_node
    values["controller"]["extraConf"] = "\n".join(
        [
            "GresTypes=gpu",
            # Slurm's defaults (proctrack/cgroup) need cgroups, which CgroupPlugin=disabled turns off
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            # slurm-bridge: its external jobs carry an MCS label; the nodes it registers carry
            # the feature of their partition, which this NodeSet maps into the bridge partition
            "MCSPlugin=mcs/label",
            # priority/basic (the fifo preset) numbers jobs from 0xFFFEFFFF down, which
            # slurm-bridge 1.2.1 cannot read (an int32): its job cache fails and no pod is placed
            "PriorityType=priority/multifactor",
            "MCSParameters=ondemand,ondemandselect",
            f"NodeSet=bridged Feature={BRIDGE_PARTITION}",
            f"PartitionName={BRIDGE_PARTITION} Nodes=bridged MaxTime=UNLIMITED State=UP",
        ]
    )
    values["restapi"]["podSpec"] = on_real_node
    values["loginsetDefaults"] = {"podSpec": on_real_node}
    # one real node: several slurmd pods on it (upstream's "testing only" switch)
    values["nodesetDefaults"] = {
        "podSpec": on_real_node,
        "oversubscribeNode": True,
    }
    values["configFiles"] = {
        "cgroup.conf": "CgroupPlugin=disabled\n",
        "gres.conf": "NodeName=gpu-[0-9] Name=gpu Type=emu File=/dev/emu/gpu[0-1]\n",
    }
    values["prologScripts"] = {
        "10-mark.sh": '#!/bin/sh\necho "prolog of $SLURM_JOB_ID" > /tmp/prolog-$SLURM_JOB_ID\n'
    }
    small = {"requests": {"cpu": "50m", "memory": "64Mi"}}
    compute_set = values["nodesets"]["compute"]
    compute_set["replicas"] = compute
    compute_set["slurmd"]["resources"] = small
    values["nodesets"]["gpu"] = {
        "enabled": True,
        "replicas": 1,
        "extraConfMap": {"Gres": "gpu:emu:2"},
        "partition": {"enabled": True, "config": "MaxTime=01:00:00"},
        "slurmd": {
            "resources": small,
            "volumeMounts": [{"name": "emu-gpus", "mountPath": "/dev/emu"}],
        },
        "podSpec": {
            **on_real_node,
            "volumes": [{"name": "emu-gpus", "emptyDir": {}}],
            "initContainers": [
                {
                    "name": "emu-gpus",
                    "image": LOGFILE_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "securityContext": {"privileged": True},
                    "command": [
                        "sh", "-c", "mknod -m 666 /emu/gpu0 c 1 3 && mknod -m 666 /emu/gpu1 c 1 5",
                    ],
                    "volumeMounts": [{"name": "emu-gpus", "mountPath": "/emu"}],
                }
            ],
        },
    }  # fmt: skip
    values["controller"]["slurmctld"]["resources"] = small
    return values


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[realpods.RealPods]:
    """The module's real node (or kind worker: slinky_harness.k8s.realpods) with every image of
    slinky_harness.build.images imported."""
    started = time.monotonic()
    archives = ensure_images()
    built = time.monotonic()
    with realpods.start(tmp_path_factory.mktemp("realslurm"), FLEET, wait=WAIT) as running:
        running.import_images(archives)
        timings = getattr(running, "timings", {})
        print(
            f"images {built - started:.1f}s, node and import {time.monotonic() - built:.1f}s "
            f"({', '.join(f'{k} {v:.1f}s' for k, v in timings.items())})"
        )
        yield running


@pytest.fixture(scope="module")
def helm(node: realpods.RealPods, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm.pinned(cluster=node.cluster, home=tmp_path_factory.mktemp("helm-home"))


def _values_file(tmp: Path, name: str, values: dict[str, Any]) -> str:
    path = tmp / f"{name}.yaml"
    path.write_text(values_text(values))
    return str(path)


def _pods(node: realpods.RealPods, namespace: str, selector: str = "") -> list[dict[str, Any]]:
    args = ["get", "pods", "-n", namespace, "-o", "json"]
    if selector:
        args += ["-l", selector]
    items: list[dict[str, Any]] = json.loads(node.cluster.kubectl(*args))["items"]
    return items


def _describe_pods(node: realpods.RealPods, namespace: str) -> str:
    return node.cluster.kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False)


@pytest.fixture(scope="module")
def operator(node: realpods.RealPods, helm: Helm, tmp_path_factory: pytest.TempPathFactory) -> str:
    """slurm-operator installed (CRDs, the operator and the webhook as pods); its namespace."""
    tmp = tmp_path_factory.mktemp("operator-values")
    started = time.monotonic()
    helm.run(
        "install", "slurm-operator", str(REPO / "charts" / "slurm-operator"),
        "-n", OPERATOR_NS, "--create-namespace", "-f", _values_file(tmp, "op", operator_values()),
        "--wait", "--timeout", "180s", timeout=240,
    )  # fmt: skip
    print(f"slurm-operator ready in {time.monotonic() - started:.1f}s")
    return OPERATOR_NS


def _named(node: realpods.RealPods, app: str) -> list[str]:
    """Names of the pods of ``app`` (the operator's ``app.kubernetes.io/name``) in :data:`NS`."""
    return sorted(p["metadata"]["name"] for p in _pods(node, NS, f"{APP}={app}"))


def _slurmctld(
    node: realpods.RealPods, *command: str, check: bool = True, timeout: float = 60
) -> str:
    pods = _named(node, "slurmctld")
    if not pods:
        return ""
    return node.cluster.kubectl(
        "exec", "-n", NS, pods[0], "-c", "slurmctld", "--", *command,
        check=check, timeout=timeout,
    )  # fmt: skip


def _idle_nodes(node: realpods.RealPods) -> dict[str, str]:
    out = _slurmctld(node, "sinfo", "-h", "-N", "-o", "%N %t", check=False, timeout=20)
    return dict(line.split() for line in out.splitlines() if len(line.split()) == 2)


@pytest.fixture(scope="module")
def cluster(
    node: realpods.RealPods, helm: Helm, operator: str, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """slurm-cluster installed with :func:`cluster_values`; waits until every slurmd is idle."""
    tmp = tmp_path_factory.mktemp("cluster-values")
    started = time.monotonic()
    result = install_past_webhook_race(
        helm, RELEASE, str(REPO / "charts" / "slurm-cluster"),
        "-n", NS, "--create-namespace", "-f", _values_file(tmp, "cluster", cluster_values()),
    )  # fmt: skip
    assert result.ok, result.describe()

    def all_idle() -> bool:
        states = _idle_nodes(node)
        return len(states) == 3 and all(s == "idle" for s in states.values())

    def settled() -> bool:
        # the operator may roll the slurmd pods once the controller is up: all Ready, all idle
        pods = _pods(node, NS)
        ready = all(
            any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p["status"].get("conditions", [])
            )
            for p in pods
        )
        return len(pods) == 6 and ready and all_idle()

    try:
        wait_for(settled, timeout=300, what="six Ready pods and three idle slurmd", every=3)
    except Exception:
        print(_describe_pods(node, NS))
        print(node.cluster.kubectl("get", "events", "-n", NS, check=False)[-6000:])
        for pod in _pods(node, NS):
            name = pod["metadata"]["name"]
            for c in pod["spec"]["containers"]:
                print(f"--- {name}/{c['name']}")
                print(
                    node.cluster.kubectl(
                        "logs", "-n", NS, name, "-c", c["name"], "--tail=30", check=False
                    )
                )
        raise
    print(f"slurm-cluster idle in {time.monotonic() - started:.1f}s")
    return NS


def test_operator_and_webhook_run_as_pods_on_the_real_node(
    node: realpods.RealPods, operator: str
) -> None:
    """helm install slurm-operator: the operator and webhook images (built here from the Go
    binaries, under the chart's references) run as Ready pods on the real node."""
    pods = _pods(node, operator)
    images = {
        c["image"]: (p["spec"]["nodeName"], p["status"]["phase"])
        for p in pods
        for c in p["spec"]["containers"]
    }
    assert images == {
        "ghcr.io/slinkyproject/slurm-operator:1.2.1": (NODE_NAME, "Running"),
        "ghcr.io/slinkyproject/slurm-operator-webhook:1.2.1": (NODE_NAME, "Running"),
    }, images


def test_operator_made_slurm_pods_run_on_the_real_node(
    node: realpods.RealPods, cluster: str
) -> None:
    """The operator makes slurmctld, two compute slurmd, one gpu slurmd, slurmrestd and login
    pods, all Ready on the real node (none on a kwok node)."""
    pods = _pods(node, cluster)
    placed = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
    assert set(placed.values()) == {NODE_NAME}, placed
    apps = sorted(
        (p["metadata"]["labels"].get(APP, ""), p["spec"].get("hostname", "")) for p in pods
    )
    assert [a for a, _ in apps].count("slurmctld") == 1, apps
    assert [h for a, h in apps if a == "slurmd"] == ["compute-0", "compute-1", "gpu-0"], apps
    assert [a for a, _ in apps].count("slurmrestd") == 1, apps
    assert [a for a, _ in apps].count("login") == 1, apps
    not_ready = [
        p["metadata"]["name"]
        for p in pods
        if not any(
            c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"]
        )
    ]
    assert not_ready == [], f"pods not Ready: {not_ready}\n{_describe_pods(node, cluster)}"


def test_sinfo_shows_the_nodesets_idle(node: realpods.RealPods, cluster: str) -> None:
    """slurmd registered configless through the controller's Service name: sinfo (kubectl exec
    in the slurmctld pod) lists each NodeSet's nodes idle in its partition."""
    out = _slurmctld(node, "sinfo", "-h", "-o", "%P %D %t")
    rows = {tuple(line.split()) for line in out.splitlines()}
    assert ("compute*", "2", "idle") in rows, out
    assert ("gpu", "1", "idle") in rows, out
    conf = _slurmctld(node, "scontrol", "show", "config")
    assert re.search(r"SlurmctldParameters\s*=.*enable_configless", conf), conf


def test_srun_runs_in_two_slurmd_pods(node: realpods.RealPods, cluster: str) -> None:
    """``srun -N2 hostname`` runs one task in each of two slurmd pods (their hostnames)."""
    out = _slurmctld(node, "srun", "-N2", "-p", "compute", "hostname", timeout=90)
    assert sorted(out.split()) == ["compute-0", "compute-1"], out


def test_job_without_partition_lands_in_the_default_one(
    node: realpods.RealPods, cluster: str
) -> None:
    """A job with no ``-p`` runs in the partition the values mark ``Default=YES`` (compute)."""
    out = _slurmctld(node, "srun", "-N1", "sh", "-c", "echo $SLURM_JOB_PARTITION", timeout=90)
    assert out.strip() == "compute", out


def test_prolog_from_values_runs(node: realpods.RealPods, cluster: str) -> None:
    """The prolog that ``prologScripts`` defines runs before the job on its node: its file is
    there when the job looks."""
    out = _slurmctld(
        node, "srun", "-N1", "-p", "compute", "sh", "-c", "cat /tmp/prolog-$SLURM_JOB_ID",
        timeout=90,
    )  # fmt: skip
    assert re.fullmatch(r"prolog of \d+", out.strip()), out


def test_gpu_job_lands_on_the_nodeset_with_emulated_gpus(
    node: realpods.RealPods, cluster: str
) -> None:
    """``--gres=gpu:1`` in the gpu partition runs on the gpu NodeSet's node, which has the
    emulated GPU device files; Slurm hands the job one of them."""
    out = _slurmctld(
        node, "srun", "-N1", "-p", "gpu", "--gres=gpu:1", "sh", "-c",
        'echo "$(hostname) $CUDA_VISIBLE_DEVICES"; ls /dev/emu',
        timeout=90,
    )  # fmt: skip
    first, *files = out.split("\n")
    assert first.split()[0] == "gpu-0", out
    assert first.split()[1:] in (["0"], ["1"]), f"no GPU index handed to the job: {out}"
    assert sorted(f for f in files if f) == ["gpu0", "gpu1"], out
    nodes = _slurmctld(node, "scontrol", "show", "node", "gpu-0")
    assert "Gres=gpu:emu:2" in nodes, nodes


def test_slurmrestd_answers_a_jwt_request(node: realpods.RealPods, cluster: str) -> None:
    """A token from ``scontrol token`` authenticates a request to slurmrestd's Service, which
    answers with the cluster's nodes."""
    token = _slurmctld(node, "scontrol", "token", "username=slurm").strip()
    assert token.startswith("SLURM_JWT="), token
    jwt = token.removeprefix("SLURM_JWT=")
    services = node.cluster.kubectl(
        "get",
        "svc",
        "-n",
        NS,
        "-l",
        f"{APP}=slurmrestd",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    )
    host = f"{services.strip()}.{NS}"
    url = f"http://{host}:6820/slurm/v0.0.45/nodes"
    script = (
        "exec 3<>/dev/tcp/$0/6820; "
        'printf "GET /slurm/v0.0.45/nodes HTTP/1.0\\r\\nHost: %s\\r\\nConnection: close\\r\\n'
        'X-SLURM-USER-NAME: slurm\\r\\nX-SLURM-USER-TOKEN: %s\\r\\n\\r\\n" "$0" "$1" >&3; '
        "timeout 30 cat <&3"
    )
    out = _slurmctld(node, "bash", "-c", script, host, jwt)
    assert " 200 " in out.split("\n", 1)[0], f"{url}: {out[:2000]}"
    # kubectl's output is read as text (\r\n is \n); the body is one JSON document
    body, _ = json.JSONDecoder().raw_decode(out.split("\n\n", 1)[1])
    assert {n["name"] for n in body["nodes"]} >= {"compute-0", "compute-1", "gpu-0"}, body


def test_login_pod_submits_with_sbatch(node: realpods.RealPods, cluster: str) -> None:
    """In the login pod (sackd fetched the configuration) ``sbatch --wait`` submits a job that
    runs and ends COMPLETED."""
    (login,) = _named(node, "login")
    out = node.cluster.kubectl(
        "exec", "-n", NS, login, "-c", "login", "--",
        "sbatch", "--parsable", "--wait", "-N1", "-o", "/dev/null", "--wrap", "true",
        timeout=120,
    )  # fmt: skip
    job = out.strip().split(";")[0]
    state = _slurmctld(node, "scontrol", "show", "job", job)
    assert "JobState=COMPLETED" in state, state


def test_helm_upgrade_changing_a_nodeset_is_followed(
    node: realpods.RealPods, helm: Helm, cluster: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``helm upgrade`` to three compute replicas: the operator adds a slurmd pod and Slurm
    shows a third idle compute node."""
    tmp = tmp_path_factory.mktemp("upgrade-values")
    helm.run(
        "upgrade", RELEASE, str(REPO / "charts" / "slurm-cluster"), "-n", NS,
        "-f", _values_file(tmp, "cluster", cluster_values(compute=3)),
    )  # fmt: skip

    def third_idle() -> bool:
        return _idle_nodes(node).get("compute-2") == "idle"

    with contextlib.suppress(Exception):
        wait_for(third_idle, timeout=180, what="compute-2 idle", every=3)
    states = _idle_nodes(node)
    assert states.get("compute-2") == "idle", f"{states}\n{_describe_pods(node, NS)}"


def _mariadb(namespace: str) -> list[dict[str, Any]]:
    """The accounting database (the chart deploys none): MariaDB from :data:`MARIADB_IMAGE` on
    the real node, its password in Secret ``slurm-db``, Service ``mariadb``."""
    labels = {"app": "mariadb"}
    env = [
        {"name": "MARIADB_USER", "value": "slurm"},
        {"name": "MARIADB_DATABASE", "value": "slurm_acct_db"},
        {
            "name": "MARIADB_PASSWORD",
            "valueFrom": {"secretKeyRef": {"name": "slurm-db", "key": "password"}},
        },
    ]
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "slurm-db", "namespace": namespace},
            "stringData": {"password": "real-node-test"},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "mariadb", "namespace": namespace},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "nodeSelector": ON_REAL_NODE,
                        "tolerations": TOLERATE_BRIDGED,
                        "terminationGracePeriodSeconds": 1,
                        "containers": [
                            {
                                "name": "mariadb",
                                "image": MARIADB_IMAGE,
                                "imagePullPolicy": "IfNotPresent",
                                "env": env,
                                "ports": [{"containerPort": 3306}],
                                "readinessProbe": {
                                    "tcpSocket": {"port": 3306},
                                    "periodSeconds": 2,
                                },
                            }
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "mariadb", "namespace": namespace},
            "spec": {"selector": labels, "ports": [{"port": 3306, "targetPort": 3306}]},
        },
    ]


def test_accounting_records_jobs_in_sacct(
    node: realpods.RealPods, helm: Helm, cluster: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``helm upgrade`` with accounting on (slurmdbd as the operator's pod, MariaDB beside it):
    slurmctld registers with slurmdbd and ``sacct`` lists a job run afterwards as COMPLETED."""
    node.cluster.apply(_mariadb(NS))
    try:
        node.cluster.kubectl(
            "rollout", "status", "-n", NS, "deployment/mariadb", "--timeout=120s", timeout=130
        )
    except Exception:
        print(
            node.cluster.kubectl("logs", "-n", NS, "deployment/mariadb", "--tail=40", check=False)
        )
        raise
    values = cluster_values(compute=3)
    values["accounting"] = {
        "enabled": True,
        "podSpec": {"nodeSelector": ON_REAL_NODE, "tolerations": TOLERATE_BRIDGED},
        "storageConfig": {
            "host": f"mariadb.{NS}",
            "passwordKeyRef": {"name": "slurm-db", "key": "password"},
        },
    }
    tmp = tmp_path_factory.mktemp("accounting-values")
    helm.run(
        "upgrade", RELEASE, str(REPO / "charts" / "slurm-cluster"), "-n", NS,
        "-f", _values_file(tmp, "cluster", values),
    )  # fmt: skip

    def registered() -> bool:
        out = _slurmctld(node, "sacctmgr", "-n", "-P", "show", "cluster", check=False, timeout=20)
        return "slurm_slurm" in out

    try:
        wait_for(registered, timeout=240, what="the cluster in slurmdbd", every=5)
    except Exception:
        print(_describe_pods(node, NS))
        for name in _named(node, "slurmdbd"):
            print(node.cluster.kubectl("logs", "-n", NS, name, "--tail=30", check=False))
        raise

    def all_idle_again() -> bool:
        # the operator restarts slurmctld (and may roll the slurmd pods) for the new accountingRef
        states = _idle_nodes(node)
        return len(states) == 4 and set(states.values()) == {"idle"}

    wait_for(all_idle_again, timeout=240, what="four idle slurmd after the upgrade", every=5)
    out = _slurmctld(
        node, "srun", "-N1", "-p", "compute", "sh", "-c", "echo $SLURM_JOB_ID", timeout=120
    )
    job = out.strip()
    assert job.isdigit(), out

    def in_sacct() -> str:
        out = _slurmctld(
            node, "sacct", "-X", "-n", "-P", "-j", job, "-o", "JobID,State", check=False
        )
        return out if "COMPLETED" in out else ""

    with contextlib.suppress(Exception):
        wait_for(in_sacct, timeout=60, what=f"job {job} in sacct", every=3)
    out = _slurmctld(node, "sacct", "-X", "-n", "-P", "-j", job, "-o", "JobID,State")
    assert out.strip() == f"{job}|COMPLETED", out


def labeler_values() -> dict[str, Any]:
    """gpu-topology-labeler's values beside the module's cluster: its controller on the real
    node (tolerating the bridge's taint), reading the two fabric labels of :data:`FABRIC` from
    the real node only (the kwok nodes run no slurmd) and writing :data:`TOPOLOGY_CONFIGMAP`,
    the ConfigMap slurm-cluster's ``topology.configMapRef`` names."""
    return {
        "topology": {
            "configMapName": TOPOLOGY_CONFIGMAP,
            "labelMap": {"leaf": LEAF_LABEL, "spine": SPINE_LABEL},
            "nodeSelector": ON_REAL_NODE,
        },
        "controller": {"nodeSelector": ON_REAL_NODE, "tolerations": TOLERATE_BRIDGED},
    }


def _labeler_account(helm: Helm) -> str:
    """The controller ServiceAccount the labeler release made (from its manifest, not its pod)."""
    manifest = helm.run("get", "manifest", LABELER_RELEASE, "-n", NS).stdout
    (account,) = [
        d["metadata"]["name"]
        for d in yaml.safe_load_all(manifest)
        if d and d["kind"] == "ServiceAccount"
        and d["metadata"]["labels"].get("app.kubernetes.io/component") == "controller"
    ]  # fmt: skip
    return str(account)


def _topology_configmap(node: realpods.RealPods) -> dict[str, Any] | None:
    out = node.cluster.kubectl(
        "get", "configmap", "-n", NS, TOPOLOGY_CONFIGMAP, "-o", "json", "--ignore-not-found"
    )
    return json.loads(out) if out.strip() else None


def _node_spec(node: realpods.RealPods) -> str:
    annotations = node.cluster.kubectl_json("get", "node", NODE_NAME)["metadata"].get(
        "annotations", {}
    )
    return str(annotations.get(TOPOLOGY_SPEC, ""))


@pytest.fixture(scope="module")
def labeler(
    node: realpods.RealPods, helm: Helm, cluster: str, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """The real node labelled with :data:`FABRIC` (as a provider labels its nodes), the labeler
    image (podman build) imported under the chart's reference, gpu-topology-labeler installed
    with :func:`labeler_values`; waits until its ConfigMap holds the real node's switches and
    the node carries its topology spec. Returns the release's controller ServiceAccount."""
    started = time.monotonic()
    node.import_labeler(published_ref())
    imported = time.monotonic()
    node.cluster.kubectl(
        "label", "node", NODE_NAME, "--overwrite", *(f"{k}={v}" for k, v in FABRIC.items())
    )
    tmp = tmp_path_factory.mktemp("labeler-values")
    try:
        helm.run(
            "install", LABELER_RELEASE, str(REPO / "charts" / "gpu-topology-labeler"), "-n", NS,
            "-f", _values_file(tmp, "labeler", labeler_values()),
            "--wait", "--timeout", "120s", timeout=180,
        )  # fmt: skip

        def written() -> bool:
            found = _topology_configmap(node)
            text = (found or {}).get("data", {}).get("topology.yaml", "")
            return FABRIC[LEAF_LABEL] in text and _node_spec(node) != ""

        wait_for(written, timeout=60, what=f"the labeler's {TOPOLOGY_CONFIGMAP}", every=1)
    except Exception:
        print(_describe_pods(node, NS))
        for pod in _pods(node, NS, "app.kubernetes.io/instance=" + LABELER_RELEASE):
            name = pod["metadata"]["name"]
            print(node.cluster.kubectl("logs", "-n", NS, name, "--tail=40", check=False))
        raise
    print(
        f"labeler image {imported - started:.1f}s, gpu-topology-labeler ready and topology "
        f"written in {time.monotonic() - imported:.1f}s"
    )
    return _labeler_account(helm)


def test_labeler_runs_as_a_pod_under_the_charts_service_account(
    node: realpods.RealPods, labeler: str
) -> None:
    """helm install gpu-topology-labeler: its controller runs as a Ready pod on the real node,
    from the image built here under the chart's reference (``IfNotPresent``: nothing pulled),
    under the ServiceAccount the chart made (so every API call of the labeler went through the
    chart's RBAC)."""
    (pod,) = _pods(node, NS, "app.kubernetes.io/instance=" + LABELER_RELEASE)
    name = pod["metadata"]["name"]
    assert pod["spec"]["serviceAccountName"] == labeler, pod["spec"]
    assert pod["spec"]["nodeName"] == NODE_NAME, pod["spec"]
    assert pod["status"]["phase"] == "Running", pod["status"]
    ready = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
    assert ready.get("Ready") == "True", pod["status"]
    (status,) = pod["status"]["containerStatuses"]
    assert status["image"] == published_ref(), status
    assert status["restartCount"] == 0, status
    events = node.cluster.kubectl(
        "get", "events", "-n", NS, f"--field-selector=involvedObject.name={name}"
    )
    assert "Pulling" not in events, events


def test_labeler_writes_the_topology_of_the_real_node(
    node: realpods.RealPods, labeler: str
) -> None:
    """From the real node's fabric labels the labeler writes topology.yaml into its ConfigMap
    (the dynamic shape: the tree's switches, no node names, since Slurm node names are slurmd
    pod hostnames) and the node's ``topology.slinky.slurm.net/spec``, the path through those
    switches that the operator gives every Slurm node running on it."""
    found = _topology_configmap(node)
    assert found is not None, f"no ConfigMap {TOPOLOGY_CONFIGMAP} in {NS}"
    topologies = yaml.safe_load(found["data"]["topology.yaml"])
    (fabric,) = [t for t in topologies if "tree" in t]
    switches = {s["switch"]: s.get("children", "") for s in fabric["tree"]["switches"]}
    assert switches.get(FABRIC[SPINE_LABEL]) == FABRIC[LEAF_LABEL], switches
    assert FABRIC[LEAF_LABEL] in switches, switches
    spec = f"{fabric['topology']}:{FABRIC[SPINE_LABEL]}:{FABRIC[LEAF_LABEL]}"
    assert _node_spec(node) == spec, _node_spec(node)


def _switch_nodes(node: realpods.RealPods, switch: str) -> list[str]:
    """The Slurm nodes ``scontrol show topology`` lists under ``switch`` (hostlist expanded)."""
    out = _slurmctld(node, "scontrol", "show", "topology", check=False, timeout=20)
    found = re.search(rf"SwitchName={re.escape(switch)}\s.*?\bNodes=(\S+)", out)
    if not found:
        return []
    names = _slurmctld(node, "scontrol", "show", "hostnames", found.group(1), timeout=20)
    return sorted(names.split())


@pytest.fixture(scope="module")
def topology_loaded(node: realpods.RealPods, helm: Helm, cluster: str, labeler: str) -> list[str]:
    """``helm upgrade`` of the cluster keeping every value the release has (``--reuse-values``:
    the accounting upgrade's included) plus ``topology.configMapRef.name`` naming the labeler's
    ConfigMap; waits until the operator rolled slurmctld, which loads topology.yaml, and every
    slurmd is under the labeler's leaf switch and idle. Returns the Slurm nodes."""
    started = time.monotonic()
    # every slurmd of the release: the restarted slurmctld forgets the dynamic nodes until each
    # registers again, so sinfo alone may list only the first ones back
    expected = sorted(_idle_nodes(node))
    helm.run(
        "upgrade", RELEASE, str(REPO / "charts" / "slurm-cluster"), "-n", NS, "--reuse-values",
        "--set", f"topology.configMapRef.name={TOPOLOGY_CONFIGMAP}",
    )  # fmt: skip

    def placed() -> list[str]:
        states = _idle_nodes(node)
        slurmd = sorted(states)
        under = _switch_nodes(node, FABRIC[LEAF_LABEL])
        whole = slurmd == expected and under == slurmd
        return slurmd if whole and set(states.values()) == {"idle"} else []

    try:
        nodes = wait_for(placed, timeout=240, what="every slurmd under the leaf", every=5)
    except Exception:
        print(_slurmctld(node, "scontrol", "show", "topology", check=False))
        print(_slurmctld(node, "sinfo", "-N", check=False))
        print(_describe_pods(node, NS))
        print(
            node.cluster.kubectl(
                "logs", "-n", OPERATOR_NS, "deployment/slurm-operator", "--tail=40", check=False
            )
        )
        raise
    print(f"topology loaded in {time.monotonic() - started:.1f}s")
    return list(nodes)


def test_slurmctld_loads_the_topology_the_labeler_wrote(
    node: realpods.RealPods, topology_loaded: list[str]
) -> None:
    """After the upgrade slurmctld runs on the labeler's topology.yaml: ``scontrol show
    topology`` has the spine above the leaf and every slurmd node (compute and gpu) under the
    leaf, placed there by the operator from the node's spec; a two-node job asking for one
    switch (``--switches=1``) runs."""
    assert {"compute-0", "compute-1", "gpu-0"} <= set(topology_loaded), topology_loaded
    shown = _slurmctld(node, "scontrol", "show", "topology")
    spine = re.search(rf"SwitchName={FABRIC[SPINE_LABEL]}\s.*?\bSwitches=(\S+)", shown)
    assert spine and spine.group(1) == FABRIC[LEAF_LABEL], shown
    out = _slurmctld(node, "srun", "-N2", "-p", "compute", "--switches=1", "hostname", timeout=120)
    assert len(set(out.split())) == 2, out


def bridge_values() -> dict[str, Any]:
    """slurm-bridge's values beside the module's cluster (release ``slurm`` in namespace ``slurm``,
    the chart's defaults for ``sharedConfig.slurmRestApi`` and its ``Token``): the three
    components on the real node, tolerating the taint their controllers put on it, and
    :data:`MANAGED_NS` managed."""
    placed = {"nodeSelector": ON_REAL_NODE, "tolerations": TOLERATE_BRIDGED}
    return {
        "operatorNamespace": OPERATOR_NS,
        "schedulerConfig": {"partition": BRIDGE_PARTITION},
        "scheduler": placed,
        "admission": {**placed, "managedNamespaces": [MANAGED_NS]},
        "controllers": placed,
    }


@pytest.fixture(scope="module")
def bridge(
    node: realpods.RealPods, helm: Helm, cluster: str, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """slurm-bridge installed in the cluster's namespace, the real node labelled as an external
    node of :data:`BRIDGE_PARTITION` (the bridge's controllers register it in Slurm); waits
    until Slurm shows it idle in that partition. Returns the bridge's scheduler name."""
    tmp = tmp_path_factory.mktemp("bridge-values")
    started = time.monotonic()
    try:
        helm.run(
            "install", BRIDGE_RELEASE, str(REPO / "charts" / "slurm-bridge"), "-n", NS,
            "-f", _values_file(tmp, "bridge", bridge_values()),
            "--wait", "--timeout", "180s", timeout=240,
        )  # fmt: skip
    except Exception:
        print(_describe_pods(node, NS))
        print(node.cluster.kubectl("get", "events", "-n", NS, check=False)[-4000:])
        raise
    node.cluster.kubectl("create", "namespace", MANAGED_NS)
    # the partitions first: Slurm maps a dynamic node into a NodeSet by the features it is
    # created with (features the bridge sets later do not move it into the partition)
    node.cluster.kubectl(
        "annotate", "node", NODE_NAME, f"{EXTERNAL_NODE_PARTITIONS}={BRIDGE_PARTITION}"
    )
    node.cluster.kubectl("label", "node", NODE_NAME, f"{EXTERNAL_NODE_LABEL}=true")

    def registered() -> bool:
        out = _slurmctld(
            node, "sinfo", "-h", "-p", BRIDGE_PARTITION, "-N", "-o", "%N", check=False, timeout=20
        )
        return out.split() == [NODE_NAME]

    try:
        wait_for(registered, timeout=120, what=f"{NODE_NAME} in {BRIDGE_PARTITION}", every=3)
    except Exception as error:
        diagnosis = [
            str(error),
            _slurmctld(node, "sinfo", "-a", check=False),
            _slurmctld(node, "scontrol", "show", "node", NODE_NAME, check=False),
            _describe_pods(node, NS),
        ]
        for pod in _pods(node, NS, "app.kubernetes.io/instance=" + BRIDGE_RELEASE):
            name = pod["metadata"]["name"]
            logs = node.cluster.kubectl("logs", "-n", NS, name, "--tail=40", check=False)
            diagnosis.append(f"--- {name}\n{logs}")
        pytest.fail("\n".join(diagnosis))
    print(f"slurm-bridge installed and {NODE_NAME} registered in {time.monotonic() - started:.1f}s")
    chart = yaml.safe_load((REPO / "charts" / "slurm-bridge" / "values.yaml").read_text())
    return str(chart["schedulerConfig"]["schedulerName"])


def test_bridge_components_run_as_pods_on_the_real_node(
    node: realpods.RealPods, bridge: str
) -> None:
    """helm install slurm-bridge: its scheduler, admission and controllers images (built here
    from the Go binaries, under the chart's references) run as Running pods on the real node,
    which its controllers registered in Slurm as an external node and tainted."""
    pods = _pods(node, NS, "app.kubernetes.io/instance=" + BRIDGE_RELEASE)
    images = {
        c["image"]: (p["spec"]["nodeName"], p["status"]["phase"])
        for p in pods
        for c in p["spec"]["containers"]
    }
    assert images == {
        f"ghcr.io/slinkyproject/slurm-bridge-{part}:1.2.1": (NODE_NAME, "Running")
        for part in ("scheduler", "admission", "controllers")
    }, images
    state = _slurmctld(node, "scontrol", "show", "node", NODE_NAME)
    assert "EXTERNAL" in state, f"{NODE_NAME} is not an external Slurm node:\n{state}"
    taints = node.cluster.kubectl_json("get", "node", NODE_NAME)["spec"].get("taints", [])
    assert {"key": BRIDGED_TAINT, "value": bridge, "effect": "NoExecute"} in taints, taints


def _bridged_pod(name: str, script: str) -> dict[str, Any]:
    """A plain pod in :data:`MANAGED_NS`: no schedulerName, no nodeSelector (the bridge's
    admission and Slurm decide)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": MANAGED_NS},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "work",
                    "image": LOGFILE_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", script],
                    "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}},
                }
            ],
        },
    }


def _pod(node: realpods.RealPods, name: str) -> dict[str, Any] | None:
    out = node.cluster.kubectl(
        "get", "pod", "-n", MANAGED_NS, name, "-o", "json", "--ignore-not-found"
    )
    return json.loads(out) if out.strip() else None


def _job_state(node: realpods.RealPods, job: str) -> str:
    out = _slurmctld(node, "scontrol", "show", "job", job, check=False)
    found = re.search(r"JobState=(\S+)", out)
    return found.group(1) if found else ""


@pytest.fixture(scope="module")
def bridged_pod(node: realpods.RealPods, bridge: str) -> tuple[dict[str, Any], str]:
    """The pod ``hello`` in :data:`MANAGED_NS`, Running; (its object, its Slurm job id)."""
    node.cluster.apply([_bridged_pod("hello", "echo hello from $(hostname); sleep 3600")])

    def running() -> dict[str, Any] | None:
        pod = _pod(node, "hello")
        return pod if pod and pod["status"].get("phase") == "Running" else None

    try:
        wait_for(running, timeout=120, what="the bridged pod Running", every=2)
    except Exception as error:
        diagnosis = [
            str(error),
            node.cluster.kubectl("describe", "pod", "-n", MANAGED_NS, "hello", check=False),
            _slurmctld(node, "squeue", "-a", check=False),
        ]
        for component in _pods(node, NS, "app.kubernetes.io/instance=" + BRIDGE_RELEASE):
            name = component["metadata"]["name"]
            logs = node.cluster.kubectl("logs", "-n", NS, name, "--tail=40", check=False)
            diagnosis.append(f"--- {name}\n{logs}")
        pytest.fail("\n".join(diagnosis))
    found = _pod(node, "hello")
    assert found is not None, "the bridged pod vanished"
    job = found["metadata"].get("labels", {}).get(JOB_ID_LABEL, "")
    return found, job


def test_pod_in_a_managed_namespace_is_scheduled_by_slurm_on_the_real_node(
    node: realpods.RealPods, bridge: str, bridged_pod: tuple[dict[str, Any], str]
) -> None:
    """A plain pod in the managed namespace: the admission hands it to the bridge's scheduler,
    which submits a Slurm job to the bridge partition; Slurm allocates the real node (its
    external node), the pod is bound there and its container runs (its output in the logs)."""
    pod, job = bridged_pod
    assert pod["spec"]["schedulerName"] == bridge, pod["spec"]
    assert job.isdigit(), f"no Slurm job id label {JOB_ID_LABEL}: {pod['metadata']}"
    assert pod["spec"]["nodeName"] == NODE_NAME, pod["spec"]
    record = _slurmctld(node, "scontrol", "show", "job", job)
    assert "JobState=RUNNING" in record, record
    assert f"Partition={BRIDGE_PARTITION}" in record, record
    assert re.search(rf"\bNodeList={NODE_NAME}\b", record), record
    logs = node.cluster.kubectl("logs", "-n", MANAGED_NS, "hello")
    assert logs.strip() == "hello from hello", logs


def test_deleting_the_bridged_pod_ends_its_slurm_job(
    node: realpods.RealPods, bridge: str, bridged_pod: tuple[dict[str, Any], str]
) -> None:
    """Deleting the pod ends its Slurm job: squeue no longer lists it as running."""
    _, job = bridged_pod
    assert _job_state(node, job) == "RUNNING", _job_state(node, job)
    node.cluster.kubectl("delete", "pod", "-n", MANAGED_NS, "hello", "--wait=true", timeout=60)

    def ended() -> bool:
        return _slurmctld(node, "squeue", "-h", "-j", job, "-o", "%T", check=False).strip() == ""

    with contextlib.suppress(Exception):
        wait_for(ended, timeout=60, what=f"job {job} gone from squeue", every=2)
    queued = _slurmctld(node, "squeue", "-h", "-j", job, "-o", "%T", check=False).strip()
    assert queued == "", f"job {job} still queued as {queued!r} after its pod was deleted"
    assert _job_state(node, job) in ("CANCELLED", "COMPLETED", ""), _job_state(node, job)
