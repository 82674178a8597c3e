"""Per-node discovery: the NVLink fabric of this node's GPUs, through NVML, as a Node label.

``python -m slinky_topology.labeler discover`` (the chart's optional DaemonSet) reads every
GPU's fabric info (``nvmlDeviceGetGpuFabricInfoV``; Fabric Manager/IMEX state) and, when all
GPUs report state *Completed* with one ``<ClusterUUID>.<CliqueId>``, sets the label
``topology.slinky.slurm.net/gpu-clique`` on its own Node (``--node-name``, default
``$NODE_NAME`` from the downward API). The controller reads it with
``--label-map accelerator=topology.slinky.slurm.net/gpu-clique``.

It degrades cleanly: without ``nvidia-ml-py`` (``pip install slinky-suite[nvml]``), without a
driver or GPU, or when the fabric is not supported/complete, it logs why and exits 0
(``--once``) or stays idle and retries every ``--interval`` seconds. Writing the label needs the
Kubernetes client of the ``labeler`` extra; without it (and without ``--dry-run``) it says so and
exits 1. A failed API call (:class:`~slinky_topology.labeler.kube.KubeAPIError`) fails the round:
``--once`` exits 1, otherwise the next round tries again. It never removes the
label (a Fabric Manager restart would otherwise churn every pass); it only writes when the
value differs.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib
import logging
import os
import signal
import sys
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slinky_topology.errors import InputError
from slinky_topology.labeler.extra import EXTRA_HINT, missing_extra
from slinky_topology.labeler.keys import CLIQUE_LABEL, is_label_value
from slinky_topology.labeler.kube import KubeAPIError
from slinky_topology.labeler.logs import setup_logging

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["FabricInfo", "clique_value", "main", "read_fabric"]

log = logging.getLogger("slinky_topology.labeler.discover")
STATE_COMPLETED = 3


@dataclass(frozen=True, slots=True)
class FabricInfo:
    """What NVML said: the clique value when usable, else ``None`` and the reason."""

    clique: str | None
    gpus: int
    reason: str = ""


def load_nvml() -> Any | None:
    """The ``pynvml`` module of nvidia-ml-py, or ``None`` when not installed."""
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


def _uuid_text(raw: Any) -> str:
    return str(uuid.UUID(bytes=bytes(bytearray(raw))))


def _gpu_fabric(nvml: Any, handle: Any) -> tuple[int, int, str]:
    """(state, status, "<ClusterUUID>.<CliqueId>") of one GPU."""
    try:
        info = nvml.c_nvmlGpuFabricInfo_v2_t()
        info.version = nvml.nvmlGpuFabricInfo_v2
        nvml.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info))
    except (AttributeError, nvml.NVMLError):
        info = nvml.c_nvmlGpuFabricInfo_t()
        nvml.nvmlDeviceGetGpuFabricInfo(handle, ctypes.byref(info))
    return int(info.state), int(info.status), f"{_uuid_text(info.clusterUuid)}.{int(info.cliqueId)}"


def read_fabric(nvml: Any) -> FabricInfo:
    """Query every GPU (``nvml``: the pynvml module or a fake with the same names)."""
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return FabricInfo(None, 0, f"NVML init failed (no driver?): {exc}")
    try:
        count = int(nvml.nvmlDeviceGetCount())
        if count == 0:
            return FabricInfo(None, 0, "no GPU")
        values: set[str] = set()
        for index in range(count):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            try:
                state, status, value = _gpu_fabric(nvml, handle)
            except Exception as exc:
                return FabricInfo(None, count, f"GPU {index}: fabric info not supported: {exc}")
            if state != STATE_COMPLETED:
                return FabricInfo(None, count, f"GPU {index}: fabric state {state} (3 = completed)")
            if status != 0:
                return FabricInfo(None, count, f"GPU {index}: fabric status {status}")
            values.add(value)
        return clique_value(values, count)
    except Exception as exc:
        return FabricInfo(None, 0, f"NVML query failed: {exc}")
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def clique_value(values: set[str], gpus: int) -> FabricInfo:
    """One clique for every GPU of the node, valid as a label value."""
    if len(values) != 1:
        return FabricInfo(None, gpus, f"GPUs report {len(values)} different cliques")
    value = next(iter(values))
    if value.startswith("00000000-0000-0000-0000-000000000000"):
        return FabricInfo(None, gpus, "no NVLink fabric (cluster UUID is zero)")
    if not is_label_value(value):
        return FabricInfo(None, gpus, f"clique {value!r} is not a valid label value")
    return FabricInfo(value, gpus)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m slinky_topology.labeler discover",
        description=f"Set {CLIQUE_LABEL} on this node from NVML (NVLink fabric clique).",
    )
    p.add_argument("--node-name", default=os.environ.get("NODE_NAME", ""))
    p.add_argument("--once", action="store_true", help="one discovery, then exit")
    p.add_argument("--interval", type=float, default=300.0, help="seconds between discoveries")
    p.add_argument("--dry-run", action="store_true", help="log the label, do not patch")
    p.add_argument("--kubeconfig")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return p


def discover_once(args: argparse.Namespace, nvml: Any | None, api: Any | None) -> bool:
    """One round; return whether a label value was found (and written if needed)."""
    if nvml is None:
        log.info("nvidia-ml-py is not installed; nothing to discover (pip install .[nvml])")
        return False
    info = read_fabric(nvml)
    if info.clique is None:
        log.info("no NVLink clique on this node", extra={"reason": info.reason, "gpus": info.gpus})
        return False
    if args.dry_run or api is None:
        log.info("would label node", extra={"node": args.node_name, CLIQUE_LABEL: info.clique})
        return True
    node = api.get_node(args.node_name)
    labels = (node.get("metadata") or {}).get("labels") or {}
    if labels.get(CLIQUE_LABEL) == info.clique:
        log.debug("label current", extra={"node": args.node_name})
        return True
    api.patch_node(args.node_name, {"metadata": {"labels": {CLIQUE_LABEL: info.clique}}})
    log.info("labelled node", extra={"node": args.node_name, CLIQUE_LABEL: info.clique})
    return True


def main(
    argv: Sequence[str] | None = None, *, nvml: Any | None = None, api: Any | None = None
) -> int:
    """Discovery entry point; 0 unless the arguments are wrong (2) or the API fails (1)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    setup_logging(args.log_level)
    if not args.node_name and not args.dry_run:
        print("error: --node-name (or $NODE_NAME) is required", file=sys.stderr)
        return 2
    if api is None and not args.dry_run and missing_extra(["kubernetes"]):
        print(
            f"error: discover needs the Kubernetes client to label its Node: {EXTRA_HINT}",
            file=sys.stderr,
        )
        return 1
    nvml = nvml if nvml is not None else load_nvml()
    if api is None and not args.dry_run and nvml is not None:
        from slinky_topology.labeler.kube import KubeClusterAPI, load_clients  # noqa: PLC0415

        try:
            api = KubeClusterAPI(load_clients(args.kubeconfig))
        except InputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    stop = threading.Event()
    if not args.once:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    while True:
        try:
            discover_once(args, nvml, api)
        except KubeAPIError as exc:
            log.error("discovery round failed", extra={"error": str(exc)[:500]})
            if args.once:
                return 1
        if args.once:
            return 0
        if stop.wait(args.interval):
            return 0
