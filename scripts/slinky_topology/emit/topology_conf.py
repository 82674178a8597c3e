"""Render ``topology.conf`` for ``topology/tree`` or ``topology/block`` (topology.md b.1, b.2)."""

from __future__ import annotations

from slinky_topology import hostlist
from slinky_topology.emit import header
from slinky_topology.errors import ValidationError
from slinky_topology.model import BlockSpec, TopologyDoc, TreeSpec
from slinky_topology.validate.findings import Findings

__all__ = ["render_topology_conf"]


def render_topology_conf(doc: TopologyDoc) -> str:
    """Render the single tree or block topology of ``doc``.

    Tree: one ``SwitchName=`` line per switch, ``Switches=`` or ``Nodes=``. Block: one
    ``BlockName=`` line per base block (no ``Nodes=`` for a placeholder), then ``BlockSizes=``.
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
                line += f" Switches={hostlist.compress(sw.children)}"
            if sw.nodes:
                line += f" Nodes={hostlist.compress(sw.nodes)}"
            lines.append(line)
    elif isinstance(spec, BlockSpec):
        for b in spec.blocks:
            line = f"BlockName={b.name}"
            if b.nodes:
                line += f" Nodes={hostlist.compress(b.nodes)}"
            lines.append(line)
        if spec.block_sizes:
            lines.append(f"BlockSizes={','.join(map(str, spec.block_sizes))}")
    body = "\n".join(lines) + "\n"
    return header(body, "topology.conf") + body
