"""NVIDIA topograph v0.3.0, built from the Go module proxy and driven offline for the benchmark.

Only ``github.com/NVIDIA/topograph@v0.3.0`` is served by the module proxy (other versions answer
403).  Its ``topograph`` command is an HTTP service; with the ``test`` provider it reads a
simulation model file (``modelFileName``) and renders it with an engine, here ``slurm``, without
any cloud API, Kubernetes or Slurm command.  This module:

* builds ``cmd/topograph`` into ``$SLINKY_SUITE_CACHE/tools/topograph/v0.3.0/topograph`` (in a
  temporary folder, renamed into place when complete; reused afterwards);
* writes a test-provider model from one of our :class:`~slinky_topology.model.Fabric` objects;
* runs the service on a free localhost port and times ``POST /v1/generate`` +
  ``GET /v1/topology`` for that model.

Build note.  v0.3.0's ``pkg/registry`` imports every provider, among them ``nebius``, whose
dependency ``github.com/nebius/gosdk@v0.2.0`` the module proxy refuses (403, "This module version
is not available"), so the command cannot be built as published.  The build therefore copies the
module source into the staging folder and drops the two ``nebius`` lines from
``pkg/registry/registry.go`` (the nebius provider is then unknown to that binary; the ``test``
provider and ``slurm`` engine used here are untouched).  Nothing of topograph is kept in this
repository.

Model format (``pkg/models/model.go`` at v0.3.0)::

    switches:
    - name: core1
      switches: [spine000, ...]          # child switches
    - name: leaf0000
      capacity_blocks: [nvl0000, ...]    # blocks of nodes under a leaf
    capacity_blocks:
    - name: nvl0000
      type: GB200
      nvlink: nvl0000                    # a non-empty nvlink makes the block topology exist
      nodes: [gpu00000, ...]             # names or hostlist ranges ("gpu[00000-00017]")

Timing.  The service coalesces requests with a trailing delay (``requestAggregationDelay``,
set to 1 ms here) and records each processing run in the Prometheus histogram
``topograph_request_duration_seconds`` (provider ``test``, engine ``slurm``).  The time reported
is the increase of that histogram's sum per request: model load, graph build and rendering,
without HTTP, queueing or polling.  The client-side wall time is reported next to it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.build import cache, gobuild
from slinky_harness.build.gobuild import BuildError
from slinky_harness.core import paths, ports, processes
from slinky_harness.core.errors import HarnessError, WaitTimeout
from slinky_harness.core.polling import wait_for

if TYPE_CHECKING:
    from collections.abc import Sequence

    from slinky_topology.model import Fabric

__all__ = [
    "MODULE",
    "VERSION",
    "TopographError",
    "TopographRun",
    "binary_path",
    "ensure",
    "model_doc",
    "read_model",
    "request_body",
    "run_generation",
    "write_model",
]

MODULE = "github.com/NVIDIA/topograph"
VERSION = "v0.3.0"
PACKAGE = "./cmd/topograph"
VERSION_VAR = "github.com/NVIDIA/topograph/internal/version.Version"
REGISTRY_FILE = Path("pkg/registry/registry.go")
UNAVAILABLE_IMPORT = re.compile(
    r'^.*(?:"github\.com/NVIDIA/topograph/pkg/providers/nebius"|\bnebius\.NamedLoader\b).*\n',
    re.MULTILINE,
)
METRIC = "topograph_request_duration_seconds"
TREE_TOPOLOGY = "topology/tree"
BLOCK_TOPOLOGY = "topology/block"


class TopographError(HarnessError):
    """topograph could not be built or did not produce a topology."""


def binary_path() -> Path:
    return paths.cache_root() / "tools" / "topograph" / VERSION / "topograph"


def _reports_version(path: Path) -> bool:
    try:
        proc = subprocess.run(
            [str(path), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.stdout.strip() == f"Version: {VERSION}"


def _patch_registry(src: Path) -> None:
    """Drop the nebius provider, whose SDK the module proxy refuses (see module doc)."""
    registry = src / REGISTRY_FILE
    text = registry.read_text()
    patched, count = UNAVAILABLE_IMPORT.subn("", text)
    if count != 2:
        raise TopographError(
            f"{REGISTRY_FILE}: expected the nebius import and loader (2 lines), found {count}"
        )
    registry.chmod(0o644)
    registry.write_text(patched)


def ensure(*, quiet: bool = False) -> Path:
    """Path of the topograph v0.3.0 binary, built once into the suite cache."""
    dest = binary_path()
    if dest.is_file() and _reports_version(dest):
        return dest
    try:
        module = gobuild.module_dir(MODULE, VERSION)
    except BuildError as exc:
        raise TopographError(str(exc)) from exc
    log = dest.parent.parent / f"{VERSION}.build.log"
    started = time.monotonic()
    if not quiet:
        print(f"topograph: building {MODULE}@{VERSION} (log: {log})", file=sys.stderr)
    try:
        with cache.staged_folder(dest.parent, VERSION) as staging:
            src = staging / "src"
            shutil.copytree(module, src)
            for folder, _dirs, files in os.walk(src):  # the module cache is read-only
                Path(folder).chmod(0o755)
                for name in files:
                    (Path(folder) / name).chmod(0o644)
            _patch_registry(src)
            args = [
                "-trimpath",
                "-o",
                str(staging / "topograph"),
                "-ldflags",
                f"-X {VERSION_VAR}={VERSION}",
            ]
            gobuild.go_build([*args, PACKAGE], cwd=src, log=log, what=f"topograph {VERSION}")
            shutil.rmtree(src)
    except BuildError as exc:
        raise TopographError(str(exc)) from exc
    if not _reports_version(dest):
        raise TopographError(f"{dest} does not report version {VERSION}")
    if not quiet:
        print(f"topograph: built in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return dest


# --- model file ------------------------------------------------------------------------------


def model_doc(fabric: Fabric, node_type: str = "GB200") -> dict[str, Any]:
    """The test-provider model of ``fabric``: the switch tree and one capacity block per domain.

    Absent nodes are left out (they appear in no node list).  Nodes without a domain get a
    capacity block of their own leaf (named ``cb-<leaf>``, no ``nvlink``), so they stay in the
    tree.  Lists are sorted, so the file is deterministic.
    """
    children: dict[str, list[str]] = {s.name: [] for s in fabric.switches}
    for sw in fabric.switches:
        if sw.parent is not None:
            children[sw.parent].append(sw.name)
    blocks: dict[str, dict[str, Any]] = {}
    leaf_blocks: dict[str, set[str]] = {}
    for node in sorted(fabric.nodes, key=lambda n: n.name):
        if node.state == "absent":
            continue
        name = node.domain if node.domain is not None else f"cb-{node.leaf}"
        block = blocks.get(name)
        if block is None:
            block = {"name": name, "type": node_type}
            if node.domain is not None:
                block["nvlink"] = node.domain
            block["nodes"] = []
            blocks[name] = block
        block["nodes"].append(node.name)
        if node.leaf is not None:
            leaf_blocks.setdefault(node.leaf, set()).add(name)
    switches: list[dict[str, Any]] = []
    for sw in fabric.switches:
        entry: dict[str, Any] = {"name": sw.name}
        if children[sw.name]:
            entry["switches"] = sorted(children[sw.name])
        if sw.name in leaf_blocks:
            entry["capacity_blocks"] = sorted(leaf_blocks[sw.name])
        switches.append(entry)
    return {"switches": switches, "capacity_blocks": [blocks[k] for k in sorted(blocks)]}


def write_model(fabric: Fabric, path: Path) -> Path:
    """Write the test-provider model of ``fabric`` to ``path`` atomically."""
    text = f"# generated by slinky_harness.apps.topograph from fabric {fabric.name}\n"
    text += yaml.safe_dump(model_doc(fabric), sort_keys=False, default_flow_style=None, width=200)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@dataclass(frozen=True)
class ModelView:
    """What topograph derives from a model file: per node its leaf-to-root path and block."""

    node_layers: dict[str, tuple[str, ...]]
    node_block: dict[str, str]
    block_nvlink: dict[str, str]


def read_model(path: Path) -> ModelView:
    """Read a model back the way topograph v0.3.0 interprets it (for tests of the writer).

    Raises TopographError on what topograph would reject (a switch or block with two parents,
    a duplicated node, a cycle).
    """
    doc = yaml.safe_load(path.read_text())
    parent: dict[str, str] = {}
    block_switch: dict[str, str] = {}
    for sw in doc.get("switches") or []:
        for child in sw.get("switches") or []:
            if child in parent:
                raise TopographError(f"switch {child!r} has two parents")
            parent[child] = sw["name"]
        for cb in sw.get("capacity_blocks") or []:
            if cb in block_switch:
                raise TopographError(f"capacity block {cb!r} has two switches")
            block_switch[cb] = sw["name"]
    node_layers: dict[str, tuple[str, ...]] = {}
    node_block: dict[str, str] = {}
    block_nvlink: dict[str, str] = {}
    for cb in doc.get("capacity_blocks") or []:
        layers: list[str] = []
        sw_name = block_switch.get(cb["name"])
        while sw_name is not None:
            if sw_name in layers:
                raise TopographError(f"switch cycle at {sw_name!r}")
            layers.append(sw_name)
            sw_name = parent.get(sw_name)
        if cb.get("nvlink"):
            block_nvlink[cb["name"]] = cb["nvlink"]
        for node in cb.get("nodes") or []:
            if node in node_block:
                raise TopographError(f"duplicated node {node!r}")
            node_block[node] = cb["name"]
            node_layers[node] = tuple(layers)
    return ModelView(node_layers, node_block, block_nvlink)


# --- running the service ---------------------------------------------------------------------


def request_body(model: Path, node_names: Sequence[str]) -> dict[str, Any]:
    """``POST /v1/generate`` body: test provider, slurm engine, topology.yaml with tree + block.

    Mirrors our benchmark's request: topology ``fabric`` (tree, cluster default) and ``nvl``
    (block), both over every node.  Node lists must be explicit, otherwise the engine would
    ask ``scontrol show partition``.
    """
    nodes = list(node_names)
    return {
        "provider": {"name": "test", "params": {"modelFileName": str(model.resolve())}},
        "engine": {
            "name": "slurm",
            "params": {
                "topologies": {
                    "fabric": {"plugin": TREE_TOPOLOGY, "clusterDefault": True, "nodes": nodes},
                    "nvl": {"plugin": BLOCK_TOPOLOGY, "nodes": nodes},
                }
            },
        },
    }


@dataclass(frozen=True)
class TopographRun:
    """One size: per-request server-side and client-side seconds, output and memory."""

    server_seconds: tuple[float, ...]
    wall_seconds: tuple[float, ...]
    cpu_seconds: tuple[float, ...]
    """CPU time (user + system) the service spent per request, from ``/proc/<pid>/stat``."""
    output_bytes: int
    output_head: str
    peak_rss_mib: float
    output: str


def _http(
    method: str, url: str, body: bytes | None = None, timeout: float = 60
) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status: int = resp.status
            return status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _answer(url: str, timeout: float) -> tuple[int, bytes] | None:
    """GET ``url``: None while topograph answers 202 (not done yet), else (status, body)."""
    answer = _http("GET", url, timeout=timeout)
    return None if answer[0] == 202 else answer


def _metric_sum(base: str) -> float:
    _status, text = _http("GET", f"{base}/metrics")
    total = 0.0
    for line in text.decode().splitlines():
        if line.startswith(f"{METRIC}_sum{{") and 'provider="test"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return float("nan")
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_rss_mib(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return float("nan")
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) / 1024 if match else float("nan")


def run_generation(
    binary: Path,
    model: Path,
    node_names: Sequence[str],
    *,
    repeat: int,
    workdir: Path,
    timeout: float = 600,
) -> TopographRun:
    """Start topograph, generate ``repeat`` times from ``model``, stop it; raises TopographError."""
    port = ports.allocate_one()
    config = workdir / "topograph-config.yaml"
    config.write_text(
        yaml.safe_dump({"http": {"port": port, "ssl": False}, "requestAggregationDelay": "1ms"})
    )
    log_path = workdir / "topograph.log"
    base = f"http://127.0.0.1:{port}"
    body = json.dumps(request_body(model, node_names)).encode()
    proc = processes.start([str(binary), "-c", str(config)], log=log_path, cwd=workdir)
    try:

        def healthy() -> bool:
            if proc.poll() is not None:
                raise TopographError(f"topograph exited at start; log: {_tail(log_path)}")
            try:
                return _http("GET", f"{base}/healthz", timeout=2)[0] == 200
            except OSError:
                return False

        try:
            wait_for(healthy, timeout=30, what="topograph's /healthz", every=0.05)
        except WaitTimeout:
            raise TopographError(f"topograph did not start; log: {_tail(log_path)}") from None
        server: list[float] = []
        wall: list[float] = []
        cpu: list[float] = []
        output = b""
        for _ in range(repeat):
            before = _metric_sum(base)
            cpu_before = _cpu_seconds(proc.pid)
            started = time.perf_counter()
            status, uid = _http("POST", f"{base}/v1/generate", body)
            if status != 202:
                raise TopographError(f"POST /v1/generate: HTTP {status}: {uid.decode()[:300]}")
            try:
                status, output = wait_for(
                    functools.partial(_answer, f"{base}/v1/topology?uid={uid.decode()}", timeout),
                    timeout=timeout,
                    what="topograph's result",
                    every=0.005,
                )
            except WaitTimeout:
                raise TopographError(f"no result after {timeout:.0f}s") from None
            wall.append(time.perf_counter() - started)
            if status != 200:
                raise TopographError(f"GET /v1/topology: HTTP {status}: {output.decode()[:300]}")
            cpu.append(_cpu_seconds(proc.pid) - cpu_before)
            server.append(_metric_sum(base) - before)
        rss = _peak_rss_mib(proc.pid)
    finally:
        processes.stop(proc, grace=10)
    text = output.decode()
    return TopographRun(
        server_seconds=tuple(server),
        wall_seconds=tuple(wall),
        cpu_seconds=tuple(cpu),
        output_bytes=len(output),
        output_head=text[:200],
        peak_rss_mib=rss,
        output=text,
    )


def _tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text().strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"
