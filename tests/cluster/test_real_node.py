"""The real node (slinky_harness.k8s.realnode): kubelet, kube-proxy, containerd and runc joined to
a kwok control plane beside kwok fleet nodes, in a private network namespace.

One real node per machine: this file is one of tests/conftest.py's ``REAL_NODE`` files, which
``--dist loadscope`` runs in one worker one after the other. The chart's labeler image under the
chart's reference runs as the chart's pod in tests/cluster/test_real_slurm.py. The first test
starts a node of its own and SIGKILLs its launcher; the module's node (``node``) serves the tests
after it, and the last one stops it and looks for what it left.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from slinky_harness.build.nodeparts import BUSYBOX_IMAGE
from slinky_harness.core import processes
from slinky_harness.core.polling import wait_for
from slinky_harness.k8s import hostrestore
from slinky_harness.k8s.fleet import load_fleet
from slinky_harness.k8s.nodeconfig import NETNS, NODE_NAME
from slinky_harness.k8s.realnode import RealNode

if TYPE_CHECKING:
    from collections.abc import Iterator

NS = "realnode-tests"
WAIT = 1200
"""Seconds to wait for another test file's real node (one per machine) to end."""


def _found(left: dict[str, list[str]]) -> dict[str, list[str]]:
    return {kind: items for kind, items in left.items() if items}


def _launch(workdir: Path, fleet: Path) -> tuple[subprocess.Popen[str], str]:
    """``python -m slinky_harness.k8s.realnode run`` until it prints ``ready`` (its line)."""
    with (workdir / "launcher.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "slinky_harness.k8s.realnode", "run",
             "--workdir", str(workdir), "--fleet", str(fleet), "--wait", str(WAIT)],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )  # fmt: skip
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + 600 + WAIT
    while time.monotonic() < deadline and proc.poll() is None:
        if selector.select(timeout=1):
            line = proc.stdout.readline()
            if line.startswith("ready"):
                return proc, line
    proc.kill()
    proc.wait()
    proc.stdout.close()
    tail = (workdir / "launcher.log").read_text()[-3000:]
    raise AssertionError(f"the launcher did not get ready (exit {proc.returncode}):\n{tail}")


def test_sigkill_of_the_launcher_is_cleaned_up_by_its_reaper(
    tmp_path: Path, fleet_file: Path
) -> None:
    """SIGKILL of the launcher of a running node (pods, mounts, cgroups, namespaces, kernel
    settings changed by kubelet) leaves nothing behind once its reaper has run."""
    proc, line = _launch(tmp_path, fleet_file)
    before = hostrestore.load(tmp_path / "node")
    running = _found(hostrestore.leftovers(before))
    try:
        # the node really holds what must be restored, so that "nothing left" below means
        # something: container processes and node daemons, pod mounts, cgroups, its namespace
        assert {"processes", "mounts", "cgroups", "folders"} <= set(running), running
        assert any(point.startswith(before.root + "/") for point in running["mounts"])
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    print(line.strip())

    def restored() -> bool:
        left = _found(hostrestore.leftovers(before))
        return not left and not processes.mentioning(f"{tmp_path / 'cluster'}/")

    with contextlib.suppress(Exception):
        wait_for(restored, timeout=120, what="the reaper's restore", every=1)
    assert _found(hostrestore.leftovers(before)) == {}
    assert processes.mentioning(f"{tmp_path / 'cluster'}/") == set()
    assert not NETNS.exists()


@pytest.fixture(scope="module")
def fleet_file() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / "fleets" / "small-gpu.yaml"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, fleet_file: Path) -> Iterator[RealNode]:
    """The module's real node, in a cluster with the small-gpu kwok fleet beside it."""
    with RealNode.start(tmp_path_factory.mktemp("realnode"), fleet_file, wait=WAIT) as running:
        steps = ", ".join(f"{k} {v:.1f}s" for k, v in running.timings.items())
        print(f"real node up: {steps}")
        running.cluster.kubectl("create", "namespace", NS)
        wait_for(
            lambda: "default" in running.cluster.kubectl("get", "sa", "-n", NS, check=False),
            timeout=60,
            what="the default ServiceAccount",
        )
        yield running


def _pod(name: str, command: str, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": NODE_NAME},
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": BUSYBOX_IMAGE,
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", command],
                    **extra,
                }
            ],
        },
    }


def _run_pod(node: RealNode, manifest: dict[str, Any]) -> None:
    node.cluster.apply([manifest])
    name = manifest["metadata"]["name"]
    node.cluster.kubectl(
        "wait", "-n", NS, f"pod/{name}", "--for=condition=Ready", "--timeout=90s", timeout=100
    )


def _node(node: RealNode, name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(node.cluster.kubectl("get", "node", name, "-o", "yaml"))
    return data


def test_real_node_is_ready_beside_kwok_nodes(node: RealNode, fleet_file: Path) -> None:
    """The real node reports through its own kubelet (containerd runtime, the pinned version);
    the fleet's nodes stay kwok's, and all are Ready in one cluster."""
    real = _node(node, NODE_NAME)
    info = real["status"]["nodeInfo"]
    assert info["containerRuntimeVersion"].startswith("containerd://1.6"), info
    assert info["kubeletVersion"] == "v1.36.3"
    assert "kwok.x-k8s.io/node" not in real["metadata"].get("annotations", {})
    for name in load_fleet(fleet_file).node_names():
        fake = _node(node, name)
        assert fake["status"]["nodeInfo"]["containerRuntimeVersion"] == "kwok://fake"
        ready = [c for c in fake["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", name
    assert node.ready()


def test_pod_from_a_local_image_runs_with_logs_and_exec(node: RealNode) -> None:
    """A pod from an image imported into containerd (no registry) runs on the real node; its
    logs and exec go through the API server to kubelet."""
    _run_pod(node, _pod("hello", "echo hello from $(hostname); exec sleep 3600"))
    pod = yaml.safe_load(node.cluster.kubectl("get", "pod", "-n", NS, "hello", "-o", "yaml"))
    assert pod["spec"]["nodeName"] == NODE_NAME
    assert pod["status"]["podIP"].startswith("10.88.")
    logs = node.cluster.kubectl("logs", "-n", NS, "hello")
    assert logs.strip() == "hello from hello"
    out = node.cluster.kubectl("exec", "-n", NS, "hello", "--", "sh", "-c", "echo $((6 * 7))")
    assert out.strip() == "42"


def test_pod_reaches_a_service_by_its_dns_name(node: RealNode) -> None:
    """CoreDNS answers a Service's name with its ClusterIP, kube-proxy routes the ClusterIP to the
    pod behind it, and a name outside the cluster finds no answer (no way out)."""
    _run_pod(
        node,
        _pod(
            "web",
            "mkdir -p /tmp/www && echo served-by-web > /tmp/www/index.html && "
            "exec httpd -f -p 8080 -h /tmp/www",
        ),
    )
    node.cluster.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web", "namespace": NS},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
            }
        ]
    )
    ip = node.cluster.kubectl("get", "svc", "-n", NS, "web", "-o", "jsonpath={.spec.clusterIP}")
    _run_pod(node, _pod("client", "exec sleep 3600"))

    def fetch() -> str:
        return node.cluster.kubectl(
            "exec",
            "-n",
            NS,
            "client",
            "--",
            "wget",
            "-q",
            "-O",
            "-",
            f"http://web.{NS}.svc.cluster.local/",
            check=False,
            timeout=30,
        )  # fmt: skip  (busybox 1.35's static wget crashes with -T)

    # the first lookups can fail until kube-proxy has programmed the DNS Service's endpoints
    wait_for(lambda: "served-by-web" in fetch(), timeout=60, what="web through its Service name")
    lookup = node.cluster.kubectl(
        "exec", "-n", NS, "client", "--", "nslookup", f"web.{NS}.svc.cluster.local"
    )
    assert ip in lookup
    outside = node.cluster.kubectl(
        "exec", "-n", NS, "client", "--", "nslookup", "example.com", check=False
    )
    assert "can't find example.com" in outside
    assert "Name:" not in outside


def test_stop_leaves_nothing_behind(node: RealNode) -> None:
    """Stopping the node (pods running) removes its containers, mounts, cgroups, network
    namespaces and folders and restores the kernel settings kubelet changed."""
    before = hostrestore.load(node.state)
    running = _found(hostrestore.leftovers(before))
    assert {"processes", "mounts", "cgroups"} <= set(running), running
    left = node.stop()
    assert _found(left) == {}
    assert _found(hostrestore.leftovers(before)) == {}
    assert not NETNS.exists()
    assert hostrestore.kernel_values() == before.kernel
