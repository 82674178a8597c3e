"""Render ``topology.yaml`` (Slurm >= 25.05, topology.md b.4).

Hand-written YAML so the text is canonical: ``topology`` first in every item, two-space indent,
hostlists compressed, plain scalars quoted only where YAML would not read them back as strings.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import yaml

from slinky_topology.emit import header, hostlist_of
from slinky_topology.model import BlockSpec, TopologyDoc, TreeSpec

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["render_topology_yaml", "yaml_scalar"]

_STR_TAG = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()
_SPECIAL = frozenset(":#'\"\n\t ")
_BAD_FIRST = frozenset("-?[]{},&*!|>%@`")


def yaml_scalar(value: str) -> str:
    """``value`` as a YAML scalar that loads back as the same string."""
    plain_ok = (
        value != ""
        and value[0] not in _BAD_FIRST
        and not any(c in _SPECIAL for c in value)
        and _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
        == _STR_TAG
    )
    return value if plain_ok else json.dumps(value)


def render_topology_yaml(
    doc: TopologyDoc, hostlists: Mapping[tuple[str, ...], str] | None = None
) -> str:
    """Render every topology of ``doc`` in order.

    ``hostlists``: node and switch lists already compressed (:attr:`Plan.hostlists`); the others
    are compressed here. Either way the text is ``hostlist.compress`` of the list.
    """
    lines: list[str] = []
    for topo in doc.topologies:
        lines.append(f"- topology: {yaml_scalar(topo.name)}")
        lines.append(f"  cluster_default: {'true' if topo.cluster_default else 'false'}")
        spec = topo.spec
        if isinstance(spec, TreeSpec):
            lines.append("  tree:")
            lines.append("    switches:")
            for sw in spec.switches:
                lines.append(f"      - switch: {yaml_scalar(sw.name)}")
                if sw.children:
                    lines.append(
                        f"        children: {yaml_scalar(hostlist_of(sw.children, hostlists))}"
                    )
                if sw.nodes:
                    lines.append(f"        nodes: {yaml_scalar(hostlist_of(sw.nodes, hostlists))}")
        elif isinstance(spec, BlockSpec):
            lines.append("  block:")
            if spec.block_sizes:
                lines.append(f"    block_sizes: [{', '.join(map(str, spec.block_sizes))}]")
            lines.append("    blocks:")
            for b in spec.blocks:
                lines.append(f"      - block: {yaml_scalar(b.name)}")
                if b.nodes:
                    lines.append(f"        nodes: {yaml_scalar(hostlist_of(b.nodes, hostlists))}")
        else:
            lines.append("  flat: true")
    body = "\n".join(lines) + "\n"
    return header(body, "topology.yaml") + body
