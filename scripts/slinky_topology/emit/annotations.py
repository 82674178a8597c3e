"""Render the per-node annotations document (topology.md b.8).

A JSON object: Kubernetes node name -> value of ``topology.slinky.slurm.net/spec`` (the Slurm
``Topology=`` string; ``""`` removes the node from every topology). Keys sorted; JSON has no
comments, so no header.
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ANNOTATION_KEY", "render_annotations"]

ANNOTATION_KEY = "topology.slinky.slurm.net/spec"


def render_annotations(specs: Mapping[str, str]) -> str:
    """``{"node": "topo:unit,...", ...}`` with sorted keys and a trailing newline."""
    if not specs:
        return "{}\n"
    # json.dumps(specs, indent=2, sort_keys=True) + "\n", written out: with an indent the json
    # module falls back to its pure-Python encoder, several times slower on 65,536 nodes.
    quote = encode_basestring_ascii
    items = [f"  {quote(node)}: {quote(specs[node])}" for node in sorted(specs)]
    return "{\n" + ",\n".join(items) + "\n}\n"
