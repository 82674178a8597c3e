"""Rules of a fabric model, checked before layout: names, switch tree, NVLink domains, node
attachments and the requested topologies."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from slinky_topology.model import Fabric, TopologyRequest, catch_all_switch, natural_key
from slinky_topology.validate.block import check_block_sizes
from slinky_topology.validate.findings import Findings
from slinky_topology.validate.names import check_name, name_ok
from slinky_topology.validate.tree import MAX_TREE_DEPTH

if TYPE_CHECKING:
    from slinky_topology.errors import Finding

__all__ = ["validate_fabric"]


def validate_fabric(fabric: Fabric) -> list[Finding]:
    """Check a fabric model before layout: names, references, tree shape, topology requests.

    With no topology marked ``clusterDefault`` the first one becomes the default (as Slurm does
    with a topology.yaml that sets none); two or more are an error.
    """
    out = Findings()
    _check_names(out, fabric)
    _check_switches(out, fabric)
    _check_domains(out, fabric)
    _check_attachments(out, fabric)
    _check_requests(out, fabric)
    _check_coverage(out, fabric)
    return out.items


def _check_names(out: Findings, fabric: Fabric) -> None:
    for kind, names in (
        ("switch", [s.name for s in fabric.switches]),
        ("domain", [d.name for d in fabric.domains]),
        ("node", [n.name for n in fabric.nodes]),
    ):
        for name in sorted({n for n in names if not name_ok(n)}, key=natural_key):
            check_name(out, kind, name)
        for name, count in _repeated(names):
            out.error(
                f"{kind} {name}",
                f"defined {count} times",
                f"keep one definition of {kind} {name}",
            )
    kube = [
        n.name if n.k8s_name is None else n.k8s_name for n in fabric.nodes if n.state != "absent"
    ]
    for name, count in _repeated(kube):
        out.error(
            f"Kubernetes node {name}",
            f"{count} Slurm nodes map to it",
            "give each Slurm node its own Kubernetes node name",
        )


def _repeated(names: list[str]) -> list[tuple[str, int]]:
    """(name, count) of the names given more than once, sorted; the usual answer is none, found
    without counting (or sorting) every name."""
    if len(set(names)) == len(names):
        return []
    return sorted((name, count) for name, count in Counter(names).items() if count > 1)


def _check_switches(out: Findings, fabric: Fabric) -> None:
    parent = {s.name: s.parent for s in fabric.switches}
    for s in fabric.switches:
        if s.parent == s.name:
            out.error(
                f"switch {s.name}",
                "is its own parent",
                "point parent at the next switch toward the core",
            )
        elif s.parent is not None and s.parent not in parent:
            out.error(
                f"switch {s.name}",
                f"parent {s.parent} is not defined",
                f"add switch {s.parent} or fix the parent name",
            )
    reported: set[str] = set()
    for s in fabric.switches:
        seen = {s.name}
        cur = parent.get(s.name)
        depth = 1
        while cur is not None and cur in parent and cur not in seen:
            seen.add(cur)
            cur = parent[cur]
            depth += 1
        if cur is not None and cur in seen and cur not in reported:
            reported.update(seen)
            out.error(
                f"switch {s.name}",
                "its parent chain loops back on itself",
                "switches must form a tree: remove one parent link of the cycle",
            )
        elif depth > MAX_TREE_DEPTH and s.name not in reported:
            reported.add(s.name)
            out.error(
                f"switch {s.name}",
                f"is {depth} levels deep; Slurm stops at {MAX_TREE_DEPTH}",
                "flatten the tree (topologies[].maxTiers)",
            )


def _check_domains(out: Findings, fabric: Fabric) -> None:
    switches = {s.name for s in fabric.switches}
    per_domain: Counter[str] = Counter(n.domain for n in fabric.nodes if n.domain is not None)
    for d in fabric.domains:
        if d.switch is not None and d.switch not in switches:
            out.error(
                f"domain {d.name}",
                f"switch {d.switch} is not defined",
                f"add switch {d.switch} or fix the domain's switch",
            )
        if d.slots is not None and d.slots < 1:
            out.error(
                f"domain {d.name}",
                "slots must be at least 1",
                "set slots to the expected node count",
            )
        if d.slots is not None and per_domain[d.name] > d.slots:
            out.error(
                f"domain {d.name}",
                f"has {per_domain[d.name]} nodes but only {d.slots} slots",
                "raise slots or move nodes to another domain",
            )
    declared = {d.name for d in fabric.domains}
    for name in sorted({n.domain for n in fabric.nodes if n.domain} - declared, key=natural_key):
        check_name(out, "domain", name)


def _check_attachments(out: Findings, fabric: Fabric) -> None:
    switches = {s.name for s in fabric.switches}
    has_kids = {s.parent for s in fabric.switches if s.parent in switches and s.parent != s.name}
    leaves = {n.leaf for n in fabric.nodes if n.leaf is not None}
    if leaves <= switches and leaves.isdisjoint(has_kids):
        return  # every leaf named is a defined switch without child switches
    for n in fabric.nodes:
        if n.leaf is None:
            continue
        if n.leaf not in switches:
            out.error(
                f"node {n.name}",
                f"leaf switch {n.leaf} is not defined",
                f"add switch {n.leaf} or fix the node's leaf",
            )
        elif n.leaf in has_kids:
            out.error(
                f"node {n.name}",
                f"hangs from switch {n.leaf}, which also has child switches",
                "attach nodes to leaf switches only",
            )


def _check_requests(out: Findings, fabric: Fabric) -> None:
    reqs = fabric.topologies
    names = [r.name for r in reqs]
    for name in sorted(set(names), key=natural_key):
        check_name(out, "topology", name)
    for name, count in sorted(Counter(names).items()):
        if count > 1:
            out.error(
                f"topology {name}", f"requested {count} times", "give each topology a unique name"
            )
    defaults = sum(1 for r in reqs if r.cluster_default)
    if defaults > 1:
        out.error(
            "topologies",
            f"{defaults} have clusterDefault: true (ours: at most one; none makes the first "
            "the default)",
            "set clusterDefault: true on one topology only",
        )
    has_domains = bool(fabric.domains) or any(n.domain for n in fabric.nodes)
    for r in reqs:
        _check_request(out, r, has_switches=bool(fabric.switches), has_domains=has_domains)


def _check_request(
    out: Findings, r: TopologyRequest, *, has_switches: bool, has_domains: bool
) -> None:
    subject = f"topology {r.name}"
    if r.block_sizes is not None:
        check_block_sizes(out, r.block_sizes, subject)
        if not r.block_sizes:
            out.error(subject, "blockSizes is empty", "use auto or a list")
    if r.max_tiers is not None and r.max_tiers < 1:
        out.error(subject, "maxTiers must be at least 1", "set maxTiers >= 1")
    if r.kind == "tree" and not has_switches:
        out.error(
            subject,
            "is a tree but the fabric has no switches",
            "describe switches or use a block/flat topology",
        )
    if r.kind == "block" and not has_domains:
        out.error(
            subject,
            "is a block topology but no NVLink domain is known",
            "give nodes an nvlinkDomain or use a tree/flat topology",
        )


def _check_coverage(out: Findings, fabric: Fabric) -> None:
    present = [n for n in fabric.nodes if n.state != "absent"]
    requested = {r.kind for r in fabric.topologies} if fabric.topologies else {"tree", "block"}
    catch_all = catch_all_switch({s.name for s in fabric.switches})
    for kind, attr, what in (("tree", "leaf", "leaf switch"), ("block", "domain", "NVLink domain")):
        missing = sorted((n.name for n in present if getattr(n, attr) is None), key=natural_key)
        if kind in requested and missing and len(missing) < len(present):
            where = (
                f"hang from the catch-all switch {catch_all} in tree topologies (a root of its "
                "own: no job spans them and the rest of the fabric)"
                if kind == "tree"
                else "stay out of block topologies"
            )
            out.warning(
                f"fabric {fabric.name}",
                f"{len(missing)} nodes have no {what} and {where} ({', '.join(missing[:5])})",
                f"give them a {what} if they should be placed",
            )
    if fabric.switches and fabric.nodes and not any(n.leaf for n in fabric.nodes):
        out.warning(
            f"fabric {fabric.name}",
            f"no node has a leaf switch; tree topologies hold every node under the catch-all "
            f"switch {catch_all}",
            "set leaf on nodes",
        )
