"""The thin Kubernetes layer: the few calls the labeler makes, as plain dicts.

:class:`ClusterAPI` and :class:`LeaseAPI` are the protocols the rest of the labeler uses; the
real implementations wrap the ``kubernetes`` client (imported lazily), tests use in-memory fakes.
Errors keep the client's ``ApiException`` (with ``.status``) or connection errors; use
:func:`status_of` to read the HTTP status of any of them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = [
    "ClusterAPI",
    "KubeClusterAPI",
    "KubeLeaseAPI",
    "LeaseAPI",
    "load_clients",
    "status_of",
]

MERGE_PATCH = "application/merge-patch+json"


def _raw_json(response: Any) -> Any:
    """Decode a raw response (``_preload_content=False``) and give its connection back.

    The client's model deserialisation costs milliseconds per Node; a 5,000-Node list spent
    most of its time there, and so did every patch (whose returned Node nobody reads).
    """
    try:
        return json.loads(response.data) if response.data else None
    finally:
        response.release_conn()


def status_of(exc: BaseException) -> int | None:
    """HTTP status of an API error (``None`` for connection errors and others)."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


class ClusterAPI(Protocol):
    """Nodes, the labeler's ConfigMaps, Events."""

    def list_nodes(self, label_selector: str | None = None) -> tuple[list[dict[str, Any]], str]:
        """Every Node (paged) and the list's resourceVersion."""
        ...

    def watch_nodes(
        self, resource_version: str, timeout_seconds: int, label_selector: str | None = None
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(event type, object) pairs from ``resource_version`` on; ERROR events included."""
        ...

    def patch_node(self, name: str, body: Mapping[str, Any]) -> None: ...

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def create_configmap(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]: ...

    def replace_configmap(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]: ...

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None: ...


class LeaseAPI(Protocol):
    """``coordination.k8s.io/v1`` Leases as dicts; ``replace`` raises status 409 on conflict."""

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def create_lease(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]: ...

    def replace_lease(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]: ...


def load_clients(kubeconfig: str | None = None) -> Any:
    """A configured ``kubernetes.client.ApiClient`` (in-cluster, else kubeconfig)."""
    from kubernetes import client, config  # noqa: PLC0415 - lazy: offline runs need no client

    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    else:
        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
        except config.ConfigException:
            config.load_kube_config()  # type: ignore[no-untyped-call]
    return client.ApiClient()


class KubeClusterAPI:
    """:class:`ClusterAPI` over ``kubernetes.client.CoreV1Api``."""

    def __init__(self, api_client: Any) -> None:
        from kubernetes import client  # noqa: PLC0415

        self._client = api_client
        self._core: Any = client.CoreV1Api(api_client)

    def _plain(self, obj: Any) -> dict[str, Any]:
        data: dict[str, Any] = self._client.sanitize_for_serialization(obj)
        return data

    def list_nodes(self, label_selector: str | None = None) -> tuple[list[dict[str, Any]], str]:
        out: list[dict[str, Any]] = []
        token: str | None = None
        version = ""
        while True:
            kwargs: dict[str, Any] = {"limit": 500}
            if label_selector:
                kwargs["label_selector"] = label_selector
            if token:
                kwargs["_continue"] = token
            page = _raw_json(self._core.list_node(_preload_content=False, **kwargs)) or {}
            out.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            version = meta.get("resourceVersion") or version
            token = meta.get("continue")
            if not token:
                return out, version

    def watch_nodes(
        self, resource_version: str, timeout_seconds: int, label_selector: str | None = None
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        from kubernetes import watch  # noqa: PLC0415

        kwargs: dict[str, Any] = {
            "resource_version": resource_version,
            "timeout_seconds": timeout_seconds,
            "allow_watch_bookmarks": True,
        }
        if label_selector:
            kwargs["label_selector"] = label_selector
        watcher: Any = watch.Watch()  # type: ignore[no-untyped-call]
        stream = watcher.stream(self._core.list_node, deserialize=False, **kwargs)
        for event in stream:
            obj = event.get("object") or event.get("raw_object") or {}
            yield str(event.get("type", "")), dict(obj)

    def get_node(self, name: str) -> dict[str, Any]:
        return self._plain(self._core.read_node(name))

    def patch_node(self, name: str, body: Mapping[str, Any]) -> None:
        _raw_json(
            self._core.patch_node(
                name, dict(body), _content_type=MERGE_PATCH, _preload_content=False
            )
        )

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self._plain(self._core.read_namespaced_config_map(name, namespace))
        except Exception as exc:
            if status_of(exc) == 404:
                return None
            raise

    def create_configmap(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._plain(self._core.create_namespaced_config_map(namespace, dict(body)))

    def replace_configmap(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        return self._plain(self._core.replace_namespaced_config_map(name, namespace, dict(body)))

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        self._core.create_namespaced_event(namespace, dict(body))


class KubeLeaseAPI:
    """:class:`LeaseAPI` over ``kubernetes.client.CoordinationV1Api``."""

    def __init__(self, api_client: Any) -> None:
        from kubernetes import client  # noqa: PLC0415

        self._client = api_client
        self._api: Any = client.CoordinationV1Api(api_client)

    def _plain(self, obj: Any) -> dict[str, Any]:
        data: dict[str, Any] = self._client.sanitize_for_serialization(obj)
        return data

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self._plain(self._api.read_namespaced_lease(name, namespace))
        except Exception as exc:
            if status_of(exc) == 404:
                return None
            raise

    def create_lease(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._plain(self._api.create_namespaced_lease(namespace, dict(body)))

    def replace_lease(self, namespace: str, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._plain(self._api.replace_namespaced_lease(name, namespace, dict(body)))
