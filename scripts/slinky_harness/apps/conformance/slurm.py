"""Conformance, slurm phase: a real slurmctld 26.05 (the Slurm chroot of the real-Slurm tier)
runs what the operator wrote for the user's values.

The live phase hands over ``ctx.slurm_files`` (what the slurmctld pod reads: the operator's
slurm.conf, localised, the Controller's config files and scripts, the key Secrets), the
release's objects and the control plane (Secrets and Services are read there; without one, from
the objects and ``--existing``). Steps:

* ``load``: slurmctld starts on those files (with accounting on, after the release's slurmdbd:
  slurmctld 26.05 starts only when its slurmdbd answers; see ``accounting``). When it refuses
  them, each line of its log that says why is traced back to the values that produced what it
  names (``controller.extraConfMap.<Option>``, ``controller.extraConf``,
  ``configFiles["<file>"]``, ``partitions.<p>.config``, ``scheduling.*``, ...). Then one
  dynamic node per NodeSet pod (its replicas, at most :data:`NODES_PER_NODESET`) joins as the
  operator's pods register (``<nodeset>-<i>``, the NodeSet's ``slurmd --conf``, its ``Gres``
  kept), placed in the units of a topology.yaml that lists none. gres.conf gets lines that stand
  in for the GPUs each node's slurmd would find (:func:`check_gres_conf`); a node whose GPUs
  slurmctld does not count (``Gres=(null)``: ``GresTypes`` does not name them) is a finding at
  the values that declare them.
* ``partitions``: every partition the values ask for exists and holds exactly the nodes of its
  NodeSets, with the topology the values give it (one topology.yaml has); every topology is
  shown as the file (plus the placed nodes) says (:mod:`slinky_harness.slurm.release`, shared
  with the cluster tier).
* ``jobs``: slurmctld's scheduler places one job in every partition (``sbatch --test-only``:
  the nodes are dynamic CLOUD nodes without slurmd); on a partition whose topology is a block
  topology the job asks ``--segment`` for a base block's worth of nodes and must land inside one
  base block. Each NodeSet whose nodes declare GPUs gets a job that asks for all of them
  (``--gres=gpu:N``, the partition's other nodes excluded): it must land on the NodeSet's nodes
  in one of the partitions that hold them (its own first).
* ``accounting``: the host the ``Accounting`` object names must resolve (an external slurmdbd's
  ``externalConfig.host``, the database's ``storageConfig.host``; a cluster name, ``db``,
  ``db.ns.svc``, must be a Service of the cluster instead); for an in-cluster slurmdbd, a real
  slurmdbd 26.05 accepted the operator's slurmdbd.conf (against a private MariaDB, provisioned
  with the storage settings and password) and slurmctld registered its cluster with it. When
  slurmdbd refuses its configuration, ``load`` runs slurmctld against a stand-in and this step
  names the option.

A deployment without a slurmctld of its own (no slurm-cluster, ``controller.external``) or
without accounting passes these steps saying so: nothing is wrong, and a skipped step would fail
the run.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import json
import os
import re
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slinky_harness.apps.conformance.context import Outcome, Step, StepFailed
from slinky_harness.apps.conformance.report import Finding
from slinky_harness.build.slurm_chroot import SlurmChrootError, chroot_info, ensure_chroot
from slinky_harness.core.errors import HarnessError, WaitTimeout
from slinky_harness.core.polling import wait_for
from slinky_harness.k8s import operator as slinky_operator
from slinky_harness.slurm import dbd as slurmdbd
from slinky_harness.slurm import release
from slinky_harness.slurm import topology as slurm_topo
from slinky_harness.slurm.check import MACHINE_LOAD_NOISE
from slinky_harness.slurm.conf import DEFAULT_KEYS, parse_records, read_files
from slinky_harness.slurm.ctld import (
    SlurmCommandError,
    SlurmCtld,
    SlurmctldStartError,
    slurmctld,
)
from slinky_harness.slurm.dbd_conf import AccountingSpec, rendered_secret

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from pathlib import Path

    from slinky_harness.apps.conformance.context import Context

Doc = dict[str, Any]
Parts = tuple[str | int, ...]

CHART = "slurm-cluster"
NODES_PER_NODESET = 4
"""Dynamic nodes made per NodeSet (its replicas, at least one, at most this many): enough for a
partition's members and a block job, few enough to keep the phase at seconds."""

SCHEDULING_KEYS: dict[str, Parts] = {
    "schedulertype": ("scheduling", "schedulerType"),
    "schedulerparameters": ("scheduling", "schedulerParameters"),
    "dependencyparameters": ("scheduling", "dependencyParameters"),
    "accountingstorageenforce": ("scheduling", "accountingEnforce"),
    "prioritytype": ("scheduling", "priority", "type"),
    "prioritydecayhalflife": ("scheduling", "priority", "decayHalfLife"),
    "prioritymaxage": ("scheduling", "priority", "maxAge"),
    "prioritycalcperiod": ("scheduling", "priority", "calcPeriod"),
    "priorityfavorsmall": ("scheduling", "priority", "favorSmall"),
    "priorityflags": ("scheduling", "priority", "flags"),
    "priorityweighttres": ("scheduling", "priority", "weightTRES"),
    "priorityweightage": ("scheduling", "priority", "weights", "age"),
    "priorityweightassoc": ("scheduling", "priority", "weights", "assoc"),
    "priorityweightfairshare": ("scheduling", "priority", "weights", "fairshare"),
    "priorityweightjobsize": ("scheduling", "priority", "weights", "jobSize"),
    "priorityweightpartition": ("scheduling", "priority", "weights", "partition"),
    "priorityweightqos": ("scheduling", "priority", "weights", "qos"),
    "preempttype": ("scheduling", "preemption", "type"),
    "preemptmode": ("scheduling", "preemption", "mode"),
    "preemptexempttime": ("scheduling", "preemption", "exemptTime"),
    "topologyparam": ("topology", "params"),
}
"""slurm.conf options slurm-cluster renders from a structured value (not from a conf map or
raw text), and that value's path."""

FALLBACK_SOURCES: tuple[Parts, ...] = (
    ("controller", "extraConf"),
    ("controller", "extraConfMap"),
    ("configFiles",),
)
"""Where a refusal no value explains by name most likely comes from: the raw slurm.conf text
and options the user gave (the first one their values set)."""

_GENERIC = re.compile(
    r"Unable to process configuration file|failed to initialize|cannot create .* context|"
    r"Couldn't load specified plugin",
    re.IGNORECASE,
)
_LOG_PREFIX = re.compile(r"^\[[^\]]*\]\s*(?:(?:fatal|error):\s*)?(?:\w+:\s+)?", re.IGNORECASE)


@dataclass
class Controller:
    """What ``load`` leaves for the later steps (``ctx.extra["slurm"]``)."""

    ctld: SlurmCtld
    hosts: dict[str, str]
    """Slurm node -> its NodeSet (the dynamic nodes made)."""
    placement: dict[str, str]
    """Slurm node -> the topology string it was created with (``nvl:b1``)."""
    topology_yaml: str
    version: str
    accounting: SlurmdbdRun | None = None
    gpus: dict[str, int] = field(default_factory=dict)
    """NodeSet -> the GPUs each of its nodes declares (its ``Gres``; NodeSets with none left
    out)."""


@dataclass
class SlurmdbdRun:
    """The slurmdbd slurmctld reports to (slurmctld 26.05 starts only when its slurmdbd
    answers): the release's own on the operator's slurmdbd.conf, or a stand-in for an external
    one or when the release's refused its configuration (``refused``: why)."""

    dbd: slurmdbd.Slurmdbd
    stand_in: bool
    conf: str | None
    password: str | None
    refused: slurmdbd.SlurmdbdStartError | None = None


# -- the values behind a Slurm option -------------------------------------------------------------


def _walk(node: Any, at: Parts = ()) -> Iterator[tuple[Parts, Any]]:
    yield at, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, (*at, str(key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, (*at, index))


def _get(block: Mapping[str, Any], parts: Parts) -> Any:
    node: Any = block
    for part in parts:
        node = node[part]
    return node


def _has(block: Mapping[str, Any], parts: Parts) -> bool:
    node: Any = block
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return node not in (None, "", [], {})


def option_paths(
    block: Mapping[str, Any],
    option: str,
    *,
    value: str | None = None,
    line: str | None = None,
    within: Sequence[Parts] = (),
    without: Sequence[Parts] = (),
) -> list[Parts]:
    """Paths (in ``block``, the user's values of one chart) of the values that put ``option``
    (a Slurm option, any case) into a config file: a map key equal to it
    (``controller.extraConfMap.MaxJobCount``), text holding ``Option=`` or ``line``
    (``controller.extraConf``, ``partitions.x.config``, ``configFiles["gres.conf"]``), a
    structured value slurm-cluster renders as that option (:data:`SCHEDULING_KEYS`), else a
    string equal to ``value``. ``within``/``without``: subtrees to keep to or leave out."""
    lowered = option.lower()
    token = re.compile(rf"(?<![\w.]){re.escape(option)}\s*=", re.IGNORECASE)
    keyed: list[Parts] = []
    texts: list[Parts] = []
    equal: list[Parts] = []
    for at, node in _walk(dict(block)):
        if not at or (within and not any(at[: len(w)] == w for w in within)):
            continue
        if any(at[: len(w)] == w for w in without):
            continue
        if isinstance(at[-1], str) and at[-1].lower() == lowered:
            keyed.append(at)
        elif isinstance(node, str) and (
            token.search(node) or (line and line.strip() and line.strip() in node)
        ):
            texts.append(at)
        elif value and isinstance(node, (str, int)) and str(node) == value:
            equal.append(at)
    structured = SCHEDULING_KEYS.get(lowered)
    if structured and _has(block, structured):
        keyed.append(structured)
    if value:  # the text that holds the very value first (MaxTime=forever, not MaxTime=1:00)
        texts.sort(key=lambda at: value not in str(_get(block, at)))
    found = keyed + texts or equal
    return list(dict.fromkeys(found))


def file_paths(block: Mapping[str, Any], file_name: str) -> list[Parts]:
    """Paths of the values that write config file ``file_name``: a map key equal to it
    (``configFiles["gres.conf"]``, ``prologSlurmctldScripts["00-x.sh"]``), or for topology.yaml
    the inline text or the ConfigMap it comes from."""
    if file_name == "topology.yaml":
        for parts in (("topology", "yaml"), ("topology", "configMapRef", "name")):
            if _has(block, parts):
                return [parts]
        return [("topology",)]
    return [at for at, _ in _walk(dict(block)) if at and at[-1] == file_name]


@dataclass(frozen=True)
class Culprit:
    """What a Slurm log line names: an option (maybe with its value or its whole line) or a
    config file."""

    option: str = ""
    value: str | None = None
    line: str | None = None
    file: str = ""


_PATTERNS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r'Parse error in file \S*/([^/\s]+) line \d+: "(.*)"'), ("file", "line")),
    (re.compile(r"unrecognized key: (\w+)", re.IGNORECASE), ("option",)),
    (re.compile(r"(\w+) value \((.*?)\) is not a valid", re.IGNORECASE), ("option", "value")),
    (re.compile(r'Bad value "(.*?)" for (\w+)'), ("value", "option")),
    (re.compile(r"Invalid (\w+)\b[ (:`]*([^`)\s:]*)"), ("option", "value")),
    (re.compile(r"\b(\w+)=(\S+)"), ("option", "value")),
)


def culprits(message: str, conf_keys: Sequence[str] = ()) -> list[Culprit]:
    """What a slurmctld or slurmdbd error line names: options, values, lines and files (a file
    under the config folder by its name); then any of ``conf_keys`` (the options of the loaded
    files) the message mentions as a word."""
    out: list[Culprit] = []
    for pattern, fields in _PATTERNS:
        for match in pattern.finditer(message):
            found = dict(zip(fields, match.groups(), strict=True))
            line = found.get("line")
            option = found.get("option") or (line.strip().split("=", 1)[0] if line else "")
            out.append(Culprit(option, found.get("value") or None, line, found.get("file", "")))
    for path in re.findall(r"/srv/slinky/etc/([^\s`'\"():,]+)", message):
        out.append(Culprit(file=path))
    words = set(re.findall(r"[A-Za-z]\w+", message))
    out.extend(Culprit(key) for key in conf_keys if key in words)
    return list(dict.fromkeys(c for c in out if c.option or c.file))


def _clean(line: str) -> str:
    return _LOG_PREFIX.sub("", line.strip()).strip()


def error_lines(log: str) -> list[str]:
    """The error and fatal lines of a Slurm daemon's log, without the machine's own noise."""
    return [
        ln
        for ln in log.splitlines()
        if re.search(r"\b(fatal|error)\b", ln, re.IGNORECASE) and not MACHINE_LOAD_NOISE.search(ln)
    ]


def _conf_keys(text: str) -> list[str]:
    keys = re.findall(r"^\s*([A-Za-z]\w*)\s*=", text, re.MULTILINE)
    return list(dict.fromkeys(keys))


def trace(
    ctx: Context,
    errors: Sequence[str],
    conf_text: str,
    *,
    within: Sequence[Parts] = (),
    without: Sequence[Parts] = (("accounting",),),
    daemon: str = "slurmctld",
) -> list[Finding]:
    """Findings for ``errors`` (a daemon's log lines) at the values that produced what each
    names; the errors no value explains become one finding at the chart (or, with
    ``within``, its first subtree) when nothing else was found."""
    block = ctx.target.user_block(CHART)
    keys = _conf_keys(conf_text)
    findings: dict[str, Finding] = {}
    unexplained: list[str] = []
    for raw in errors:
        message = _clean(raw)
        if _GENERIC.search(message) and len(errors) > 1:
            continue
        paths: list[tuple[Parts, str]] = []
        for culprit in culprits(message, keys):
            if culprit.option:
                hits = option_paths(
                    block, culprit.option, value=culprit.value, line=culprit.line,
                    within=within, without=without,
                )  # fmt: skip
                paths += [(p, culprit.option) for p in hits]
            if culprit.file and not paths:
                paths += [(p, culprit.file) for p in file_paths(block, culprit.file)]
        for parts, what in paths[:1] or []:
            path = ctx.target.path_of(CHART, *parts)
            findings.setdefault(
                path,
                Finding(
                    path,
                    f"{daemon} refuses {what}",
                    f"remove or correct {what}: {daemon} says: {message}",
                ),
            )
        if not paths:
            unexplained.append(message)
    if not findings and unexplained:
        sources = within or FALLBACK_SOURCES
        parts = next((p for p in sources if _has(block, p)), sources[0] if within else ())
        path = ctx.target.path_of(CHART, *parts)
        message = next((m for m in unexplained if not _GENERIC.search(m)), unexplained[0])
        findings[path] = Finding(
            path,
            f"{daemon} refuses the configuration the values make",
            f"correct the setting {daemon} names (no value of yours sets it directly): "
            f"{daemon} says: {message}",
        )
    return list(findings.values())


# -- helpers ----------------------------------------------------------------------------------


def _objects(ctx: Context, kind: str) -> list[Doc]:
    return [d for d in ctx.objects if d.get("kind") == kind]


def _not_here(ctx: Context) -> str:
    """Why this deployment runs no slurmctld of its own ("" when it does): then there is
    nothing for the phase to check, and its steps pass saying so (a skipped step would fail
    the run)."""
    if CHART not in ctx.target.charts():
        return f"the deployment installs no {CHART}: no slurmctld to check"
    found = _objects(ctx, "Controller")
    if not found:
        raise StepFailed(f"the live phase handed over no Controller object of {CHART}")
    if (found[0].get("spec") or {}).get("external"):
        return (
            f"the Controller is external ({ctx.target.path_of(CHART, 'controller', 'external')}):"
            " its slurmctld runs elsewhere and holds the partitions; nothing to run here"
        )
    return ""


def _state(ctx: Context) -> Controller:
    state = ctx.extra.get("slurm")
    if not isinstance(state, Controller):
        raise StepFailed("slurm/load left no running slurmctld")
    return state


def _known(ctx: Context) -> list[Doc]:
    """Objects without a control plane: the release's and what the user's cluster already has
    (``--existing``)."""
    existing: list[Doc] = list(ctx.existing)
    return [*ctx.objects, *existing]


def _secret(ctx: Context, namespace: str, name: str, key: str) -> bytes | None:
    """A Secret's value: from the control plane when there is one, else from the objects."""
    if ctx.cluster is not None:
        text = ctx.cluster.kubectl(
            "get", "secret", name, "-n", namespace, "-o", "json", "--ignore-not-found"
        )
        data = (json.loads(text).get("data") or {}) if text.strip() else {}
        return base64.b64decode(data[key]) if key in data else None
    secrets = [
        d for d in _known(ctx)
        if d.get("kind") == "Secret"
        and (d.get("metadata") or {}).get("namespace", namespace) == namespace
    ]  # fmt: skip
    return rendered_secret(secrets, name, key)


def _chroot() -> tuple[Path, str]:
    try:
        root = ensure_chroot()
    except (SlurmChrootError, HarnessError, OSError) as exc:
        raise StepFailed(f"no Slurm 26.05 chroot to run slurmctld in: {exc}") from None
    return root, chroot_info(root).slurm_version


def _nodesets(ctx: Context) -> list[tuple[str, int, Doc]]:
    """(Slurm NodeSet name, nodes, object): as many nodes join as live/placement placed pods
    for the NodeSet (a pod left Pending runs no slurmd, so it never joins, and the two counts
    must agree); without a placement count, its replicas."""
    placed: dict[str, int] = ctx.extra.get("placed") or {}
    out = []
    for nodeset in _objects(ctx, "NodeSet"):
        name = slinky_operator.slurm_nodeset_name(nodeset)
        nodes = placed[name] if name in placed else int(nodeset["spec"].get("replicas") or 0)
        out.append((name, nodes, nodeset))
    return out


_KEY_VALUE = "write space-separated Key=Value items, as slurmd --conf takes them"


def _nodeset_source(ctx: Context, nodeset: str) -> str:
    """The values path that makes a NodeSet's slurmd --conf: its extraConf (or extraConfMap),
    its GPUs, or the NodeSet itself."""
    block = ctx.target.user_block(CHART)
    for parts in (("extraConf",), ("extraConfMap",), ("gpu",)):
        if _has(block, ("nodesets", nodeset, *parts)):
            return _nodeset_path(ctx, nodeset, *parts)
    return _nodeset_path(ctx, nodeset)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _nodeset_path(ctx: Context, slurm_name: str, *parts: str) -> str:
    """The values path of a NodeSet by its Slurm name (slurm-cluster's NodeSets take their
    values key as the Slurm name)."""
    return ctx.target.path_of(CHART, "nodesets", slurm_name, *parts)


# -- GPUs -------------------------------------------------------------------------------------


def gres_gpus(gres: str) -> dict[str, int]:
    """GPU type (``""``: untyped) -> count, of a ``Gres`` value as a node registers it or as
    ``scontrol show node`` prints it (``gpu:h100:8(S:0-1),nic:2`` -> ``{"h100": 8}``); an item
    without a count counts one, as in Slurm; ``(null)`` and other GRES count none."""
    out: dict[str, int] = {}
    for item in filter(None, re.sub(r"\([^)]*\)", "", gres).split(",")):
        parts = item.strip().split(":")
        if parts[0].lower() != "gpu" or len(parts) > 3:
            continue
        if len(parts) == 3 and not parts[2].isdigit():
            continue  # a count that is no number: slurmctld's own findings say so
        count = int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
        kind = parts[1] if len(parts) == 3 or (len(parts) == 2 and not parts[1].isdigit()) else ""
        out[kind] = out.get(kind, 0) + count
    return out


def check_gres_conf(
    user: str, hosts: Mapping[str, str], gpus: Mapping[str, Mapping[str, int]]
) -> str:
    """The gres.conf the check's slurmctld reads: the values' own (``user``; the live phase
    already left out its global ``AutoDetect`` lines, :func:`k8s.operator.without_autodetect`),
    then lines per node that stand in for what slurmd finds on it. A real node's slurmd
    registers the GPUs it detects or its gres.conf names; slurmctld refuses ``AutoDetect`` for a
    node made with ``scontrol create`` and drops a GPU that has no device file. So each node
    gets ``AutoDetect=off`` and, per GPU type its NodeSet declares, as many device files
    (``/dev/nvidiaN``, names only: slurmctld never opens them) as it declares."""
    lines = [user.rstrip("\n")] if user.strip() else []
    if hosts:
        lines.append("# conformance check: what slurmd would find on each node (not the values')")
    for host, nodeset in hosts.items():
        first = 0
        declared = {kind: n for kind, n in (gpus.get(nodeset) or {}).items() if n > 0}
        if not declared:
            lines.append(f"NodeName={host} AutoDetect=off")
        for kind, count in sorted(declared.items()):
            last = first + count - 1
            files = f"/dev/nvidia{first}" if count == 1 else f"/dev/nvidia[{first}-{last}]"
            typed = f" Type={kind}" if kind else ""
            lines.append(f"NodeName={host} AutoDetect=off Name=gpu{typed} File={files}")
            first = last + 1
    return "\n".join(lines) + "\n"


def _gres_path(ctx: Context, nodeset: str) -> str:
    """The values path that gives a NodeSet's nodes their ``Gres``: a ``Gres`` key of its
    ``extraConfMap``, ``Gres=`` in its ``extraConf``, its ``gpu`` block, else the NodeSet
    (a vendor block that targets it)."""
    block = ctx.target.user_block(CHART)
    entry = (block.get("nodesets") or {}).get(nodeset)
    entry = entry if isinstance(entry, dict) else {}
    conf_map = entry.get("extraConfMap")
    if isinstance(conf_map, dict) and any(str(k).lower() == "gres" for k in conf_map):
        return _nodeset_path(ctx, nodeset, "extraConfMap")
    if re.search(r"(?<![\w.])gres\s*=", str(entry.get("extraConf") or ""), re.IGNORECASE):
        return _nodeset_path(ctx, nodeset, "extraConf")
    if "gpu" in entry:
        return _nodeset_path(ctx, nodeset, "gpu")
    return _nodeset_path(ctx, nodeset)


def _gres_lines(log: str, hosts: Sequence[str]) -> list[str]:
    """slurmctld's log lines about the GRES of ``hosts``."""
    return [
        _clean(line)
        for line in log.splitlines()
        if re.search(r"\bgres\b", line, re.IGNORECASE) and any(h in line for h in hosts)
    ]


def gpu_findings(
    ctx: Context,
    ctld: SlurmCtld,
    nodes: Mapping[str, str],
    registered: Mapping[str, Mapping[str, str]],
) -> tuple[list[Finding], list[str]]:
    """One finding per NodeSet whose nodes declare GPUs slurmctld does not give them
    (``Gres=(null)``, fewer GPUs); and the log lines that explain them (no other finding
    traces those)."""
    findings: list[Finding] = []
    explained: list[str] = []
    for nodeset in sorted(set(nodes.values())):
        declared = registered.get(nodeset, {}).get("Gres", "")
        want = sum(gres_gpus(declared).values())
        if not want:
            continue
        failing: list[tuple[str, str]] = []
        for host in sorted(h for h, n in nodes.items() if n == nodeset):
            (record,) = parse_records(ctld.scontrol("show", "node", "-o", host))
            shown = record.get("Gres", "") or "(null)"
            if sum(gres_gpus(shown).values()) < want:
                failing.append((host, shown))
        if not failing:
            continue
        said = _gres_lines(ctld.log(), [host for host, _ in failing])
        explained += said
        host, shown = failing[0]
        more = f" (and {_count(len(failing) - 1, 'other node')})" if len(failing) > 1 else ""
        why = f": slurmctld says: {said[0]}" if said else ""
        types = ctx.target.path_of(CHART, "controller", "extraConfMap", "GresTypes")
        findings.append(
            Finding(
                _gres_path(ctx, nodeset),
                f"slurmctld shows node {host}{more} of NodeSet {nodeset} with Gres={shown}, the "
                f"values declare Gres={declared} ({want} GPUs): no job gets its GPUs",
                f"name each GRES of Gres in slurm.conf's GresTypes, spelled as in Gres "
                f"(GresTypes=gpu: {types}), or declare the GPUs with "
                f"{_nodeset_path(ctx, nodeset, 'gpu', 'count')} (the chart then writes both)"
                f"{why}",
            )
        )
    return findings, explained


def _registrations(ctx: Context) -> tuple[dict[str, dict[str, str]], list[Finding]]:
    """NodeSet -> what its pods register with (``slurmd -Z --conf``, ``Gres`` included); and a
    finding per NodeSet whose ``extraConf`` is not ``Key=Value`` items."""
    registered: dict[str, dict[str, str]] = {}
    findings: list[Finding] = []
    for name, _, doc in _nodesets(ctx):
        try:
            registered[name] = release.slurmd_conf(name, str(doc["spec"].get("extraConf") or ""))
        except ValueError as exc:
            findings.append(Finding(_nodeset_path(ctx, name, "extraConf"), str(exc), _KEY_VALUE))
    return registered, findings


# -- steps ------------------------------------------------------------------------------------


def load(ctx: Context) -> Outcome:
    """slurmctld starts on the operator's files; the NodeSets' nodes join."""
    if why := _not_here(ctx):
        return Outcome(why)
    if "slurm.conf" not in ctx.slurm_files:
        raise StepFailed("the live phase handed over no slurm.conf (ctx.slurm_files)")
    root, version = _chroot()
    files = read_files(ctx.slurm_files)
    conf_text = files["slurm.conf"].decode("utf-8", "replace")
    registered, findings = _registrations(ctx)
    gpus = {name: gres_gpus(conf.get("Gres", "")) for name, conf in registered.items()}
    topology_yaml = files.get("topology.yaml", b"").decode("utf-8", "replace")
    placed: dict[str, int] = ctx.extra.get("placed") or {}
    hosts = release.nodeset_hosts(
        # a NodeSet none of whose pods were placed has no node to join
        ((name, nodes) for name, nodes, _ in _nodesets(ctx) if nodes or name not in placed),
        cap=NODES_PER_NODESET,
    )
    placement = release.default_placement(topology_yaml, hosts)
    if "gres.conf" in files or any(sum(g.values()) for g in gpus.values()):
        user = files.get("gres.conf", b"").decode("utf-8", "replace")
        files = {**files, "gres.conf": check_gres_conf(user, hosts, gpus).encode()}
    workdir = ctx.work / "slurm" / "slurmctld"
    found = _objects(ctx, "Accounting")
    run = _start_slurmdbd(ctx, found[0], files, root) if found else None
    dbd = run.dbd if run is not None else None
    try:
        ctld = ctx.stack.enter_context(slurmctld(files, root=root, workdir=workdir, accounting=dbd))
    except SlurmctldStartError as exc:
        refused = trace(ctx, error_lines(exc.log), conf_text)
        return Outcome(f"slurmctld {version} refuses the configuration", refused)
    except ValueError as exc:
        raise StepFailed(f"the files cannot be given to slurmctld: {exc}") from None
    joined: dict[str, str] = {}
    for host, nodeset in hosts.items():
        try:
            release.create_hosts(ctld, {host: nodeset}, placement, registered)
            joined[host] = nodeset
        except SlurmCommandError as exc:
            findings.append(
                Finding(
                    _nodeset_source(ctx, nodeset),
                    f"slurmctld refuses node {host} of NodeSet {nodeset} "
                    f"({' '.join(f'{k}={v}' for k, v in registered.get(nodeset, {}).items())})",
                    f"correct what the NodeSet's pods register with: slurmctld says: {exc}",
                )
            )
    gpu_problems, explained = gpu_findings(ctx, ctld, joined, registered)
    findings += gpu_problems
    # Errors slurmctld logged but started with: it ignored what the values asked for.
    errors = [e for e in error_lines(ctld.log()) if _clean(e) not in explained]
    findings += [
        f
        for f in trace(ctx, errors, conf_text)
        if not f.problem.endswith("the configuration the values make")
    ]
    ctx.extra["slurm"] = Controller(
        ctld, hosts, placement, topology_yaml, version, run,
        gpus={name: sum(g.values()) for name, g in gpus.items() if sum(g.values())},
    )  # fmt: skip
    others = sorted(n for n in files if n not in {"slurm.conf", "slurm.key", "jwt.key"})
    units = {unit for spec in placement.values() for unit in spec.split(",")}
    where = f", placed in {_count(len(units), 'unit')} of topology.yaml" if placement else ""
    details = []
    if "gres.conf" in files:
        details.append(
            "gres.conf: the values' own, then one line per node standing in for what its slurmd "
            "finds (AutoDetect=off; a device file per GPU it declares, /dev/nvidiaN)"
        )
    return Outcome(
        f"slurmctld {version} loads the operator's slurm.conf with "
        f"{', '.join(others) or 'no other file'}; {_count(len(hosts), 'node')} of "
        f"{_count(len(set(hosts.values())), 'NodeSet')} joined{_joined(ctx, len(hosts))}{where}",
        findings,
        details,
    )


def _joined(ctx: Context, joined: int) -> str:
    """How the joined nodes relate to the placed pods, when they are fewer (so that the two
    counts of one run never read as a contradiction)."""
    pods = sum(nodes for _, nodes, _ in _nodesets(ctx))
    if joined >= pods:
        return ""
    return f" (of {_count(pods, 'placed pod')}: at most {NODES_PER_NODESET} per NodeSet join)"


def _partition_path(ctx: Context, values: Mapping[str, Any], name: str, *parts: str) -> str:
    """The values path of a partition: ``partitions.<name>`` or a NodeSet's own partition."""
    if name in (values.get("partitions") or {}):
        return ctx.target.path_of(CHART, "partitions", name, *parts)
    return ctx.target.path_of(CHART, "nodesets", name, "partition", *parts)


def _topology_findings(ctx: Context, state: Controller, values: Mapping[str, Any]) -> list[Finding]:
    """Partitions naming a topology topology.yaml lacks or slurmctld does not show, and
    topologies slurmctld shows unlike the file (plus the placed nodes)."""
    findings: list[Finding] = []
    got = release.partition_topologies(state.ctld)
    named = slurm_topo.parse_topology_yaml(state.topology_yaml) if state.topology_yaml else []
    known = [t.name for t in named]
    for name, topology in release.expected_partition_topology(values).items():
        if topology not in known:
            problem = (
                f"partition {name} names topology {topology}, which topology.yaml does not have "
                "(slurmctld takes the name as given)"
            )
        elif name in got and got[name] != topology:
            problem = (
                f"partition {name} has topology {got[name] or '(default)'}, the values ask for "
                f"{topology}"
            )
        else:
            continue
        findings.append(
            Finding(
                _partition_path(ctx, values, name, "topology"),
                problem,
                f"name one of topology.yaml's topologies: {', '.join(known) or '(none)'}",
            )
        )
    differences = release.topology_differences(
        state.ctld, state.topology_yaml, set(state.hosts), state.placement
    )
    block = ctx.target.user_block(CHART)
    findings += [
        Finding(
            ctx.target.path_of(CHART, *file_paths(block, "topology.yaml")[0]),
            f"slurmctld shows topology {topology} unlike topology.yaml: {'; '.join(lines)}",
            "correct topology.yaml so that every unit and node appears once",
        )
        for topology, lines in differences.items()
    ]
    return findings


def partitions(ctx: Context) -> Outcome:
    """The values' partitions, their members and topologies, as slurmctld shows them."""
    if why := _not_here(ctx):
        return Outcome(why)
    state = _state(ctx)
    values = ctx.target.chart_values(CHART)
    wanted = release.expected_partitions(values)
    got = release.partitions_of(state.ctld)
    findings = [
        Finding(
            _partition_path(ctx, values, name),
            f"slurmctld has no partition {name}",
            "check that the partition is enabled and names NodeSets that exist",
        )
        for name in sorted(set(wanted) - set(got))
    ]
    for name in sorted(set(wanted) & set(got)):
        members = {h for h, nodeset in state.hosts.items() if nodeset in wanted[name]}
        if got[name] != members:
            findings.append(
                Finding(
                    _partition_path(ctx, values, name, "nodesets"),
                    f"partition {name} holds {sorted(got[name]) or 'no node'}, the values ask "
                    f"for the nodes of NodeSets {sorted(wanted[name]) or '(none)'}: "
                    f"{sorted(members) or 'no node'}",
                    f"list the NodeSets partition {name} should hold",
                )
            )
    findings += _topology_findings(ctx, state, values)
    extra = sorted(set(got) - set(wanted))
    details = [f"also in slurm.conf (not from partitions or NodeSets): {', '.join(extra)}"]
    named = slurm_topo.parse_topology_yaml(state.topology_yaml) if state.topology_yaml else []
    topologies = "1 topology" if len(named) == 1 else f"{len(named)} topologies"
    return Outcome(
        f"{_count(len(wanted), 'partition')} as the values ask, with their NodeSets' nodes; "
        f"{topologies} as topology.yaml gives them",
        findings,
        details if extra else [],
    )


def _block_model(ctld: SlurmCtld, topology: str) -> dict[str, frozenset[str]] | None:
    """Base block -> nodes of ``topology`` when it is a block topology, else None."""
    shown = ctld.show_topology(topology) if topology else ctld.show_topology()
    if "BlockName=" not in shown:
        return None
    return slurm_topo.read_blocks(shown)[0]


def _default_topology(topology_yaml: str) -> str:
    named = slurm_topo.parse_topology_yaml(topology_yaml) if topology_yaml.strip() else []
    return slurm_topo.default_topology(named).name if named else ""


@dataclass(frozen=True)
class Landing:
    """Where one partition's job landed (``nodes`` empty: it did not); ``problem`` and
    ``where`` (the values key below the partition) when it is a finding."""

    args: tuple[str, ...]
    nodes: str = ""
    block: str = ""
    problem: str = ""
    where: str = ""
    fix: str = ""


def land_job(ctld: SlurmCtld, partition: str, members: set[str], topology: str) -> Landing:
    """``sbatch --test-only`` of one job in ``partition``: one node, or on a block topology
    as many nodes as one base block holds of the partition's, with ``--segment`` of that size;
    it must land (inside one base block)."""
    blocks = _block_model(ctld, topology) if topology else None
    args: tuple[str, ...] = ("-N", "1")
    if blocks:
        size = max(len(nodes & members) for nodes in blocks.values()) or 1
        args = ("-N", str(size), f"--segment={size}")
    placed = ctld.test_only("-p", partition, *args)
    if not placed.ok:
        return Landing(
            args,
            problem=f"a job ({' '.join(args)}) does not land in partition {partition}",
            where="config",
            fix=f"correct the partition's limits: sbatch says: {placed.said}",
        )
    if not blocks:
        return Landing(args, placed.nodes)
    nodes = set(ctld.hostnames(placed.nodes))
    inside = sorted(b for b, held in blocks.items() if nodes <= held)
    if not inside:
        return Landing(
            args,
            placed.nodes,
            problem=f"a {' '.join(args)} job in partition {partition} spans blocks "
            f"({placed.nodes}) of topology {topology}",
            where="topology",
            fix="give the partition a block topology whose base blocks hold its nodes",
        )
    return Landing(args, placed.nodes, block=f"{inside[0]} of topology {topology}")


def gpu_job(
    ctld: SlurmCtld, partition: str, nodes: set[str], others: set[str], gpus: int
) -> Landing:
    """``sbatch --test-only`` of a one-node job in ``partition`` that asks for ``gpus`` GPUs
    (``--gres=gpu:N``), the partition's ``others`` nodes excluded: it must land on ``nodes``."""
    args: tuple[str, ...] = ("-N", "1", f"--gres=gpu:{gpus}")
    if others:
        args += ("--exclude", ",".join(sorted(others)))
    placed = ctld.test_only("-p", partition, *args)
    if placed.ok and set(ctld.hostnames(placed.nodes)) <= nodes:
        return Landing(args[:3], placed.nodes)
    return Landing(args[:3], problem=placed.said)


def _gpu_jobs(ctx: Context, state: Controller, got: Mapping[str, set[str]]) -> tuple[
    list[Finding], list[str]
]:  # fmt: skip
    """Per NodeSet whose nodes declare GPUs: a job asking for all of them lands on its nodes."""
    findings: list[Finding] = []
    details: list[str] = []
    for nodeset, gpus in sorted(state.gpus.items()):
        nodes = {h for h, n in state.hosts.items() if n == nodeset}
        if not nodes:
            continue  # no pod placed: the partitions' findings say so
        holding = sorted(p for p, members in got.items() if members & nodes)
        if not holding:
            findings.append(
                Finding(
                    _nodeset_path(ctx, nodeset, "partition"),
                    f"NodeSet {nodeset}'s nodes ({gpus} GPUs each) are in no partition: no job "
                    "can ask for their GPUs",
                    f"enable {_nodeset_path(ctx, nodeset, 'partition', 'enabled')}, or list "
                    f"{nodeset} in a partition's nodesets",
                )
            )
            continue
        # its own partition first; it is enough that one partition takes the job
        holding.sort(key=lambda p: p != nodeset)
        tried: list[tuple[str, Landing]] = []
        for partition in holding:
            tried.append(
                (partition, gpu_job(state.ctld, partition, nodes, got[partition] - nodes, gpus))
            )
            if not tried[-1][1].problem:
                break
        partition, landing = tried[-1] if not tried[-1][1].problem else tried[0]
        asked = f"sbatch -p {partition} {' '.join(landing.args)}"
        if landing.problem:
            findings.append(
                Finding(
                    _gres_path(ctx, nodeset),
                    f"a job asking for the {gpus} GPUs NodeSet {nodeset} declares ({asked}) "
                    f"lands on none of its nodes (partitions tried: {', '.join(p for p, _ in tried)})",
                    "give the nodes GPUs slurmctld counts (GresTypes names each GRES of Gres) and "
                    f"a partition that lets a job have them: sbatch says: {landing.problem}",
                )
            )
            continue
        details.append(f"{partition}: {asked} -> {landing.nodes} (NodeSet {nodeset}'s GPUs)")
    return findings, details


def default_job(ctld: SlurmCtld) -> str:
    """Why a job without ``-p`` is refused ("" when it lands): ``sbatch --test-only`` with no
    partition, as a user's first job is."""
    placed = ctld.test_only("-N", "1")
    return "" if placed.ok else placed.said


def _default_job_findings(ctx: Context, ctld: SlurmCtld) -> list[Finding]:
    refused = default_job(ctld)
    if not refused:
        return []
    return [
        Finding(
            ctx.target.path_of(CHART, "partitions"),
            f"a job without -p is refused (sbatch says: {refused})",
            "mark one partition Default=YES (partitions.<name>.config, or "
            "nodesets.<name>.partition.config)",
        )
    ]


def jobs(ctx: Context) -> Outcome:
    """One job per partition, placed by slurmctld's scheduler; ``--segment`` inside one block
    on block topologies."""
    if why := _not_here(ctx):
        return Outcome(why)
    state = _state(ctx)
    block = ctx.target.user_block(CHART)
    got = release.partitions_of(state.ctld)
    topologies = release.partition_topologies(state.ctld)
    default = _default_topology(state.topology_yaml)
    findings: list[Finding] = []
    details: list[str] = []

    def path(name: str, *parts: str) -> str:
        if name in (block.get("partitions") or {}):
            return ctx.target.path_of(CHART, "partitions", name, *parts)
        if name in state.hosts.values() or name in (block.get("nodesets") or {}):
            return ctx.target.path_of(CHART, "nodesets", name, "partition", *parts)
        return ctx.target.path_of(CHART, "controller", "extraConf")

    segmented = 0
    unplaced = sorted(n for n, count in (ctx.extra.get("placed") or {}).items() if not count)
    for name, members in sorted(got.items()):
        if not members and unplaced:
            findings.append(
                Finding(
                    ctx.target.path_of(CHART, "nodesets", unplaced[0]),
                    f"partition {name} has no node: no pod of NodeSet {', '.join(unplaced)} was "
                    "placed (live/placement), so none joined and no job can land",
                    "make the NodeSets' pods placeable, as live/placement's finding says",
                )
            )
            continue
        if not members:
            findings.append(
                Finding(
                    path(name, "nodesets"),
                    f"partition {name} has no node: no job can land",
                    "list a NodeSet that is enabled, or disable the partition",
                )
            )
            continue
        landing = land_job(state.ctld, name, members, topologies.get(name) or default)
        if landing.problem:
            findings.append(Finding(path(name, landing.where), landing.problem, landing.fix))
            continue
        segmented += bool(landing.block)
        inside = f", inside block {landing.block}" if landing.block else ""
        details.append(f"{name}: sbatch {' '.join(landing.args)} -> {landing.nodes}{inside}")
    gpu_problems, gpu_details = _gpu_jobs(ctx, state, got)
    findings += gpu_problems
    details += gpu_details
    no_partition = ""
    if any(got.values()):
        refused = _default_job_findings(ctx, state.ctld)
        findings += refused
        no_partition = "" if refused else "; a job without -p lands"
    return Outcome(
        f"{_count(len(got), 'partition')}, one job each, placed by slurmctld's scheduler "
        f"(sbatch --test-only on the NodeSets' nodes); {segmented} with --segment inside one "
        f"block; {_count(len(state.gpus), 'GPU NodeSet')}, one --gres=gpu:N job each"
        f"{no_partition}",
        findings,
        details,
    )


# -- accounting -------------------------------------------------------------------------------


def _cluster_service(ctx: Context, host: str, namespace: str) -> tuple[str, str] | None:
    """``(service, namespace)`` when ``host`` is a Kubernetes Service name (``db``,
    ``db.ns``, ``db.ns.svc``, ``db.ns.svc.cluster.local``), else None."""
    labels = host.rstrip(".").split(".")
    if len(labels) == 1:
        return labels[0], namespace
    if len(labels) >= 3 and labels[2] == "svc":
        return labels[0], labels[1]
    if len(labels) == 2:
        known = {s[1] for s in _services(ctx)}
        if labels[1] in known:
            return labels[0], labels[1]
    return None


def _services(ctx: Context) -> set[tuple[str, str]]:
    """``(name, namespace)`` of the control plane's Services (without one: of the objects)."""
    if ctx.cluster is not None:
        items = ctx.cluster.kubectl_json("get", "services", "-A")["items"]
    else:
        items = [d for d in _known(ctx) if d.get("kind") == "Service"]
    return {
        (str(s["metadata"]["name"]), str(s["metadata"].get("namespace") or ctx.target.namespace))
        for s in items
    }


def _resolves(host: str, port: int) -> bool:
    try:
        return bool(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
    except (OSError, UnicodeError):
        return False


def check_host(ctx: Context, host: str, port: int, namespace: str, path: str) -> tuple[
    list[Finding], str
]:  # fmt: skip
    """Does ``host`` resolve? A cluster name is looked up among the Services instead."""
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(host)
        return [], f"{host} is an address"
    service = _cluster_service(ctx, host, namespace)
    if service is not None:
        name, where = service
        if service in _services(ctx):
            return [], f"{host} is Service {where}/{name} of the cluster"
        if "." not in host and _resolves(host, port):  # localhost, or a name of the search path
            return [], f"{host} resolves (not a Service of the cluster)"
        return [
            Finding(
                path,
                f"{host} names Service {name} in namespace {where}, which neither the release "
                "nor the cluster's existing objects have",
                f"create Service {name} in namespace {where} before installing (give it to "
                "this command with --existing FILE), or name the host that serves it",
            )
        ], f"{host}: no Service {where}/{name}"
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return [
            Finding(
                path,
                f"{host} does not resolve ({reason})",
                "give a host name that resolves from the cluster (or its address); a Service "
                "of the cluster is written <service>.<namespace>.svc",
            )
        ], f"{host} does not resolve"
    first = addresses[0][4][0] if addresses else "?"
    return [], f"{host} resolves ({first})"


def accounting(ctx: Context) -> Outcome:
    """Accounting hosts resolve; an in-cluster slurmdbd accepts the operator's slurmdbd.conf and
    slurmctld registers its cluster with it."""
    found = _objects(ctx, "Accounting")
    if not found:
        # A pass, not a skip: nothing is wrong, and a skipped step fails the run.
        return Outcome(
            f"accounting is off ({ctx.target.path_of(CHART, 'accounting', 'enabled')} is not "
            "true): nothing to check"
        )
    obj = found[0]
    spec = obj.get("spec") or {}
    namespace = str((obj.get("metadata") or {}).get("namespace") or ctx.target.namespace)
    if spec.get("external"):
        external = spec.get("externalConfig") or {}
        host, port = str(external.get("host", "")), int(external.get("port") or 6819)
        path = ctx.target.path_of(CHART, "accounting", "externalConfig", "host")
        findings, said = check_host(ctx, host, port, namespace, path)
        return Outcome(f"external slurmdbd: {said}", findings)
    if why := _not_here(ctx):
        return Outcome(why)
    state = _state(ctx)
    storage = AccountingSpec.from_object(obj).storage
    path = ctx.target.path_of(CHART, "accounting", "storageConfig", "host")
    findings, said = check_host(ctx, storage.host, storage.port, namespace, path)
    run = state.accounting
    if run is None:
        raise StepFailed("slurm/load started no slurmdbd")
    if run.refused is not None:
        within = [("accounting", "extraConf"), ("accounting", "extraConfMap"),
                  ("accounting", "storageConfig")]  # fmt: skip
        findings += trace(
            ctx, error_lines(run.refused.log), run.refused.log, within=within, without=(),
            daemon="slurmdbd",
        )  # fmt: skip
        return Outcome(f"database host: {said}; slurmdbd refuses its configuration", findings)
    spec_ = AccountingSpec.from_object(obj)
    if run.conf is not None and run.password is not None:
        findings += [
            Finding(
                ctx.target.path_of(CHART, "accounting", "storageConfig"),
                f"the operator's slurmdbd.conf: {problem}",
                "correct accounting.storageConfig and the database Secret",
            )
            for problem in slurmdbd.conf_problems(run.conf, spec_, run.password)
        ]
    conf_text = read_files(ctx.slurm_files).get("slurm.conf", b"").decode("utf-8", "replace")
    cluster = _cluster_name(conf_text)
    ctld = state.ctld
    listed = ctld.run(
        ctld._client("sacctmgr"), "-n", "-P", "list", "cluster", "format=Cluster", check=False
    ).stdout.split()
    if cluster not in listed:
        findings.append(
            Finding(
                ctx.target.path_of(CHART, "accounting"),
                f"slurmctld did not register cluster {cluster} with slurmdbd "
                f"(sacctmgr lists {listed or 'none'})",
                "check accounting.extraConf and controller.extraConf for options that keep "
                "slurmctld from slurmdbd",
            )
        )
    whose = "the harness's copy of the operator's" if ctx.cluster is None else "the operator's"
    return Outcome(
        f"database host: {said}; slurmdbd {state.version} accepts {whose} slurmdbd.conf "
        f"(against a MariaDB here) and slurmctld registers cluster {cluster}",
        findings,
    )


def _operator_conf(ctx: Context, name: str, namespace: str) -> str | None:
    """The slurmdbd.conf the operator wrote (Secret ``<name>-accounting``); None without a
    control plane (then the harness writes the operator's)."""
    if ctx.cluster is None:
        return None

    def written() -> bytes | None:
        return _secret(ctx, namespace, f"{name}-accounting", "slurmdbd.conf")

    try:
        return wait_for(written, timeout=60, what=f"Secret {name}-accounting", every=0.5).decode()
    except WaitTimeout:
        raise StepFailed(
            f"the operator wrote no slurmdbd.conf (Secret {name}-accounting) within 60 s"
        ) from None


def _start_slurmdbd(ctx: Context, obj: Doc, files: Mapping[str, bytes], root: Path) -> SlurmdbdRun:
    """MariaDB and the slurmdbd of the release's Accounting (a stand-in for an external one,
    or when the release's refuses its configuration), left running in ``ctx.stack``."""
    work = ctx.work / "slurm" / "accounting"
    # the cluster's keys (a fresh one where the files have none: slurmctld then takes it too)
    slurm_key = files.get("slurm.key") or os.urandom(1024)
    jwt_key = files.get("jwt.key") or os.urandom(1024)
    try:
        database = ctx.stack.enter_context(slurmdbd.mariadb(root=root, workdir=work / "mariadb"))
    except HarnessError as exc:
        raise StepFailed(f"MariaDB did not start: {exc}") from None
    spec = obj.get("spec") or {}
    stand_in = {**obj, "spec": {**spec, "external": True}}

    def stand_in_daemon() -> slurmdbd.Slurmdbd:
        return ctx.stack.enter_context(
            slurmdbd.accounting_daemon(
                stand_in,
                database=database,
                workdir=work / "stand-in",
                root=root,
                slurm_key=slurm_key,
                jwt_key=jwt_key,
            )
        )

    if spec.get("external"):
        dbd = stand_in_daemon()
        return SlurmdbdRun(dbd, stand_in=True, conf=None, password=None)
    namespace = str((obj.get("metadata") or {}).get("namespace") or ctx.target.namespace)
    storage = AccountingSpec.from_object(obj).storage
    raw = _secret(ctx, namespace, storage.password_secret, storage.password_key)
    password = raw.decode("utf-8") if raw is not None else None
    conf = _operator_conf(ctx, str(obj["metadata"]["name"]), namespace)
    try:
        dbd = ctx.stack.enter_context(
            slurmdbd.accounting_daemon(
                obj,
                database=database,
                conf=conf,
                password=password,
                workdir=work / "slurmdbd",
                root=root,
                slurm_key=slurm_key,
                jwt_key=jwt_key,
            )
        )
    except slurmdbd.SlurmdbdStartError as exc:
        dbd = stand_in_daemon()
        return SlurmdbdRun(dbd, stand_in=True, conf=conf, password=password, refused=exc)
    return SlurmdbdRun(dbd, stand_in=False, conf=conf, password=password)


def _cluster_name(conf_text: str) -> str:
    """``ClusterName`` of a slurm.conf (the last one wins; the harness's default without)."""
    found = re.findall(r"^\s*ClusterName\s*=\s*(\S+)", conf_text, re.MULTILINE | re.IGNORECASE)
    return str(found[-1]) if found else DEFAULT_KEYS["ClusterName"]


STEPS: tuple[Step, ...] = (
    Step("slurm", "load", load, needs=("live/reconcile",)),
    Step("slurm", "partitions", partitions, needs=("slurm/load",)),
    Step("slurm", "jobs", jobs, needs=("slurm/load",)),
    Step("slurm", "accounting", accounting, needs=("slurm/load",)),
)
"""The slurm phase's steps in run order."""
