"""The Kubernetes access layer: every failure of the real client, one KubeAPIError.

A loopback HTTP server answers the real ``kubernetes`` client with chosen statuses and Status
bodies; a closed port refuses connections.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException, ApiValueError

from slinky_topology.errors import InputError, TopologyError
from slinky_topology.labeler.kube import (
    KubeAPIError,
    KubeClusterAPI,
    api_call,
    load_clients,
    node_metadata,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def _full_node(name: str) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {
            "name": name,
            "resourceVersion": "5",
            "labels": {"nvidia.com/gpu.clique": "a.1"},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
        },
        "spec": {"taints": []},
        "status": {"capacity": {"nvidia.com/gpu": "4"}},
    }


class _Answers(BaseHTTPRequestHandler):
    """``GET`` of a ConfigMap: 404 for ``missing``, 500 with a Status for ``broken``. Nodes: two
    pages of whole Nodes (``n1``, then ``n2``); a watch streams ``n3`` added, then a 410."""

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        name = path.rsplit("/", 1)[-1]
        if name == "nodes" and "watch=true" in query:
            events = [
                {"type": "ADDED", "object": _full_node("n3")},
                {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "gone"}},
            ]
            data = "".join(json.dumps(e) + "\n" for e in events).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif name == "nodes":
            more = "continue=" not in query
            meta = {"resourceVersion": "9", **({"continue": "page2"} if more else {})}
            items = [_full_node("n1" if more else "n2")]
            self._send(200, {"kind": "NodeList", "metadata": meta, "items": items})
        elif name == "missing":
            self._send(404, {"kind": "Status", "reason": "NotFound", "message": "not found"})
        elif name == "broken":
            self._send(500, {"kind": "Status", "message": "etcdserver: request timed out"})
        else:
            self._send(200, {"kind": "ConfigMap", "metadata": {"name": name}, "data": {}})

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return


def _kubeconfig(folder: Path, port: int) -> Path:
    path = folder / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
    )
    return path


@pytest.fixture
def server() -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield int(httpd.server_address[1])
    httpd.shutdown()
    httpd.server_close()


def test_http_errors_carry_status_and_the_servers_message(tmp_path: Path, server: int) -> None:
    api = KubeClusterAPI(load_clients(str(_kubeconfig(tmp_path, server))), timeout=5)
    assert api.get_configmap("ns", "here") is not None
    assert api.get_configmap("ns", "missing") is None, "404 is absence, not an error"
    with pytest.raises(KubeAPIError) as caught:
        api.get_configmap("ns", "broken")
    error = caught.value
    assert isinstance(error, TopologyError), "the package's error base"
    assert error.status == 500 and error.retriable and not error.timeout
    assert str(error) == (
        "get configmap ns/broken: HTTP 500 Internal Server Error: etcdserver: request timed out"
    )


def test_nodes_are_listed_by_page_and_watched_as_the_fields_the_labeler_reads(
    tmp_path: Path, server: int
) -> None:
    api = KubeClusterAPI(load_clients(str(_kubeconfig(tmp_path, server))), timeout=5)
    items, version = api.list_nodes()
    assert version == "9"
    assert items == [node_metadata(_full_node("n1")), node_metadata(_full_node("n2"))]
    assert set(items[0]["metadata"]) == {"name", "resourceVersion", "labels", "annotations"}
    events = list(api.watch_nodes("9", timeout_seconds=5))
    assert events == [
        ("ADDED", node_metadata(_full_node("n3"))),
        ("ERROR", {"kind": "Status", "code": 410, "message": "gone"}),
    ]


def test_a_refused_connection_is_a_retriable_error_without_status(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nothing listens there
    api = KubeClusterAPI(load_clients(str(_kubeconfig(tmp_path, port))), timeout=5)
    with pytest.raises(KubeAPIError) as caught:
        api.list_nodes()
    assert caught.value.status is None and caught.value.retriable
    assert str(caught.value).startswith("list nodes: ")


@pytest.mark.parametrize(
    ("raised", "status", "timeout", "retriable"),
    [
        pytest.param(ApiException(status=409, reason="Conflict"), 409, False, True, id="409"),
        pytest.param(ApiException(status=403, reason="Forbidden"), 403, False, False, id="403"),
        pytest.param(
            urllib3.exceptions.ReadTimeoutError(None, "/api", "Read timed out."),  # type: ignore[arg-type]
            None,
            True,
            True,
            id="read-timeout",
        ),
        pytest.param(ConnectionResetError("reset by peer"), None, False, True, id="reset"),
        pytest.param(TimeoutError("timed out"), None, True, True, id="socket-timeout"),
    ],
)
def test_client_failures_become_one_error(
    raised: BaseException, status: int | None, timeout: bool, retriable: bool
) -> None:
    with pytest.raises(KubeAPIError) as caught, api_call("patch node n1"):
        raise raised
    error = caught.value
    assert (error.status, error.timeout, error.retriable) == (status, timeout, retriable)
    assert error.what == "patch node n1" and error.__cause__ is raised


@pytest.mark.parametrize(
    "raised",
    [
        pytest.param(ApiValueError("Missing the required parameter `name`"), id="misuse"),
        pytest.param(KeyError("metadata"), id="bug"),
    ],
)
def test_misuse_and_bugs_are_not_api_errors(raised: BaseException) -> None:
    with pytest.raises(type(raised)), api_call("patch node n1"):
        raise raised


def test_a_missing_kubeconfig_is_an_input_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.kubeconfig"
    with pytest.raises(InputError) as caught:
        load_clients(str(missing))
    assert str(caught.value).startswith(f"{missing}: no Kubernetes configuration")
