"""Whole-file rules of topology.yaml / topology.conf (topology.md b.4, f.3): topology names, the
cluster default, and node coverage; each topology's own rules are in :mod:`.tree` and
:mod:`.block`."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from slinky_topology.model import BlockSpec, TopologyDoc, TreeSpec, natural_key
from slinky_topology.validate.block import check_block_spec
from slinky_topology.validate.findings import Findings
from slinky_topology.validate.names import check_name
from slinky_topology.validate.tree import check_tree_spec

if TYPE_CHECKING:
    from collections.abc import Iterable

    from slinky_topology.errors import Finding

__all__ = ["validate_doc"]


def validate_doc(
    doc: TopologyDoc,
    *,
    conf: bool = False,
    location: str | None = None,
    known_nodes: Iterable[str] | None = None,
    require_default: bool = True,
    base_fit: bool = True,
) -> list[Finding]:
    """Check a topology.yaml (``conf=False``) or topology.conf content against b.1-b.4 and f.3.

    ``require_default``: exactly one topology.yaml item has ``cluster_default: true`` (ours, for
    what we generate). ``False`` accepts a file with none (topology.yaml(5) defaults the key to
    false; Slurm then uses the first topology) with a warning saying which one; two or more stay
    an error either way. ``base_fit``: warn when a block topology's base block size is larger
    than every block (see :func:`~.block.check_block_spec`).
    """
    out = Findings(location)
    if not doc.topologies:
        out.error("topology file", "defines no topology", "add a tree, block or flat topology")
        return out.items
    for topo in doc.topologies:
        check_name(out, "topology", topo.name, line=topo.line)
    for name, count in sorted(Counter(t.name for t in doc.topologies).items()):
        if count > 1:
            out.error(
                f"topology {name}", f"defined {count} times", "give each topology a unique name"
            )
    if not conf:
        _check_default(out, doc, require_default=require_default)
    for topo in doc.topologies:
        if isinstance(topo.spec, TreeSpec):
            check_tree_spec(out, topo.name, topo.spec, conf=conf)
        elif isinstance(topo.spec, BlockSpec):
            check_block_spec(out, topo.name, topo.spec, base_fit=base_fit)
    if known_nodes is not None:
        _check_coverage(out, doc, set(known_nodes))
    return out.items


def _check_default(out: Findings, doc: TopologyDoc, *, require_default: bool) -> None:
    defaults = [t for t in doc.topologies if t.cluster_default]
    if len(defaults) == 1:
        return
    if not defaults and not require_default:
        first = doc.topologies[0].name
        out.warning(
            "topology file",
            f"no topology has cluster_default: true; Slurm uses the first one, {first}, for "
            "partitions without Topology=",
            f"set cluster_default: true on the topology meant as the default ({first}?)",
        )
        return
    out.error(
        "topology file",
        f"{len(defaults)} topologies have cluster_default: true (ours: exactly one)",
        "set cluster_default: true on exactly one topology",
    )


def _check_coverage(out: Findings, doc: TopologyDoc, known: set[str]) -> None:
    for topo in doc.topologies:
        listed: set[str] = set()
        if isinstance(topo.spec, TreeSpec):
            for sw in topo.spec.switches:
                listed.update(sw.nodes)
        elif isinstance(topo.spec, BlockSpec):
            for b in topo.spec.blocks:
                listed.update(b.nodes)
        else:
            continue
        unknown = sorted(listed - known, key=natural_key)
        if unknown:
            out.warning(
                f"topology {topo.name}",
                f"{len(unknown)} unknown node names ({', '.join(unknown[:5])})",
                "remove them or add the nodes",
            )
        missing = len(known - listed)
        if missing and listed:
            out.warning(
                f"topology {topo.name}",
                f"lacks access to {missing} nodes",
                "place every node, or rely on annotations (dynamic shape)",
            )
