"""What the real node changes on the machine, recorded before it starts and put back at its end.

A real node (:mod:`slinky_harness.k8s.realnode`) touches more than its own folder: containerd's
``/run/containerd`` and ``/run/nri``, a network namespace for itself and one per pod, cgroups named
``kubepods`` (kubelet) and ``k8s.io`` in every cgroup v1 hierarchy, three kernel settings that
kubelet changes at start (:data:`KERNEL_SETTINGS`), ``/var/lib/cni`` and ``/var/log/containers``.
:func:`record` writes what was there before into ``restore.json``; :func:`restore` reads it and puts
the machine back: it ends every process of the node and every container, unmounts what was mounted
under its folders, deletes the network namespaces and cgroups it made, restores the kernel
settings and removes the folders that were not there before. It runs at a normal stop and, through
:meth:`slinky_harness.core.processes.Reaper.on_death`, after SIGKILL of the launcher
(``python -m slinky_harness.k8s.realnode restore STATE``); doing it twice does nothing more.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from slinky_harness.core import processes

KERNEL_SETTINGS = ("kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory")
"""Kernel settings kubelet sets at start (``/proc/sys`` paths); they are machine-wide."""

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_NAMES = ("kubepods", "k8s.io")
"""Top-level cgroups of the node: kubelet's pods and containerd's own."""

RUN_FOLDERS = (Path("/run/containerd"), Path("/run/nri"))
SHARED_FOLDERS = (Path("/var/lib/cni"), Path("/var/log/containers"))
"""Fixed paths that containerd's CNI library and kubelet create whatever they are told."""

NETNS_DIR = Path("/run/netns")


@dataclass(frozen=True)
class Before:
    """The machine as it was before the node started (``restore.json``)."""

    state: str
    """The node's folder (configurations, logs)."""
    root: str
    """kubelet's and containerd's roots (fixed and short: kubelet makes sockets in its root, and
    socket paths have a length limit)."""
    run_dir: str
    """The node's sockets (fixed and short, for the same reason)."""
    netns: str
    """The node's network namespace (``/run/netns/<name>``)."""
    kernel: dict[str, str]
    """Each of :data:`KERNEL_SETTINGS` and its value."""
    cgroups: list[str]
    """Node cgroups (:data:`CGROUP_NAMES` in each hierarchy) that existed already."""
    folders: list[str]
    """Folders of :data:`RUN_FOLDERS` and :data:`SHARED_FOLDERS` that existed already."""
    namespaces: list[str]
    """Network namespaces in ``/run/netns`` already there."""
    netns_dir: bool
    """Whether ``/run/netns`` was there (``ip netns add`` makes it and mounts it on itself)."""


def node_cgroups() -> list[Path]:
    """Every place a node cgroup has in this machine's hierarchies (each v1 one and the unified
    one of a hybrid layout, or the one unified hierarchy of a cgroup v2 machine)."""
    if not CGROUP_ROOT.is_dir():
        return []
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        hierarchies = [CGROUP_ROOT]
    else:
        hierarchies = [
            p for p in sorted(CGROUP_ROOT.iterdir()) if p.is_dir() and not p.is_symlink()
        ]
    return [h / name for h in hierarchies for name in CGROUP_NAMES]


def _new_namespaces(before: Before) -> list[str]:
    """Network namespaces the node made: its own and containerd's pod namespaces (``cni-*``)
    that were not there before (never another program's, such as podman's ``netns-*``)."""
    own = Path(before.netns).name
    return [
        n
        for n in _netns_names()
        if n not in before.namespaces and (n == own or n.startswith("cni-"))
    ]


def _netns_names() -> list[str]:
    return sorted(p.name for p in NETNS_DIR.iterdir()) if NETNS_DIR.is_dir() else []


def kernel_values() -> dict[str, str]:
    """The current value of each of :data:`KERNEL_SETTINGS`."""
    values = {}
    for name in KERNEL_SETTINGS:
        with contextlib.suppress(OSError):
            values[name] = (Path("/proc/sys") / name).read_text().strip()
    return values


def record(state: Path, root: Path, run_dir: Path, netns: Path) -> Before:
    """Write ``state/restore.json`` (what :func:`restore` puts back) and return it."""
    before = Before(
        state=str(state),
        root=str(root),
        run_dir=str(run_dir),
        netns=str(netns),
        kernel=kernel_values(),
        cgroups=[str(p) for p in node_cgroups() if p.exists()],
        folders=[str(p) for p in (*RUN_FOLDERS, *SHARED_FOLDERS, root) if p.exists()],
        namespaces=_netns_names(),
        netns_dir=NETNS_DIR.exists(),
    )
    state.mkdir(parents=True, exist_ok=True)
    (state / "restore.json").write_text(json.dumps(asdict(before), indent=2) + "\n")
    return before


def load(state: Path) -> Before:
    return Before(**json.loads((state / "restore.json").read_text()))


def _mountpoints() -> list[str]:
    points = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            field = line.split()[4]
            points.append(field.encode().decode("unicode_escape"))
    return points


def leftovers(before: Before) -> dict[str, list[str]]:
    """What the node left on the machine (empty lists: nothing): processes, mounts, network
    namespaces, cgroups, changed kernel settings, folders."""
    # /run/containerd of a containerd already running (Docker's) is not ours to unmount
    owned = [
        before.state,
        before.root,
        before.run_dir,
        *(str(p) for p in RUN_FOLDERS if str(p) not in before.folders),
    ]
    new_ns = _new_namespaces(before)
    # /run/netns itself, made by `ip netns add`, is the node's once nothing else is in it
    netns_dir = not before.netns_dir and NETNS_DIR.exists() and set(_netns_names()) <= set(new_ns)
    return {
        "processes": sorted(
            str(pid)
            for mark in (f"{before.state}/", f"{before.root}/", f"{before.run_dir}/")
            for pid in processes.mentioning(mark)
        ),
        "mounts": [
            point
            for point in _mountpoints()
            if any(point == o or point.startswith(o + "/") for o in owned)
            or point == before.netns
            or any(point == str(NETNS_DIR / n) for n in new_ns)
            or (point == str(NETNS_DIR) and netns_dir)
        ],
        "namespaces": new_ns,
        "cgroups": [str(p) for p in node_cgroups() if p.exists() and str(p) not in before.cgroups],
        "kernel": [
            f"{name}={value} (was {before.kernel[name]})"
            for name, value in kernel_values().items()
            if name in before.kernel and value != before.kernel[name]
        ],
        "folders": [
            str(p)
            for p in (*RUN_FOLDERS, *SHARED_FOLDERS, Path(before.run_dir), Path(before.root))
            if p.exists() and str(p) not in before.folders
        ]
        + ([str(NETNS_DIR)] if netns_dir else []),
    }


def _cgroup_pids(folder: Path) -> set[int]:
    pids: set[int] = set()
    for procs in folder.rglob("cgroup.procs"):
        with contextlib.suppress(OSError, ValueError):
            pids |= {int(x) for x in procs.read_text().split()}
    return pids


def _end_containers(before: Before) -> None:
    """SIGKILL every process in the node's cgroups (containers outlive their shims) until none."""
    fresh = [p for p in node_cgroups() if p.exists() and str(p) not in before.cgroups]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        pids = set().union(*(_cgroup_pids(p) for p in fresh)) if fresh else set()
        pids.discard(os.getpid())
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)


def _remove_cgroup(folder: Path) -> None:
    """rmdir ``folder`` and its children, deepest first (cgroup folders hold only kernel files)."""
    children = sorted(
        (p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
    )
    for child in [*children, folder]:
        for _ in range(25):
            try:
                child.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.2)


def _unmount(before: Before) -> None:
    """Unmount the node's mounts, deepest first; ``/run/netns`` itself only once it is empty."""
    for point in sorted(leftovers(before)["mounts"], key=len, reverse=True):
        if point == str(NETNS_DIR) and _netns_names():
            continue
        subprocess.run(["umount", "--lazy", point], capture_output=True, check=False)


def _remove_tree(folder: Path) -> None:
    """``rm -r folder`` unless something is still mounted in it (never delete through a mount)."""
    inside = str(folder) + "/"
    if not any(point.startswith(inside) or point == str(folder) for point in _mountpoints()):
        shutil.rmtree(folder, ignore_errors=True)


def restore(state: Path) -> dict[str, list[str]]:
    """Put the machine back as ``state/restore.json`` says; return what is still left (see
    :func:`leftovers`; empty lists when all went well)."""
    before = load(state)
    marks = (f"{before.state}/", f"{before.root}/", f"{before.run_dir}/")
    processes.end_pids({pid for mark in marks for pid in processes.mentioning(mark)}, grace=5)
    _end_containers(before)
    _unmount(before)
    for name in _new_namespaces(before):
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)
    _unmount(before)
    if not before.netns_dir and NETNS_DIR.is_dir() and not _netns_names():
        with contextlib.suppress(OSError):
            NETNS_DIR.rmdir()
    for folder in node_cgroups():
        if folder.exists() and str(folder) not in before.cgroups:
            _remove_cgroup(folder)
    for name, value in before.kernel.items():
        path = Path("/proc/sys") / name
        with contextlib.suppress(OSError):
            if path.read_text().strip() != value:
                path.write_text(value + "\n")
    for folder in (*RUN_FOLDERS, *SHARED_FOLDERS, Path(before.run_dir), Path(before.root)):
        if folder.exists() and str(folder) not in before.folders:
            _remove_tree(folder)
    return leftovers(before)
