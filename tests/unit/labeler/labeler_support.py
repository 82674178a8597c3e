"""In-memory fakes for the labeler's unit tests (the real API server comes in the cluster tier)."""

from __future__ import annotations

import contextlib
import copy
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from slinky_topology.labeler.kube import KubeAPIError
from slinky_topology.labeler.leader import LeaderElector

if TYPE_CHECKING:
    from pathlib import Path

CLIQUE = "nvidia.com/gpu.clique"
RACK_A = "7b968a6d-c8aa-45e1-9e07-e1e51be99c31"
RACK_B = "0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9"


class ApiError(KubeAPIError):
    """What the real client layer raises for an HTTP error ``status`` (the fakes' failures)."""

    def __init__(self, status: int, reason: str = "") -> None:
        super().__init__("fake API call", f"HTTP {status} {reason}".rstrip(), status=status)


def connection_error(detail: str, *, timeout: bool = False) -> KubeAPIError:
    """What the real client layer raises when no response came (reset, refused, timed out)."""
    return KubeAPIError("fake API call", detail, timeout=timeout)


def node(
    name: str,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta}


def gfd_fleet(racks: int = 2, per_rack: int = 4, clique: str = "1") -> list[dict[str, Any]]:
    """GB200-like nodes: ``gpu0001``..., ``per_rack`` per NVLink domain, GFD clique labels."""
    uuids = [RACK_A, RACK_B, *(f"{i:08d}-0000-4000-8000-000000000000" for i in range(2, racks))]
    out = []
    for r in range(racks):
        for i in range(per_rack):
            n = r * per_rack + i + 1
            out.append(
                node(
                    f"gpu{n:04d}",
                    {CLIQUE: f"{uuids[r]}.{clique}", "kubernetes.io/hostname": f"gpu{n:04d}"},
                )
            )
    return out


def tiered_fleet() -> list[dict[str, Any]]:
    """Nodes with topograph tier labels (leaf, spine) and accelerator domains."""
    out = []
    for n in range(1, 9):
        leaf = f"leaf{(n - 1) // 4 + 1:02d}"
        out.append(
            node(
                f"node{n:02d}",
                {
                    "fabric.topograph.run/tier-0": leaf,
                    "fabric.topograph.run/tier-1": "spine1",
                    "accelerator.topograph.run/domain": f"nvl{(n - 1) // 4 + 1}",
                },
            )
        )
    return out


def _merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping):
            sub = target.setdefault(key, {})
            if not isinstance(sub, dict):
                sub = target[key] = {}
            _merge(sub, value)
        else:
            target[key] = value


class FakeCluster:
    """:class:`~slinky_topology.labeler.kube.ClusterAPI` in memory, with call counters.

    Thread safe. Node watches yield ``watch_events`` and return at once, unless
    ``block_watches`` is set: then, like a real watch, they last ``timeout_seconds`` (or until
    :meth:`close`). ConfigMap watches stream the creates, replaces and deletes made here.
    """

    def __init__(self, nodes: list[dict[str, Any]] | None = None) -> None:
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._closed = False
        self.block_watches = False
        self.cm_events: list[tuple[int, str, dict[str, Any]]] = []
        self.nodes: dict[str, dict[str, Any]] = {
            n["metadata"]["name"]: copy.deepcopy(n) for n in nodes or []
        }
        self.configmaps: dict[tuple[str, str], dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.cm_writes: list[str] = []
        self.version = 100
        self.fail: list[BaseException] = []  # raised (and consumed) by the next writes
        self.watch_events: list[tuple[str, dict[str, Any]]] = []

    def _maybe_fail(self) -> None:
        if self.fail:
            raise self.fail.pop(0)

    def _bump(self) -> str:
        self.version += 1
        return str(self.version)

    def close(self) -> None:
        """End every watch now."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _wait(self, deadline: float) -> bool:
        """Wait (lock held) for a change until ``deadline``; False once closed or past it."""
        remaining = deadline - time.monotonic()
        if self._closed or remaining <= 0:
            return False
        self._changed.wait(remaining)
        return not self._closed

    def list_nodes(self, label_selector: str | None = None) -> tuple[list[dict[str, Any]], str]:
        with self._lock:
            return [copy.deepcopy(n) for n in self.nodes.values()], str(self.version)

    def watch_nodes(
        self, resource_version: str, timeout_seconds: int, label_selector: str | None = None
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        with self._lock:
            events, self.watch_events = self.watch_events, []
        yield from events
        if self.block_watches:
            deadline = time.monotonic() + timeout_seconds
            with self._changed:
                while self._wait(deadline):
                    pass

    def list_configmap(self, namespace: str, name: str) -> tuple[dict[str, Any] | None, str]:
        with self._lock:
            return self.get_configmap(namespace, name), str(self.version)

    def watch_configmap(
        self, namespace: str, name: str, resource_version: str, timeout_seconds: int
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        deadline = time.monotonic() + timeout_seconds
        seen = int(resource_version or 0)
        while True:
            with self._changed:
                while not self.cm_events or self.cm_events[-1][0] <= seen:
                    if not self._wait(deadline):
                        return
                events = [e for e in self.cm_events if e[0] > seen]
                seen = events[-1][0]
            for _, kind, obj in events:
                meta = obj["metadata"]
                if (meta.get("namespace", namespace), meta["name"]) == (namespace, name):
                    yield kind, copy.deepcopy(obj)

    def _cm_event(self, kind: str, obj: dict[str, Any]) -> None:
        with self._changed:
            version = int(obj["metadata"]["resourceVersion"])
            self.cm_events.append((version, kind, copy.deepcopy(obj)))
            self._changed.notify_all()

    def delete_configmap(self, namespace: str, name: str) -> None:
        """Someone else deletes a ConfigMap."""
        with self._lock:
            obj = self.configmaps.pop((namespace, name))
            obj["metadata"]["resourceVersion"] = self._bump()
            self._cm_event("DELETED", obj)

    def get_node(self, name: str) -> dict[str, Any]:
        if name not in self.nodes:
            raise ApiError(404, "node not found")
        return copy.deepcopy(self.nodes[name])

    def patch_node(self, name: str, body: Mapping[str, Any]) -> None:
        with self._lock:
            self._maybe_fail()
            if name not in self.nodes:
                raise ApiError(404, "node not found")
            self.patches.append((name, copy.deepcopy(dict(body))))
            _merge(self.nodes[name], body)
            self.nodes[name]["metadata"]["resourceVersion"] = self._bump()

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            found = self.configmaps.get((namespace, name))
            return copy.deepcopy(found) if found is not None else None

    def create_configmap(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._maybe_fail()
            name = body["metadata"]["name"]
            if (namespace, name) in self.configmaps:
                raise ApiError(409, "exists")
            obj = copy.deepcopy(dict(body))
            obj["metadata"]["resourceVersion"] = self._bump()
            self.configmaps[(namespace, name)] = obj
            self.cm_writes.append("create")
            self._cm_event("ADDED", obj)
            return copy.deepcopy(obj)

    def replace_configmap(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        with self._lock:
            self._maybe_fail()
            old = self.configmaps.get((namespace, name))
            if old is None:
                raise ApiError(404, "not found")
            if body["metadata"].get("resourceVersion") != old["metadata"]["resourceVersion"]:
                raise ApiError(409, "conflict")
            obj = copy.deepcopy(dict(body))
            obj["metadata"]["resourceVersion"] = self._bump()
            self.configmaps[(namespace, name)] = obj
            self.cm_writes.append("replace")
            self._cm_event("MODIFIED", obj)
            return copy.deepcopy(obj)

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        with self._lock:
            self.events.append(copy.deepcopy(dict(body)))


class FakeLeases:
    """:class:`~slinky_topology.labeler.kube.LeaseAPI` in memory with optimistic concurrency."""

    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = 0
        self.fail: list[BaseException] = []

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        if self.fail:
            raise self.fail.pop(0)
        found = self.leases.get((namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def create_lease(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        key = (namespace, body["metadata"]["name"])
        if key in self.leases:
            raise ApiError(409, "exists")
        self.version += 1
        obj = copy.deepcopy(dict(body))
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.leases[key] = obj
        return copy.deepcopy(obj)

    def replace_lease(self, namespace: str, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        old = self.leases.get((namespace, name))
        if old is None:
            raise ApiError(404, "not found")
        if body["metadata"].get("resourceVersion") != old["metadata"]["resourceVersion"]:
            raise ApiError(409, "conflict")
        self.version += 1
        obj = copy.deepcopy(dict(body))
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.leases[(namespace, name)] = obj
        return copy.deepcopy(obj)


class FakeClock:
    """A clock whose ``sleep`` advances time instead of waiting."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


class SilentServer:
    """A loopback TCP server standing in for a stalled API server: it accepts connections and
    never answers (``headers=True``: it answers each request with the headers of a chunked 200
    response, then nothing: a silent watch stream). Every socket is closed on exit, or after
    ``lifetime`` seconds at the latest, so a test that hangs on it cannot hang for ever."""

    def __init__(self, *, headers: bool = False, lifetime: float = 30.0) -> None:
        self.headers = headers
        self.lifetime = lifetime
        self.connections: list[socket.socket] = []
        self._listener = socket.socket()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="silent-server", daemon=True)

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def __enter__(self) -> SilentServer:
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(5)
        self._listener.close()

    def _serve(self) -> None:
        deadline = time.monotonic() + self.lifetime
        pending: dict[socket.socket, bytes] = {}
        try:
            while not self._done.is_set() and time.monotonic() < deadline:
                readable, _, _ = select.select([self._listener, *pending], [], [], 0.05)
                for sock in readable:
                    if sock is self._listener:
                        conn, _ = self._listener.accept()
                        self.connections.append(conn)
                        if self.headers:
                            pending[conn] = b""
                        continue
                    chunk = sock.recv(65536)
                    pending[sock] += chunk
                    if b"\r\n\r\n" in pending[sock] or not chunk:
                        del pending[sock]
                        with contextlib.suppress(OSError):
                            sock.sendall(
                                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                b"Transfer-Encoding: chunked\r\n\r\n"
                            )
        finally:
            for conn in self.connections:
                conn.close()

    def kubeconfig(self, folder: Path) -> Path:
        """A kubeconfig whose server is this one (plain HTTP, a token that is never checked)."""
        path = folder / "silent.kubeconfig"
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters: [{{name: silent, cluster: {{server: 'http://127.0.0.1:{self.port}'}}}}]\n"
            "users: [{name: u, user: {token: not-checked}}]\n"
            "contexts: [{name: c, context: {cluster: silent, user: u}}]\n"
            "current-context: c\n"
        )
        return path


def elector(
    leases: FakeLeases, identity: str, clock: Callable[[], float], namespace: str = "slinky"
) -> LeaderElector:
    """A LeaderElector on ``leases`` with the labeler's default timings (15/10/2 s)."""
    return LeaderElector(
        leases,
        name="labeler",
        namespace=namespace,
        identity=identity,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
        clock=clock,
    )
