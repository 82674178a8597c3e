"""The labeler benchmark's baseline: the same API writes with the least client there is.

``python -m slinky_harness.apps.patch_baseline --kubeconfig K --writes FILE --workers N`` reads
``FILE`` (JSON ``{"nodes": {name: merge-patch body}, "configmap": {"namespace": ns, "body":
ConfigMap}}``, the writes the labeler made, as :mod:`slinky_harness.apps.labeler_bench` recorded
them), creates the ConfigMap first (as the labeler publishes the skeleton before it annotates
nodes) and then sends one ``PATCH /api/v1/nodes/<name>`` (``application/merge-patch+json``) per
node from ``N`` threads, each over its own keep-alive HTTPS connection: the standard library
only, no Kubernetes client, no listing, no planning. It authenticates with the kubeconfig's bearer
token, so the API server does for it what it does for the labeler (authentication,
authorization, admission, audit). It prints ``{"writes": n, "seconds": s}`` (``s``: the writes
alone, without the interpreter's start) and exits 0, or 1 at the first refused write.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import ssl
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import yaml

from slinky_harness.core.errors import HarnessError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["ApiTarget", "main", "read_target", "send_writes"]

MERGE_PATCH = "application/merge-patch+json"


class WriteRefused(HarnessError):
    """The API server answered a write with an error status."""


class ApiTarget:
    """Where and how to reach the API server: host, port, TLS context, bearer token."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext, token: str) -> None:
        self.host = host
        self.port = port
        self.context = context
        self.token = token

    def connect(self, timeout: float) -> http.client.HTTPConnection:
        return http.client.HTTPSConnection(
            self.host, self.port, context=self.context, timeout=timeout
        )


def read_target(kubeconfig: Path) -> ApiTarget:
    """The current context's server, CA and token of a token kubeconfig."""
    config = yaml.safe_load(kubeconfig.read_text())
    current = config["current-context"]
    context = next(c["context"] for c in config["contexts"] if c["name"] == current)
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
    url = urlsplit(cluster["server"])
    tls = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify"):
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
    elif "certificate-authority-data" in cluster:
        pem = base64.b64decode(cluster["certificate-authority-data"]).decode()
        tls.load_verify_locations(cadata=pem)
    elif "certificate-authority" in cluster:
        tls.load_verify_locations(cafile=cluster["certificate-authority"])
    return ApiTarget(url.hostname or "127.0.0.1", url.port or 443, tls, user["token"])


class _Connections:
    """One keep-alive connection per thread; all closed at the end."""

    def __init__(self, target: ApiTarget, timeout: float) -> None:
        self.target = target
        self.timeout = timeout
        self.local = threading.local()
        self.lock = threading.Lock()
        self.opened: list[http.client.HTTPConnection] = []

    def get(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.target.connect(self.timeout)
            self.local.conn = conn
            with self.lock:
                self.opened.append(conn)
        return conn

    def drop(self) -> None:
        conn = getattr(self.local, "conn", None)
        if conn is not None:
            conn.close()
        self.local.conn = None

    def close_all(self) -> None:
        with self.lock:
            for conn in self.opened:
                conn.close()
            self.opened.clear()


def _request(conns: _Connections, method: str, path: str, *, body: bytes, ctype: str) -> None:
    headers = {
        "Authorization": f"Bearer {conns.target.token}",
        "Content-Type": ctype,
        "Accept": "application/json",
    }
    for attempt in (1, 2):  # one reconnect when the server closed an idle keep-alive connection
        conn = conns.get()
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
        except (ConnectionError, http.client.HTTPException):
            conns.drop()
            if attempt == 2:
                raise
            continue
        if response.status >= 300:
            raise WriteRefused(f"{method} {path}: HTTP {response.status}: {data[:300]!r}")
        return


def send_writes(
    target: ApiTarget, writes: dict[str, Any], *, workers: int, timeout: float = 30.0
) -> int:
    """Create the ConfigMap (when given), then patch every node; return the writes made."""
    conns = _Connections(target, timeout)
    count = 0
    try:
        configmap = writes.get("configmap")
        if configmap:
            ns = quote(configmap["namespace"], safe="")
            data = json.dumps(configmap["body"]).encode()
            path = f"/api/v1/namespaces/{ns}/configmaps"
            _request(conns, "POST", path, body=data, ctype="application/json")
            count += 1
        nodes: dict[str, Any] = writes.get("nodes", {})

        def patch(item: tuple[str, Any]) -> None:
            name, body = item
            path = f"/api/v1/nodes/{quote(name, safe='')}"
            _request(conns, "PATCH", path, body=json.dumps(body).encode(), ctype=MERGE_PATCH)

        with ThreadPoolExecutor(max_workers=max(workers, 1)) as pool:
            list(pool.map(patch, nodes.items()))
    finally:
        conns.close_all()
    return count + len(nodes)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m slinky_harness.apps.patch_baseline",
        description="Send recorded Node merge patches (and one ConfigMap create) with a bare "
        "HTTPS client: the labeler benchmark's baseline.",
    )
    p.add_argument("--kubeconfig", type=Path, required=True, help="token kubeconfig")
    p.add_argument("--writes", type=Path, required=True, help="JSON file of the writes")
    p.add_argument("--workers", type=int, default=8, help="node patches in flight (default: 8)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    writes = json.loads(args.writes.read_text())
    try:
        started = time.monotonic()
        count = send_writes(read_target(args.kubeconfig), writes, workers=args.workers)
        seconds = time.monotonic() - started
    except (WriteRefused, OSError, http.client.HTTPException) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"writes": count, "seconds": round(seconds, 3)}))
    return 0


def write_file(writes: dict[str, Any], folder: Path) -> Path:
    """``writes`` as the JSON file :func:`main` reads, in ``folder``."""
    with tempfile.NamedTemporaryFile(
        "w", suffix=".json", prefix="baseline-writes-", dir=folder, delete=False
    ) as out:
        json.dump(writes, out)
    return Path(out.name)


if __name__ == "__main__":
    raise SystemExit(main())
