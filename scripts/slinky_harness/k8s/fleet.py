"""Declarative fleets of fake nodes for the kwok control plane.

A fleet file is YAML::

    kind: Fleet
    name: small-gpu                     # optional, for messages
    nodeGroups:
      - name: h100                      # group name, also the label slinky.dev/node-group
        count: 4
        namePattern: "gpu-h100-{n:02d}" # str.format fields: group, index (0-based), n (1-based),
                                        #   block (index // blockSize), slot (index % blockSize)
        blockSize: 2                    # nodes per topology block (default: count)
        resources: {cpu: "96", memory: 1Ti, pods: "110"}   # capacity = allocatable
        gpu:                            # optional: nvidia.com/gpu capacity + GFD labels
          count: 8
          product: NVIDIA-H100-80GB-HBM3
          memoryMiB: 81559
          family: hopper
          clique: "fleet-a.{block}"     # nvidia.com/gpu.clique (NVLink domain), formatted
        labels:                         # values are formatted like namePattern
          topology.kubernetes.io/zone: zone-a
          topology.slinky.dev/rack: "rack-{block}"
        annotations: {}
        taints: []                      # v1 Taint objects

Label and annotation values and the GPU clique are formatted with the same fields as the
name pattern. ``Fleet.nodes()`` turns the file into ``v1.Node`` manifests that kwok manages;
each gets a distinct InternalIP from 10.128.0.0/9 (pods get IPs from kwok's own range).
"""

from __future__ import annotations

import ipaddress
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.core.errors import HarnessError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from slinky_topology.model import Fabric

GROUP_LABEL = "slinky.dev/node-group"
"""Label every fleet node carries with its group name."""
NODE_IP_BASE = ipaddress.IPv4Address("10.128.0.0")
"""Node n of the fleet (counting from 1 across groups) gets InternalIP ``NODE_IP_BASE + n``."""

TOPOGRAPH_TIER_LABEL = "fabric.topograph.run/tier-{}"
"""The i-th switch above a node, leaf first, as topograph's Kubernetes engine labels it."""
TOPOGRAPH_DOMAIN_LABEL = "accelerator.topograph.run/domain"
"""A node's NVLink domain, as topograph's Kubernetes engine labels it."""
STATUS_TAINTS = "node.kubernetes.io/"
"""Taints the node lifecycle controller sets from a node's state (not-ready, unreachable,
unschedulable, pressure): status, not the cluster's design, so a copied fleet drops them."""

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_GROUP_KEYS = {
    "name",
    "count",
    "namePattern",
    "blockSize",
    "resources",
    "gpu",
    "labels",
    "annotations",
    "taints",
}
_GPU_KEYS = {"count", "product", "memoryMiB", "family", "clique", "resource"}


class FleetError(HarnessError, ValueError):
    """The fleet file is malformed."""


@dataclass(frozen=True)
class GpuSpec:
    """GPUs on every node of a group, as the NVIDIA device plugin and GFD would report them."""

    count: int
    product: str
    memory_mib: int | None = None
    family: str | None = None
    clique: str | None = None
    resource: str = "nvidia.com/gpu"

    def labels(self, fields: dict[str, Any]) -> dict[str, str]:
        labels = {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.count": str(self.count),
            "nvidia.com/gpu.product": self.product,
        }
        if self.memory_mib is not None:
            labels["nvidia.com/gpu.memory"] = str(self.memory_mib)
        if self.family is not None:
            labels["nvidia.com/gpu.family"] = self.family
        if self.clique is not None:
            labels["nvidia.com/gpu.clique"] = _format(self.clique, fields, "gpu.clique")
        return labels


@dataclass(frozen=True)
class NodeGroup:
    """``count`` identical nodes."""

    name: str
    count: int
    name_pattern: str
    resources: dict[str, str]
    block_size: int
    gpu: GpuSpec | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict[str, Any], ...] = ()

    def fields(self, index: int) -> dict[str, Any]:
        return {
            "group": self.name,
            "index": index,
            "n": index + 1,
            "block": index // self.block_size,
            "slot": index % self.block_size,
        }

    def node_names(self) -> list[str]:
        return [
            _format(self.name_pattern, self.fields(i), "namePattern") for i in range(self.count)
        ]


@dataclass(frozen=True)
class Fleet:
    """A set of node groups."""

    name: str
    groups: tuple[NodeGroup, ...]

    def node_names(self) -> list[str]:
        return [name for group in self.groups for name in group.node_names()]

    def nodes(self, kubelet_version: str = "fake") -> list[dict[str, Any]]:
        """``v1.Node`` manifests (status included: kwok keeps capacity and allocatable)."""
        manifests: list[dict[str, Any]] = []
        ordinal = 0
        for group in self.groups:
            for index, name in enumerate(group.node_names()):
                fields = group.fields(index)
                ordinal += 1
                labels = {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "type": "kwok",
                    GROUP_LABEL: group.name,
                }
                capacity = dict(group.resources)
                if group.gpu is not None:
                    labels.update(group.gpu.labels(fields))
                    capacity[group.gpu.resource] = str(group.gpu.count)
                labels.update(
                    {k: _format(v, fields, f"labels.{k}") for k, v in group.labels.items()}
                )
                annotations = {
                    "node.alpha.kubernetes.io/ttl": "0",
                    **{
                        k: _format(v, fields, f"annotations.{k}")
                        for k, v in group.annotations.items()
                    },
                    # last: the kwok controller plays kubelet only for nodes that carry it
                    # (slinky_harness.k8s.cluster.KWOK_NODE_SELECTOR), whatever a fleet says
                    "kwok.x-k8s.io/node": "fake",
                }
                node: dict[str, Any] = {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": labels, "annotations": annotations},
                    "spec": {},
                    "status": {
                        "capacity": capacity,
                        "allocatable": dict(capacity),
                        "addresses": [
                            {"type": "InternalIP", "address": str(NODE_IP_BASE + ordinal)},
                            {"type": "Hostname", "address": name},
                        ],
                        "nodeInfo": {
                            "architecture": "amd64",
                            "operatingSystem": "linux",
                            "kubeletVersion": kubelet_version,
                            "kubeProxyVersion": kubelet_version,
                            "containerRuntimeVersion": "kwok://fake",
                            "kernelVersion": "fake",
                            "osImage": "kwok fake node",
                            "machineID": "",
                            "systemUUID": "",
                            "bootID": "",
                        },
                    },
                }
                if group.taints:
                    node["spec"]["taints"] = [dict(t) for t in group.taints]
                manifests.append(node)
        return manifests


def _format(pattern: str, fields: dict[str, Any], where: str) -> str:
    try:
        return pattern.format(**fields)
    except (KeyError, IndexError, ValueError) as exc:
        known = ", ".join(sorted(fields))
        raise FleetError(f"{where}: cannot format {pattern!r} ({exc}); fields: {known}") from None


def _str_map(value: object, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FleetError(f"{where}: expected a mapping, got {type(value).__name__}")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or isinstance(item, (dict, list)) or item is None:
            raise FleetError(f"{where}.{key}: expected a string or number")
        out[key] = str(item).lower() if isinstance(item, bool) else str(item)
    return out


def _int(value: object, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise FleetError(f"{where}: expected an integer >= {minimum}, got {value!r}")
    return value


def _gpu(raw: object, where: str) -> GpuSpec:
    if not isinstance(raw, dict):
        raise FleetError(f"{where}: expected a mapping")
    unknown = set(raw) - _GPU_KEYS
    if unknown:
        raise FleetError(f"{where}: unknown keys {sorted(unknown)}; known: {sorted(_GPU_KEYS)}")
    product = raw.get("product")
    if not isinstance(product, str) or not product:
        raise FleetError(f"{where}.product: required string")
    memory = raw.get("memoryMiB")
    for key in ("family", "clique", "resource"):
        if key in raw and not isinstance(raw[key], str):
            raise FleetError(f"{where}.{key}: expected a string")
    return GpuSpec(
        count=_int(raw.get("count"), f"{where}.count", 1),
        product=product,
        memory_mib=None if memory is None else _int(memory, f"{where}.memoryMiB", 1),
        family=raw.get("family"),
        clique=raw.get("clique"),
        resource=raw.get("resource", "nvidia.com/gpu"),
    )


def _group(raw: object, where: str) -> NodeGroup:
    if not isinstance(raw, dict):
        raise FleetError(f"{where}: expected a mapping")
    unknown = set(raw) - _GROUP_KEYS
    if unknown:
        raise FleetError(f"{where}: unknown keys {sorted(unknown)}; known: {sorted(_GROUP_KEYS)}")
    name = raw.get("name")
    if not isinstance(name, str) or not _DNS_SUBDOMAIN.match(name):
        raise FleetError(f"{where}.name: expected a DNS-1123 name, got {name!r}")
    count = _int(raw.get("count"), f"{where}.count", 0)
    pattern = raw.get("namePattern", f"{name}-{{index}}")
    if not isinstance(pattern, str):
        raise FleetError(f"{where}.namePattern: expected a string")
    resources = _str_map(raw.get("resources"), f"{where}.resources")
    for required in ("cpu", "memory"):
        if required not in resources:
            raise FleetError(f"{where}.resources.{required}: required")
    resources.setdefault("pods", "110")
    taints = raw.get("taints") or []
    if not isinstance(taints, list) or not all(
        isinstance(t, dict) and "key" in t and "effect" in t for t in taints
    ):
        raise FleetError(f"{where}.taints: expected a list of {{key, value, effect}} mappings")
    block = raw.get("blockSize")
    return NodeGroup(
        name=name,
        count=count,
        name_pattern=pattern,
        resources=resources,
        block_size=max(count, 1) if block is None else _int(block, f"{where}.blockSize", 1),
        gpu=None if raw.get("gpu") is None else _gpu(raw["gpu"], f"{where}.gpu"),
        labels=_str_map(raw.get("labels"), f"{where}.labels"),
        annotations=_str_map(raw.get("annotations"), f"{where}.annotations"),
        taints=tuple(taints),
    )


def parse_fleet(data: object, source: str = "<fleet>") -> Fleet:
    """Validate a decoded fleet document."""
    if not isinstance(data, dict):
        raise FleetError(f"{source}: expected a mapping at the top")
    unknown = set(data) - {"kind", "name", "nodeGroups"}
    if unknown:
        raise FleetError(f"{source}: unknown keys {sorted(unknown)}")
    if data.get("kind", "Fleet") != "Fleet":
        raise FleetError(f"{source}: kind must be Fleet")
    raw_groups = data.get("nodeGroups")
    if not isinstance(raw_groups, list) or not raw_groups:
        raise FleetError(f"{source}: nodeGroups must be a non-empty list")
    groups = tuple(_group(g, f"{source}: nodeGroups[{i}]") for i, g in enumerate(raw_groups))
    fleet = Fleet(name=str(data.get("name", Path(source).stem)), groups=groups)
    seen: set[str] = set()
    for node_name in fleet.node_names():
        if not _DNS_SUBDOMAIN.match(node_name) or len(node_name) > 253:
            raise FleetError(f"{source}: node name {node_name!r} is not a DNS-1123 subdomain")
        if node_name in seen:
            raise FleetError(f"{source}: node name {node_name!r} appears twice")
        seen.add(node_name)
    return fleet


def _read_yaml(path: Path) -> Any:
    """A YAML (or JSON) file's data; :class:`FleetError` naming the file when unreadable."""
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise FleetError(f"{path}: {exc}") from None


def load_fleet(path: Path | str) -> Fleet:
    """Read and validate a fleet file."""
    path = Path(path)
    return parse_fleet(_read_yaml(path), str(path))


def fleet_from_fabric(
    fabric: Fabric,
    *,
    group: str,
    resources: dict[str, str],
    gpu: GpuSpec | None = None,
    name: str = "",
    labels: dict[str, str] | None = None,
    domain_labels: Sequence[str] = (TOPOGRAPH_DOMAIN_LABEL,),
) -> Fleet:
    """One fake node per fabric node (its name), labelled like topograph's Kubernetes engine
    labels it: :data:`TOPOGRAPH_TIER_LABEL` ``<i>`` is the i-th switch above the node (leaf
    first) and :data:`TOPOGRAPH_DOMAIN_LABEL` its NVLink domain, so ``slinky-topology --preset
    topograph`` reads the fabric back from the live Nodes. Every node has ``resources`` and
    ``gpu`` (a fabric says nothing about either) and ``labels``, and is in node group ``group``;
    each of ``domain_labels`` holds the NVLink domain (``nvidia.com/gpu.clique`` too, for GFD's
    view of the same domains)."""
    parents = {s.name: s.parent for s in fabric.switches}
    groups = []
    for node in fabric.nodes:
        node_labels: dict[str, str] = dict(labels or {})
        switch = node.leaf
        tier = 0
        while switch is not None:
            node_labels[TOPOGRAPH_TIER_LABEL.format(tier)] = switch
            switch = parents.get(switch)
            tier += 1
        if node.domain is not None:
            node_labels.update(dict.fromkeys(domain_labels, node.domain))
        groups.append(
            NodeGroup(
                name=group,
                count=1,
                name_pattern=_literal(node.name),
                resources=dict(resources),
                block_size=1,
                gpu=gpu,
                labels=node_labels,
            )
        )
    if not groups:
        raise FleetError(f"fabric {fabric.name} has no nodes")
    return Fleet(name=name or f"fabric-{fabric.name}", groups=tuple(groups))


def _literal(text: str) -> str:
    """``text`` as a name pattern that formats to itself."""
    return text.replace("{", "{{").replace("}", "}}")


def fleet_from_nodes(data: object, source: str = "<nodes>") -> Fleet:
    """A fleet that copies a cluster's Nodes (``kubectl get nodes -o json``: a List, or one
    Node): each Node's name, labels, taints and allocatable resources (its capacity where it has
    no allocatable). Status and the lifecycle taints (:data:`STATUS_TAINTS`) are left out: kwok
    keeps the copies Ready. Each node is a group of one, named after the node."""
    items = data.get("items") if isinstance(data, dict) and "items" in data else [data]
    if not isinstance(items, list) or not items:
        raise FleetError(f"{source}: no Nodes (expected the output of kubectl get nodes -o json)")
    groups = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        where = f"{source}: items[{index}]"
        if not isinstance(item, dict) or item.get("kind", "Node") != "Node":
            raise FleetError(f"{where}: not a Node")
        meta = item.get("metadata") or {}
        name = meta.get("name")
        if not isinstance(name, str) or not _DNS_SUBDOMAIN.match(name) or name in seen:
            raise FleetError(f"{where}.metadata.name: {name!r} is not a new DNS-1123 name")
        seen.add(name)
        status = item.get("status") or {}
        resources = _str_map(
            status.get("allocatable") or status.get("capacity"), f"{where}.status.allocatable"
        )
        for required in ("cpu", "memory"):
            if required not in resources:
                raise FleetError(f"{where}.status.allocatable.{required}: required")
        resources.setdefault("pods", "110")
        taints = [
            {k: v for k, v in taint.items() if k in ("key", "value", "effect")}
            for taint in (item.get("spec") or {}).get("taints") or []
            if isinstance(taint, dict)
            and "key" in taint
            and "effect" in taint
            and not str(taint["key"]).startswith(STATUS_TAINTS)
        ]
        groups.append(
            NodeGroup(
                name=f"node-{index}",
                count=1,
                name_pattern=_literal(name),
                resources=resources,
                block_size=1,
                labels=_str_map(meta.get("labels"), f"{where}.metadata.labels"),
                taints=tuple(taints),
            )
        )
    return Fleet(name=Path(source).stem, groups=tuple(groups))


def load_nodes(path: Path | str) -> Fleet:
    """:func:`fleet_from_nodes` of a ``kubectl get nodes -o json`` file (JSON or YAML)."""
    path = Path(path)
    return fleet_from_nodes(_read_yaml(path), str(path))


def create_nodes(api_client: Any, manifests: Sequence[dict[str, Any]], workers: int = 8) -> float:
    """Create Node objects with ``workers`` parallel requests; return the seconds it took.

    ``kubectl create -f`` of a 1,000-item List sends one request after the other (about 40 s
    on a busy 2-core machine); parallel requests keep the API server busy instead.
    """
    from kubernetes import client  # noqa: PLC0415 - the cluster tier's client, not the parser's

    core: Any = client.CoreV1Api(api_client)  # raw responses: untyped on purpose
    started = time.monotonic()

    def create(node: dict[str, Any]) -> None:
        response = core.create_node(node, _preload_content=False)
        _ = response.data  # read the body (no model decoding) before the connection is reused
        response.release_conn()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(create, manifests))
    return time.monotonic() - started
