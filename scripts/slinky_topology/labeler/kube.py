"""The labeler's Kubernetes access: the few calls it makes, as plain dicts, and one error type.

:class:`ClusterAPI` and :class:`LeaseAPI` are the protocols the rest of the labeler uses; the
real implementations wrap the ``kubernetes`` client (the ``labeler`` extra, imported lazily),
tests use in-memory fakes. Every failure of a call, an HTTP error status, a timeout or a broken
connection, is raised as :class:`KubeAPIError` (``status``: the HTTP status, ``None`` when no
response came; ``timeout``; ``retriable``), and nothing else of the client leaks out: callers
catch that one type.

Every call has a client-side timeout (``timeout`` seconds, connection included: a silent or
stalled endpoint raises instead of blocking), and urllib3's own retries are off
(:func:`load_clients`), so one call never takes longer than that: the callers retry, and check
leadership before each try. A watch asks the server to end it after ``timeout_seconds`` and
gives up when no byte came for ``timeout_seconds + timeout`` (a silent stream is dropped).
"""

from __future__ import annotations

import contextlib
import functools
import json
from typing import TYPE_CHECKING, Any, Protocol

from slinky_topology.errors import InputError, TopologyError
from slinky_topology.labeler.config import DEFAULT_TIMEOUT
from slinky_topology.labeler.extra import EXTRA_HINT

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = [
    "DEFAULT_TIMEOUT",
    "RETRIABLE_STATUS",
    "ClusterAPI",
    "KubeAPIError",
    "KubeClusterAPI",
    "KubeLeaseAPI",
    "LeaseAPI",
    "api_call",
    "load_clients",
    "node_metadata",
]

MERGE_PATCH = "application/merge-patch+json"
RETRIABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class KubeAPIError(TopologyError):
    """A Kubernetes API call failed: ``what`` was asked, ``detail`` is what went wrong.

    ``status`` is the HTTP status (``None`` when no response came: connection refused or reset,
    a timeout); ``timeout`` tells a client timeout (a silent or stalled server).
    """

    def __init__(
        self, what: str, detail: str, *, status: int | None = None, timeout: bool = False
    ) -> None:
        super().__init__(f"{what}: {detail}")
        self.what = what
        self.detail = detail
        self.status = status
        self.timeout = timeout

    @property
    def retriable(self) -> bool:
        """Worth another try: no response (connection, timeout), 408/409/429 or 5xx."""
        return self.status is None or self.status in RETRIABLE_STATUS


@functools.cache
def _client_errors() -> tuple[type[BaseException], ...]:
    """What the client raises when a call fails (not when it is misused): the HTTP error of
    ``kubernetes``, urllib3's transport errors, socket errors, a body that is not JSON."""
    import urllib3.exceptions  # noqa: PLC0415 - lazy: the labeler extra
    from kubernetes.client.exceptions import ApiException  # noqa: PLC0415

    return (ApiException, urllib3.exceptions.HTTPError, OSError, json.JSONDecodeError)


def _status_detail(exc: BaseException) -> str:
    """``HTTP 409 Conflict: <the Status message>`` of an ``ApiException``."""
    status, reason = getattr(exc, "status", None), getattr(exc, "reason", None) or ""
    message = ""
    body = getattr(exc, "body", None)
    if body:
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            message = str(json.loads(body).get("message") or "")
    head = f"HTTP {status} {reason}".rstrip()
    return f"{head}: {message}" if message else head


def _is_timeout(exc: BaseException) -> bool:
    """A client timeout: urllib3's ``ReadTimeoutError``/``ConnectTimeoutError`` (also inside a
    ``MaxRetryError``) or the socket's ``TimeoutError``."""
    import urllib3.exceptions  # noqa: PLC0415

    reason = getattr(exc, "reason", None)
    return any(isinstance(e, TimeoutError | urllib3.exceptions.TimeoutError) for e in (exc, reason))


@contextlib.contextmanager
def api_call(what: str) -> Iterator[None]:
    """Raise a failure of the client inside the block as :class:`KubeAPIError` about ``what``."""
    try:
        yield
    except KubeAPIError:
        raise
    except _client_errors() as exc:
        status = getattr(exc, "status", None)
        if isinstance(status, int) and status > 0:
            raise KubeAPIError(what, _status_detail(exc), status=status) from exc
        timeout = _is_timeout(exc)
        detail = str(exc) or type(exc).__name__
        raise KubeAPIError(what, detail, timeout=timeout) from exc


NODE_FIELDS = ("name", "labels", "annotations", "resourceVersion")
"""What the labeler reads of a Node (all in ``metadata``)."""


def node_metadata(node: Mapping[str, Any]) -> dict[str, Any]:
    """A Node reduced to :data:`NODE_FIELDS`. Whole Nodes (status, spec, managedFields) of a
    20,000-Node fleet would be most of the labeler's memory, and it reads none of the rest."""
    meta = node.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in NODE_FIELDS if k in meta}}


def _raw_json(response: Any) -> Any:
    """Decode a raw response (``_preload_content=False``) and give its connection back.

    The client's model deserialisation costs milliseconds per Node; a 5,000-Node list spent
    most of its time there, and so did every patch (whose returned Node nobody reads).
    """
    try:
        return json.loads(response.data) if response.data else None
    finally:
        response.release_conn()


class ClusterAPI(Protocol):
    """Nodes, the labeler's ConfigMaps, Events; every method raises :class:`KubeAPIError`."""

    def list_nodes(self, label_selector: str | None = None) -> tuple[list[dict[str, Any]], str]:
        """Every Node (paged; at least its :data:`NODE_FIELDS`) and the list's
        resourceVersion."""
        ...

    def watch_nodes(
        self, resource_version: str, timeout_seconds: int, label_selector: str | None = None
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(event type, object) pairs from ``resource_version`` on (Nodes with at least their
        :data:`NODE_FIELDS`); ERROR events included."""
        ...

    def patch_node(self, name: str, body: Mapping[str, Any]) -> None: ...

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_configmap(self, namespace: str, name: str) -> tuple[dict[str, Any] | None, str]:
        """One ConfigMap by name (``None`` when absent) and the list's resourceVersion."""
        ...

    def watch_configmap(
        self, namespace: str, name: str, resource_version: str, timeout_seconds: int
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(event type, object) pairs of one ConfigMap from ``resource_version`` on."""
        ...

    def create_configmap(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]: ...

    def replace_configmap(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]: ...

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None: ...


class LeaseAPI(Protocol):
    """``coordination.k8s.io/v1`` Leases as dicts; every method raises :class:`KubeAPIError`,
    ``replace`` with status 409 on a conflict."""

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def create_lease(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]: ...

    def replace_lease(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]: ...


def load_clients(kubeconfig: str | None = None) -> Any:
    """A configured ``kubernetes.client.ApiClient`` (in-cluster, else kubeconfig).

    urllib3 retries are off: by default it tries a GET four times after a read timeout, which
    would stretch every timeout fourfold; the labeler retries itself. Raises
    :class:`~slinky_topology.errors.InputError` without the client or a configuration.
    """
    try:
        from kubernetes import client, config  # noqa: PLC0415 - lazy: the labeler extra
    except ImportError:
        raise InputError(f"the labeler needs the Kubernetes client: {EXTRA_HINT}") from None
    where = kubeconfig or "in-cluster configuration, then ~/.kube/config or $KUBECONFIG"
    try:
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
        else:
            try:
                config.load_incluster_config()  # type: ignore[no-untyped-call]
            except config.ConfigException:
                config.load_kube_config()  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        # the loader's own errors, an unreadable file, a malformed kubeconfig
        raise InputError(
            f"no Kubernetes configuration: {exc or type(exc).__name__}", location=where
        ) from None
    configuration = client.Configuration.get_default_copy()
    configuration.retries = False
    return client.ApiClient(configuration)


def _watch(
    what: str, func: Any, timeout: float, timeout_seconds: int, **kwargs: Any
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Events of one watch request: the server ends it after ``timeout_seconds``; the client
    gives up on a stream silent for ``timeout_seconds + timeout`` (read timeout per chunk).

    The stream is read here, one JSON event per line, not with ``kubernetes.watch.Watch``: with
    ``deserialize=False`` that raises ``KeyError('raw_object')`` on every ERROR event (an expired
    resourceVersion's 410 Gone among them), which callers must see as an ERROR event.
    """
    from kubernetes.watch.watch import iter_resp_lines  # noqa: PLC0415 - lazy: the extra

    with api_call(what):
        response = func(
            watch=True,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout_seconds,
            _preload_content=False,
            _request_timeout=(timeout, timeout_seconds + timeout),
            **kwargs,
        )
        try:
            for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                if not line.strip():
                    continue
                event = json.loads(line)
                yield str(event.get("type", "")), dict(event.get("object") or {})
        finally:  # a stream left early (stop, error) is not reused
            response.close()
            response.release_conn()


class KubeClusterAPI:
    """:class:`ClusterAPI` over ``kubernetes.client.CoreV1Api``."""

    def __init__(self, api_client: Any, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        from kubernetes import client  # noqa: PLC0415

        self._client = api_client
        self._core: Any = client.CoreV1Api(api_client)
        self.timeout = timeout

    def _plain(self, obj: Any) -> dict[str, Any]:
        data: dict[str, Any] = self._client.sanitize_for_serialization(obj)
        return data

    def list_nodes(self, label_selector: str | None = None) -> tuple[list[dict[str, Any]], str]:
        out: list[dict[str, Any]] = []
        token: str | None = None
        version = ""
        while True:
            kwargs: dict[str, Any] = {"limit": 500, "_request_timeout": self.timeout}
            if label_selector:
                kwargs["label_selector"] = label_selector
            if token:
                kwargs["_continue"] = token
            with api_call("list nodes"):
                page = _raw_json(self._core.list_node(_preload_content=False, **kwargs)) or {}
            out.extend(node_metadata(item) for item in page.get("items") or [])
            meta = page.get("metadata") or {}
            version = meta.get("resourceVersion") or version
            token = meta.get("continue")
            if not token:
                return out, version

    def watch_nodes(
        self, resource_version: str, timeout_seconds: int, label_selector: str | None = None
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        kwargs: dict[str, Any] = {"resource_version": resource_version}
        if label_selector:
            kwargs["label_selector"] = label_selector
        for kind, obj in _watch(
            "watch nodes", self._core.list_node, self.timeout, timeout_seconds, **kwargs
        ):
            yield kind, (obj if kind == "ERROR" else node_metadata(obj))

    def get_node(self, name: str) -> dict[str, Any]:
        with api_call(f"get node {name}"):
            return self._plain(self._core.read_node(name, _request_timeout=self.timeout))

    def patch_node(self, name: str, body: Mapping[str, Any]) -> None:
        with api_call(f"patch node {name}"):
            _raw_json(
                self._core.patch_node(
                    name,
                    dict(body),
                    _content_type=MERGE_PATCH,
                    _preload_content=False,
                    _request_timeout=self.timeout,
                )
            )

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            with api_call(f"get configmap {namespace}/{name}"):
                return self._plain(
                    self._core.read_namespaced_config_map(
                        name, namespace, _request_timeout=self.timeout
                    )
                )
        except KubeAPIError as exc:
            if exc.status == 404:
                return None
            raise

    def list_configmap(self, namespace: str, name: str) -> tuple[dict[str, Any] | None, str]:
        with api_call(f"list configmap {namespace}/{name}"):
            page = (
                _raw_json(
                    self._core.list_namespaced_config_map(
                        namespace,
                        field_selector=f"metadata.name={name}",
                        _preload_content=False,
                        _request_timeout=self.timeout,
                    )
                )
                or {}
            )
        items = page.get("items") or []
        version = str((page.get("metadata") or {}).get("resourceVersion") or "")
        return (dict(items[0]) if items else None), version

    def watch_configmap(
        self, namespace: str, name: str, resource_version: str, timeout_seconds: int
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        yield from _watch(
            f"watch configmap {namespace}/{name}",
            self._core.list_namespaced_config_map,
            self.timeout,
            timeout_seconds,
            namespace=namespace,
            field_selector=f"metadata.name={name}",
            resource_version=resource_version,
        )

    def create_configmap(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        with api_call(f"create configmap {namespace}/{body['metadata']['name']}"):
            return self._plain(
                self._core.create_namespaced_config_map(
                    namespace, dict(body), _request_timeout=self.timeout
                )
            )

    def replace_configmap(
        self, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        with api_call(f"replace configmap {namespace}/{name}"):
            return self._plain(
                self._core.replace_namespaced_config_map(
                    name, namespace, dict(body), _request_timeout=self.timeout
                )
            )

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        with api_call(f"create event in {namespace}"):
            self._core.create_namespaced_event(namespace, dict(body), _request_timeout=self.timeout)


class KubeLeaseAPI:
    """:class:`LeaseAPI` over ``kubernetes.client.CoordinationV1Api``."""

    def __init__(self, api_client: Any, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        from kubernetes import client  # noqa: PLC0415

        self._client = api_client
        self._api: Any = client.CoordinationV1Api(api_client)
        self.timeout = timeout

    def _plain(self, obj: Any) -> dict[str, Any]:
        data: dict[str, Any] = self._client.sanitize_for_serialization(obj)
        return data

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            with api_call(f"get lease {namespace}/{name}"):
                return self._plain(
                    self._api.read_namespaced_lease(name, namespace, _request_timeout=self.timeout)
                )
        except KubeAPIError as exc:
            if exc.status == 404:
                return None
            raise

    def create_lease(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        with api_call(f"create lease {namespace}/{body['metadata']['name']}"):
            return self._plain(
                self._api.create_namespaced_lease(
                    namespace, dict(body), _request_timeout=self.timeout
                )
            )

    def replace_lease(self, namespace: str, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        with api_call(f"replace lease {namespace}/{name}"):
            return self._plain(
                self._api.replace_namespaced_lease(
                    name, namespace, dict(body), _request_timeout=self.timeout
                )
            )
