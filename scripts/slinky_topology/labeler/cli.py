"""``python -m slinky_topology.labeler``: the labeler controller's command line.

:func:`main` parses the flags (the chart renders them from its values) into a
:class:`~slinky_topology.labeler.config.LabelerConfig`, with ``$POD_NAMESPACE`` and ``$POD_NAME``
(the chart's downward API) as the defaults of ``--namespace`` and ``--identity``, then runs:

* offline (``--from-nodes nodes.json``, ``kubectl get nodes -o json``): one dry pass without a
  cluster; ``--configmap-file`` gives the current topology.yaml to diff against;
* against the cluster: the API clients, the leader elector, the ``/metrics`` server, SIGTERM and
  SIGINT handlers, then one pass (``--once``) or the controller's loops.

``python -m slinky_topology.labeler discover ...`` is the per-node agent (:mod:`.discover`).
The controller needs the ``labeler`` extra (the Kubernetes and Prometheus clients); without it,
it says so and exits 1. Exit status: 0 ok, 1 bad input or a failed pass, 2 usage. Errors are
printed here, once, as ``error: ...`` on stderr; logs are JSON lines on stderr (:mod:`.logs`);
the diff of ``--dry-run`` goes to stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import socket
import sys
import threading
import uuid
from types import MappingProxyType
from typing import IO, TYPE_CHECKING, Any

from slinky_topology import __version__
from slinky_topology.errors import InputError
from slinky_topology.flags import add_block_arguments
from slinky_topology.labeler.config import ConfigError, LabelerConfig
from slinky_topology.labeler.extra import EXTRA_HINT, missing_extra
from slinky_topology.labeler.kube import DEFAULT_TIMEOUT, KubeAPIError
from slinky_topology.labeler.logs import setup_logging
from slinky_topology.sources.files import read_structured
from slinky_topology.sources.k8s_nodes import PRESETS, node_items
from slinky_topology.validate import parse_block_sizes

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from slinky_topology.labeler.controller import Controller

__all__ = ["build_parser", "config_from_args", "main", "parse_config", "stop_on_signals"]

log = logging.getLogger("slinky_topology.labeler")
DEFAULTS = LabelerConfig()


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
    """The controller's flags; defaults are :class:`LabelerConfig`'s."""
    d = DEFAULTS
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
        default=d.preset,
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
        "--fabric-key", default=d.fabric_key, help="data key of --fabric-configmap (fabric.yaml)"
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
    blk = p.add_argument_group(
        "block topology of Node labels (a fabric file sets these on each of its topologies)"
    )
    add_block_arguments(blk)
    src.add_argument(
        "--allow-empty",
        action="store_true",
        help="no Node, or none with a label of the preset, is expected: publish a flat "
        "topology instead of failing the pass (default: fail and keep the last good one)",
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "--configmap", default=d.configmap, metavar="NAME", help="ConfigMap the labeler owns"
    )
    out.add_argument(
        "--namespace",
        help="namespace of the ConfigMaps, Lease and Events (default: $POD_NAMESPACE, else "
        "default)",
    )
    out.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    out.add_argument(
        "--output", choices=["text", "json"], default=d.output, help="dry-run diff format"
    )
    run = p.add_argument_group("run")
    run.add_argument("--once", action="store_true", help="one pass, then exit")
    run.add_argument("--resync-seconds", type=_positive, default=d.resync_seconds)
    run.add_argument(
        "--debounce-seconds",
        type=float,
        default=d.debounce_seconds,
        help="wait for more changes before a pass",
    )
    run.add_argument("--qps", type=float, default=d.qps, help="API writes per second (0: no limit)")
    run.add_argument("--burst", type=int, default=d.burst, help="API write burst")
    run.add_argument(
        "--write-workers",
        type=_at_least_one,
        default=d.write_workers,
        help="node patches in flight at once (default: 1); with a high --qps, more finish a "
        "large first pass sooner",
    )
    run.add_argument(
        "--lease-name", default=d.lease_name, help="Lease for leader election (empty: no election)"
    )
    run.add_argument("--lease-duration", type=_positive, default=d.lease_duration)
    run.add_argument("--renew-deadline", type=_positive, default=d.renew_deadline)
    run.add_argument("--retry-period", type=_positive, default=d.retry_period)
    run.add_argument(
        "--identity",
        help="leader election identity (default: $POD_NAME, else the host name and a random "
        "suffix)",
    )
    run.add_argument(
        "--request-timeout",
        type=_positive,
        default=d.request_timeout,
        metavar="SECONDS",
        help=f"client timeout of every API call, connection included (default: {DEFAULT_TIMEOUT:g})",
    )
    run.add_argument(
        "--watch-timeout",
        type=_at_least_one,
        default=d.watch_timeout,
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
        "--metrics-port",
        type=_port,
        default=d.metrics_port,
        help="/metrics /healthz /readyz (0: off)",
    )
    run.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube)")
    run.add_argument(
        "--log-level", default=d.log_level, choices=["debug", "info", "warning", "error"]
    )
    return p


def _selector(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--node-selector {item!r} is not KEY=VALUE")
        out[key] = value
    return out


def config_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> LabelerConfig:
    """The configuration of parsed flags; ``environ`` fills ``--namespace`` and ``--identity``
    when they are not given. Raises :class:`ConfigError` when settings contradict each other."""
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(LabelerConfig)}
    values["node_selector"] = MappingProxyType(_selector(args.node_selector))
    if args.block_sizes is not None:
        try:
            values["block_sizes"] = parse_block_sizes(args.block_sizes, "--block-sizes")
        except InputError as exc:
            raise ConfigError(exc.message) from None
    values["namespace"] = args.namespace or environ.get("POD_NAMESPACE") or "default"
    values["identity"] = (
        args.identity or environ.get("POD_NAME") or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    )
    return LabelerConfig(**values)


def parse_config(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> LabelerConfig:
    """:func:`config_from_args` of ``argv`` (argparse exits 2 on a bad flag)."""
    args = build_parser().parse_args(list(argv))
    return config_from_args(args, os.environ if environ is None else environ)


def main(
    argv: Sequence[str] | None = None,
    *,
    out: IO[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Entry point; returns 0 ok, 1 bad input or failed pass, 2 usage."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["discover"]:
        from slinky_topology.labeler.discover import main as discover_main  # noqa: PLC0415

        return discover_main(argv[1:])
    try:
        config = parse_config(argv, environ)
    except SystemExit as exc:
        return int(exc.code or 0)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    missing = missing_extra()
    if missing:
        print(
            f"error: the labeler needs {' and '.join(missing)} (the labeler extra): {EXTRA_HINT}",
            file=sys.stderr,
        )
        return 1
    setup_logging(config.log_level)
    if config.offline:
        return _run_offline(config, out)
    return _run_cluster(config, out)


def _run_offline(config: LabelerConfig, out: IO[str] | None) -> int:
    from slinky_topology.labeler.controller import Controller  # noqa: PLC0415

    assert config.from_nodes is not None
    controller = Controller(config, None, out=out)
    try:
        items = [dict(i) for i in node_items(read_structured(config.from_nodes))]
        controller.nodes = {n["metadata"]["name"]: n for n in items}
        controller.current_configmap()  # read errors are usage-level input errors
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    controller.synced.set()
    return 0 if controller.run_pass() else 1


def _run_cluster(config: LabelerConfig, out: IO[str] | None) -> int:
    from slinky_topology.labeler.controller import Controller  # noqa: PLC0415
    from slinky_topology.labeler.kube import (  # noqa: PLC0415
        KubeClusterAPI,
        KubeLeaseAPI,
        load_clients,
    )
    from slinky_topology.labeler.leader import LeaderElector  # noqa: PLC0415
    from slinky_topology.labeler.metrics import HealthServer, Metrics  # noqa: PLC0415

    try:
        api_client = load_clients(config.kubeconfig)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    elector = None
    if config.lease_name and not config.dry_run:
        elector = LeaderElector(
            KubeLeaseAPI(api_client, timeout=config.request_timeout),
            name=config.lease_name,
            namespace=config.namespace,
            identity=config.identity,
            lease_duration=config.lease_duration,
            renew_deadline=config.renew_deadline,
            retry_period=config.retry_period,
        )
    metrics = Metrics()
    controller = Controller(
        config,
        KubeClusterAPI(api_client, timeout=config.request_timeout),
        metrics=metrics,
        elector=elector,
        out=out,
    )
    server: HealthServer | None = None
    if config.metrics_port:
        server = HealthServer(
            metrics, config.metrics_port, live=controller.live, ready=controller.ready
        ).start()
    handlers = stop_on_signals(controller)
    try:
        if config.once:
            return _run_once(controller)
        log.info(
            "starting",
            extra={
                "version": __version__,
                "namespace": config.namespace,
                "configmap": config.configmap,
                "dry_run": config.dry_run,
                "lease": config.lease_name or None,
            },
        )
        return controller.run_forever()
    finally:
        for sig, previous in handlers.items():
            signal.signal(sig, previous)
        if server is not None:
            server.stop()


def stop_on_signals(controller: Controller) -> dict[int, Any]:
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
    except KubeAPIError as exc:
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
        controller.start_election(wait_first=True)
    try:
        return 0 if controller.run_pass() else 1
    finally:
        controller.stop.set()
        controller.release()
