"""Render the per-node annotations document (topology.md b.8).

A JSON object: Kubernetes node name -> value of ``topology.slinky.slurm.net/spec`` (the Slurm
``Topology=`` string; ``""`` removes the node from every topology). Keys sorted; JSON has no
comments, so no header.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ANNOTATION_KEY", "render_annotations"]

ANNOTATION_KEY = "topology.slinky.slurm.net/spec"


def render_annotations(specs: Mapping[str, str]) -> str:
    """``{"node": "topo:unit,...", ...}`` with sorted keys and a trailing newline."""
    return json.dumps(dict(specs), indent=2, sort_keys=True) + "\n"
