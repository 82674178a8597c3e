"""The labeler controller: watch Nodes, compute the topology, publish what changed.

``python -m slinky_topology.labeler [flags]`` runs :func:`main`. Threads:

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
before its Lease could pass to another instance. SIGTERM stops a pass at its next write, then
the Lease is released (after the election round in progress): at most three request timeouts
(the chart's grace period is sized to it). Each loop beats a heartbeat; ``/healthz`` fails when one has not beaten for
``--stuck-seconds``.

Offline: ``--from-nodes nodes.json`` (``kubectl get nodes -o json``) runs one dry pass without
a cluster; ``--configmap-file`` gives the current topology.yaml to diff against.
Logs are JSON lines on stderr; the diff of ``--dry-run`` goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import yaml

from slinky_topology import __version__
from slinky_topology.errors import InputError, TopologyError
from slinky_topology.labeler.keys import OWNED_ANNOTATIONS
from slinky_topology.labeler.kube import DEFAULT_TIMEOUT, status_of
from slinky_topology.labeler.metrics import HealthServer, Metrics
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
from slinky_topology.sources.files import read_structured
from slinky_topology.sources.k8s_nodes import PRESETS, node_items

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

    from slinky_topology.labeler.kube import ClusterAPI
    from slinky_topology.labeler.leader import LeaderElector
    from slinky_topology.model import Fabric

__all__ = ["Controller", "JsonFormatter", "build_parser", "main"]

log = logging.getLogger("slinky_topology.labeler")

_STD_ATTRS = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__.keys() | {"message", "asctime"}
)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, msg and every ``extra`` field."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STD_ATTRS and not key.startswith("_"):
                body[key] = value
        if record.exc_info:
            body["exc"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str, sort_keys=False)


class _StderrHandler(logging.Handler):
    """Writes to the current ``sys.stderr`` (looked up per record, not bound once)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


def setup_logging(level: str) -> None:
    handler = _StderrHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("slinky_topology")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a port: {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m slinky_topology.labeler",
        description=(
            "Label Kubernetes Nodes with their fabric position, annotate them with the Slinky "
            "topology spec and publish topology.yaml (dynamic shape) in a ConfigMap. "
            "`python -m slinky_topology.labeler discover --help`: per-node NVML discovery."
        ),
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    src = p.add_argument_group("input")
    src.add_argument(
        "--preset",
        default="auto",
        choices=["auto", *sorted(PRESETS)],
        help="label preset of the Node labels (default: auto)",
    )
    src.add_argument("--label-map", help="custom keys: accelerator=KEY,leaf=KEY,spine=KEY,...")
    src.add_argument(
        "--node-selector",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only Nodes with this label (repeatable); others lose the owned keys",
    )
    src.add_argument(
        "--slurm-name-key", help="label/annotation holding the Slurm node name (default: Node name)"
    )
    src.add_argument(
        "--fabric-configmap",
        metavar="NAME",
        help="read the fabric file from this ConfigMap (in --namespace) instead of Node labels",
    )
    src.add_argument(
        "--fabric-key", default="fabric.yaml", help="data key of --fabric-configmap (fabric.yaml)"
    )
    src.add_argument("--fabric-file", metavar="PATH", help="fabric file on disk (offline runs)")
    src.add_argument(
        "--from-nodes",
        metavar="FILE",
        help="offline: Nodes from `kubectl get nodes -o json`; implies --dry-run --once",
    )
    src.add_argument(
        "--configmap-file",
        metavar="FILE",
        help="offline: current topology.yaml to diff against (default: none exists)",
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "--configmap", default="gpu-topology", metavar="NAME", help="ConfigMap the labeler owns"
    )
    out.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE", "default"),
        help="namespace of the ConfigMaps, Lease and Events (default: $POD_NAMESPACE)",
    )
    out.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    out.add_argument(
        "--output", choices=["text", "json"], default="text", help="dry-run diff format"
    )
    run = p.add_argument_group("run")
    run.add_argument("--once", action="store_true", help="one pass, then exit")
    run.add_argument("--resync-seconds", type=_positive, default=300.0)
    run.add_argument(
        "--debounce-seconds", type=float, default=2.0, help="wait for more changes before a pass"
    )
    run.add_argument("--qps", type=float, default=20.0, help="API writes per second (0: no limit)")
    run.add_argument("--burst", type=int, default=40, help="API write burst")
    run.add_argument(
        "--write-workers",
        type=_at_least_one,
        default=1,
        help="node patches in flight at once (default: 1); with a high --qps, more finish a "
        "large first pass sooner",
    )
    run.add_argument(
        "--lease-name", default="", help="Lease for leader election (empty: no election)"
    )
    run.add_argument("--lease-duration", type=_positive, default=15.0)
    run.add_argument("--renew-deadline", type=_positive, default=10.0)
    run.add_argument("--retry-period", type=_positive, default=2.0)
    run.add_argument(
        "--identity",
        default=os.environ.get("POD_NAME") or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}",
        help="leader election identity (default: $POD_NAME)",
    )
    run.add_argument(
        "--request-timeout",
        type=_positive,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"client timeout of every API call, connection included (default: {DEFAULT_TIMEOUT:g})",
    )
    run.add_argument(
        "--watch-timeout",
        type=_at_least_one,
        default=60,
        metavar="SECONDS",
        help="the server ends each Node/ConfigMap watch after this long; a watch silent for "
        "this plus --request-timeout is dropped and restarted (default: 60)",
    )
    run.add_argument(
        "--stuck-seconds",
        type=_positive,
        metavar="SECONDS",
        help="/healthz fails once a loop (watch, election, passes) made no progress for this "
        "long (default: twice the longest quiet time, --watch-timeout plus --request-timeout "
        "with the defaults: 140)",
    )
    run.add_argument(
        "--metrics-port", type=_port, default=8080, help="/metrics /healthz /readyz (0: off)"
    )
    run.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube)")
    run.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return p


def _selector(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"--node-selector {item!r} is not KEY=VALUE")
        out[key] = value
    return out


def _interesting(node: Mapping[str, Any], name_key: str | None = None) -> tuple[Any, Any]:
    """What a pass reads of a Node: every label, but only the owned annotations (and the
    ``--slurm-name-key`` one). Other annotations change all the time (kube-controller-manager's
    TTL controller rewrites ``node.alpha.kubernetes.io/ttl`` on every Node as a cluster grows),
    and must not trigger passes."""
    meta = node.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    keep = {k: v for k, v in annotations.items() if k in OWNED_ANNOTATIONS or k == name_key}
    return (meta.get("labels") or {}), keep


class Controller:
    """State and loops of one labeler process (see module doc)."""

    def __init__(
        self,
        args: argparse.Namespace,
        api: ClusterAPI | None,
        *,
        metrics: Metrics | None = None,
        elector: LeaderElector | None = None,
        out: IO[str] | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.args = args
        self.api = api
        self.metrics = metrics or Metrics()
        self.elector = elector
        self.out = out or sys.stdout
        self.stop = threading.Event()
        # sleeps (retry backoff, rate limit) end at once when the controller stops
        self._sleep: Callable[[float], None] = sleep or self._wait
        self.selector = _selector(args.node_selector)
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
        self.stuck_seconds: float = args.stuck_seconds or 2 * quiet_seconds(args)
        self.backoff = Backoff()
        self.publisher: Publisher | None = None
        if api is not None and not args.dry_run:
            self.publisher = Publisher(
                api,
                namespace=args.namespace,
                configmap=args.configmap,
                limiter=TokenBucket(args.qps, args.burst, sleep=self._sleep),
                backoff=self.backoff,
                metrics=self.metrics,
                sleep=self._sleep,
                guard=self._write_allowed,
                workers=getattr(args, "write_workers", 1),
            )

    def _wait(self, seconds: float) -> None:
        self.stop.wait(seconds)

    # ---------------------------------------------------------------- leadership

    def may_write(self) -> bool:
        """A write may start now: not stopping, and without election or while the Lease is
        ours for at least one more request timeout (the write ends before it could pass on)."""
        if self.stop.is_set():
            return False
        return self.elector is None or self.elector.may_write(self.args.request_timeout)

    def _write_allowed(self) -> bool:
        """The publisher's guard, asked before every try of every write: a pass that writes
        is making progress (heartbeat), and :meth:`may_write` decides."""
        self.beat("main")
        return self.may_write()

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
            self.nodes = {str(i["metadata"]["name"]): i for i in items}
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
                self.nodes[name] = dict(obj)
                key = self.args.slurm_name_key
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
        seconds = timeout_seconds or self.args.watch_timeout
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
            except Exception as exc:
                gone = (isinstance(exc, WatchGone) and exc.code == 410) or status_of(exc) == 410
                reset()
                if gone:
                    log.info("watch expired (410 Gone); re-listing", extra={"watch": name})
                    continue
                self.metrics.errors.labels(kind="watch").inc()
                delay = delays[min(failures, len(delays) - 1)]
                failures += 1
                log.warning(
                    "watch silent; restarting" if _is_timeout(exc) else "watch failed",
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
                extra={"configmap": self.args.configmap, "deleted": data is None},
            )
            self.dirty.set()

    def _configmap_now(self, data: Mapping[str, str] | None) -> None:
        with self.lock:
            self._configmap_data = None if data is None else dict(data)
            self._configmap_known = True

    def configmap_watch_once(self) -> None:
        """Read the owned ConfigMap (by name), then watch it for one stream."""
        assert self.api is not None
        namespace, name = self.args.namespace, self.args.configmap
        obj, version = self.api.list_configmap(namespace, name)
        self.configmap_seen(obj)
        events: Iterator[tuple[str, dict[str, Any]]] = self.api.watch_configmap(
            namespace, name, version, self.args.watch_timeout
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
        args = self.args
        if args.fabric_file:
            return load_fabric(args.fabric_file)
        if args.fabric_configmap:
            if self.api is None:
                raise InputError("--fabric-configmap needs a cluster (use --fabric-file offline)")
            cm = self.api.get_configmap(args.namespace, args.fabric_configmap)
            where = f"configmap {args.namespace}/{args.fabric_configmap}"
            if cm is None:
                raise InputError("not found", location=where)
            text = (cm.get("data") or {}).get(args.fabric_key)
            if not isinstance(text, str):
                raise InputError(f"has no data key {args.fabric_key!r}", location=where)
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise InputError(f"not valid YAML: {exc}", location=where) from None
            return fabric_from_data(data, f"{where}:{args.fabric_key}", text)
        return None

    def current_configmap(self) -> Mapping[str, str] | None:
        if self.args.from_nodes:
            if not self.args.configmap_file:
                return None
            try:
                text = Path(self.args.configmap_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise InputError(
                    f"cannot read: {exc.strerror}", location=self.args.configmap_file
                ) from None
            return {CONFIGMAP_KEY: text}
        assert self.api is not None
        cm = self.api.get_configmap(self.args.namespace, self.args.configmap)
        return None if cm is None else dict(cm.get("data") or {})

    def run_pass(self) -> bool:
        """One reconcile pass; return whether it succeeded (nothing bad was published)."""
        started = time.monotonic()
        self.beat("main")
        with self.lock:
            items = list(self.nodes.values())
        self.metrics.nodes_seen.set(len(items))
        args = self.args
        try:
            desired = desired_state(
                items,
                preset=args.preset,
                label_map=args.label_map,
                fabric=self.load_fabric(),
                node_selector=self.selector or None,
                slurm_name_key=args.slurm_name_key,
            )
        except TopologyError as exc:
            return self._failed(exc, "TopologyInvalid")
        except Exception as exc:  # reading the fabric ConfigMap: API or connection errors
            return self._failed(exc, "ApiError")
        for finding in desired.warnings:
            log.warning("topology warning", extra={"finding": str(finding)})
        self.beat("main")
        try:
            configmap = self.current_configmap()
            plan = reconcile(desired, current_from_items(items, configmap))
        except TopologyError as exc:
            return self._failed(exc, "InputInvalid")
        except Exception as exc:
            return self._failed(exc, "ApiError")
        self.beat("main")
        if args.dry_run or self.publisher is None:
            self.out.write(
                plan_json(plan)
                if args.output == "json"
                else plan.describe(f"{args.namespace}/{args.configmap}")
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
                "dry_run": bool(self.args.dry_run),
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
        next_resync = time.monotonic() + self.args.resync_seconds
        try:
            while not self.stop.is_set():
                self.beat("main")
                timeout = max(0.0, next_resync - time.monotonic())
                self.dirty.wait(timeout=min(timeout, 1.0))
                due = time.monotonic() >= next_resync
                if not (self.dirty.is_set() or due) or not self.synced.is_set():
                    continue
                if not (self.args.dry_run or self.may_write()):
                    continue  # a follower only watches; the new leader reconciles at once
                if self.dirty.is_set() and self.args.debounce_seconds > 0:
                    self._pause(self.args.debounce_seconds)
                self.dirty.clear()
                try:
                    self.run_pass()
                except Exception:  # keep watching; the next change or resync retries
                    self.metrics.passes.labels(result="error").inc()
                    log.exception("pass crashed")
                next_resync = time.monotonic() + self.args.resync_seconds
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
            self._elect_thread.join(timeout=self.args.request_timeout)
        if self.elector is not None:
            released = self.elector.release()
            self.metrics.leader.set(0)
            log.info("stopped", extra={"lease_released": released})


class WatchGone(Exception):
    """A watch ERROR event (``code`` 410: the resourceVersion is too old)."""

    def __init__(self, message: str, code: int | None) -> None:
        super().__init__(message or f"watch error {code}")
        self.code = code


def quiet_seconds(args: argparse.Namespace) -> float:
    """The longest a healthy loop goes without a heartbeat: a watch with no event (it ends
    after ``--watch-timeout``, or is dropped ``--request-timeout`` later), an election round
    (two calls) and its wait. ``--stuck-seconds`` must exceed it; the default is twice it."""
    return float(
        max(
            args.watch_timeout + args.request_timeout,
            args.retry_period + 2 * args.request_timeout,
        )
    )


def _is_timeout(exc: BaseException) -> bool:
    """A client timeout (urllib3's ``ReadTimeoutError``/``ConnectTimeoutError``, socket)."""
    return isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__


def _offline_nodes(path: str) -> list[dict[str, Any]]:
    return [dict(i) for i in node_items(read_structured(path))]


def main(argv: Sequence[str] | None = None, *, out: IO[str] | None = None) -> int:
    """Entry point; returns 0 ok, 1 bad input or failed pass, 2 usage."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["discover"]:
        from slinky_topology.labeler.discover import main as discover_main  # noqa: PLC0415

        return discover_main(argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if not args.renew_deadline < args.lease_duration or not args.retry_period < args.renew_deadline:
        print("error: need --retry-period < --renew-deadline < --lease-duration", file=sys.stderr)
        return 2
    if args.lease_name and not args.request_timeout + args.retry_period < args.lease_duration:
        print(
            "error: need --request-timeout + --retry-period < --lease-duration (a write starts "
            "only when it ends before the Lease could pass to another instance)",
            file=sys.stderr,
        )
        return 2
    quiet = quiet_seconds(args)
    if args.stuck_seconds is not None and not args.stuck_seconds > quiet:
        print(
            f"error: --stuck-seconds must exceed {quiet:g} (--watch-timeout plus "
            "--request-timeout, and --retry-period plus twice --request-timeout): a healthy "
            "loop can be quiet that long",
            file=sys.stderr,
        )
        return 2
    if args.fabric_file and args.fabric_configmap:
        print("error: give --fabric-file or --fabric-configmap, not both", file=sys.stderr)
        return 2
    if args.configmap_file and not args.from_nodes:
        print("error: --configmap-file only goes with --from-nodes", file=sys.stderr)
        return 2
    setup_logging(args.log_level)
    if args.from_nodes:
        args.dry_run = True
        args.once = True
        controller = Controller(args, None, out=out)
        try:
            controller.nodes = {n["metadata"]["name"]: n for n in _offline_nodes(args.from_nodes)}
            controller.current_configmap()  # read errors are usage-level input errors
        except InputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        controller.synced.set()
        return 0 if controller.run_pass() else 1
    return _run_cluster(args, out)


def _run_cluster(args: argparse.Namespace, out: IO[str] | None) -> int:
    from slinky_topology.labeler.kube import (  # noqa: PLC0415
        KubeClusterAPI,
        KubeLeaseAPI,
        load_clients,
    )
    from slinky_topology.labeler.leader import LeaderElector  # noqa: PLC0415

    try:
        api_client = load_clients(args.kubeconfig)
    except Exception as exc:
        print(f"error: no Kubernetes configuration: {exc}", file=sys.stderr)
        return 1
    elector = None
    if args.lease_name and not args.dry_run:
        elector = LeaderElector(
            KubeLeaseAPI(api_client, timeout=args.request_timeout),
            name=args.lease_name,
            namespace=args.namespace,
            identity=args.identity,
            lease_duration=args.lease_duration,
            renew_deadline=args.renew_deadline,
            retry_period=args.retry_period,
        )
    metrics = Metrics()
    controller = Controller(
        args,
        KubeClusterAPI(api_client, timeout=args.request_timeout),
        metrics=metrics,
        elector=elector,
        out=out,
    )
    server: HealthServer | None = None
    if args.metrics_port:
        server = HealthServer(
            metrics, args.metrics_port, live=controller.live, ready=controller.ready
        ).start()
    handlers = _stop_on_signals(controller)
    try:
        if args.once:
            return _run_once(controller)
        log.info(
            "starting",
            extra={
                "version": __version__,
                "namespace": args.namespace,
                "configmap": args.configmap,
                "dry_run": args.dry_run,
                "lease": args.lease_name or None,
            },
        )
        return controller.run_forever()
    finally:
        for sig, previous in handlers.items():
            signal.signal(sig, previous)
        if server is not None:
            server.stop()


def _stop_on_signals(controller: Controller) -> dict[int, Any]:
    """SIGTERM/SIGINT stop the controller (the pass ends at its next write, the Lease is
    released); return the handlers they replaced (none off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict[int, Any] = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, lambda *_: controller.stop.set())
    return previous


def _run_once(controller: Controller) -> int:
    try:
        controller.relist()
    except Exception as exc:
        print(f"error: listing Nodes failed: {exc}", file=sys.stderr)
        return 1
    elector = controller.elector
    if elector is not None and not elector.try_acquire_or_renew():
        if elector.last_error:
            print(f"error: leader election failed: {elector.last_error}", file=sys.stderr)
            return 1
        log.info("another instance is the leader; nothing to do")
        return 0
    if elector is not None:  # keep the Lease through a long pass
        controller._elect_thread = threading.Thread(
            target=controller.elect_loop, kwargs={"wait_first": True}, name="elect", daemon=True
        )
        controller._elect_thread.start()
    try:
        return 0 if controller.run_pass() else 1
    finally:
        controller.stop.set()
        controller.release()
