"""Conformance, slurm phase, ``load``: slurmctld starts on the operator's files and the
NodeSets' nodes join.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from slinky_conformance.context import Outcome, StepFailed
from slinky_conformance.report import Finding
from slinky_conformance.steps.slurm.accounting import start_slurmdbd
from slinky_conformance.steps.slurm.state import (
    KEY_VALUE,
    NODES_PER_NODESET,
    Controller,
    chroot,
    nodeset_path,
    nodeset_source,
    nodesets_of,
    not_here,
    objects_of,
    plural,
)
from slinky_conformance.target import CLUSTER
from slinky_conformance.trace import clean_line, error_lines, trace
from slinky_harness.slurm import release
from slinky_harness.slurm.conf import parse_records, read_files
from slinky_harness.slurm.ctld import (
    SlurmCommandError,
    SlurmCtld,
    SlurmctldStartError,
    slurmctld,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from slinky_conformance.context import Context


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


def gres_path(ctx: Context, nodeset: str) -> str:
    """The values path that gives a NodeSet's nodes their ``Gres``: a ``Gres`` key of its
    ``extraConfMap``, ``Gres=`` in its ``extraConf``, its ``gpu`` block, else the NodeSet
    (a vendor block that targets it)."""
    block = ctx.target.user_block(CLUSTER)
    entry = (block.get("nodesets") or {}).get(nodeset)
    entry = entry if isinstance(entry, dict) else {}
    conf_map = entry.get("extraConfMap")
    if isinstance(conf_map, dict) and any(str(k).lower() == "gres" for k in conf_map):
        return nodeset_path(ctx, nodeset, "extraConfMap")
    if re.search(r"(?<![\w.])gres\s*=", str(entry.get("extraConf") or ""), re.IGNORECASE):
        return nodeset_path(ctx, nodeset, "extraConf")
    if "gpu" in entry:
        return nodeset_path(ctx, nodeset, "gpu")
    return nodeset_path(ctx, nodeset)


def _gres_lines(log: str, hosts: Sequence[str]) -> list[str]:
    """slurmctld's log lines about the GRES of ``hosts``."""
    return [
        clean_line(line)
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
        more = f" (and {plural(len(failing) - 1, 'other node')})" if len(failing) > 1 else ""
        why = f": slurmctld says: {said[0]}" if said else ""
        types = ctx.target.path_of(CLUSTER, "controller", "extraConfMap", "GresTypes")
        findings.append(
            Finding(
                gres_path(ctx, nodeset),
                f"slurmctld shows node {host}{more} of NodeSet {nodeset} with Gres={shown}, the "
                f"values declare Gres={declared} ({want} GPUs): no job gets its GPUs",
                f"name each GRES of Gres in slurm.conf's GresTypes, spelled as in Gres "
                f"(GresTypes=gpu: {types}), or declare the GPUs with "
                f"{nodeset_path(ctx, nodeset, 'gpu', 'count')} (the chart then writes both)"
                f"{why}",
            )
        )
    return findings, explained


def _registrations(ctx: Context) -> tuple[dict[str, dict[str, str]], list[Finding]]:
    """NodeSet -> what its pods register with (``slurmd -Z --conf``, ``Gres`` included); and a
    finding per NodeSet whose ``extraConf`` is not ``Key=Value`` items."""
    registered: dict[str, dict[str, str]] = {}
    findings: list[Finding] = []
    for name, _, doc in nodesets_of(ctx):
        try:
            registered[name] = release.slurmd_conf(name, str(doc["spec"].get("extraConf") or ""))
        except ValueError as exc:
            findings.append(Finding(nodeset_path(ctx, name, "extraConf"), str(exc), KEY_VALUE))
    return registered, findings


# -- steps ------------------------------------------------------------------------------------


def load(ctx: Context) -> Outcome:
    """slurmctld starts on the operator's files; the NodeSets' nodes join."""
    if why := not_here(ctx):
        return Outcome(why)
    if "slurm.conf" not in ctx.slurm_files:
        raise StepFailed("the live phase handed over no slurm.conf (ctx.slurm_files)")
    root, version = chroot()
    files = read_files(ctx.slurm_files)
    conf_text = files["slurm.conf"].decode("utf-8", "replace")
    registered, findings = _registrations(ctx)
    gpus = {name: gres_gpus(conf.get("Gres", "")) for name, conf in registered.items()}
    topology_yaml = files.get("topology.yaml", b"").decode("utf-8", "replace")
    placed: dict[str, int] = ctx.extra.get("placed") or {}
    hosts = release.nodeset_hosts(
        # a NodeSet none of whose pods were placed has no node to join
        ((name, nodes) for name, nodes, _ in nodesets_of(ctx) if nodes or name not in placed),
        cap=NODES_PER_NODESET,
    )
    placement = release.default_placement(topology_yaml, hosts)
    if "gres.conf" in files or any(sum(g.values()) for g in gpus.values()):
        user = files.get("gres.conf", b"").decode("utf-8", "replace")
        files = {**files, "gres.conf": check_gres_conf(user, hosts, gpus).encode()}
    workdir = ctx.work / "slurm" / "slurmctld"
    found = objects_of(ctx, "Accounting")
    run = start_slurmdbd(ctx, found[0], files, root) if found else None
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
                    nodeset_source(ctx, nodeset),
                    f"slurmctld refuses node {host} of NodeSet {nodeset} "
                    f"({' '.join(f'{k}={v}' for k, v in registered.get(nodeset, {}).items())})",
                    f"correct what the NodeSet's pods register with: slurmctld says: {exc}",
                )
            )
    gpu_problems, explained = gpu_findings(ctx, ctld, joined, registered)
    findings += gpu_problems
    # Errors slurmctld logged but started with: it ignored what the values asked for.
    errors = [e for e in error_lines(ctld.log()) if clean_line(e) not in explained]
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
    where = f", placed in {plural(len(units), 'unit')} of topology.yaml" if placement else ""
    details = []
    if "gres.conf" in files:
        details.append(
            "gres.conf: the values' own, then one line per node standing in for what its slurmd "
            "finds (AutoDetect=off; a device file per GPU it declares, /dev/nvidiaN)"
        )
    return Outcome(
        f"slurmctld {version} loads the operator's slurm.conf with "
        f"{', '.join(others) or 'no other file'}; {plural(len(hosts), 'node')} of "
        f"{plural(len(set(hosts.values())), 'NodeSet')} joined{_joined(ctx, len(hosts))}{where}",
        findings,
        details,
    )


def _joined(ctx: Context, joined: int) -> str:
    """How the joined nodes relate to the placed pods, when they are fewer (so that the two
    counts of one run never read as a contradiction)."""
    pods = sum(nodes for _, nodes, _ in nodesets_of(ctx))
    if joined >= pods:
        return ""
    return f" (of {plural(pods, 'placed pod')}: at most {NODES_PER_NODESET} per NodeSet join)"
