"""slurm.conf and friends for the harness's slurmctld: what the caller gives, what the harness
owns, and the one-line record format Slurm's commands print.

* :func:`compose_slurm_conf`: the caller's slurm.conf holds only the cluster part; the harness owns
  the keys in :data:`HARNESS_KEYS` (refused in the caller's text) and adds :data:`DEFAULT_KEYS`
  the text does not set.
* :func:`read_files`: a config folder or a name -> content mapping, as bytes.
* :func:`emulated_nodes`: node lines for slurmd that run on this host.
* :func:`parse_records`: ``Key=Value`` records of ``scontrol show ... -o``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from slinky_harness.build.slurm_chroot import MOUNT_POINT
from slinky_harness.core import ports

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CONF_DIR",
    "CONF_PATH",
    "DEFAULT_FILES",
    "DEFAULT_KEYS",
    "HARNESS_KEYS",
    "HOSTNAME",
    "ConfigFiles",
    "FileSource",
    "compose_slurm_conf",
    "emulated_nodes",
    "parse_records",
    "read_files",
    "topology_names",
]

FileSource = str | bytes | Path


ConfigFiles = Path | Mapping[str, FileSource]
"""A config folder, or file name -> content (text, bytes, or a file to copy)."""


HOSTNAME = "slurmctld"


CONF_DIR = f"{MOUNT_POINT}/etc"


CONF_PATH = f"{CONF_DIR}/slurm.conf"


HARNESS_KEYS = frozenset(
    k.lower()
    for k in (
        "SlurmctldHost", "ControlMachine", "ControlAddr", "BackupController", "BackupAddr",
        "SlurmctldPort", "SlurmdPort", "SlurmUser", "StateSaveLocation", "SlurmctldPidFile",
        "SlurmctldLogFile", "AuthType", "CredType",
        "AccountingStorageType", "AccountingStorageHost", "AccountingStoragePort",
    )
)  # fmt: skip
"""slurm.conf keys the harness sets and refuses in the caller's text (lower case). The
``AccountingStorage*`` keys come from ``slurmctld(..., accounting=dbd)`` (none without it)."""


DEFAULT_KEYS: Mapping[str, str] = {
    "ClusterName": "slinky",
    "SlurmctldDebug": "info",
    "MailProg": "/bin/true",
    "SlurmdSpoolDir": f"{MOUNT_POINT}/spool/%n",
    "SlurmdPidFile": f"{MOUNT_POINT}/slurmd-%n.pid",
    "SlurmdLogFile": f"{MOUNT_POINT}/slurmd-%n.log",
}
"""slurm.conf keys the harness adds unless the caller's text sets them."""


DEFAULT_FILES: Mapping[str, bytes] = {"cgroup.conf": b"CgroupPlugin=disabled\n"}
"""Files the harness writes unless given: the chroot has no cgroup filesystem for slurmd."""


def parse_records(text: str) -> list[dict[str, str]]:
    """Parse one-line ``Key=Value Key=Value`` records (``show topology``, ``show node -o``).

    Values may contain spaces (``OS=Linux 6.1 ...``): a value runs until the next ``Key=``.
    """
    records = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        record: dict[str, str] = {}
        for token in re.split(r"\s+(?=[A-Za-z][A-Za-z0-9_:/.]*=)", line):
            key, sep, value = token.partition("=")
            if sep:
                record[key] = value.strip()
        records.append(record)
    return records


def _conf_keys(text: str) -> set[str]:
    keys = set()
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if "=" in line:
            keys.add(line.split("=", 1)[0].strip().lower())
    return keys


def compose_slurm_conf(user_text: str, managed: Mapping[str, str]) -> str:
    """The slurm.conf slurmctld reads: harness keys, defaults the text does not set, the text."""
    user_keys = _conf_keys(user_text)
    clash = sorted(k for k in user_keys if k in HARNESS_KEYS)
    if clash:
        raise ValueError(f"slurm.conf must not set harness-owned keys: {', '.join(clash)}")
    lines = [
        "# slurm.conf composed by slinky_harness.slurm.conf: harness keys first, then the test's text"
    ]
    lines += [f"{k}={v}" for k, v in managed.items()]
    lines += [f"{k}={v}" for k, v in DEFAULT_KEYS.items() if k.lower() not in user_keys]
    return "\n".join(lines) + "\n\n" + user_text.rstrip("\n") + "\n"


def read_files(files: ConfigFiles | None) -> dict[str, bytes]:
    """File name -> bytes of a config folder or mapping (see :data:`ConfigFiles`)."""
    if files is None:
        return {}
    if isinstance(files, Path):
        if not files.is_dir():
            raise ValueError(f"{files} is not a folder of Slurm config files")
        return {p.name: p.read_bytes() for p in sorted(files.iterdir()) if p.is_file()}
    out = {}
    for name, src in files.items():
        if "/" in name or name in {"", ".", ".."}:
            raise ValueError(f"config file name must be a plain file name: {name!r}")
        if isinstance(src, Path):
            out[name] = src.read_bytes()
        elif isinstance(src, bytes):
            out[name] = src
        else:
            out[name] = src.encode("utf-8")
    return out


def emulated_nodes(
    names: Sequence[str], *, cpus: int = 4, memory_mb: int = 1000, extra: str = ""
) -> str:
    """slurm.conf lines for nodes that :meth:`SlurmCtld.start_slurmd` runs on this host.

    One ``NodeName`` line per node, each with its own free port (several slurmd per host need the
    ``slurm-wlm-emulator`` build, so start the controller with ``emulator=True``), plus the global
    keys they need: ``SlurmdParameters=config_overrides`` (the host has fewer CPUs than the nodes
    claim), ``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none`` (no cgroups in the
    chroot). Use it once per slurm.conf; ``extra`` goes on every node line (``Features=...``).
    """
    lines = [
        "SlurmdParameters=config_overrides",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
    ]
    for name in names:
        lines.append(
            f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={ports.allocate_one()} "
            f"CPUs={cpus} RealMemory={memory_mb} {extra}".rstrip()
        )
    return "\n".join(lines) + "\n"


def topology_names(yaml_text: str | bytes) -> list[str]:
    """Names of the topologies in a ``topology.yaml`` (empty when it does not parse as a list)."""
    try:
        doc = yaml.safe_load(yaml_text)
    except yaml.YAMLError:
        return []
    if not isinstance(doc, list):
        return []
    return [str(item["topology"]) for item in doc if isinstance(item, dict) and "topology" in item]
