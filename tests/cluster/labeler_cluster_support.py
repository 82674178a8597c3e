"""The gpu-topology-labeler against a real control plane, under the chart's own identity.

:class:`LabelerLab` holds one kwok control plane of its own (never the session cluster: 1,000
nodes would slow every other test), started with an audit policy that records every write of the
labeler's ServiceAccount. The chart is rendered with ``helm template``; its controller
ServiceAccount, ClusterRole(Binding) and Role(Binding) are applied as they are, a token is minted
for that ServiceAccount through the TokenRequest API and written into a kubeconfig of its own,
so every request of the labeler goes through RBAC exactly as in the cluster. The labeler itself
runs as local processes (``python -m slinky_topology.labeler``) with the container arguments the
chart renders for its Deployment, plus the kubeconfig, a metrics port and faster pacing.

Writes are counted from the API server's audit log (:mod:`slinky_harness.k8s.audit`), by
identity and token, never from the labeler's own counters.

The fake nodes are not kwok-managed (no kwok controller, no scheduler run in this control plane):
the labeler only reads labels and annotations, and 1,000 heartbeating nodes would load the
machine for nothing.

:class:`StallProxy` stands between a labeler and the API server: a TCP proxy that forwards until
:meth:`~StallProxy.stall`, then drops every byte both ways while keeping the connections open (a
stalled endpoint: the client sees silence, not an error), until :meth:`~StallProxy.resume`
closes the connections of the stall and forwards again.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.core import ports, processes
from slinky_harness.helm.client import Helm
from slinky_harness.k8s import accounts, labeler
from slinky_harness.k8s.audit import AuditWrite, audit_policy, read_audit_writes
from slinky_harness.k8s.cluster import Cluster
from slinky_harness.k8s.fleet import create_nodes, load_fleet

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from slinky_harness.k8s.fleet import Fleet
    from slinky_harness.slurm.ctld import SlurmCtld

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "tests" / "data" / "fleets" / "labeler-nvl72-1k.yaml"
CHART = REPO / "charts" / "gpu-topology-labeler"
NAMESPACE = "gpu-topology"
RELEASE = "gtl"
CONFIGMAP = "slurm-topology"
SPEC = "topology.slinky.slurm.net/spec"
CATCH_ALL_SPEC = "fabric:no-topology"
"""The annotation of a node with no leaf switch (the fleet's CPU service nodes, a tray that lost
its fabric labels): the tree topology ``fabric`` holds it under its catch-all switch, so Slurm
can still run multi-node jobs on it (issue 30 item 6)."""
OWNED_PREFIX = "topology.slinky.slurm.net/"
LEAF = "fabric.slinky.dev/leaf"
SPINE = "fabric.slinky.dev/spine"
CORE = "fabric.slinky.dev/core"
CLIQUE = "nvidia.com/gpu.clique"

VALUES: dict[str, Any] = {
    "topology": {
        "configMapName": CONFIGMAP,
        "labelMap": {"accelerator": CLIQUE, "leaf": LEAF, "spine": SPINE, "core": CORE},
    },
    "controller": {"replicas": 2},
}
"""The labeler chart's values: GFD cliques plus the fleet's fabric labels, two replicas."""

RBAC_KINDS = frozenset(
    {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
)
FAST = ("--qps=0", "--write-workers=8", "--debounce-seconds=0.5")
"""Pacing for tests (after the chart's arguments, so they win): no write limit, eight patches
in flight, half a second of debounce."""


class StallProxy:
    """A loopback TCP proxy to ``upstream`` that can stall (see the module doc). One thread,
    ``select`` over every socket; closed on exit."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.stalled = False
        self.connections = 0
        self._listener = socket.socket()
        self._peer: dict[socket.socket, socket.socket | None] = {}
        self._tainted: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stall-proxy", daemon=True)

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def __enter__(self) -> StallProxy:
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(10)
        self._listener.close()

    def stall(self) -> None:
        """Drop every byte from now on, both ways, on every connection (open or new)."""
        with self._lock:
            self.stalled = True
            self._tainted.update(self._peer)

    def resume(self) -> None:
        """Close the connections of the stall (what they carried is lost), forward again."""
        with self._lock:
            self.stalled = False
            for sock in self._tainted:
                self._close(sock)
            self._tainted.clear()

    def _close(self, sock: socket.socket) -> None:
        peer = self._peer.pop(sock, None)
        sock.close()
        if peer is not None and peer in self._peer:
            self._peer.pop(peer, None)
            peer.close()

    def _accept(self) -> None:
        client, _ = self._listener.accept()
        self.connections += 1
        if self.stalled:
            self._peer[client] = None  # a blackhole: nothing behind it
            self._tainted.add(client)
            return
        upstream = socket.create_connection(self.upstream, timeout=5)
        self._peer[client] = upstream
        self._peer[upstream] = client

    def _run(self) -> None:
        try:
            while not self._done.is_set():
                readable, _, _ = select.select([self._listener, *self._peer], [], [], 0.05)
                with self._lock:
                    for sock in readable:
                        if sock is self._listener:
                            self._accept()
                        elif sock in self._peer:
                            self._pump(sock)
        finally:
            with self._lock:
                for sock in list(self._peer):
                    self._close(sock)

    def _pump(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._tainted.discard(sock)
            self._close(sock)
            return
        peer = self._peer.get(sock)
        if self.stalled or peer is None:
            return  # dropped
        try:
            peer.sendall(data)
        except OSError:
            self._close(sock)


@dataclass
class Replica:
    """A long-running labeler process (one replica of the Deployment)."""

    identity: str
    proc: subprocess.Popen[bytes]
    metrics_port: int
    log: Path
    credential: str
    """Its token's ``credential-id`` as the audit log shows it."""

    def metrics(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as answer:
            return str(answer.read().decode())

    def sample(self, name: str, **labels: str) -> float:
        """Value of one Prometheus sample (0 when absent)."""
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        key = f"{name}{{{want}}}" if labels else name
        for line in self.metrics().splitlines():
            if line.startswith(key + " "):
                return float(line.split()[-1])
        return 0.0

    def logs(self) -> list[dict[str, Any]]:
        return labeler.parse_logs(self.log.read_text(errors="replace"))

    def stop(self) -> int:
        return processes.stop(self.proc, grace=20)


@dataclass
class LabelerLab:
    """The labeler's own control plane, chart RBAC, fleet and helpers (see module doc)."""

    cluster: Cluster
    workdir: Path
    fleet: Fleet
    helm: Helm
    rendered: list[dict[str, Any]]
    account: str
    args: list[str]
    """The controller's container arguments as the chart renders them."""
    core: Any
    api_client: Any
    timings: dict[str, float] = field(default_factory=dict)
    replicas: list[Replica] = field(default_factory=list)
    _tokens: int = 0

    @property
    def user(self) -> str:
        return accounts.service_account_user(NAMESPACE, self.account)

    @property
    def audit(self) -> Path:
        return self.cluster.logs_dir / "audit.log"

    # -- identity ---------------------------------------------------------------------------

    def kubeconfig(self, name: str, *, port: int | None = None) -> tuple[Path, str]:
        """A new token for the chart's ServiceAccount (TokenRequest) in a kubeconfig of its own,
        and the token's credential id as the audit log shows it. ``port``: reach the API server
        there instead (a :class:`StallProxy` on the same address)."""
        self._tokens += 1
        token = accounts.mint_token(self.cluster, NAMESPACE, self.account)
        path = accounts.token_kubeconfig(
            self.cluster,
            token,
            self.workdir / f"{name}-{self._tokens}.kubeconfig",
            user=name,
            server=None if port is None else f"https://127.0.0.1:{port}",
        )
        return path, accounts.token_credential(token)

    def proxy(self) -> StallProxy:
        """A :class:`StallProxy` to this control plane's API server (use it with ``with``)."""
        return StallProxy(("127.0.0.1", self.cluster.ports.kube_apiserver))

    # -- audit ------------------------------------------------------------------------------

    def writes(self) -> list[AuditWrite]:
        """Every write of the labeler's identity so far (failed ones included), except to its
        Lease (leader election renews it every few seconds; see :meth:`lease_writes`)."""
        return [w for w in self.all_writes() if w.resource != "leases"]

    def lease_writes(self) -> list[AuditWrite]:
        return [w for w in self.all_writes() if w.resource == "leases"]

    def all_writes(self) -> list[AuditWrite]:
        return read_audit_writes(self.audit, user=self.user)

    def settled_writes(self, quiet: float = 1.5, timeout: float = 60.0) -> list[AuditWrite]:
        """The labeler's writes once none came in for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        last = self.writes()
        since = time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.25)
            now = self.writes()
            if len(now) != len(last):
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return now
        raise AssertionError(f"the labeler kept writing for {timeout}s")

    # -- running the labeler ----------------------------------------------------------------

    def labeler_args(self, kubeconfig: Path, *extra: str) -> list[str]:
        return [*self.args, f"--kubeconfig={kubeconfig}", *FAST, *extra]

    def run_once(self, *extra: str) -> labeler.LabelerRun:
        """One ``--once`` pass (fresh token), as a separate process."""
        kubeconfig, _ = self.kubeconfig("once")
        run = labeler.run_labeler(
            self.labeler_args(kubeconfig, "--once", "--metrics-port=0", *extra), timeout=300
        )
        assert run.returncode == 0, run.describe()
        return run

    def start_replica(self, identity: str, *extra: str, via: int | None = None) -> Replica:
        """A long-running replica with its own token, identity and metrics port; ``extra``
        arguments last; ``via``: the port of a :class:`StallProxy` to reach the API through."""
        port = ports.allocate_one()
        log = self.workdir / f"{identity}.log"
        kubeconfig, credential = self.kubeconfig(identity, port=via)
        proc = labeler.start_labeler(
            self.labeler_args(
                kubeconfig, f"--identity={identity}", f"--metrics-port={port}", *extra
            ),
            log,
        )
        replica = Replica(identity, proc, port, log, credential)
        self.replicas.append(replica)
        return replica

    def stop_replicas(self) -> None:
        for replica in self.replicas:
            replica.stop()

    # -- nodes ------------------------------------------------------------------------------

    def nodes(self) -> dict[str, dict[str, Any]]:
        """Every Node as a dict (raw JSON list, no model decoding)."""
        answer = self.core.list_node(_preload_content=False)
        data = json.loads(answer.data)
        answer.release_conn()
        return {str(i["metadata"]["name"]): i for i in data["items"]}

    def patch_annotations(self, names: Sequence[str], annotations: dict[str, str | None]) -> None:
        """Change the annotations of Nodes ``names`` as the cluster admin (``None`` deletes)."""
        for name in names:
            answer = self.core.patch_node(
                name,
                {"metadata": {"annotations": annotations}},
                _content_type="application/merge-patch+json",
                _preload_content=False,
            )
            _ = answer.data
            answer.release_conn()

    def patch_labels(self, name: str, labels: dict[str, str | None]) -> None:
        """Change a Node's labels as the cluster admin (``None`` deletes)."""
        answer = self.core.patch_node(
            name,
            {"metadata": {"labels": labels}},
            _content_type="application/merge-patch+json",
            _preload_content=False,
        )
        _ = answer.data
        answer.release_conn()

    def lease_holder(self) -> str:
        """``spec.holderIdentity`` of the chart's Lease (``""`` when none)."""
        from kubernetes import client  # noqa: PLC0415

        name = next(a.split("=", 1)[1] for a in self.args if a.startswith("--lease-name="))
        try:
            lease = client.CoordinationV1Api(self.api_client).read_namespaced_lease(name, NAMESPACE)
        except client.ApiException as exc:
            if exc.status == 404:
                return ""
            raise
        return str((lease.spec.holder_identity if lease.spec else None) or "")

    def events(self) -> list[dict[str, Any]]:
        answer = self.core.list_namespaced_event(NAMESPACE, _preload_content=False)
        data = json.loads(answer.data)
        answer.release_conn()
        return list(data["items"])

    def configmap(self) -> dict[str, Any]:
        answer = self.core.read_namespaced_config_map(CONFIGMAP, NAMESPACE, _preload_content=False)
        data: dict[str, Any] = json.loads(answer.data)
        answer.release_conn()
        return data


def gpu_nodes(fleet: Fleet) -> list[dict[str, Any]]:
    return [n for n in fleet.nodes() if CLIQUE in n["metadata"]["labels"]]


def expected_block(labels: dict[str, str]) -> str:
    """The NVLink domain of a GFD clique label: its ClusterUUID (``<uuid>.<clique id>``)."""
    return labels[CLIQUE].rpartition(".")[0]


def _audit_policy(path: Path, user: str) -> Path:
    path.write_text(audit_policy([user]))
    return path


@contextlib.contextmanager
def labeler_lab(workdir: Path) -> Iterator[LabelerLab]:
    """Start the lab (see :class:`LabelerLab`); stop every replica and the cluster on exit."""
    from kubernetes import client  # noqa: PLC0415

    from slinky_harness.build import toolchain  # noqa: PLC0415 - builds helm on first use

    timings: dict[str, float] = {}
    t0 = time.monotonic()
    helm_bin = toolchain.ensure("helm")
    values = workdir / "labeler-values.json"
    values.write_text(json.dumps(VALUES))
    proc = subprocess.run(
        [str(helm_bin), "template", RELEASE, str(CHART), "-n", NAMESPACE, "-f", str(values)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    rendered = [d for d in yaml.safe_load_all(proc.stdout) if d]
    deployment = next(d for d in rendered if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    account = str(pod["serviceAccountName"])
    (container,) = pod["containers"]
    fleet = load_fleet(FLEET)
    policy = _audit_policy(
        workdir / "audit-policy.yaml", accounts.service_account_user(NAMESPACE, account)
    )
    extra = [f"--kube-audit-policy={policy}", "--disable=kwok-controller,kube-scheduler"]
    with Cluster.start(workdir / "cluster", stages=None, extra_args=extra) as cluster:
        timings["control plane"] = cluster.start_seconds
        api_client = cluster.api_client()
        lab = LabelerLab(
            cluster=cluster,
            workdir=workdir,
            fleet=fleet,
            helm=Helm(helm_bin, cluster, workdir / "helm"),
            rendered=rendered,
            account=account,
            args=[str(a) for a in container["args"]],
            core=client.CoreV1Api(api_client),
            api_client=api_client,
            timings=timings,
        )
        try:
            cluster.kubectl("create", "namespace", NAMESPACE)
            rbac = [
                d
                for d in rendered
                if d["kind"] in RBAC_KINDS
                and "helm.sh/hook" not in (d["metadata"].get("annotations") or {})
            ]
            cluster.apply(rbac)
            timings["create nodes"] = create_nodes(api_client, fleet.nodes())
            timings["set-up"] = time.monotonic() - t0
            yield lab
        finally:
            lab.stop_replicas()
            api_client.close()


def scontrol_batch(ctld: SlurmCtld, commands: Sequence[str]) -> tuple[int, str]:
    """Feed ``commands`` to one ``scontrol`` process, one per line (1,000 lines take about 3 s;
    a chroot process per command would cost far more); return its exit status and stderr
    (scontrol goes on after a refused line, reports it there and exits non-zero)."""
    result = ctld.run("scontrol", check=False, timeout=300, input="\n".join(commands) + "\n")
    return result.returncode, result.stderr


def env_summary(lab: LabelerLab) -> str:
    return ", ".join(f"{k} {v:.1f}s" for k, v in lab.timings.items())


__all__ = [
    "CONFIGMAP",
    "NAMESPACE",
    "SPEC",
    "LabelerLab",
    "Replica",
    "StallProxy",
    "env_summary",
    "expected_block",
    "gpu_nodes",
    "labeler_lab",
    "scontrol_batch",
]
