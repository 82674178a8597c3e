"""A real node beside the kwok nodes: kubelet, kube-proxy, containerd and runc joined to the
harness's control plane, with CNI pod networking and CoreDNS, all in a private network namespace.

``RealNode.start(workdir, fleet=...)`` (one per machine: it holds :data:`LOCK`):

1. records what it will change on the machine (:func:`slinky_harness.k8s.hostrestore.record`) and
   starts a reaper that restores it should this process die, SIGKILL included;
2. makes the network namespace :data:`NETNS`: loopback and an empty bridge ``node0`` holding the
   node's IP and the ``kubernetes`` Service IP (so kwokctl puts it in the API server's
   certificate), the default route into it and nothing else: no way out of the machine;
3. starts the kwok control plane in it (:class:`slinky_harness.k8s.cluster.Cluster`, whose kwok
   controller plays kubelet only for the fleet's annotated nodes);
4. starts containerd (``restrict_oom_score_adj``: root here lacks CAP_SYS_RESOURCE) and imports
   the pause, CoreDNS and busybox images (:mod:`slinky_harness.build.nodeparts`), then kube-proxy
   and kubelet (cgroupfs, cgroup v1 allowed, anonymous read of its API for logs and exec);
5. waits for the node to be Ready and deploys CoreDNS as ``kube-dns`` at :data:`DNS_IP`.

On exit it cordons the node, deletes its pods, stops kubelet, kube-proxy and containerd, stops
the cluster and restores the machine. Pods run on it when they select it
(``nodeSelector: {kubernetes.io/hostname: realnode}``) with images it holds
(``imagePullPolicy: Never`` or ``IfNotPresent``); there is no registry.

Usage::

    python -m slinky_harness.k8s.realnode run --workdir DIR    # until Ctrl-C; "ready" on stdout
    python -m slinky_harness.k8s.realnode restore DIR/node      # put the machine back
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import yaml

from slinky_harness.build.controlplane import ControlPlaneError, ensure_binaries
from slinky_harness.build.nodeparts import NodeParts, ensure_parts
from slinky_harness.core import processes
from slinky_harness.core.errors import HarnessError, WaitTimeout
from slinky_harness.core.polling import wait_for
from slinky_harness.k8s import hostrestore
from slinky_harness.k8s.cluster import Cluster
from slinky_harness.k8s.nodeconfig import (
    NETNS,
    NETNS_NAME,
    NODE_IP,
    NODE_NAME,
    ROOT,
    RUN_DIR,
    SERVICE_IP,
    cni_config,
    containerd_config,
    coredns_manifests,
    kube_proxy_config,
    kubelet_config,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from slinky_harness.build.podman import Podman
    from slinky_harness.k8s.fleet import Fleet

LOCK = Path("/run/slinky-realnode.lock")
SCRIPTS = Path(__file__).resolve().parents[2]


class RealNodeError(HarnessError):
    """The real node could not start or stop; the message names the component and its log."""


def _tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return f"    (no {path.name})"
    return "\n".join(f"    {line}" for line in text[-lines:])


def _run(argv: Sequence[str], *, what: str, timeout: float = 60) -> str:
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RealNodeError(f"{what} failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


# --- the node ----------------------------------------------------------------------------------


def _make_netns() -> None:
    """:data:`NETNS` with loopback and ``node0`` (node IP, Service IP, default route)."""
    _run(["ip", "netns", "add", NETNS_NAME], what=f"ip netns add {NETNS_NAME}")
    inside = ["nsenter", f"--net={NETNS}"]
    for step in (
        ["ip", "link", "set", "lo", "up"],
        ["ip", "link", "add", "node0", "type", "bridge"],
        ["ip", "addr", "add", f"{NODE_IP}/24", "dev", "node0"],
        ["ip", "addr", "add", f"{SERVICE_IP}/32", "dev", "node0"],
        ["ip", "link", "set", "node0", "up"],
        ["ip", "route", "add", "default", "dev", "node0"],
        ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"],
        ["sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=1"],
    ):
        _run([*inside, *step], what=" ".join(step))


class RealNode:
    """A running real node and its cluster; build one with :meth:`start`."""

    def __init__(self, workdir: Path, cluster: Cluster, parts: NodeParts) -> None:
        self.workdir = workdir
        self.state = workdir / "node"
        self.cluster = cluster
        self.parts = parts
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.timings: dict[str, float] = {}
        """Seconds from containerd's start to each step."""
        self.leftovers: dict[str, list[str]] | None = None
        """What :meth:`stop` found still on the machine afterwards (``None`` before it ran)."""

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    def _start(self, name: str, argv: Sequence[str]) -> None:
        log = self.logs / f"{name}.log"
        self.children[name] = processes.start(self.cluster.wrap(argv), log=log)

    def _wait(self, what: str, probe: Any, timeout: float, log: str) -> None:
        def alive_and(probe_: Any) -> bool:
            for name, child in self.children.items():
                if child.poll() is not None:
                    raise RealNodeError(
                        f"{name} exited ({child.returncode}) while waiting for {what}; "
                        f"{self.logs / (name + '.log')}:\n{_tail(self.logs / (name + '.log'))}"
                    )
            return bool(probe_())

        try:
            wait_for(lambda: alive_and(probe), timeout=timeout, what=what, every=0.25)
        except WaitTimeout:
            path = self.logs / f"{log}.log"
            raise RealNodeError(f"timed out waiting for {what}; {path}:\n{_tail(path)}") from None

    def ctr(self, *args: str, timeout: float = 120) -> str:
        """``ctr -n k8s.io ARGS`` against the node's containerd."""
        argv = ["ctr", "--address", f"{RUN_DIR}/containerd.sock", "-n", "k8s.io", *args]
        return _run(argv, what=f"ctr {' '.join(args[:2])}", timeout=timeout)

    def import_image(self, archive: Path) -> None:
        """Import an OCI or docker archive into containerd (``ctr images import``): its image is
        then found under the reference it carries, and never pulled."""
        self.ctr("images", "import", "--no-unpack=false", str(archive), timeout=300)

    def import_from_podman(self, podman: Podman, local: str, reference: str) -> None:
        """Import podman's image ``local`` under ``reference`` (what a chart renders), so that
        a pod naming it with ``IfNotPresent`` finds it and no registry is asked."""
        podman.run("tag", local, reference)  # podman names the archive's image by it
        archive = self.state / "podman-image.tar"
        podman.run("save", "--format", "oci-archive", "-o", str(archive), reference, timeout=600)
        try:
            self.import_image(archive)
        finally:
            archive.unlink(missing_ok=True)
            podman.run("untag", local, reference, check=False)

    def _up(self) -> None:
        state = self.state
        begin = time.monotonic()
        for folder in ("cni/net.d", "logs", "pod-logs"):
            (state / folder).mkdir(parents=True, exist_ok=True)
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        ROOT.mkdir(parents=True, exist_ok=True)
        (state / "containerd.toml").write_text(containerd_config(state))
        (state / "cni/net.d/10-realnode.conflist").write_text(json.dumps(cni_config(state)))
        (state / "kubelet.yaml").write_text(yaml.safe_dump(kubelet_config(state)))
        proxy = kube_proxy_config(self.cluster.kubeconfig)
        (state / "kube-proxy.yaml").write_text(yaml.safe_dump(proxy))
        bindir = self.cluster.bindir

        self._start("containerd", ["containerd", "--config", str(state / "containerd.toml")])
        sock = RUN_DIR / "containerd.sock"
        self._wait("containerd's socket", sock.exists, 30, "containerd")
        self._wait(
            "containerd's CRI",
            lambda: (
                subprocess.run(
                    ["ctr", "--address", str(sock), "version"], capture_output=True, check=False
                ).returncode
                == 0
            ),
            30,
            "containerd",
        )
        for archive in self.parts.images.values():
            self.import_image(archive)
        self.timings["images"] = time.monotonic() - begin

        self._start(
            "kube-proxy",
            [str(bindir / "kube-proxy"), f"--config={state / 'kube-proxy.yaml'}"],
        )
        self._start(
            "kubelet",
            [
                str(bindir / "kubelet"),
                f"--config={state / 'kubelet.yaml'}",
                f"--kubeconfig={self.cluster.kubeconfig}",
                f"--root-dir={ROOT / 'kubelet'}",
                f"--cert-dir={ROOT / 'kubelet' / 'pki'}",
                f"--volume-plugin-dir={ROOT / 'volume-plugins'}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={NODE_IP}",
                f"--node-labels=type=real,slinky.slurm.net/real-node={NODE_NAME}",
            ],
        )
        self._wait("node Ready", self.ready, 120, "kubelet")
        self.timings["node_ready"] = time.monotonic() - begin
        self.cluster.apply(coredns_manifests())
        self._wait(
            "CoreDNS ready",
            lambda: "1" in self.cluster.kubectl(
                "get", "deployment", "coredns", "-n", "kube-system",
                "-o", "jsonpath={.status.readyReplicas}", check=False,
            ),
            120,
            "kubelet",
        )  # fmt: skip
        self.timings["dns_ready"] = time.monotonic() - begin

    def ready(self) -> bool:
        """Whether the node reports Ready."""
        out = self.cluster.kubectl(
            "get", "node", NODE_NAME, "-o",
            'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
            check=False, timeout=10,
        )  # fmt: skip
        return out.strip() == "True"

    def _drain(self) -> None:
        """Cordon the node and delete its pods (their sandboxes torn down by kubelet)."""
        with contextlib.suppress(ControlPlaneError):
            self.cluster.kubectl("cordon", NODE_NAME, timeout=20)
            self.cluster.kubectl(
                "delete", "pods", "--all-namespaces", f"--field-selector=spec.nodeName={NODE_NAME}",
                "--grace-period=1", "--wait=true", "--timeout=60s", timeout=90,
            )  # fmt: skip

    def stop_node(self) -> None:
        """Stop kubelet, kube-proxy and containerd, the node's pods first."""
        kubelet = self.children.get("kubelet")
        if kubelet is not None and kubelet.poll() is None:
            self._drain()
        for name in ("kubelet", "kube-proxy", "containerd"):
            child = self.children.get(name)
            if child is not None:
                processes.stop(child, grace=10)

    def stop(self) -> dict[str, list[str]]:
        """Stop the node and the cluster and restore the machine (what leaving :meth:`start`'s
        block does; later calls do nothing); return what was left (:attr:`leftovers`)."""
        if self.leftovers is None:
            self.stop_node()
            self.cluster.stop()
            self.leftovers = hostrestore.restore(self.state)
        return self.leftovers

    # -- life cycle --

    @classmethod
    @contextlib.contextmanager
    def start(
        cls,
        workdir: Path | str,
        fleet: Fleet | Path | str | None = None,
        *,
        timeout: float = 240,
        wait: float = 0,
    ) -> Iterator[RealNode]:
        """Start the cluster and the real node (see the module docstring); stop both and restore
        the machine at the end of the block, errors included. ``wait``: seconds to wait for
        another run's real node to end (one per machine) before giving up."""
        workdir = Path(workdir).resolve()
        if os.geteuid() != 0:
            raise RealNodeError("the real node needs root (network namespace, containerd, cgroups)")
        parts = ensure_parts()
        bindir = ensure_binaries()
        LOCK.parent.mkdir(parents=True, exist_ok=True)
        with LOCK.open("a") as lock, processes.sigterm_as_interrupt():
            _take(lock, wait)
            state = workdir / "node"
            hostrestore.record(state, ROOT, RUN_DIR, NETNS)
            restore = [
                "env", f"PYTHONPATH={SCRIPTS}", sys.executable,
                "-m", "slinky_harness.k8s.realnode", "restore", str(state),
            ]  # fmt: skip
            # the reaper holds the lock too: killed, this run frees it only once the reaper
            # has restored the machine, so the next run never starts beside a late restore
            marks = [f"{state}/", f"{ROOT}/", f"{RUN_DIR}/"]
            with processes.reaping(marks, hold=[lock.fileno()]) as reaper:
                reaper.on_death(restore)
                node: RealNode | None = None
                try:
                    _make_netns()
                    with Cluster.start(
                        workdir / "cluster", fleet, bindir=bindir, netns=NETNS, timeout=timeout
                    ) as cluster:
                        node = cls(workdir, cluster, parts)
                        try:
                            node._up()
                            yield node
                        finally:
                            node.stop_node()
                finally:
                    # after the cluster, which runs in the network namespace this deletes
                    left = hostrestore.restore(state)
                    if node is not None and node.leftovers is None:
                        node.leftovers = left


def _take(lock: IO[str], wait: float) -> None:
    """Hold :data:`LOCK`, waiting up to ``wait`` seconds for another run's node to end (a line
    every 30 s says so: test files of the cluster tier that each need the node take turns)."""
    deadline = time.monotonic() + wait
    said = 0.0
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            now = time.monotonic()
            if now >= deadline:
                raise RealNodeError(
                    f"another real node runs on this machine (it holds {LOCK}); one per machine"
                ) from None
            if now - said >= 30:
                print(
                    f"realnode: another run's real node holds {LOCK}; waiting up to "
                    f"{deadline - now:.0f}s for it to end",
                    file=sys.stderr,
                    flush=True,
                )
                said = now
            time.sleep(1)


# --- command line ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.k8s.realnode", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="start the cluster and the node until Ctrl-C")
    run.add_argument("--workdir", type=Path, required=True)
    run.add_argument("--fleet", type=Path, help="kwok fleet file beside the real node")
    run.add_argument(
        "--wait", type=float, default=0, help="seconds to wait for another run's real node to end"
    )
    back = sub.add_parser("restore", help="put the machine back after a node (idempotent)")
    back.add_argument("state", type=Path, help="the node's folder (WORKDIR/node)")
    args = parser.parse_args(argv)
    try:
        if args.command == "restore":
            left = hostrestore.restore(args.state)
            rest = {k: v for k, v in left.items() if v}
            print(json.dumps(rest, indent=2) if rest else "restored")
            return 1 if rest else 0
        with RealNode.start(args.workdir, args.fleet, wait=args.wait) as node:
            steps = ", ".join(f"{k} {v:.1f}s" for k, v in node.timings.items())
            print(f"ready: export KUBECONFIG={node.cluster.kubeconfig} ({steps})", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause()
    except (HarnessError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(processes.run_main(main))
