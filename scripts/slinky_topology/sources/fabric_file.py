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
from slinky_topology.model import Fabric, Node, NvlinkDomain, Switch, TopologyRequest

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
    """Load ``source``: ``"default"`` (embedded demo) or a path to a YAML/JSON fabric file."""
    if source == BUILTIN_DEFAULT:
        text = (
            resources.files("slinky_topology")
            .joinpath("data/default-fabric.yaml")
            .read_text(encoding="utf-8")
        )
        location = "builtin:default-fabric.yaml"
    else:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read fabric file: {exc.strerror}", location=source) from None
        location = source
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{location}:{mark.line + 1}" if mark is not None else location
        raise InputError(
            f"not valid YAML/JSON: {getattr(exc, 'problem', exc)}", location=where
        ) from None
    return fabric_from_data(data, location, text)


def _line_of(text: str, parts: list[str | int]) -> int | None:
    """1-based line of the YAML node at JSON path ``parts`` in ``text`` (best effort)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:  # pragma: no cover - text already loaded once
        return None
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


def fabric_from_data(data: Any, location: str = "<fabric>", text: str | None = None) -> Fabric:
    """Validate ``data`` against the schema and build the fabric model.

    Raises :class:`InputError` naming ``location::$.json.path`` of the first problem (and its
    line when the YAML/JSON ``text`` is given).
    """
    validator = jsonschema.Draft7Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        line = _line_of(text, list(first.absolute_path)) if text is not None else None
        if line is not None:
            more = f" (line {line}){more}"
        raise InputError(
            f"{first.message}{more}", location=f"{location}::{_json_path(first.absolute_path)}"
        )
    spec = data["spec"]
    switches = tuple(Switch(s["name"], s.get("parent")) for s in spec.get("switches", []))
    domains: list[NvlinkDomain] = []
    subdomain_of: dict[str, str] = {}
    for i, d in enumerate(spec.get("nvlinkDomains", [])):
        domains.append(NvlinkDomain(d["name"], d.get("slots"), d.get("switch")))
        for j, part in enumerate(d.get("partitions", [])):
            for k, expr in enumerate(part["nodes"]):
                where = f"{location}::$.spec.nvlinkDomains[{i}].partitions[{j}].nodes[{k}]"
                for host in _expand(expr, where):
                    subdomain_of[host] = part["id"]
    nodes: list[Node] = []
    for i, n in enumerate(spec["nodes"]):
        names = _expand(n["name"], f"{location}::$.spec.nodes[{i}].name")
        kube: list[str | None] = [None] * len(names)
        if "k8sNode" in n:
            where = f"{location}::$.spec.nodes[{i}].k8sNode"
            kube = list(_expand(n["k8sNode"], where))
            if len(kube) != len(names):
                raise InputError(
                    f"names {len(kube)} Kubernetes nodes for {len(names)} nodes", location=where
                )
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
    topologies = []
    for t in spec.get("topologies", []):
        sizes = t.get("blockSizes", "auto")
        topologies.append(
            TopologyRequest(
                name=t["name"],
                kind=t["type"],
                cluster_default=t.get("clusterDefault", False),
                block_sizes=None if sizes == "auto" else tuple(sizes),
                max_tiers=t.get("maxTiers"),
                partitions=tuple(t.get("partitions", ())),
                source=t.get("source", "domain"),
            )
        )
    return Fabric(
        name=data.get("metadata", {}).get("name", "fabric"),
        switches=switches,
        domains=tuple(domains),
        nodes=tuple(nodes),
        topologies=tuple(topologies),
        tiers=tuple(spec.get("tiers", ("leaf", "spine", "core"))),
        slurm_version=spec.get("slurmVersion"),
    )


def _expand(expr: str, where: str) -> list[str]:
    try:
        return hostlist.expand(expr)
    except InputError as exc:
        raise InputError(exc.message, location=where) from None
