"""Render ``topology.conf`` for ``topology/tree`` or ``topology/block`` (topology.md b.1, b.2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slinky_topology.emit import header, hostlist_of
from slinky_topology.errors import ValidationError
from slinky_topology.model import BlockSpec, TopologyDoc, TreeSpec
from slinky_topology.validate.findings import Findings

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["render_topology_conf"]


def render_topology_conf(
    doc: TopologyDoc, hostlists: Mapping[tuple[str, ...], str] | None = None
) -> str:
    """Render the single tree or block topology of ``doc``.

    Tree: one ``SwitchName=`` line per switch, ``Switches=`` or ``Nodes=``. Block: one
    ``BlockName=`` line per base block (no ``Nodes=`` for a placeholder), then ``BlockSizes=``.
    ``hostlists``: lists already compressed, as for :func:`.topology_yaml.render_topology_yaml`.
    """
    if len(doc.topologies) != 1 or doc.topologies[0].kind == "flat":
        out = Findings()
        out.error(
            "topology.conf",
            "holds exactly one tree or block topology",
            "write topology.yaml for several or flat topologies",
        )
        raise ValidationError(out.items)
    spec = doc.topologies[0].spec
    lines: list[str] = []
    if isinstance(spec, TreeSpec):
        for sw in spec.switches:
            line = f"SwitchName={sw.name}"
            if sw.children:
                line += f" Switches={hostlist_of(sw.children, hostlists)}"
            if sw.nodes:
                line += f" Nodes={hostlist_of(sw.nodes, hostlists)}"
            lines.append(line)
    elif isinstance(spec, BlockSpec):
        for b in spec.blocks:
            line = f"BlockName={b.name}"
            if b.nodes:
                line += f" Nodes={hostlist_of(b.nodes, hostlists)}"
            lines.append(line)
        if spec.block_sizes:
            lines.append(f"BlockSizes={','.join(map(str, spec.block_sizes))}")
    body = "\n".join(lines) + "\n"
    return header(body, "topology.conf") + body
