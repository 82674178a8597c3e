"""Conformance, static phase: cross-references between values (``references``): partitions and
NodeSets, an inline topology, Secrets the render names but never makes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from slinky_conformance.context import Context, Outcome, Skipped
from slinky_conformance.report import Finding
from slinky_conformance.target import CLUSTER
from slinky_harness.k8s import references
from slinky_topology.errors import TopologyError
from slinky_topology.parse import parse_topology_yaml
from slinky_topology.validate import validate_doc

if TYPE_CHECKING:
    from collections.abc import Sequence

    from slinky_conformance.target import Target


# -- references -----------------------------------------------------------------------------------


def cluster_values(target: Target) -> dict[str, Any] | None:
    return target.chart_values(CLUSTER) if CLUSTER in target.charts() else None


def _entries(collection: Any) -> list[tuple[str, dict[str, Any]]]:
    """A ``name -> mapping`` collection of the values (partitions, NodeSets), sorted by name; what
    is not a mapping counts as empty (the schema step reports it)."""
    if not isinstance(collection, dict):
        return []
    return sorted((str(k), v if isinstance(v, dict) else {}) for k, v in collection.items())


def enabled_nodesets(values: dict[str, Any]) -> list[str]:
    """NodeSets slurm-cluster renders: ``nodesets`` entries over ``nodesetDefaults``, enabled."""
    default = (values.get("nodesetDefaults") or {}).get("enabled", True)
    return [
        name for name, entry in _entries(values.get("nodesets")) if entry.get("enabled", default)
    ]


def partition_findings(target: Target, values: dict[str, Any]) -> list[Finding]:
    """Partitions naming a NodeSet the values do not define or disable."""
    known = enabled_nodesets(values)
    defined = {name for name, _ in _entries(values.get("nodesets"))}
    default = (values.get("partitionDefaults") or {}).get("enabled", True)
    findings = []
    for name, entry in _entries(values.get("partitions")):
        if not entry.get("enabled", default):
            continue
        for index, nodeset in enumerate(entry.get("nodesets") or []):
            if str(nodeset).upper() == "ALL" or nodeset in known:
                continue
            state = "disabled" if nodeset in defined else "not defined"
            fix = f"name one of: {', '.join([*known, 'ALL'])}" + (
                f"; or enable it ({target.path_of(CLUSTER, 'nodesets', str(nodeset), 'enabled')}: true)"
                if nodeset in defined
                else ""
            )
            findings.append(
                Finding(
                    target.path_of(CLUSTER, "partitions", name, "nodesets", index),
                    f"partition {name} names NodeSet {nodeset!r}, which is {state}",
                    fix,
                )
            )
    return findings


def topology_findings(target: Target, values: dict[str, Any]) -> list[Finding]:
    """An inline topology.yaml that slinky-topology's validator refuses (a node in two blocks,
    under two leaf switches, ...), and partitions naming a topology it does not declare."""
    text = (values.get("topology") or {}).get("yaml") or ""
    if not text.strip():
        return []
    at = target.path_of(CLUSTER, "topology", "yaml")
    try:
        doc = parse_topology_yaml(text, location=at)
    except TopologyError as exc:
        return [
            Finding(at, f"not a valid topology.yaml: {exc}", "fix the YAML as the message says")
        ]
    findings = [
        Finding(at, f"{f.subject}: {f.message}", f.fix or "fix the topology")
        for f in validate_doc(doc, require_default=False)
        if f.severity == "error" or "several leaf switches" in f.message
    ]
    names = {t.name for t in doc.topologies}
    for name, entry in _entries(values.get("partitions")):
        wanted = entry.get("topology")
        if wanted and wanted not in names:
            findings.append(
                Finding(
                    target.path_of(CLUSTER, "partitions", name, "topology"),
                    f"names topology {wanted!r}, which {at} does not declare",
                    f"name one of: {', '.join(sorted(names))}",
                )
            )
    return findings


def _secret_finding(target: Target, ref: references.Reference) -> Finding:
    paths = list(target.where(ref.name))
    path = paths[0] if paths else ""
    empty = (
        f"set {path} to a {ref.kind} the chart makes (e.g. leave it empty)"
        if path
        else ("give the values that make the chart create it")
    )
    return Finding(
        path,
        f"{ref.owner} refers to {ref.kind} {ref.name!r} ({ref.field}), which the values never create",
        f"create {ref.kind} {ref.name} in namespace {ref.namespace} before installing (and give "
        f"it to this check with --existing FILE), or {empty}",
    )


def secret_findings(
    target: Target, docs: list[dict[str, Any]], existing: Sequence[dict[str, Any]] = ()
) -> list[Finding]:
    """Secrets (and key ConfigMaps) the render refers to but neither makes nor finds in
    ``existing`` (the objects the user's cluster already has, ``--existing``)."""
    made = references.made_secrets([*docs, *existing], target.namespace)
    findings: list[Finding] = []
    seen: set[tuple[str, str, str]] = set()
    for ref in references.secret_refs(docs, target.namespace):
        key = (ref.kind, ref.namespace, ref.name)
        if key not in made and key not in seen:
            seen.add(key)
            findings.append(_secret_finding(target, ref))
    return findings


def check_references(ctx: Context) -> Outcome:
    findings: list[Finding] = []
    details: list[str] = []
    checked = []
    values = cluster_values(ctx.target)
    if values is not None:
        findings += partition_findings(ctx.target, values)
        findings += topology_findings(ctx.target, values)
        checked.append("partitions and topology")
    if ctx.rendered:
        findings += secret_findings(ctx.target, ctx.rendered, ctx.existing)
        checked.append("Secret references")
    else:
        details.append("Secret references not checked: the Helm 4 render did not pass")
    if not checked:
        raise Skipped("nothing to cross-check: no slurm-cluster values and no render")
    what = " and ".join(checked)
    if findings:
        return Outcome(
            f"{len(findings)} references do not resolve ({what} checked)", findings, details
        )
    return Outcome(f"{what} resolve", findings, details)
