"""What a slurm-cluster release asks of slurmctld, and how to check a running one against it.

The cluster tier (``tests/cluster/test_operator.py``) and the conformance command's slurm phase
(:mod:`slinky_conformance.steps.slurm`) both load the operator's slurm.conf into a real
slurmctld and compare it with the values:

* :func:`expected_partitions` and :func:`expected_partition_topology`: the oracle, read from the
  slurm-cluster values as Helm merged them (never from Slurm's output);
* :func:`nodeset_hosts` and :func:`create_hosts`: one dynamic node per NodeSet pod, named and
  featured as the operator's pods register (``<nodeset>-<ordinal>``, ``Features=<nodeset>``);
* :func:`default_placement`: where those nodes go in a topology.yaml that lists units but no
  nodes (the labeler's skeleton: in a cluster each node's annotation places it);
* :func:`partitions_of` and :func:`topology_differences`: what slurmctld shows, and how its
  topologies differ from the file (with the placed nodes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from slinky_harness.helm.values import merge
from slinky_harness.slurm import topology as slurm_topo
from slinky_harness.slurm.conf import parse_records

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from slinky_harness.slurm.ctld import SlurmCtld

__all__ = [
    "create_hosts",
    "default_placement",
    "expected_partition_topology",
    "expected_partitions",
    "nodeset_hosts",
    "partition_topologies",
    "partitions_of",
    "slurmd_conf",
    "topology_differences",
]


def _nodesets(values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: merge(values.get("nodesetDefaults") or {}, spec)
        for name, spec in (values.get("nodesets") or {}).items()
    }


def expected_partitions(values: Mapping[str, Any]) -> dict[str, set[str]]:
    """Partition name -> NodeSet keys it holds, read from slurm-cluster ``values`` (merged over
    the chart's defaults): every enabled NodeSet with ``partition.enabled`` has its own, every
    enabled ``partitions.<name>`` holds the enabled NodeSets it lists (``ALL``: every one)."""
    nodesets = _nodesets(values)
    enabled = {name for name, spec in nodesets.items() if spec.get("enabled", True)}
    parts: dict[str, set[str]] = {}
    for name in sorted(enabled):
        if (nodesets[name].get("partition") or {}).get("enabled"):
            parts[name] = {name}
    for name, given in (values.get("partitions") or {}).items():
        spec = merge(values.get("partitionDefaults") or {}, given)
        if spec.get("enabled", True):
            wanted = spec.get("nodesets") or []
            parts[name] = set(enabled) if "ALL" in wanted else set(wanted) & enabled
    return parts


def expected_partition_topology(values: Mapping[str, Any]) -> dict[str, str]:
    """Partition -> named topology the values give it (only partitions that name one)."""
    out: dict[str, str] = {}
    for name, merged in _nodesets(values).items():
        partition = merged.get("partition") or {}
        if merged.get("enabled", True) and partition.get("enabled") and partition.get("topology"):
            out[name] = str(partition["topology"])
    for name, given in (values.get("partitions") or {}).items():
        merged = merge(values.get("partitionDefaults") or {}, given)
        if merged.get("enabled", True) and merged.get("topology"):
            out[name] = str(merged["topology"])
    return out


def nodeset_hosts(nodesets: Iterable[tuple[str, int]], *, cap: int | None = None) -> dict[str, str]:
    """Slurm node name -> Slurm NodeSet name, for ``(nodeset, replicas)`` pairs: ``<nodeset>-<i>``
    for each replica (at least one: a DaemonSet NodeSet has one pod per matching node), at most
    ``cap`` per NodeSet."""
    hosts: dict[str, str] = {}
    for name, replicas in nodesets:
        count = max(replicas, 1) if cap is None else min(max(replicas, 1), cap)
        hosts.update({f"{name}-{index}": name for index in range(count)})
    return hosts


def default_placement(topology_yaml: str, hosts: Iterable[str]) -> dict[str, str]:
    """Node -> topology string (``fabric:leaf1,nvl:b1``) for the nodes that no unit of
    ``topology_yaml`` lists: in every tree, the first leaf switch; in every block topology, the
    base blocks in file order, each filled up to the base block size (the last takes the rest).
    Empty when the file places nodes itself or has no tree or block topology."""
    names = list(hosts)
    specs: dict[str, list[str]] = {name: [] for name in names}
    for topo in slurm_topo.parse_topology_yaml(topology_yaml) if topology_yaml.strip() else []:
        model = topo.model
        if isinstance(model, slurm_topo.TreeTopology) and model.leaves():
            listed = model.all_nodes()
            for name in names:
                if name not in listed:
                    specs[name].append(f"{topo.name}:{model.leaves()[0]}")
        elif isinstance(model, slurm_topo.BlockTopology) and model.blocks:
            listed = model.all_nodes()
            free = [n for n in names if n not in listed]
            size = model.sizes[0] if model.sizes else max(len(free), 1)
            blocks = list(model.blocks)
            for index, name in enumerate(free):
                block = blocks[min(index // size, len(blocks) - 1)]
                specs[name].append(f"{topo.name}:{block}")
    return {name: ",".join(parts) for name, parts in specs.items() if parts}


def slurmd_conf(nodeset: str, extra_conf: str) -> dict[str, str]:
    """What a NodeSet's pods register with (``slurmd -Z --conf``, the operator's rule, v1.2.1):
    ``Features=<nodeset>`` plus the NodeSet's ``extraConf`` items (``Key=Value``, space
    separated; a key given twice, ``Feature`` or ``Features`` included, joins its values with
    commas, each value once)."""
    conf: dict[str, str] = {"Features": nodeset}
    for item in extra_conf.split():
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"NodeSet {nodeset}: extraConf item {item!r} is not Key=Value")
        key = "Features" if key.lower() in {"feature", "features"} else key[:1].upper() + key[1:]
        if key not in conf:
            conf[key] = value
        elif value not in conf[key].split(","):
            conf[key] = f"{conf[key]},{value}"
    return conf


def create_hosts(
    ctld: SlurmCtld,
    hosts: Mapping[str, str],
    placement: Mapping[str, str] | None = None,
    conf: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    """``scontrol create`` one dynamic node per host, as the operator's pods register: with
    ``conf[nodeset]`` (:func:`slurmd_conf`; default ``Features=<nodeset>``) and its placement
    (``Topology=``) when one is given."""
    for host, nodeset in hosts.items():
        attrs = dict((conf or {}).get(nodeset) or {"Features": nodeset})
        ctld.create_node(host, (placement or {}).get(host) or None, **attrs)


def partitions_of(ctld: SlurmCtld) -> dict[str, set[str]]:
    """Partition -> node names, from ``scontrol show partition`` (empty partitions included)."""
    out: dict[str, set[str]] = {}
    for record in parse_records(ctld.scontrol("show", "partition", "-o")):
        if "PartitionName" not in record:  # "No partitions in the system"
            continue
        nodes = record.get("Nodes", "")
        out[record["PartitionName"]] = (
            set(ctld.hostnames(nodes)) if nodes not in ("", "(null)") else set()
        )
    return out


def partition_topologies(ctld: SlurmCtld) -> dict[str, str]:
    """Partition -> the ``Topology=`` slurmctld shows for it (``""``: the cluster default)."""
    records = parse_records(ctld.scontrol("show", "partition", "-o"))
    return {r["PartitionName"]: r.get("Topology", "") for r in records if "PartitionName" in r}


def topology_differences(
    ctld: SlurmCtld,
    topology_yaml: str,
    present: set[str],
    placement: Mapping[str, str] | None = None,
) -> dict[str, list[str]]:
    """Topology name -> how ``scontrol show topology <name>`` differs from ``topology_yaml``
    plus ``placement`` (node -> topology string, as :func:`create_hosts` placed them); only
    topologies that differ. ``present``: the nodes slurmctld knows (a tree may name others)."""
    out: dict[str, list[str]] = {}
    for topo in slurm_topo.parse_topology_yaml(topology_yaml) if topology_yaml.strip() else []:
        model = topo.model
        for node, spec in (placement or {}).items():
            for part in spec.split(","):
                name, _, unit = part.partition(":")
                if name != topo.name:
                    continue
                if isinstance(model, slurm_topo.TreeTopology):
                    model.nodes[unit.split(":")[-1]].append(node)
                elif isinstance(model, slurm_topo.BlockTopology):
                    model.blocks[unit].append(node)
        shown = ctld.show_topology(topo.name)
        if isinstance(model, slurm_topo.TreeTopology):
            found = slurm_topo.tree_differences(shown, model, present=present)
        elif isinstance(model, slurm_topo.BlockTopology):
            found = slurm_topo.block_differences(shown, model)
        else:
            continue
        if found:
            out[topo.name] = found
    return out
