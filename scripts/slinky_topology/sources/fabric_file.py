"""Read a fabric description file (YAML or JSON) validated by ``schemas/fabric.schema.json``.

``load_fabric("default")`` returns the embedded demo fabric (``slinky_topology/data/
default-fabric.yaml``: two GB200 NVL72-style racks of 18 nodes, two leaves, one spine); any other
value is a path (write ``./default`` for a file of that name).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from slinky_topology import hostlist
from slinky_topology.errors import InputError
from slinky_topology.limits import MAX_HOSTS, check_document, compose_and_load_yaml
from slinky_topology.model import Fabric, Node, NvlinkDomain, Switch, TopologyRequest
from slinky_topology.sources.files import read_text
from slinky_topology.validate.version import unproven_version

__all__ = ["BUILTIN_DEFAULT", "SCHEMA_PATH", "fabric_from_data", "load_fabric", "schema"]

BUILTIN_DEFAULT = "default"
# The canonical file is schemas/fabric.schema.json; the package carries it (through a symlink in
# data/, which wheels resolve to a copy) so installed copies work outside a checkout.
SCHEMA_PATH = Path(__file__).resolve().parents[1] / "data" / "fabric.schema.json"


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The fabric JSON Schema (draft-07)."""
    data: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return data


def _json_path(parts: Any) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def load_fabric(source: str) -> Fabric:
    """Load ``source``: ``"default"`` (embedded demo) or a path to a YAML/JSON fabric file.

    The file is bounded before it is expanded (size, nesting, YAML aliases, node count: see
    :mod:`slinky_topology.limits`); every problem is an :class:`InputError` naming it.
    """
    if source == BUILTIN_DEFAULT:
        text = (
            resources.files("slinky_topology")
            .joinpath("data/default-fabric.yaml")
            .read_text(encoding="utf-8")
        )
        location = "builtin:default-fabric.yaml"
    else:
        try:
            text = read_text(source)
        except InputError as exc:
            if exc.message.startswith("cannot read:"):
                message = "cannot read fabric file:" + exc.message.removeprefix("cannot read:")
                raise InputError(message, location=exc.location) from None
            raise
        location = source
    node, data = compose_and_load_yaml(text, location, "YAML/JSON")
    return _from_data(data, location, node)


def _line_of(node: yaml.Node | None, parts: list[str | int]) -> int | None:
    """1-based line of the YAML node at JSON path ``parts`` under ``node`` (best effort)."""
    for part in parts:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        else:
            node = None
        if node is None:
            return None
    return node.start_mark.line + 1 if node is not None else None


def _short(message: str, limit: int = 200) -> str:
    """``message`` on one line, cut to ``limit`` characters (schema errors quote the value)."""
    flat = " ".join(message.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def fabric_from_data(data: Any, location: str = "<fabric>", text: str | None = None) -> Fabric:
    """Validate ``data`` against the schema and build the fabric model.

    Raises :class:`InputError` naming ``location::$.json.path`` of the first problem (and its
    line when the YAML/JSON ``text`` is given). ``data`` is checked against the bounds of
    :mod:`slinky_topology.limits` first (nesting, alias inflation, node count).
    """
    node = None
    if text is not None:
        try:
            node, _ = compose_and_load_yaml(text, location)
        except InputError:
            node = None
    return _from_data(data, location, node)


def _count(expr: str, where: str) -> int:
    try:
        return hostlist.count(expr)
    except InputError as exc:
        raise InputError(exc.message, location=where) from None


def _check_counts(spec: dict[str, Any], location: str) -> None:
    """Refuse, before expanding any hostlist, a fabric naming more nodes than Slurm can run."""
    total = 0
    for i, n in enumerate(spec["nodes"]):
        where = f"{location}::$.spec.nodes[{i}]"
        names = _count(n["name"], f"{where}.name")
        total += names
        if total > MAX_HOSTS:
            raise InputError(
                f"the fabric names {total:,} nodes up to here, more than Slurm's {MAX_HOSTS:,} "
                "(fix the hostlist ranges)",
                location=f"{where}.name",
            )
        if "k8sNode" in n:
            kube = _count(n["k8sNode"], f"{where}.k8sNode")
            if kube != names:
                raise InputError(
                    f"names {kube:,} Kubernetes nodes for {names:,} nodes",
                    location=f"{where}.k8sNode",
                )
    total = 0
    for i, d in enumerate(spec.get("nvlinkDomains", [])):
        for j, part in enumerate(d.get("partitions", [])):
            for k, expr in enumerate(part["nodes"]):
                where = f"{location}::$.spec.nvlinkDomains[{i}].partitions[{j}].nodes[{k}]"
                total += _count(expr, where)
                if total > MAX_HOSTS:
                    raise InputError(
                        f"NVLink partitions name {total:,} nodes up to here, more than Slurm's "
                        f"{MAX_HOSTS:,} (fix the hostlist ranges)",
                        location=where,
                    )


def _int(value: Any) -> Any:
    """JSON Schema's ``integer`` admits ``2.0``; the model wants ``2``."""
    return int(value) if isinstance(value, float) else value


def _check_schema(data: Any, location: str, root: yaml.Node | None) -> None:
    check_document(data, location)
    validator = jsonschema.Draft7Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return
    first = errors[0]
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    line = _line_of(root, list(first.absolute_path)) if root is not None else None
    if line is not None:
        more = f" (line {line}){more}"
    raise InputError(
        f"{_short(first.message)}{more}",
        location=f"{location}::{_json_path(first.absolute_path)}",
    )


def _subdomains(spec: dict[str, Any], location: str) -> dict[str, str]:
    """Node name -> NVLink partition id, from ``nvlinkDomains[].partitions``."""
    subdomain_of: dict[str, str] = {}
    for i, d in enumerate(spec.get("nvlinkDomains", [])):
        for j, part in enumerate(d.get("partitions", [])):
            for k, expr in enumerate(part["nodes"]):
                where = f"{location}::$.spec.nvlinkDomains[{i}].partitions[{j}].nodes[{k}]"
                for host in _expand(expr, where):
                    subdomain_of[host] = part["id"]
    return subdomain_of


def _nodes(spec: dict[str, Any], location: str) -> list[Node]:
    subdomain_of = _subdomains(spec, location)
    nodes: list[Node] = []
    for i, n in enumerate(spec["nodes"]):
        names = _expand(n["name"], f"{location}::$.spec.nodes[{i}].name")
        kube: list[str | None] = [None] * len(names)
        if "k8sNode" in n:
            kube = list(_expand(n["k8sNode"], f"{location}::$.spec.nodes[{i}].k8sNode"))
        for name, k8s in zip(names, kube, strict=True):
            nodes.append(
                Node(
                    name=name,
                    k8s_name=k8s,
                    leaf=n.get("leaf"),
                    domain=n.get("nvlinkDomain"),
                    subdomain=subdomain_of.get(name),
                    state=n.get("state", "up"),
                    partitions=tuple(n.get("partitions", ())),
                )
            )
    return nodes


def _request(t: dict[str, Any]) -> TopologyRequest:
    sizes = t.get("blockSizes", "auto")
    return TopologyRequest(
        name=t["name"],
        kind=t["type"],
        cluster_default=t.get("clusterDefault", False),
        block_sizes=None if sizes == "auto" else tuple(_int(v) for v in sizes),
        max_tiers=_int(t.get("maxTiers")),
        partitions=tuple(t.get("partitions", ())),
        source=t.get("source", "domain"),
        oversized=t.get("oversizedDomains", "split"),
    )


def _check_version(version: str | None, location: str, root: yaml.Node | None) -> None:
    """Refuse a ``slurmVersion`` the project does not prove on a real slurmctld."""
    refused = None if version is None else unproven_version(version)
    if refused is None:
        return
    line = _line_of(root, ["spec", "slurmVersion"]) if root is not None else None
    raise InputError(
        refused + (f" (line {line})" if line is not None else ""),
        location=f"{location}::$.spec.slurmVersion",
    )


def _from_data(data: Any, location: str, root: yaml.Node | None) -> Fabric:
    _check_schema(data, location, root)
    _check_counts(data["spec"], location)
    spec = data["spec"]
    _check_version(spec.get("slurmVersion"), location, root)
    domains = tuple(
        NvlinkDomain(d["name"], _int(d.get("slots")), d.get("switch"))
        for d in spec.get("nvlinkDomains", [])
    )
    return Fabric(
        name=data.get("metadata", {}).get("name", "fabric"),
        switches=tuple(Switch(s["name"], s.get("parent")) for s in spec.get("switches", [])),
        domains=domains,
        nodes=tuple(_nodes(spec, location)),
        topologies=tuple(_request(t) for t in spec.get("topologies", [])),
        tiers=tuple(spec.get("tiers", ("leaf", "spine", "core"))),
        slurm_version=spec.get("slurmVersion"),
    )


def _expand(expr: str, where: str) -> list[str]:
    try:
        return hostlist.expand(expr)
    except InputError as exc:
        raise InputError(exc.message, location=where) from None
