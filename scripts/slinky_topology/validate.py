"""Validation rules: slurmctld's load-time checks plus our own stricter ones.

Sources of the rules: topology.md sections b.1, b.2, b.2a, b.2b, b.4, b.5, b.9 and f.3.
Severity follows slurmctld where it has a rule (``error`` = slurmctld fatal, ``warning`` = Slurm
accepts it with a log line); rules Slurm does not check but we require are ``error`` and say
"(ours)" in the message.

Functions return lists of :class:`~slinky_topology.errors.Finding`; :func:`raise_on_errors`
turns errors into a :class:`~slinky_topology.errors.ValidationError`.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from typing import TYPE_CHECKING

from slinky_topology.errors import Finding, ValidationError
from slinky_topology.model import (
    BlockSpec,
    Fabric,
    TopologyDoc,
    TreeSpec,
    is_safe_name,
    natural_key,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "CONFIGMAP_LIMIT",
    "MAX_BLOCK_LEVEL",
    "MAX_NAME_LEN",
    "MAX_TREE_DEPTH",
    "block_sizes_findings",
    "parse_spec",
    "raise_on_errors",
    "size_findings",
    "validate_doc",
    "validate_fabric",
    "validate_specs",
    "version_findings",
]

MAX_NAME_LEN = 64
MAX_TREE_DEPTH = 20
MAX_BLOCK_LEVEL = 15
#: Above this many tree switches slurmctld load time grows noticeably (topology.md f.5).
MAX_FAST_SWITCHES = 1000
#: Kubernetes ConfigMap data limit (b.9).
CONFIGMAP_LIMIT = 1024 * 1024
_SAFE_FIX = "use letters, digits, '.', '_' and '-' only, starting with a letter or digit, max 64"


def raise_on_errors(findings: Iterable[Finding], what: str = "") -> None:
    """Raise :class:`ValidationError` listing the errors in ``findings``, if any."""
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise ValidationError(errors, what=what)


def _loc(location: str | None, line: int | None) -> str | None:
    if location is None:
        return f"line {line}" if line is not None else None
    return f"{location}:{line}" if line is not None else location


def _name_findings(kind: str, name: str, where: str | None) -> list[Finding]:
    if len(name) > MAX_NAME_LEN:
        return [
            Finding(
                "error",
                f"{kind} {name[:20]}...",
                f"name is {len(name)} characters; Slurm allows at most {MAX_NAME_LEN}",
                fix="shorten the name",
                location=where,
            )
        ]
    if not is_safe_name(name):
        return [
            Finding(
                "error",
                f"{kind} {name!r}",
                "name is not hostlist-safe (ours: no ', : = # [ ]' or whitespace)",
                fix=_SAFE_FIX,
                location=where,
            )
        ]
    return []


def block_sizes_findings(
    sizes: tuple[int, ...], subject: str, where: str | None = None
) -> list[Finding]:
    """BlockSizes rules (b.2): positive, multiples of the base, power-of-two ratios, level <= 15."""
    out: list[Finding] = []

    def bad(msg: str) -> None:
        out.append(
            Finding(
                "error",
                subject,
                f"invalid BlockSizes {','.join(map(str, sizes))}: {msg}",
                fix="use base, base*2, base*4, ... (for example 18,36,72)",
                location=where,
            )
        )

    if not sizes:
        return out
    base = sizes[0]
    if any(s <= 0 for s in sizes):
        bad("values must be positive")
        return out
    prev = 0
    for s in sizes:
        ratio, rem = divmod(s, base)
        if rem:
            bad(f"{s} is not a multiple of the base {base}")
        elif ratio & (ratio - 1):
            bad(f"{s} / {base} is not a power of two")
        elif ratio.bit_length() - 1 > MAX_BLOCK_LEVEL:
            bad(f"{s} is more than 2^{MAX_BLOCK_LEVEL} base blocks")
        if s <= prev:
            bad("values must be strictly increasing")
        prev = s
    return out


# ------------------------------------------------------------------------------- fabric


def validate_fabric(fabric: Fabric) -> list[Finding]:
    """Check a fabric model before layout: names, references, tree shape, topology requests."""
    out: list[Finding] = []
    err = out.append

    for kind, names in (
        ("switch", [s.name for s in fabric.switches]),
        ("domain", [d.name for d in fabric.domains]),
        ("node", [n.name for n in fabric.nodes]),
    ):
        bad = [n for n in set(names) if len(n) > MAX_NAME_LEN or not is_safe_name(n)]
        for name in sorted(bad, key=natural_key):
            out.extend(_name_findings(kind, name, None))
        counts = Counter(names)
        for name, count in sorted((k, v) for k, v in counts.items() if v > 1):
            if count > 1:
                err(
                    Finding(
                        "error",
                        f"{kind} {name}",
                        f"defined {count} times",
                        fix=f"keep one definition of {kind} {name}",
                    )
                )
    kube = Counter(n.kube_name for n in fabric.nodes if n.state != "absent")
    for name, count in sorted(kube.items()):
        if count > 1:
            err(
                Finding(
                    "error",
                    f"Kubernetes node {name}",
                    f"{count} Slurm nodes map to it",
                    fix="give each Slurm node its own Kubernetes node name",
                )
            )

    parent = {s.name: s.parent for s in fabric.switches}
    has_kids: set[str] = set()
    for s in fabric.switches:
        if s.parent is None:
            continue
        if s.parent == s.name:
            err(
                Finding(
                    "error",
                    f"switch {s.name}",
                    "is its own parent",
                    fix="point parent at the next switch toward the core",
                )
            )
        elif s.parent not in parent:
            err(
                Finding(
                    "error",
                    f"switch {s.name}",
                    f"parent {s.parent} is not defined",
                    fix=f"add switch {s.parent} or fix the parent name",
                )
            )
        else:
            has_kids.add(s.parent)
    depth_bad: set[str] = set()
    for s in fabric.switches:
        seen = {s.name}
        cur = parent.get(s.name)
        depth = 1
        while cur is not None and cur in parent and cur not in seen:
            seen.add(cur)
            cur = parent[cur]
            depth += 1
        if cur is not None and cur in seen and cur not in depth_bad:
            depth_bad.update(seen)
            err(
                Finding(
                    "error",
                    f"switch {s.name}",
                    "its parent chain loops back on itself",
                    fix="switches must form a tree: remove one parent link of the cycle",
                )
            )
        elif depth > MAX_TREE_DEPTH and s.name not in depth_bad:
            depth_bad.add(s.name)
            err(
                Finding(
                    "error",
                    f"switch {s.name}",
                    f"is {depth} levels deep; Slurm stops at {MAX_TREE_DEPTH}",
                    fix="flatten the tree (topologies[].maxTiers)",
                )
            )

    domains = {d.name for d in fabric.domains}
    for d in fabric.domains:
        if d.switch is not None and d.switch not in parent:
            err(
                Finding(
                    "error",
                    f"domain {d.name}",
                    f"switch {d.switch} is not defined",
                    fix=f"add switch {d.switch} or fix the domain's switch",
                )
            )
        if d.slots is not None and d.slots < 1:
            err(
                Finding(
                    "error",
                    f"domain {d.name}",
                    "slots must be at least 1",
                    fix="set slots to the expected node count",
                )
            )
    per_domain: Counter[str] = Counter(n.domain for n in fabric.nodes if n.domain is not None)
    for d in fabric.domains:
        if d.slots is not None and per_domain[d.name] > d.slots:
            err(
                Finding(
                    "error",
                    f"domain {d.name}",
                    f"has {per_domain[d.name]} nodes but only {d.slots} slots",
                    fix="raise slots or move nodes to another domain",
                )
            )
    for name in sorted({n.domain for n in fabric.nodes if n.domain} - domains, key=natural_key):
        out.extend(_name_findings("domain", name, None))
    for n in fabric.nodes:
        if n.leaf is None:
            continue
        if n.leaf not in parent:
            err(
                Finding(
                    "error",
                    f"node {n.name}",
                    f"leaf switch {n.leaf} is not defined",
                    fix=f"add switch {n.leaf} or fix the node's leaf",
                )
            )
        elif n.leaf in has_kids:
            err(
                Finding(
                    "error",
                    f"node {n.name}",
                    f"hangs from switch {n.leaf}, which also has child switches",
                    fix="attach nodes to leaf switches only",
                )
            )

    reqs = fabric.topologies
    tnames = [r.name for r in reqs]
    for name in sorted(set(tnames), key=natural_key):
        out.extend(_name_findings("topology", name, None))
    for name, count in sorted(Counter(tnames).items()):
        if count > 1:
            err(
                Finding(
                    "error",
                    f"topology {name}",
                    f"requested {count} times",
                    fix="give each topology a unique name",
                )
            )
    if reqs:
        defaults = [r.name for r in reqs if r.cluster_default]
        if len(defaults) != 1:
            err(
                Finding(
                    "error",
                    "topologies",
                    f"{len(defaults)} have clusterDefault: true (ours: exactly one)",
                    fix="set clusterDefault: true on exactly one topology",
                )
            )
    has_leaf = any(n.leaf for n in fabric.nodes)
    for r in reqs:
        subject = f"topology {r.name}"
        if r.block_sizes is not None:
            out.extend(block_sizes_findings(r.block_sizes, subject))
            if not r.block_sizes:
                err(Finding("error", subject, "blockSizes is empty", fix="use auto or a list"))
        if r.max_tiers is not None and r.max_tiers < 1:
            err(Finding("error", subject, "maxTiers must be at least 1", fix="set maxTiers >= 1"))
        if r.kind == "tree" and not fabric.switches:
            err(
                Finding(
                    "error",
                    subject,
                    "is a tree but the fabric has no switches",
                    fix="describe switches or use a block/flat topology",
                )
            )
        if r.kind == "block" and not (fabric.domains or any(n.domain for n in fabric.nodes)):
            err(
                Finding(
                    "error",
                    subject,
                    "is a block topology but no NVLink domain is known",
                    fix="give nodes an nvlinkDomain or use a tree/flat topology",
                )
            )
    present = [n for n in fabric.nodes if n.state != "absent"]
    requested = {r.kind for r in reqs} if reqs else {"tree", "block"}
    for kind, attr, what in (("tree", "leaf", "leaf switch"), ("block", "domain", "NVLink domain")):
        missing = sorted((n.name for n in present if getattr(n, attr) is None), key=natural_key)
        if kind in requested and missing and len(missing) < len(present):
            sample = ", ".join(missing[:5])
            out.append(
                Finding(
                    "warning",
                    f"fabric {fabric.name}",
                    f"{len(missing)} nodes have no {what} and stay out of {kind} "
                    f"topologies ({sample})",
                    fix=f"give them a {what} if they should be placed",
                )
            )
    if fabric.switches and not has_leaf and fabric.nodes:
        out.append(
            Finding(
                "warning",
                f"fabric {fabric.name}",
                "no node has a leaf switch",
                fix="set leaf on nodes",
            )
        )
    return out


# ------------------------------------------------------------------------ topology file


def validate_doc(
    doc: TopologyDoc,
    *,
    conf: bool = False,
    location: str | None = None,
    known_nodes: Iterable[str] | None = None,
) -> list[Finding]:
    """Check a topology.yaml (``conf=False``) or topology.conf content against b.1-b.4 and f.3."""
    out: list[Finding] = []
    if not doc.topologies:
        out.append(
            Finding(
                "error",
                "topology file",
                "defines no topology",
                fix="add a tree, block or flat topology",
                location=location,
            )
        )
        return out
    names = [t.name for t in doc.topologies]
    for topo in doc.topologies:
        out.extend(_name_findings("topology", topo.name, _loc(location, topo.line)))
    for name, count in sorted(Counter(names).items()):
        if count > 1:
            out.append(
                Finding(
                    "error",
                    f"topology {name}",
                    f"defined {count} times",
                    fix="give each topology a unique name",
                    location=location,
                )
            )
    if not conf:
        defaults = [t for t in doc.topologies if t.cluster_default]
        if len(defaults) != 1:
            out.append(
                Finding(
                    "error",
                    "topology file",
                    f"{len(defaults)} topologies have cluster_default: true (ours: exactly one)",
                    fix="set cluster_default: true on exactly one topology",
                    location=location,
                )
            )
    for topo in doc.topologies:
        if isinstance(topo.spec, TreeSpec):
            out.extend(_tree_findings(topo.name, topo.spec, conf, location))
        elif isinstance(topo.spec, BlockSpec):
            out.extend(_block_findings(topo.name, topo.spec, location))
    if known_nodes is not None:
        out.extend(_coverage_findings(doc, set(known_nodes), location))
    return out


def _tree_findings(topo: str, spec: TreeSpec, conf: bool, location: str | None) -> list[Finding]:
    out: list[Finding] = []
    subj = f"topology {topo}"
    if not spec.switches:
        out.append(
            Finding(
                "error",
                subj,
                "has no switches (slurmctld fatal)",
                fix="define at least one switch",
                location=location,
            )
        )
        return out
    defined: dict[str, int | None] = {}
    for sw in spec.switches:
        where = _loc(location, sw.line)
        out.extend(_name_findings("switch", sw.name, where))
        if sw.name in defined:
            out.append(
                Finding(
                    "error",
                    f"switch {sw.name}",
                    "has already been defined",
                    fix="merge the two switch lines",
                    location=where,
                )
            )
        defined.setdefault(sw.name, sw.line)
        if sw.children and sw.nodes:
            msg = (
                "has both Switches= and Nodes= (slurmctld parse error)"
                if conf
                else "has both children and nodes (Slurm ignores children; ours: error)"
            )
            out.append(
                Finding(
                    "error",
                    f"switch {sw.name}",
                    msg,
                    fix="put nodes only on leaf switches",
                    location=where,
                )
            )
    parents: dict[str, list[str]] = defaultdict(list)
    for sw in spec.switches:
        for child in sw.children:
            if child == sw.name or child not in defined:
                out.append(
                    Finding(
                        "error",
                        f"switch {sw.name}",
                        f"invalid child {child} (not a defined switch)",
                        fix=f"define switch {child} or remove it from the list",
                        location=_loc(location, sw.line),
                    )
                )
            else:
                parents[child].append(sw.name)
    for child, ps in sorted(parents.items()):
        if len(ps) > 1:
            out.append(
                Finding(
                    "warning",
                    f"switch {child}",
                    f"has {len(ps)} parents ({', '.join(sorted(ps))})",
                    fix="keep one parent so the switches form a tree",
                    location=_loc(location, defined[child]),
                )
            )
    kids = {
        sw.name: [c for c in sw.children if c in defined and c != sw.name] for sw in spec.switches
    }
    # Slurm resolves levels bottom-up; anything unresolved after MAX_TREE_DEPTH passes is fatal.
    level: dict[str, int] = {n: 0 for n, ks in kids.items() if not ks}
    for _ in range(MAX_TREE_DEPTH + 1):
        changed = False
        for name, ks in kids.items():
            if name not in level and ks and all(k in level for k in ks):
                level[name] = 1 + max(level[k] for k in ks)
                changed = True
        if not changed:
            break
    unresolved = sorted(set(kids) - set(level), key=natural_key)
    if unresolved:
        out.append(
            Finding(
                "error",
                f"switch {unresolved[0]}",
                "switch configuration is not a tree (cycle or deeper than "
                f"{MAX_TREE_DEPTH} levels)",
                fix="remove the cycle or flatten the tree",
                location=_loc(location, defined[unresolved[0]]),
            )
        )
    roots = [n for n in defined if n not in parents]
    if len(roots) > 1 and not unresolved:
        out.append(
            Finding(
                "warning",
                f"topology {topo}",
                f"{len(roots)} root switches; jobs cannot span them "
                "(unless TopologyParam=TopoOptional)",
                fix="add one top-level switch above the roots",
                location=location,
            )
        )
    if len(spec.switches) > MAX_FAST_SWITCHES:
        out.append(
            Finding(
                "warning",
                f"topology {topo}",
                f"{len(spec.switches)} switches; slurmctld computes all switch distances "
                "(O(S^3)) at load and for each dynamically created switch",
                fix="keep leaves plus one aggregation tier (topologies[].maxTiers: 2)",
                location=location,
            )
        )
    leaf_of: dict[str, str] = {}
    multi: set[str] = set()
    for sw in spec.switches:
        for node in sw.nodes:
            if node in leaf_of and leaf_of[node] != sw.name:
                multi.add(node)
            leaf_of.setdefault(node, sw.name)
    if multi:
        sample = ", ".join(sorted(multi, key=natural_key)[:5])
        out.append(
            Finding(
                "warning",
                f"topology {topo}",
                f"{len(multi)} nodes are under several leaf switches ({sample})",
                fix="list each node under one leaf switch",
                location=location,
            )
        )
    return out


def _block_findings(topo: str, spec: BlockSpec, location: str | None) -> list[Finding]:
    out: list[Finding] = []
    subj = f"topology {topo}"
    if not spec.blocks:
        out.append(
            Finding(
                "error",
                subj,
                "has no blocks (slurmctld fatal)",
                fix="define at least one block",
                location=location,
            )
        )
        return out
    out.extend(block_sizes_findings(spec.block_sizes, subj, _loc(location, spec.line)))
    seen: dict[str, int | None] = {}
    owner: dict[str, str] = {}
    twice: dict[str, tuple[str, str]] = {}
    for b in spec.blocks:
        where = _loc(location, b.line)
        out.extend(_name_findings("block", b.name, where))
        if b.name in seen:
            out.append(
                Finding(
                    "error",
                    f"block {b.name}",
                    "has already been defined",
                    fix="give each block a unique name",
                    location=where,
                )
            )
        seen.setdefault(b.name, b.line)
        for node in b.nodes:
            if node in owner and node not in twice:
                twice[node] = (owner[node], b.name)
            owner.setdefault(node, b.name)
    for node, (first, second) in sorted(twice.items(), key=lambda kv: natural_key(kv[0])):
        out.append(
            Finding(
                "error",
                f"node {node}",
                f"is in blocks {first} and {second} (ours: one block per node)",
                fix=f"remove {node} from one of the blocks",
                location=_loc(location, seen.get(second)),
            )
        )
    non_empty = [b for b in spec.blocks if b.nodes]
    if not spec.block_sizes and not non_empty:
        out.append(
            Finding(
                "error",
                subj,
                "blocks contain no nodes and BlockSizes is not set",
                fix="set BlockSizes",
                location=location,
            )
        )
    base = (
        spec.block_sizes[0] if spec.block_sizes else (len(non_empty[0].nodes) if non_empty else 0)
    )
    for b in spec.blocks:
        if base and len(b.nodes) > base:
            out.append(
                Finding(
                    "warning",
                    f"block {b.name}",
                    f"has {len(b.nodes)} nodes, more than the base size {base}",
                    fix="split the block or raise the base block size",
                    location=_loc(location, b.line),
                )
            )
    return out


def _coverage_findings(doc: TopologyDoc, known: set[str], location: str | None) -> list[Finding]:
    out: list[Finding] = []
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
            out.append(
                Finding(
                    "warning",
                    f"topology {topo.name}",
                    f"{len(unknown)} unknown node names ({', '.join(unknown[:5])})",
                    fix="remove them or add the nodes",
                    location=location,
                )
            )
        missing = len(known - listed)
        if missing and listed:
            out.append(
                Finding(
                    "warning",
                    f"topology {topo.name}",
                    f"lacks access to {missing} nodes",
                    fix="place every node, or rely on annotations (dynamic shape)",
                    location=location,
                )
            )
    return out


# ------------------------------------------------------------------- annotations (b.5/b.8)


def parse_spec(spec: str) -> list[tuple[str, tuple[str, ...]]]:
    """Split a ``Topology=`` string into ``[(topology, (unit, ...)), ...]``.

    Raise ValueError when an item lacks ``topo:unit``. ``""`` is valid (no topology).
    """
    if spec == "":
        return []
    items: list[tuple[str, tuple[str, ...]]] = []
    for item in spec.split(","):
        parts = item.split(":")
        if len(parts) < 2 or not all(parts):
            raise ValueError(f"item {item!r} is not topology:unit")
        items.append((parts[0], tuple(parts[1:])))
    return items


def validate_specs(
    doc: TopologyDoc,
    specs: Mapping[str, str],
    *,
    location: str | None = None,
) -> list[Finding]:
    """Check per-node ``Topology=`` strings against the (skeleton) file ``doc`` (b.5)."""
    out: list[Finding] = []
    topos = {t.name: t for t in doc.topologies}
    blocks = {
        t.name: {b.name for b in t.spec.blocks}
        for t in doc.topologies
        if isinstance(t.spec, BlockSpec)
    }
    children = {
        t.name: {s.name: set(s.children) for s in t.spec.switches}
        for t in doc.topologies
        if isinstance(t.spec, TreeSpec)
    }
    for node in sorted(specs, key=natural_key):
        spec = specs[node]
        subj = f"node {node}"

        def bad(msg: str, fix: str, subj: str = subj) -> None:
            out.append(Finding("error", subj, msg, fix=fix, location=location))

        try:
            items = parse_spec(spec)
        except ValueError as exc:
            bad(f"annotation {spec!r}: {exc}", "use topology:unit[,topology:unit...]")
            continue
        seen: set[str] = set()
        for topo_name, units in items:
            if topo_name in seen:
                bad(f"names topology {topo_name} twice", "name each topology once")
            seen.add(topo_name)
            topo = topos.get(topo_name)
            if topo is None:
                bad(
                    f"names unknown topology {topo_name}",
                    f"use one of: {', '.join(sorted(topos)) or '(none)'}",
                )
                continue
            for unit in units:
                if not is_safe_name(unit):
                    bad(f"unit {unit!r} is not a safe name", _SAFE_FIX)
            if topo_name in blocks:
                if len(units) != 1 or units[0] not in blocks[topo_name]:
                    bad(
                        f"block {':'.join(units)} does not exist in topology {topo_name}",
                        "blocks are never created dynamically; add it to the file",
                    )
            elif topo_name in children:
                tree = children[topo_name]
                if units[0] not in tree:
                    bad(
                        f"first switch {units[0]} does not exist in topology {topo_name}",
                        "the first switch of a path must be in the file",
                    )
                    continue
                for up, down in itertools.pairwise(units):
                    if up in tree and down in tree and down not in tree[up]:
                        bad(
                            f"switch {down} is not a child of {up} in topology {topo_name}",
                            "give the path root-first as in the file",
                        )
                last = units[-1]
                if tree.get(last):
                    bad(
                        f"switch {last} is not a leaf in topology {topo_name}",
                        "end the path with a leaf switch",
                    )
            else:
                bad(
                    f"topology {topo_name} is flat and has no units",
                    f"drop {topo_name} from the annotation",
                )
    return out


def size_findings(text: str, what: str, location: str | None = None) -> list[Finding]:
    """The 1 MiB ConfigMap limit (b.9)."""
    size = len(text.encode())
    if size <= CONFIGMAP_LIMIT:
        return []
    return [
        Finding(
            "error",
            what,
            f"is {size} bytes, over the {CONFIGMAP_LIMIT}-byte ConfigMap limit",
            fix="use the dynamic shape (skeleton + node annotations)",
            location=location,
        )
    ]


def _version(text: str) -> tuple[int, int] | None:
    major, _, minor = text.partition(".")
    if major.isdigit() and minor.isdigit():
        return int(major), int(minor)
    return None


def version_findings(
    slurm_version: str | None, doc: TopologyDoc, *, yaml_format: bool, dynamic: bool
) -> list[Finding]:
    """Slurm-version gates (b.7): what the target ``slurmVersion`` can load.

    topology.yaml, dynamic topology (node ``Topology=``) and blocks smaller than the base size
    need 25.05; ``BlockSizes`` needs 24.05; ``topology/block`` needs 23.11.
    """
    if slurm_version is None:
        return []
    ver = _version(slurm_version)
    subj = f"slurmVersion {slurm_version}"
    if ver is None:
        return [Finding("error", subj, "is not MAJOR.MINOR", fix='write it like "25.11"')]
    out: list[Finding] = []

    def need(min_ver: tuple[int, int], what: str) -> None:
        if ver < min_ver:
            out.append(
                Finding(
                    "error",
                    subj,
                    f"{what} needs Slurm >= {min_ver[0]}.{min_ver[1]:02d}",
                    fix="target a newer Slurm or change the output",
                )
            )

    if yaml_format:
        need((25, 5), "topology.yaml")
    if dynamic:
        need((25, 5), "dynamic topology (node Topology= / Slinky annotations)")
    for topo in doc.topologies:
        if isinstance(topo.spec, BlockSpec):
            need((23, 11), f"block topology {topo.name}")
            need((24, 5), f"BlockSizes in topology {topo.name}")
            base = topo.spec.block_sizes[0] if topo.spec.block_sizes else 0
            if any(0 < len(b.nodes) < base for b in topo.spec.blocks):
                need((25, 5), f"blocks smaller than the base size in topology {topo.name}")
    return sorted(set(out), key=str)
