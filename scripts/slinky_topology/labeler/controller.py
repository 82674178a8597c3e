"""The labeler controller: watch Nodes, compute the topology, publish what changed.

:class:`Controller` holds the state and the loops of one labeler process; :mod:`.cli` builds its
:class:`~slinky_topology.labeler.config.LabelerConfig` and its collaborators and runs it. Threads:

* watcher: list Nodes (resourceVersion), then watch from it; a 410 Gone or any stream error
  re-lists (after a backoff for errors), so the controller survives API server restarts;
  bookmarks advance the resourceVersion; only label/annotation changes mark the cache dirty;
* configmap watcher (unless ``--dry-run``): watches the one ConfigMap the labeler owns; when
  it is deleted or changed by someone else, a pass restores it at once (not at the next resync);
* elector (with ``--lease-name``): renews the Lease every retry period; only the leader writes;
* main: after a change (debounced) or every ``--resync-seconds``, one pass:
  nodes -> :func:`reconcile.desired_state` -> :func:`reconcile.reconcile` -> publish
  (or print the diff with ``--dry-run``). Bad input keeps the last good state, records a
  Warning Event on the ConfigMap and counts ``errors_total{kind="validation"}``.

Nothing blocks for long: every API call ends within ``--request-timeout`` and a watch silent
for ``--watch-timeout`` plus that is dropped and restarted. Before every write (retries
included) the controller checks that it is not stopping and that, as leader, the write ends
before its Lease could pass to another instance (a renewal that is only late pauses the write
until the next one; a lost Lease ends the pass). SIGTERM stops a pass at its next write, then
the Lease is released (after the election round in progress): at most three request timeouts
(the chart's grace period is sized to it). Each loop beats a heartbeat; ``/healthz`` fails when
one has not beaten for ``--stuck-seconds``.

API failures arrive as :class:`~slinky_topology.labeler.kube.KubeAPIError` only; a pass that
meets one fails (reason ``ApiError``) and the next change or resync retries it.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import yaml

from slinky_topology.errors import InputError, TopologyError
from slinky_topology.labeler.keys import OWNED_ANNOTATIONS
from slinky_topology.labeler.kube import KubeAPIError, node_metadata
from slinky_topology.labeler.metrics import Metrics
from slinky_topology.labeler.publish import (
    Backoff,
    Publisher,
    PublishError,
    TokenBucket,
    WriteRefused,
)
from slinky_topology.labeler.reconcile import (
    CONFIGMAP_KEY,
    Plan,
    current_from_items,
    desired_state,
    plan_json,
    reconcile,
)
from slinky_topology.sources.fabric_file import fabric_from_data, load_fabric

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from slinky_topology.labeler.config import LabelerConfig
    from slinky_topology.labeler.kube import ClusterAPI
    from slinky_topology.labeler.leader import LeaderElector
    from slinky_topology.model import Fabric

__all__ = ["Controller", "WatchGone"]

log = logging.getLogger("slinky_topology.labeler")


def _interesting(node: Mapping[str, Any], name_key: str | None = None) -> tuple[Any, Any]:
    """What a pass reads of a Node: every label, but only the owned annotations (and the
    ``--slurm-name-key`` one). Other annotations change all the time (kube-controller-manager's
    TTL controller rewrites ``node.alpha.kubernetes.io/ttl`` on every Node as a cluster grows),
    and must not trigger passes."""
    meta = node.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    keep = {k: v for k, v in annotations.items() if k in OWNED_ANNOTATIONS or k == name_key}
    return (meta.get("labels") or {}), keep


RENEWAL_POLL_SECONDS = 0.1
"""How often a write held back by a late Lease renewal checks again (:meth:`Controller._write_allowed`)."""


class Controller:
    """State and loops of one labeler process (see module doc)."""

    def __init__(
        self,
        config: LabelerConfig,
        api: ClusterAPI | None,
        *,
        metrics: Metrics | None = None,
        elector: LeaderElector | None = None,
        out: IO[str] | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.config = config
        self.api = api
        self.metrics = metrics or Metrics()
        self.elector = elector
        self.out = out or sys.stdout
        self.stop = threading.Event()
        # sleeps (retry backoff, rate limit) end at once when the controller stops
        self._sleep: Callable[[float], None] = sleep or self._wait
        self.selector = dict(config.node_selector)
        self.nodes: dict[str, dict[str, Any]] = {}
        self.resource_version: str | None = None
        self.lock = threading.Lock()
        self.synced = threading.Event()
        self.dirty = threading.Event()
        self.last_pass_ok: bool | None = None
        self._reported: tuple[str, str] | None = None  # the failure last told in an Event
        # the owned ConfigMap's data as the last pass saw or wrote it (None: absent)
        self._configmap_data: dict[str, str] | None = None
        self._configmap_known = False
        self.beats: dict[str, float] = {}
        self._elect_thread: threading.Thread | None = None
        self.stuck_seconds: float = config.stuck_after
        self.backoff = Backoff()
        self.publisher: Publisher | None = None
        if api is not None and not config.dry_run:
            self.publisher = Publisher(
                api,
                namespace=config.namespace,
                configmap=config.configmap,
                limiter=TokenBucket(config.qps, config.burst, sleep=self._sleep),
                backoff=self.backoff,
                metrics=self.metrics,
                sleep=self._sleep,
                guard=self._write_allowed,
                workers=config.write_workers,
            )

    def _wait(self, seconds: float) -> None:
        self.stop.wait(seconds)

    # ---------------------------------------------------------------- leadership

    def may_write(self) -> bool:
        """A write may start now: not stopping, and without election or while the Lease is
        ours for at least one more request timeout (the write ends before it could pass on)."""
        if self.stop.is_set():
            return False
        return self.elector is None or self.elector.may_write(self.config.request_timeout)

    def _write_allowed(self) -> bool:
        """The publisher's guard, asked before every try of every write: a pass that writes
        is making progress (heartbeat), and :meth:`may_write` decides.

        A renewal that is merely late (a busy API server takes a few seconds to answer the
        election round) is not a lost Lease: while this instance is still the leader (renewed
        within the renew deadline) the write waits for the next renewal instead of ending the
        pass; it is refused once leadership is gone or the controller stops. Nothing is sent
        while waiting, so no write can land after the Lease passed on."""
        self.beat("main")
        if self.may_write():
            return True
        paused = False
        while self.elector is not None and self.elector.is_leader and not self.stop.is_set():
            if not paused:
                log.debug("write paused: waiting for the Lease's next renewal")
                paused = True
            self.stop.wait(RENEWAL_POLL_SECONDS)
            self.beat("main")
            if self.may_write():
                return True
        return False

    def start_election(self, *, wait_first: bool = False) -> None:
        """Run :meth:`elect_loop` in its own thread (stopped with the controller)."""
        self._elect_thread = threading.Thread(
            target=self.elect_loop, kwargs={"wait_first": wait_first}, name="elect", daemon=True
        )
        self._elect_thread.start()

    def elect_loop(self, *, wait_first: bool = False) -> None:
        """Election rounds every retry period until stopped (``wait_first``: the Lease was
        just taken, so the first round is one period away)."""
        assert self.elector is not None
        if wait_first:
            self.beat("elect")
            self.stop.wait(self.elector.retry_period)
        while not self.stop.is_set():
            self.beat("elect")
            was = self.elector.is_leader
            now = self.elector.try_acquire_or_renew()
            self.metrics.leader.set(1 if now else 0)
            if now and not was:
                self.dirty.set()  # a new leader reconciles at once
            self.beat("elect")
            self.stop.wait(self.elector.retry_period)

    # ---------------------------------------------------------------- liveness

    def beat(self, loop: str) -> None:
        """Record that ``loop`` made progress now."""
        self.beats[loop] = time.monotonic()

    def stuck_loops(self) -> list[str]:
        """Loops that made no progress for ``stuck_seconds``."""
        now = time.monotonic()
        return sorted(n for n, t in list(self.beats.items()) if now - t > self.stuck_seconds)

    # ---------------------------------------------------------------- nodes

    def relist(self) -> None:
        assert self.api is not None
        items, version = self.api.list_nodes()
        with self.lock:
            self.nodes = {str(i["metadata"]["name"]): node_metadata(i) for i in items}
            self.resource_version = version
        self.synced.set()
        self.dirty.set()
        log.info("listed nodes", extra={"nodes": len(items), "resourceVersion": version})

    def handle_event(self, kind: str, obj: Mapping[str, Any]) -> None:
        """Apply one watch event to the cache; raise on ERROR (410 Gone: caller re-lists)."""
        meta = obj.get("metadata") or {}
        if kind == "ERROR":
            code = obj.get("code")
            raise WatchGone(str(obj.get("message", "")), code if isinstance(code, int) else None)
        version = meta.get("resourceVersion")
        if kind == "BOOKMARK":
            if version:
                self.resource_version = str(version)
            return
        name = meta.get("name")
        if not isinstance(name, str):
            return
        with self.lock:
            old = self.nodes.get(name)
            if kind == "DELETED":
                self.nodes.pop(name, None)
                changed = old is not None
            else:
                self.nodes[name] = node_metadata(obj)
                key = self.config.slurm_name_key
                changed = old is None or _interesting(old, key) != _interesting(obj, key)
            if version:
                self.resource_version = str(version)
        if changed:
            self.dirty.set()

    def watch_once(self, timeout_seconds: int | None = None) -> None:
        """List if needed, then consume one watch stream (returns at its timeout; raises when
        it stays silent past the timeout plus ``--request-timeout``)."""
        assert self.api is not None
        if self.resource_version is None:
            self.relist()
        assert self.resource_version is not None
        seconds = timeout_seconds or self.config.watch_timeout
        for kind, obj in self.api.watch_nodes(self.resource_version, seconds):
            self.beat("watch")
            self.handle_event(kind, obj)
            if self.stop.is_set():
                return

    def watch_loop(self) -> None:
        self._watch_loop("watch", self.watch_once, self._forget_version)

    def _forget_version(self) -> None:
        self.resource_version = None  # re-list: the cache may have missed events

    def _watch_loop(self, name: str, once: Callable[[], None], reset: Callable[[], None]) -> None:
        """Run ``once`` until stopped; after an error ``reset``, then retry (410 Gone at once,
        others after a backoff); a silent stream (read timeout) is an error like the others."""
        failures = 0
        delays = Backoff(initial=1.0, maximum=30.0, attempts=10).delays()
        while not self.stop.is_set():
            self.beat(name)
            try:
                once()
                failures = 0
            except (KubeAPIError, WatchGone) as exc:
                code = exc.code if isinstance(exc, WatchGone) else exc.status
                gone = code == 410
                reset()
                if gone:
                    log.info("watch expired (410 Gone); re-listing", extra={"watch": name})
                    continue
                self.metrics.errors.labels(kind="watch").inc()
                delay = delays[min(failures, len(delays) - 1)]
                failures += 1
                log.warning(
                    "watch silent; restarting"
                    if isinstance(exc, KubeAPIError) and exc.timeout
                    else "watch failed",
                    extra={"watch": name, "error": str(exc)[:300], "retry_in": delay},
                )
                self.beat(name)
                self.stop.wait(delay)

    # ---------------------------------------------------------------- the owned ConfigMap

    def configmap_seen(self, obj: Mapping[str, Any] | None) -> None:
        """The owned ConfigMap as a watch shows it (``None``: deleted or absent). When it
        differs from what the last pass saw or wrote, someone else changed or deleted it: a
        pass restores it now."""
        data = None if obj is None else dict(obj.get("data") or {})
        with self.lock:
            changed = self._configmap_known and data != self._configmap_data
        if changed:
            log.info(
                "configmap changed by someone else; restoring it",
                extra={"configmap": self.config.configmap, "deleted": data is None},
            )
            self.dirty.set()

    def _configmap_now(self, data: Mapping[str, str] | None) -> None:
        with self.lock:
            self._configmap_data = None if data is None else dict(data)
            self._configmap_known = True

    def configmap_watch_once(self) -> None:
        """Read the owned ConfigMap (by name), then watch it for one stream."""
        assert self.api is not None
        namespace, name = self.config.namespace, self.config.configmap
        obj, version = self.api.list_configmap(namespace, name)
        self.configmap_seen(obj)
        events: Iterator[tuple[str, dict[str, Any]]] = self.api.watch_configmap(
            namespace, name, version, self.config.watch_timeout
        )
        for kind, event in events:
            self.beat("configmap-watch")
            if kind == "ERROR":
                code = event.get("code")
                raise WatchGone(
                    str(event.get("message", "")), code if isinstance(code, int) else None
                )
            if kind != "BOOKMARK":
                self.configmap_seen(None if kind == "DELETED" else event)
            if self.stop.is_set():
                return

    def configmap_watch_loop(self) -> None:
        self._watch_loop("configmap-watch", self.configmap_watch_once, lambda: None)

    # ---------------------------------------------------------------- one pass

    def load_fabric(self) -> Fabric | None:
        config = self.config
        if config.fabric_file:
            return load_fabric(config.fabric_file)
        if config.fabric_configmap:
            if self.api is None:
                raise InputError("--fabric-configmap needs a cluster (use --fabric-file offline)")
            cm = self.api.get_configmap(config.namespace, config.fabric_configmap)
            where = f"configmap {config.namespace}/{config.fabric_configmap}"
            if cm is None:
                raise InputError("not found", location=where)
            text = (cm.get("data") or {}).get(config.fabric_key)
            if not isinstance(text, str):
                raise InputError(f"has no data key {config.fabric_key!r}", location=where)
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise InputError(f"not valid YAML: {exc}", location=where) from None
            return fabric_from_data(data, f"{where}:{config.fabric_key}", text)
        return None

    def current_configmap(self) -> Mapping[str, str] | None:
        if self.config.from_nodes:
            if not self.config.configmap_file:
                return None
            try:
                text = Path(self.config.configmap_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise InputError(
                    f"cannot read: {exc.strerror}", location=self.config.configmap_file
                ) from None
            return {CONFIGMAP_KEY: text}
        assert self.api is not None
        cm = self.api.get_configmap(self.config.namespace, self.config.configmap)
        return None if cm is None else dict(cm.get("data") or {})

    def run_pass(self) -> bool:
        """One reconcile pass; return whether it succeeded (nothing bad was published)."""
        started = time.monotonic()
        self.beat("main")
        with self.lock:
            items = list(self.nodes.values())
        self.metrics.nodes_seen.set(len(items))
        config = self.config
        try:
            desired = desired_state(
                items,
                preset=config.preset,
                label_map=config.label_map,
                fabric=self.load_fabric(),
                node_selector=self.selector or None,
                slurm_name_key=config.slurm_name_key,
                block_options=config.block_options,
                allow_empty=config.allow_empty,
            )
        except KubeAPIError as exc:  # reading the fabric ConfigMap
            return self._failed(exc, "ApiError")
        except TopologyError as exc:
            return self._failed(exc, "TopologyInvalid")
        self.metrics.nodes_skipped.set(len(desired.skipped))
        for finding in desired.warnings:
            log.warning("topology warning", extra={"finding": str(finding)})
        self.beat("main")
        try:
            configmap = self.current_configmap()
            plan = reconcile(desired, current_from_items(items, configmap))
        except KubeAPIError as exc:  # reading the owned ConfigMap
            return self._failed(exc, "ApiError")
        except TopologyError as exc:
            return self._failed(exc, "InputInvalid")
        self.beat("main")
        if config.dry_run or self.publisher is None:
            self.out.write(
                plan_json(plan)
                if config.output == "json"
                else plan.describe(f"{config.namespace}/{config.configmap}")
            )
            self.out.flush()
            return self._ok(plan, 0, started)
        # what the ConfigMap holds after this pass (the watch tells foreign changes from ours)
        self._configmap_now(configmap if plan.configmap is None else desired.configmap)
        try:
            writes = self.publisher.apply(plan)
        except WriteRefused as exc:
            self.metrics.passes.labels(result="interrupted").inc()
            self.last_pass_ok = False
            stopping = self.stop.is_set()
            log.log(
                logging.INFO if stopping else logging.WARNING,
                "pass stopped: shutting down" if stopping else "pass stopped: not the leader",
                extra={"error": str(exc)[:300]},
            )
            return False
        except PublishError as exc:
            self.metrics.passes.labels(result="error").inc()
            self.last_pass_ok = False
            log.error("publish failed", extra={"error": str(exc)[:1000]})
            return False
        except TopologyError as exc:
            return self._failed(exc, "TopologyInvalid")
        return self._ok(plan, writes, started)

    def _ok(self, plan: Plan, writes: int, started: float) -> bool:
        self._reported = None
        self.metrics.passes.labels(result="ok").inc()
        self.metrics.last_success.set(time.time())
        self.last_pass_ok = True
        log.info(
            "pass done",
            extra={
                "nodes": len(self.nodes),
                "planned": plan.writes,
                "writes": writes,
                "dry_run": bool(self.config.dry_run),
                "seconds": round(time.monotonic() - started, 3),
            },
        )
        return True

    def _failed(self, exc: BaseException, reason: str) -> bool:
        self.metrics.passes.labels(result="error").inc()
        self.last_pass_ok = False
        log.error(
            "pass failed; last good state kept", extra={"reason": reason, "error": str(exc)[:2000]}
        )
        if self.publisher is not None and self.may_write():
            # One Event per distinct failure: while the input stays bad, every pass (Node churn
            # triggers many) fails the same way; the metric counts each, the Event says it once.
            failure = (reason, str(exc))
            self.publisher.record_failure(exc, reason, event=failure != self._reported)
            self._reported = failure
        else:
            self.metrics.errors.labels(kind="validation").inc()
        return False

    # ---------------------------------------------------------------- main loop

    def ready(self) -> bool:
        """Ready once the Nodes are listed; a failed pass is reported by metrics and Events,
        not by readiness (bad input must not take the metrics endpoint away)."""
        return self.synced.is_set()

    def live(self) -> bool:
        """Live unless stopping, or a loop made no progress for ``stuck_seconds`` (every API
        call has a timeout, so a loop that stops beating is stuck for good: restart it)."""
        if self.stop.is_set():
            return False
        stuck = self.stuck_loops()
        if stuck:
            log.error(
                "stuck: no progress; /healthz fails",
                extra={"loops": stuck, "stuck_seconds": self.stuck_seconds},
            )
        return not stuck

    def run_forever(self) -> int:
        threads = [threading.Thread(target=self.watch_loop, name="watch", daemon=True)]
        if self.publisher is not None:
            threads.append(
                threading.Thread(
                    target=self.configmap_watch_loop, name="configmap-watch", daemon=True
                )
            )
        if self.elector is not None:
            self._elect_thread = threading.Thread(target=self.elect_loop, name="elect", daemon=True)
            threads.append(self._elect_thread)
        self.beat("main")
        for t in threads:
            t.start()
        next_resync = time.monotonic() + self.config.resync_seconds
        try:
            while not self.stop.is_set():
                self.beat("main")
                timeout = max(0.0, next_resync - time.monotonic())
                self.dirty.wait(timeout=min(timeout, 1.0))
                due = time.monotonic() >= next_resync
                if not (self.dirty.is_set() or due) or not self.synced.is_set():
                    continue
                if not (self.config.dry_run or self.may_write()):
                    continue  # a follower only watches; the new leader reconciles at once
                if self.dirty.is_set() and self.config.debounce_seconds > 0:
                    self._pause(self.config.debounce_seconds)
                self.dirty.clear()
                try:
                    self.run_pass()
                except Exception:  # a bug in one pass must not stop the watches: logged with
                    # its traceback and counted; the next change or resync tries again
                    self.metrics.passes.labels(result="error").inc()
                    log.exception("pass crashed")
                next_resync = time.monotonic() + self.config.resync_seconds
        finally:
            self.stop.set()
            self.release()
        return 0

    def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` (less when stopped), beating the main heartbeat each second."""
        end = time.monotonic() + seconds
        while not self.stop.is_set() and (left := end - time.monotonic()) > 0:
            self.stop.wait(min(left, 1.0))
            self.beat("main")

    def release(self) -> None:
        """Give the Lease up (when held): a successor need not wait for it to expire. The
        election round in progress, if any, ends first (its renewal would undo the release)."""
        if self._elect_thread is not None:
            self._elect_thread.join(timeout=self.config.request_timeout)
        if self.elector is not None:
            released = self.elector.release()
            self.metrics.leader.set(0)
            log.info("stopped", extra={"lease_released": released})


class WatchGone(Exception):
    """A watch ERROR event (``code`` 410: the resourceVersion is too old)."""

    def __init__(self, message: str, code: int | None) -> None:
        super().__init__(message or f"watch error {code}")
        self.code = code
