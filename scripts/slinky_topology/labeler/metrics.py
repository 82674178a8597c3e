"""Prometheus metrics and the ``/metrics``, ``/healthz``, ``/readyz`` HTTP server.

Metrics (own registry, so several controllers can live in one test process):

=====================================================  =======  =================================
name                                                   type     meaning
=====================================================  =======  =================================
``slinky_topology_labeler_nodes_seen``                 gauge    Nodes in the last pass
``slinky_topology_labeler_nodes_skipped``              gauge    Nodes of the last pass without
                                                                a Slurm node name
                                                                (``--slurm-name-key``): no
                                                                slurmd there, left out
``slinky_topology_labeler_writes_total{kind}``         counter  API writes: ``node_add``,
                                                                ``node_change``, ``node_remove``,
                                                                ``configmap_create``,
                                                                ``configmap_replace``, ``event``
``slinky_topology_labeler_errors_total{kind}``         counter  ``validation`` (bad input, kept
                                                                last good), ``api``, ``api_retry``,
                                                                ``watch``
``slinky_topology_labeler_last_success_timestamp``     gauge    Unix time of the last good pass
``slinky_topology_labeler_passes_total{result}``       counter  passes: ``ok``, ``error``,
                                                                ``interrupted`` (stopping, or
                                                                not the leader any more)
``slinky_topology_labeler_leader``                     gauge    1 while this pod is the leader
=====================================================  =======  =================================
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    generate_latest,
)

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["HealthServer", "Metrics"]

PREFIX = "slinky_topology_labeler"


class Metrics:
    """The labeler's metrics in their own :class:`CollectorRegistry`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.nodes_seen = Gauge(f"{PREFIX}_nodes_seen", "Nodes seen in the last pass", registry=r)
        self.nodes_skipped = Gauge(
            f"{PREFIX}_nodes_skipped",
            "Nodes of the last pass left out for lack of a Slurm node name (--slurm-name-key)",
            registry=r,
        )
        self.writes = Counter(f"{PREFIX}_writes", "API writes by kind", ["kind"], registry=r)
        self.errors = Counter(f"{PREFIX}_errors", "Errors by kind", ["kind"], registry=r)
        self.last_success = Gauge(
            f"{PREFIX}_last_success_timestamp",
            "Unix time of the last pass that published or found nothing to change",
            registry=r,
        )
        self.passes = Counter(
            f"{PREFIX}_passes", "Reconcile passes by result", ["result"], registry=r
        )
        self.leader = Gauge(f"{PREFIX}_leader", "1 while this instance is the leader", registry=r)

    def value(self, name: str, **labels: str) -> float:
        """Current value of a sample (tests and logs)."""
        found = self.registry.get_sample_value(name, labels or None)
        return 0.0 if found is None else float(found)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class HealthServer:
    """HTTP server: ``/metrics``, ``/healthz`` (``live()``), ``/readyz`` (``ready()``).

    Each request has its own thread, so the probes answer while the controller's loops are
    busy or stuck (``live()`` then reports it).
    """

    def __init__(
        self,
        metrics: Metrics,
        port: int,
        *,
        live: Callable[[], bool],
        ready: Callable[[], bool],
        host: str = "0.0.0.0",
    ) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, owner.metrics.render(), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/livez"):
                    ok = owner.live()
                    self._send(200 if ok else 503, b"ok\n" if ok else b"unhealthy\n")
                elif path == "/readyz":
                    ok = owner.ready()
                    self._send(200 if ok else 503, b"ok\n" if ok else b"not ready\n")
                else:
                    self._send(404, b"not found\n")

            def _send(
                self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8"
            ) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.metrics = metrics
        self.live = live
        self.ready = ready
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
