"""Emulated GPUs for the pods phase: a NodeSet that declares GPUs keeps its ``Gres=`` as the
values declare it (name, type, count), and its slurmd pod gets that many device files, made by
an init container in an ``emptyDir``; gres.conf names them with ``File=`` for the NodeSet's
Slurm node, in place of ``AutoDetect`` (NVML, ROCm SMI and the vendors' files need real GPUs).

What cannot be emulated (GPUs through DRA, GRES other than ``gpu``) keeps the NodeSet off real
pods, with the reason. Pure: values in, values and override lines out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from slinky_harness.build.images import LOGFILE_IMAGE

DEVICE_DIR = "/dev/emu-gpu"
"""Where the slurmd container sees the emulated GPU device files (``gpu0``, ``gpu1``, ...)."""
VOLUME = "conformance-emu-gpus"
MAX_GPUS = 1024
"""The chart's largest GPU count (``gpu.gres``' schema)."""
_TYPE = re.compile(r"^[A-Za-z0-9_.-]+$")

Values = dict[str, Any]


@dataclass(frozen=True)
class Gpus:
    """One type of GPU of a node: ``type`` ("" for none) and ``count``."""

    type: str
    count: int

    def gres(self) -> str:
        return f"gpu:{self.type}:{self.count}" if self.type else f"gpu:{self.count}"


@dataclass(frozen=True)
class Emulation:
    """The GPUs of a NodeSet to emulate (``gpus``, in ``Gres=`` order) and where the values
    declare them (``source``: paths relative to the NodeSet), or why none can be (``refused``)."""

    gpus: tuple[Gpus, ...] = ()
    source: tuple[str, ...] = ()
    refused: str = ""

    def total(self) -> int:
        return sum(g.count for g in self.gpus)

    def job_gres(self) -> str:
        """``--gres`` of the NodeSet's job: one GPU of the first type declared."""
        first = self.gpus[0]
        return f"gpu:{first.type}:1" if first.type else "gpu:1"


def _item(text: str) -> Gpus | None:
    """A ``Gres=`` item as Slurm reads it (``gpu``, ``gpu:<count>``, ``gpu:<type>``,
    ``gpu:<type>:<count>``), or None for any other GRES or form."""
    parts = text.strip().split(":")
    if parts[0] != "gpu" or len(parts) > 3:
        return None
    if len(parts) == 1:
        return Gpus("", 1)
    if len(parts) == 2:
        return Gpus("", int(parts[1])) if parts[1].isdigit() else Gpus(parts[1], 1)
    kind, count = parts[1], parts[2]
    if not count.isdigit() or not _TYPE.match(kind):
        return None
    return Gpus(kind, int(count))


def _user_items(nodeset: Values) -> tuple[list[str], str]:
    """The items of the NodeSet's ``Gres`` keys and their values key, as the chart reads them:
    ``extraConf`` when set, ``extraConfMap`` otherwise."""
    extra = nodeset.get("extraConf")
    if extra:
        items = [
            item
            for token in str(extra).split()
            if token.lower().startswith("gres=")
            for item in token.split("=", 1)[1].split(",")
        ]
        return [i for i in items if i], "extraConf"
    for key, value in (nodeset.get("extraConfMap") or {}).items():
        if str(key).lower() == "gres" and value not in (None, ""):
            raw = value if isinstance(value, list) else str(value).split(",")
            return [str(i) for i in raw if str(i)], f"extraConfMap.{key}"
    return [], ""


def emulation(nodeset: Values) -> Emulation:
    """What the merged NodeSet ``nodeset`` declares and whether real pods can emulate it."""
    gpu = nodeset.get("gpu") or {}
    if gpu.get("dra"):
        return Emulation(
            refused=f"requests its GPUs through DRA (gpu.dra: {gpu['dra']}), which needs a DRA "
            "driver and devices the real node has none of"
        )
    declared: list[Gpus] = []
    source: list[str] = []
    if gpu.get("gres"):
        chart = _item(str(gpu["gres"]))
        if chart is None:
            return Emulation(refused=f"gpu.gres {gpu['gres']!r} is not gpu:<type>:<count>")
        declared.append(chart)
        source.append("gpu.gres")
    elif int(gpu.get("count") or 0) > 0:
        declared.append(Gpus(str(gpu.get("type") or ""), int(gpu["count"])))
        source.append("gpu.count")
    items, where = _user_items(nodeset)
    for text in items:
        parsed = _item(text)
        if parsed is None:
            return Emulation(
                refused=f"{where} has the GRES {text!r}: only GPUs (gpu[:<type>][:<count>]) are "
                "emulated on real pods, with device files"
            )
        declared.append(parsed)
    if items:
        source.append(where)
    total = sum(g.count for g in declared)
    if total > MAX_GPUS:
        return Emulation(refused=f"{total} GPUs a node, more than the {MAX_GPUS} emulated")
    return Emulation(tuple(g for g in declared if g.count), tuple(source))


def conf_lines(node: str, gpus: tuple[Gpus, ...]) -> list[str]:
    """gres.conf lines of the Slurm node ``node``: each type's device files, numbered on."""
    lines = []
    first = 0
    for g in gpus:
        files = f"gpu{first}" if g.count == 1 else f"gpu[{first}-{first + g.count - 1}]"
        kind = f" Type={g.type}" if g.type else ""
        lines.append(f"NodeName={node} Name=gpu{kind} File={DEVICE_DIR}/{files}")
        first += g.count
    return lines


def kept_conf_lines(text: str) -> tuple[list[str], list[str]]:
    """The user's gres.conf lines split into (kept, dropped): a line that auto-detects, names
    GPUs or device files needs the real hardware; the others (counts of other GRES) stay."""
    kept: list[str] = []
    dropped: list[str] = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        keys = {w.split("=", 1)[0].lower(): w.split("=", 1)[-1] for w in words}
        hardware = "autodetect" in keys or keys.get("name") == "gpu"
        if hardware or "file" in keys or "files" in keys:
            dropped.append(line.strip())
        else:
            kept.append(line)
    return kept, dropped


def add_devices(block: Values, count: int) -> None:
    """The NodeSet's pod gets ``count`` device files in :data:`DEVICE_DIR` of its slurmd: an
    ``emptyDir``, filled by a privileged init container (char devices 1:3, like /dev/null)."""
    spec = block.setdefault("podSpec", {})
    spec["volumes"] = [*(spec.get("volumes") or []), {"name": VOLUME, "emptyDir": {}}]
    script = (
        f"i=0; while [ $i -lt {count} ]; do mknod -m 666 /emu/gpu$i c 1 3 || exit 1; "
        "i=$((i+1)); done"
    )
    init = {
        "name": "emu-gpus",
        "image": LOGFILE_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"privileged": True},
        "command": ["sh", "-c", script],
        "volumeMounts": [{"name": VOLUME, "mountPath": "/emu"}],
    }
    spec["initContainers"] = [*(spec.get("initContainers") or []), init]
    slurmd = block.setdefault("slurmd", {})
    mount = {"name": VOLUME, "mountPath": DEVICE_DIR}
    slurmd["volumeMounts"] = [*(slurmd.get("volumeMounts") or []), mount]


def device_resource(nodeset: Values) -> str:
    """The device-plugin resource the chart requests for the NodeSet's ``gpu`` ("" for none)."""
    gpu = nodeset.get("gpu") or {}
    if gpu.get("dra") or not (gpu.get("gres") or int(gpu.get("count") or 0) > 0):
        return ""
    return "amd.com/gpu" if gpu.get("vendor") == "amd" else "nvidia.com/gpu"
