"""Apply a :class:`~slinky_topology.labeler.reconcile.Plan` to the cluster.

* Nodes: one JSON merge patch per Node (``application/merge-patch+json``) carrying only the
  owned keys that change (``null`` deletes), so keys owned by others are never sent.
* ConfigMap: created when missing, else replaced (with its ``resourceVersion``) when its data
  differs. Before any write the topology text is parsed back and validated
  (:func:`validate_topology_text`); a bad topology is never published: the last good ConfigMap
  stays, a Warning Event is recorded on it and the error metric counts it.
* Every write waits for a token of a :class:`TokenBucket` (``--qps``/``--burst``) and API errors
  (:class:`~slinky_topology.labeler.kube.KubeAPIError`) are retried with exponential
  :class:`Backoff` when retriable (429, 5xx, 409 on replace, connection errors and timeouts);
  the last one becomes a :class:`PublishError`.
* ``guard`` is asked before every try of every write (retries included, and again between the
  read and the write of the ConfigMap): once it says no (leadership lost, or the controller is
  stopping) nothing more is sent and :class:`WriteRefused` ends the pass.
* Node patches go out one at a time, or with ``workers`` > 1 (``--write-workers``) that many at
  once: a large first pass is bound by the round trip of each patch, not by the API server.
  The first failure stops new patches; it is raised once the ones in flight have ended.
  Clocks and sleeps are injected so tests run without waiting.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from slinky_topology import __version__
from slinky_topology.errors import Finding, TopologyError, ValidationError
from slinky_topology.labeler.kube import KubeAPIError
from slinky_topology.labeler.reconcile import CONFIGMAP_KEY
from slinky_topology.parse import parse_topology_yaml
from slinky_topology.validate import raise_on_errors, size_findings, validate_doc

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from slinky_topology.labeler.kube import ClusterAPI
    from slinky_topology.labeler.metrics import Metrics
    from slinky_topology.labeler.reconcile import NodeChange, Plan

__all__ = [
    "MANAGED_BY",
    "Backoff",
    "PublishError",
    "Publisher",
    "TokenBucket",
    "WriteRefused",
    "validate_topology_text",
    "with_retries",
]

log = logging.getLogger("slinky_topology.labeler")
T = TypeVar("T")
MANAGED_BY = "gpu-topology-labeler"
_EPSILON = 1e-9  # float slack, so a refilled token is never missed by rounding


class PublishError(TopologyError):
    """Writing to the API failed after every retry."""


class WriteRefused(PublishError):
    """A write was not sent: the guard said no (not the leader any more, or stopping)."""


class TokenBucket:
    """Token bucket: ``qps`` tokens per second, at most ``burst`` saved. Thread safe.

    ``qps <= 0`` disables the limit.
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    def try_acquire(self) -> bool:
        """Take a token if one is available now."""
        if self.qps <= 0:
            return True
        with self._lock:
            self._refill()
            if self._tokens >= 1 - _EPSILON:
                self._tokens = max(0.0, self._tokens - 1)
                return True
            return False

    def acquire(self, abort: Callable[[], bool] | None = None) -> float:
        """Take a token, sleeping until one is available; return the seconds waited.

        ``abort``: asked after each sleep; when true, return without a token.
        """
        if self.qps <= 0:
            return 0.0
        waited = 0.0
        while True:
            if waited and abort is not None and abort():
                return waited
            with self._lock:
                self._refill()
                if self._tokens >= 1 - _EPSILON:
                    self._tokens = max(0.0, self._tokens - 1)
                    return waited
                wait = (1 - self._tokens) / self.qps
            self._sleep(wait)
            waited += wait


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff: ``initial * factor**n`` seconds, capped at ``maximum``."""

    initial: float = 0.5
    factor: float = 2.0
    maximum: float = 30.0
    attempts: int = 6

    def delays(self) -> list[float]:
        """The sleeps between the ``attempts`` tries."""
        return [min(self.maximum, self.initial * self.factor**n) for n in range(self.attempts - 1)]


def with_retries(
    call: Callable[[], T],
    backoff: Backoff,
    *,
    sleep: Callable[[float], None] = time.sleep,
    what: str = "API call",
    on_retry: Callable[[KubeAPIError], None] | None = None,
) -> T:
    """Run ``call``, retrying its retriable :class:`KubeAPIError` with ``backoff``; raise the
    last error (other exceptions pass through at once)."""
    delays = backoff.delays()
    for attempt in range(len(delays) + 1):
        try:
            return call()
        except KubeAPIError as exc:
            if not exc.retriable or attempt == len(delays):
                raise
            if on_retry is not None:
                on_retry(exc)
            log.warning(
                "retrying",
                extra={
                    "what": what,
                    "attempt": attempt + 1,
                    "delay": delays[attempt],
                    "error": str(exc)[:300],
                },
            )
            sleep(delays[attempt])
    raise AssertionError("unreachable")  # pragma: no cover


def validate_topology_text(text: str) -> None:
    """Parse ``text`` as topology.yaml and apply every rule; raise ValidationError if bad.

    An empty text, or one whose topologies hold no tree or block unit, is refused.
    """
    if not text.strip():
        raise ValidationError(
            [Finding("error", "topology.yaml", "is empty", fix="keep the last good ConfigMap")],
            what="topology to publish",
        )
    doc = parse_topology_yaml(text, location=CONFIGMAP_KEY)
    findings = validate_doc(doc, location=CONFIGMAP_KEY)
    findings += size_findings(text, CONFIGMAP_KEY)
    if all(t.kind == "flat" for t in doc.topologies):
        findings.append(
            Finding(
                "error",
                "topology.yaml",
                "holds only flat topologies (no switch or block): nothing to place nodes in",
                fix="check the node labels or fabric file",
            )
        )
    raise_on_errors(findings, what="topology to publish")


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Publisher:
    """Writes plans for one ConfigMap; see the module doc."""

    def __init__(
        self,
        api: ClusterAPI,
        *,
        namespace: str,
        configmap: str,
        limiter: TokenBucket,
        backoff: Backoff,
        metrics: Metrics,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], str] = _now,
        guard: Callable[[], bool] = lambda: True,
        workers: int = 1,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.configmap = configmap
        self.limiter = limiter
        self.backoff = backoff
        self.metrics = metrics
        self._sleep = sleep
        self._now = now
        self.guard = guard
        self.workers = max(1, workers)

    def _check(self, what: str) -> None:
        """Raise :class:`WriteRefused` unless the guard allows a write now."""
        if not self.guard():
            raise WriteRefused(
                f"{what}: not sent (not the leader any more, or stopping); stopped writing"
            )

    def _call(self, call: Callable[[], T], what: str) -> T:
        def attempt() -> T:
            self._check(what)
            self.limiter.acquire(abort=lambda: not self.guard())
            self._check(what)
            return call()

        try:
            return with_retries(
                attempt,
                self.backoff,
                sleep=self._sleep,
                what=what,
                on_retry=lambda _: self.metrics.errors.labels(kind="api_retry").inc(),
            )
        except KubeAPIError as exc:
            self.metrics.errors.labels(kind="api").inc()
            raise PublishError(f"{what} failed: {exc.detail}") from exc

    def configmap_body(
        self, data: Mapping[str, str], resource_version: str | None
    ) -> dict[str, Any]:
        text = "".join(data[k] for k in sorted(data))
        meta: dict[str, Any] = {
            "name": self.configmap,
            "namespace": self.namespace,
            "labels": {
                "app.kubernetes.io/managed-by": MANAGED_BY,
                "app.kubernetes.io/part-of": "slinky-topology",
            },
            "annotations": {
                "topology.slinky.slurm.net/generator": f"slinky-topology {__version__}",
                "topology.slinky.slurm.net/content-sha256": hashlib.sha256(
                    text.encode()
                ).hexdigest(),
                "topology.slinky.slurm.net/last-updated": self._now(),
            },
        }
        if resource_version:
            meta["resourceVersion"] = resource_version
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data)}

    def record_failure(
        self, error: BaseException, reason: str = "TopologyInvalid", *, event: bool = True
    ) -> None:
        """The error metric and (unless ``event`` is false) a Warning Event on the ConfigMap;
        never raises."""
        self.metrics.errors.labels(
            kind="api" if isinstance(error, KubeAPIError | PublishError) else "validation"
        ).inc()
        if not event:
            return
        message = str(error)
        if len(message) > 1000:
            message = message[:997] + "..."
        stamp = self._now()
        suffix = hashlib.sha256(f"{stamp}{message}".encode()).hexdigest()[:10]
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{self.configmap}.{suffix}", "namespace": self.namespace},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": self.configmap,
                "namespace": self.namespace,
            },
            "reason": reason,
            "message": message + " (the last good topology is kept)",
            "type": "Warning",
            "source": {"component": MANAGED_BY},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": MANAGED_BY,
        }
        try:
            self.limiter.acquire(abort=lambda: not self.guard())
            self._check("create event")
            self.api.create_event(self.namespace, body)
            self.metrics.writes.labels(kind="event").inc()
        except (KubeAPIError, WriteRefused) as exc:  # an Event is best effort
            log.warning("event not recorded", extra={"error": str(exc)[:300]})

    def apply(self, plan: Plan) -> int:
        """Write ``plan``: the ConfigMap first (units must exist before nodes name them),
        then the Nodes. Return the number of writes. Raises ValidationError (nothing written)
        or PublishError.
        """
        writes = 0
        if plan.configmap is not None:
            validate_topology_text(plan.configmap.data.get(CONFIGMAP_KEY, ""))
            writes += self._write_configmap(plan.configmap.data)
        if self.workers == 1 or len(plan.nodes) < 2:
            for change in plan.nodes:
                self._write_node(change)
                writes += 1
            return writes
        return writes + self._write_nodes_parallel(plan.nodes)

    def _write_node(self, change: NodeChange) -> None:
        self._patch_node(change.name, change.merge_patch())
        self.metrics.writes.labels(kind=f"node_{change.action}").inc()

    def _write_nodes_parallel(self, changes: Sequence[NodeChange]) -> int:
        """Patch with ``workers`` threads; return the writes, or raise the first failure."""
        failed = threading.Event()
        errors: list[PublishError] = []
        done = [0]
        lock = threading.Lock()

        def work(change: NodeChange) -> None:
            if failed.is_set():
                return
            try:
                self._write_node(change)
            except PublishError as exc:  # WriteRefused included
                with lock:
                    errors.append(exc)
                failed.set()
                return
            with lock:
                done[0] += 1

        with ThreadPoolExecutor(self.workers, thread_name_prefix="labeler-write") as pool:
            for _ in pool.map(work, changes):
                pass
        if errors:
            raise errors[0]
        return done[0]

    def _patch_node(self, name: str, body: dict[str, Any]) -> None:
        def patch() -> None:
            self.api.patch_node(name, body)

        self._call(patch, f"patch node {name}")

    def _write_configmap(self, data: Mapping[str, str]) -> int:
        what = f"write configmap {self.namespace}/{self.configmap}"

        def write() -> str:
            existing = self.api.get_configmap(self.namespace, self.configmap)
            self._check(what)  # the read took time: may this instance still write?
            if existing is None:
                self.api.create_configmap(self.namespace, self.configmap_body(data, None))
                return "configmap_create"
            if dict(existing.get("data") or {}) == dict(data):
                return ""
            version = (existing.get("metadata") or {}).get("resourceVersion")
            self.api.replace_configmap(
                self.namespace, self.configmap, self.configmap_body(data, version)
            )
            return "configmap_replace"

        kind = self._call(write, what)
        if not kind:
            return 0
        self.metrics.writes.labels(kind=kind).inc()
        return 1
