"""Property tests: one per invariant of topology.md f.4 (the docstring states it)."""

from __future__ import annotations

import difflib
import json
from collections import Counter, defaultdict
from dataclasses import replace

import hostlist as oracle
import yaml
from hypothesis import assume, given
from hypothesis import strategies as st
from tests.props.topology.topo_strategies import fabrics, permuted

from slinky_topology import hostlist
from slinky_topology.build import Plan, plan
from slinky_topology.emit.annotations import render_annotations
from slinky_topology.emit.topology_conf import render_topology_conf
from slinky_topology.emit.topology_yaml import render_topology_yaml
from slinky_topology.model import (
    NAME_RE,
    BlockSpec,
    Fabric,
    FlatSpec,
    Node,
    TopologyRequest,
    TreeSpec,
    natural_key,
)
from slinky_topology.parse import parse_topology_conf, parse_topology_yaml
from slinky_topology.validate import (
    MAX_BLOCK_LEVEL,
    MAX_TREE_DEPTH,
    block_sizes_findings,
    parse_spec,
    validate_doc,
    validate_specs,
)


def _block(p: Plan) -> BlockSpec:
    spec = p.doc().get("nvl").spec  # type: ignore[union-attr]
    assert isinstance(spec, BlockSpec)
    return spec


def _tree(p: Plan) -> TreeSpec:
    spec = p.doc().get("fabric").spec  # type: ignore[union-attr]
    assert isinstance(spec, TreeSpec)
    return spec


def _scope(fabric: Fabric, topo: str) -> list[Node]:
    req = next(r for r in fabric.topologies if r.name == topo)
    return [
        n
        for n in fabric.nodes
        if n.state != "absent"
        and (not req.partitions or any(x in req.partitions for x in n.partitions))
    ]


def _paths(fabric: Fabric) -> dict[str, tuple[str, ...]]:
    parent = {s.name: s.parent for s in fabric.switches}
    out = {}
    for s in fabric.switches:
        chain = [s.name]
        while parent[chain[-1]] is not None:
            chain.append(parent[chain[-1]])  # type: ignore[arg-type]
        out[s.name] = tuple(reversed(chain))
    return out


@given(st.booleans().flatmap(lambda c: fabrics(with_partitions=True, cliques=c)))
def test_block_partition(fabric: Fabric) -> None:
    """f.4.1: in every block topology each in-scope node is in exactly one block, and the union of
    the blocks is exactly the in-scope nodes. Issue 19 item 3: the partition-scoped topology is
    flat, with a warning naming it, exactly when no in-scope node has an NVLink domain."""
    p = plan(fabric)
    expected = {n.name for n in _scope(fabric, "nvl") if n.domain is not None}
    topo = p.doc().get("nvl")
    assert topo is not None
    degraded = [w for w in p.warnings if w.subject == "topology nvl"]
    assert isinstance(topo.spec, FlatSpec) == (not expected) == bool(degraded)
    if not expected:
        assert "partition gpu" in degraded[0].message
        return
    listed = Counter(n for b in _block(p).blocks for n in b.nodes)
    assert set(listed) == expected
    assert all(c == 1 for c in listed.values())


@given(st.booleans().flatmap(lambda c: fabrics(cliques=c)))
def test_domain_purity(fabric: Fabric) -> None:
    """f.4.2: no base block mixes nodes of two NVLink domains (nor two partitions when blocks are
    per partition), and a domain's blocks are consecutive."""
    spec = _block(plan(fabric))
    per_clique = fabric.topologies[1].source == "subdomain"
    unit_of = {n.name: (n.domain, n.subdomain if per_clique else None) for n in fabric.nodes}
    where: dict[str, list[int]] = defaultdict(list)
    for index, block in enumerate(spec.blocks):
        units = {unit_of[n] for n in block.nodes}
        assert len(units) <= 1
        domain = block.name.split(".")[0]
        for d, _ in units:
            assert d == domain
        if any(block.name == d.name or block.name.startswith(d.name + ".") for d in fabric.domains):
            where[domain].append(index)
    for indices in where.values():
        assert indices == list(range(indices[0], indices[0] + len(indices)))


@given(st.booleans().flatmap(lambda c: fabrics(cliques=c)))
def test_block_sizes_valid(fabric: Fabric) -> None:
    """f.4.3: BlockSizes strictly increase, each is base x 2^k with k <= 15, base > 0, and no
    block holds more nodes than the base size."""
    spec = _block(plan(fabric))
    base = spec.block_sizes[0]
    assert base > 0
    for prev, cur in zip(spec.block_sizes, spec.block_sizes[1:], strict=False):
        assert cur > prev
    for size in spec.block_sizes:
        ratio, rem = divmod(size, base)
        assert rem == 0
        assert ratio & (ratio - 1) == 0
        assert ratio.bit_length() - 1 <= MAX_BLOCK_LEVEL
    assert all(len(b.nodes) <= base for b in spec.blocks)


def _slurm_accepts(sizes: list[int]) -> bool:
    """Slurm's BlockSizes rules, written out: a base of 1-65535 nodes (16 bits), then sizes
    base * 2^k (1 <= k <= 15) in strictly increasing order."""
    base = sizes[0]
    if not 1 <= base <= 65535:
        return False
    levels = []
    for size in sizes:
        if size % base:
            return False
        ratio = size // base
        k = ratio.bit_length() - 1
        if ratio != 1 << k or k > 15:
            return False
        levels.append(k)
    return levels == sorted(set(levels))


@given(
    st.one_of(
        st.lists(st.integers(-2, 140_000), min_size=1, max_size=5),
        st.tuples(st.integers(60_000, 70_000), st.integers(0, 3)).map(
            lambda bk: [bk[0] << k for k in range(bk[1] + 1)]
        ),
    )
)
def test_block_sizes_rules_are_slurms(sizes: list[int]) -> None:
    """Issue 30 item 7: a BlockSizes list is refused (with a fix) exactly when Slurm would refuse
    it or crash on it: base outside 1-65535, a size not base * 2^k with k <= 15, or not strictly
    increasing."""
    findings = block_sizes_findings(tuple(sizes), "topology t")
    assert all(f.severity == "error" and f.fix for f in findings)
    assert (not findings) == _slurm_accepts(sizes), [f.message for f in findings]


@given(fabrics())
def test_alignment(fabric: Fabric) -> None:
    """f.4.4: the domains under any one switch fill one aligned window of base blocks (start index
    divisible by the window size, a power of two), and no other domain sits inside it."""
    spec = _block(plan(fabric))
    paths = _paths(fabric)
    index = {b.name: i for i, b in enumerate(spec.blocks)}
    under: dict[str, set[str]] = defaultdict(set)
    for d in fabric.domains:
        leaves = {n.leaf for n in fabric.nodes if n.domain == d.name and n.leaf}
        home = d.switch or (leaves.pop() if len(leaves) == 1 else None)
        if home is None:
            continue
        for sw in paths[home]:
            under[sw].add(d.name)
    for sw, domains in under.items():
        idx = sorted(index[d] for d in domains)
        lo, hi = idx[0], idx[-1]
        window = 1
        while window < hi - lo + 1:
            window *= 2
        assert lo // window == hi // window, (sw, idx)
        inside = {b.name for b in spec.blocks[lo : hi + 1] if b.name in index and b.nodes}
        others = {n.domain for n in fabric.nodes if n.domain in inside} - domains
        assert not others, (sw, others)


@given(fabrics(), st.data())
def test_position_stability(fabric: Fabric, data: st.DataObject) -> None:
    """f.4.5: adding or removing a node inside one domain changes no other domain's block index or
    name."""
    candidates = sorted({n.domain for n in fabric.nodes if n.domain and n.state != "absent"})
    assume(candidates)
    target = data.draw(st.sampled_from(candidates))
    members = [n for n in fabric.nodes if n.domain == target]
    slots = next(d.slots for d in fabric.domains if d.name == target)
    if len(members) > 1 and data.draw(st.booleans()):
        gone = data.draw(st.sampled_from(members))
        changed = replace(fabric, nodes=tuple(n for n in fabric.nodes if n != gone))
    else:
        assume(slots is not None and len(members) < slots)
        extra = Node("zz-new-node", leaf=members[0].leaf, domain=target)
        changed = replace(fabric, nodes=(*fabric.nodes, extra))
    before = {b.name: i for i, b in enumerate(_block(plan(fabric)).blocks)}
    after = {b.name: i for i, b in enumerate(_block(plan(changed)).blocks)}
    for d in fabric.domains:
        if d.name != target:
            assert after[d.name] == before[d.name]


@given(fabrics())
def test_tree_invariants(fabric: Fabric) -> None:
    """f.4.6: one parent per switch, no cycles, every node under exactly one leaf, no switch with
    both child switches and nodes, children all defined, depth <= 20, names unique and <= 64."""
    spec = _tree(plan(fabric))
    names = [s.name for s in spec.switches]
    assert len(names) == len(set(names))
    assert all(len(n) <= 64 for n in names)
    parents: Counter[str] = Counter(c for s in spec.switches for c in s.children)
    assert all(v == 1 for v in parents.values())
    assert set(parents) <= set(names)
    assert all(not (s.children and s.nodes) for s in spec.switches)
    leaves = Counter(n for s in spec.switches for n in s.nodes)
    assert all(v == 1 for v in leaves.values())
    assert set(leaves) == {n.name for n in fabric.nodes if n.state != "absent" and n.leaf}
    children = {s.name: s.children for s in spec.switches}
    roots = [n for n in names if n not in parents]
    depth = {r: 1 for r in roots}
    stack = list(roots)
    while stack:
        cur = stack.pop()
        for c in children[cur]:
            assert c not in depth  # no cycle, single parent
            depth[c] = depth[cur] + 1
            stack.append(c)
    assert set(depth) == set(names)
    assert max(depth.values()) <= MAX_TREE_DEPTH
    assert not [f for f in validate_doc(plan(fabric).doc()) if f.severity == "error"]


@given(fabrics(with_partitions=True, leafless=True))
def test_every_present_node_is_under_one_switch_of_every_tree(fabric: Fabric) -> None:
    """Issue 30 item 6: in every tree topology (the whole fabric's and a partition's) every present
    node in its scope is listed by exactly one switch, so Slurm can schedule it; a node without a
    leaf switch by the catch-all switch, a root that no fabric switch is named like, listing only
    such nodes; their annotation unit is that switch, which the dynamic skeleton keeps."""
    reqs = (
        TopologyRequest("fabric", "tree", cluster_default=True),
        TopologyRequest("part", "tree", partitions=("gpu",)),
    )
    fabric = replace(fabric, topologies=reqs)
    p = plan(fabric)
    real = {s.name for s in fabric.switches}
    units = {t.topology.name: t.units for t in p.topologies}
    for name in ("fabric", "part"):
        scope = _scope(fabric, name)
        topo = p.doc().get(name)
        assert topo is not None
        if not scope and name == "part":
            assert isinstance(topo.spec, FlatSpec), "a partition tree with no node is flat"
            continue
        spec = topo.spec
        assert isinstance(spec, TreeSpec)
        listed = Counter(n for s in spec.switches for n in s.nodes)
        assert listed == Counter(n.name for n in scope)
        loose = {n.name for n in scope if n.leaf is None}
        extra = [s for s in spec.switches if s.name not in real]
        if not loose:
            assert not extra
            continue
        (catch_all,) = extra
        assert set(catch_all.nodes) == loose and not catch_all.children
        assert all(catch_all.name not in s.children for s in spec.switches)
        assert {units[name][n] for n in loose} == {catch_all.name}
        skeleton = p.doc("dynamic").get(name)
        assert skeleton is not None and isinstance(skeleton.spec, TreeSpec)
        assert catch_all.name in {s.name for s in skeleton.spec.switches}
    assert not [f for f in validate_specs(p.doc("dynamic"), p.specs()) if f.severity == "error"]


@given(fabrics())
def test_ancestors_preserved(fabric: Fabric) -> None:
    """f.4.7: for every node and tier k the tier-k ancestor in the output equals the input's (so
    two nodes share a tier-k switch in the output iff they do in the input)."""
    text = render_topology_yaml(plan(fabric).doc())
    spec = parse_topology_yaml(text).get("fabric").spec  # type: ignore[union-attr]
    assert isinstance(spec, TreeSpec)
    parent = {c: s.name for s in spec.switches for c in s.children}
    leaf = {n: s.name for s in spec.switches for n in s.nodes}
    inputs = _paths(fabric)
    for node in fabric.nodes:
        if node.state == "absent" or node.leaf is None:
            continue
        chain = [leaf[node.name]]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]])
        assert tuple(reversed(chain)) == inputs[node.leaf]


@given(
    st.booleans().flatmap(lambda c: fabrics(with_partitions=True, cliques=c)),
    st.sampled_from(["static", "dynamic"]),
)
def test_round_trip(fabric: Fabric, shape: str) -> None:
    """f.4.8: parse(generate(m)) == m for topology.yaml, tree topology.conf and block
    topology.conf, and generate(parse(t)) == t (canonical text is a fixed point)."""
    p = plan(fabric)
    doc = p.doc(shape)  # type: ignore[arg-type]
    text = render_topology_yaml(doc)
    assert parse_topology_yaml(text) == doc
    assert render_topology_yaml(parse_topology_yaml(text)) == text
    for kind in ("tree", "block"):
        conf_doc = p.conf_doc(kind, shape)  # type: ignore[arg-type]
        conf = render_topology_conf(conf_doc)
        assert parse_topology_conf(conf) == conf_doc
        assert render_topology_conf(parse_topology_conf(conf)) == conf


@given(fabrics(with_partitions=True), st.data())
def test_input_order_independence(fabric: Fabric, data: st.DataObject) -> None:
    """f.4.9: permuting nodes, switches and domains gives byte-identical outputs."""
    other = permuted(fabric, data)
    a, b = plan(fabric), plan(other)
    assert render_topology_yaml(a.doc()) == render_topology_yaml(b.doc())
    assert render_topology_conf(a.conf_doc("block")) == render_topology_conf(b.conf_doc("block"))
    assert render_topology_conf(a.conf_doc("tree")) == render_topology_conf(b.conf_doc("tree"))
    assert render_annotations(a.specs()) == render_annotations(b.specs())


_host_names = st.one_of(
    st.builds(
        lambda p, n, w, s: f"{p}{n:0{w}d}{s}",
        st.sampled_from(["n", "gpu", "a1b", "rack1-n", "x.y"]),
        st.integers(0, 1200),
        st.integers(1, 5),
        st.sampled_from(["", "", "", "a", "-ib"]),
    ),
    st.from_regex(r"[a-z][a-z0-9.-]{0,8}", fullmatch=True),
    st.builds(lambda n: f"big{n}", st.integers(10**17, 10**22)),
)


@given(st.lists(_host_names, max_size=60))
def test_hostlist_round_trip_and_oracle(hosts: list[str]) -> None:
    """f.4.10: expand(compress(S)) is S as a set, once each; zero-pad widths are kept (n9 never
    merges with n010); python-hostlist expands our output to the same set and its own compressed
    form expands (by us) to the same set; every emitted hostlist parses."""
    text = hostlist.compress(hosts)
    back = hostlist.expand(text)
    assert len(back) == len(set(back))
    assert set(back) == set(hosts)
    assert set(oracle.expand_hostlist(text)) == set(hosts) if hosts else text == ""
    if hosts:
        assert set(hostlist.expand(oracle.collect_hostlist(hosts))) == set(hosts)
    assert hostlist.compress(back) == text


@given(st.lists(_host_names, max_size=60))
def test_sort_hosts_is_the_order_of_the_compressed_hostlist(hosts: list[str]) -> None:
    """f.4.10: sort_hosts(S) is exactly expand(compress(S)): the canonical order, which the
    generator builds by expanding the ranges directly instead of re-parsing the text."""
    assert hostlist.sort_hosts(hosts) == tuple(hostlist.expand(hostlist.compress(hosts)))


@given(st.dictionaries(st.text(max_size=12), st.text(max_size=12), max_size=20))
def test_annotations_json_is_json_dumps(specs: dict[str, str]) -> None:
    """b.8: the annotations document is byte for byte json.dumps(specs, indent=2,
    sort_keys=True) plus a newline, for any node names and values (escapes, non-ASCII)."""
    assert render_annotations(specs) == json.dumps(specs, indent=2, sort_keys=True) + "\n"


@given(st.lists(st.tuples(st.integers(0, 200), st.integers(1, 4)), min_size=1, max_size=30))
def test_hostlist_padding_never_merges(nums: list[tuple[int, int]]) -> None:
    """f.4.10: each bracket range printed by compress expands only to input hosts (widths that
    differ in padding are never joined into one range)."""
    hosts = {f"n{n:0{w}d}" for n, w in nums}
    for name in hostlist.expand(hostlist.compress(hosts)):
        assert name in hosts


@given(fabrics(with_partitions=True), st.sampled_from(["static", "dynamic"]))
def test_safe_names(fabric: Fabric, shape: str) -> None:
    """f.4.11: every generated name matches ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$, topology names are
    unique, exactly one cluster_default is true, and 'topology' is the first key of each item."""
    doc = plan(fabric).doc(shape)  # type: ignore[arg-type]
    names = [t.name for t in doc.topologies]
    assert len(names) == len(set(names))
    for topo in doc.topologies:
        assert NAME_RE.fullmatch(topo.name)
        if isinstance(topo.spec, TreeSpec):
            assert all(NAME_RE.fullmatch(s.name) for s in topo.spec.switches)
        if isinstance(topo.spec, BlockSpec):
            assert all(NAME_RE.fullmatch(b.name) for b in topo.spec.blocks)
    loaded = yaml.safe_load(render_topology_yaml(doc))
    assert sum(1 for item in loaded if item["cluster_default"] is True) == 1
    assert all(next(iter(item)) == "topology" for item in loaded)


@given(st.booleans().flatmap(lambda c: fabrics(with_partitions=True, cliques=c)))
def test_annotations_name_existing_units(fabric: Fabric) -> None:
    """f.4.12: every per-node Topology= string parses, names only topologies and units present in
    the skeleton file, and agrees with the node's place in the static file; absent nodes get no
    entry."""
    p = plan(fabric)
    specs = p.specs()
    skeleton = p.doc("dynamic")
    assert validate_specs(skeleton, specs) == []
    assert validate_specs(parse_topology_yaml(render_topology_yaml(skeleton)), specs) == []
    static = p.doc()
    for node in fabric.nodes:
        if node.state == "absent":
            assert node.kube_name not in specs
            continue
        units = dict(parse_spec(specs[node.kube_name]))
        for topo in static.topologies:
            if isinstance(topo.spec, BlockSpec):
                holder = [b.name for b in topo.spec.blocks if node.name in b.nodes]
                assert units.get(topo.name) == (tuple(holder) or None)
            elif isinstance(topo.spec, TreeSpec):
                leaf = [s.name for s in topo.spec.switches if node.name in s.nodes]
                if leaf:
                    assert units[topo.name][-1] == leaf[0]
                else:
                    assert topo.name not in units
            else:
                assert topo.name not in units
    conf_specs = p.specs("block")
    assert validate_specs(p.conf_doc("block", "dynamic"), conf_specs) == []


@given(fabrics(), st.data())
def test_one_node_change_is_local(fabric: Fabric, data: st.DataObject) -> None:
    """f.4.15: removing one node changes O(1) lines of each file (here: at most 4 changed lines
    besides the hash line) and only that node's annotation.

    Precondition: the node's domain stays placed (declared switch, or another node with a leaf);
    removing the only clue to where a rack is moves that rack, which is not a local change.
    """

    def placed_without(node: Node) -> bool:
        if node.domain is None:
            return True
        declared = next(d for d in fabric.domains if d.name == node.domain)
        others = [n for n in fabric.nodes if n.domain == node.domain and n != node and n.leaf]
        return declared.switch is not None or bool(others)

    present = [n for n in fabric.nodes if n.state != "absent" and placed_without(n)]
    assume(present)
    gone = data.draw(st.sampled_from(present))
    changed = replace(fabric, nodes=tuple(n for n in fabric.nodes if n != gone))
    a, b = plan(fabric), plan(changed)
    pairs = [
        (render_topology_yaml(a.doc()), render_topology_yaml(b.doc())),
        (render_topology_conf(a.conf_doc("block")), render_topology_conf(b.conf_doc("block"))),
        (render_topology_conf(a.conf_doc("tree")), render_topology_conf(b.conf_doc("tree"))),
    ]
    for old_text, new_text in pairs:
        old, new = old_text.splitlines(), new_text.splitlines()
        diff = [
            line
            for line in difflib.unified_diff(old, new, lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---", "+# content", "-# content"))
        ]
        assert len(diff) <= 4, diff
    sa, sb = a.specs(), b.specs()
    assert set(sa) - set(sb) == {gone.kube_name}
    assert all(sa[k] == sb[k] for k in sb)
    assert json.loads(render_annotations(sb)) == sb


def test_natural_key_orders_numbers() -> None:
    """Helper sanity: natural order puts leaf2 before leaf10 (used by all layouts)."""
    assert sorted(["leaf10", "leaf2", "leaf1"], key=natural_key) == ["leaf1", "leaf2", "leaf10"]


@given(fabrics(with_partitions=True))
def test_partition_topologies(fabric: Fabric) -> None:
    """f.4.13: a partition tree is exactly the ancestor closure of its nodes' leaves, and the
    partition's blocks contain only its nodes."""
    reqs = (
        TopologyRequest("part-tree", "tree", cluster_default=True, partitions=("gpu",)),
        TopologyRequest("part-block", "block", partitions=("gpu",)),
    )
    members = [n for n in fabric.nodes if n.state != "absent" and "gpu" in n.partitions]
    assume(members)
    doc = plan(replace(fabric, topologies=reqs)).doc()
    tree = doc.get("part-tree").spec  # type: ignore[union-attr]
    block = doc.get("part-block").spec  # type: ignore[union-attr]
    assert isinstance(tree, TreeSpec)
    assert isinstance(block, BlockSpec)
    paths = _paths(fabric)
    closure = {sw for n in members if n.leaf for sw in paths[n.leaf]}
    assert {s.name for s in tree.switches} == closure
    listed = {n for b in block.blocks for n in b.nodes}
    assert listed == {n.name for n in members if n.domain}


@given(fabrics(), st.integers(1, 8))
def test_oversized_domains_are_split(fabric: Fabric, base: int) -> None:
    """Issue 19 item 1: with a base block size under a domain's slots, the domain becomes blocks
    <domain>-1..<domain>-k (k = ceil(slots / base)) of at most ``base`` nodes each, consecutive and
    starting at an index divisible by the next power of two >= k; every present node with a
    domain is in exactly one block, and no block mixes two domains."""
    reqs = (TopologyRequest("nvl", "block", cluster_default=True, block_sizes=(base, 2 * base)),)
    spec = _block(plan(replace(fabric, topologies=reqs)))
    assert all(len(b.nodes) <= base for b in spec.blocks)
    domain_of = {n.name: n.domain for n in fabric.nodes}
    listed = Counter(n for b in spec.blocks for n in b.nodes)
    assert set(listed) == {n.name for n in fabric.nodes if n.state != "absent" and n.domain}
    assert all(c == 1 for c in listed.values())
    assert all(len({domain_of[n] for n in b.nodes}) <= 1 for b in spec.blocks)
    index = {b.name: i for i, b in enumerate(spec.blocks)}
    for d in fabric.domains:
        slots = max(d.slots or 0, sum(1 for n in fabric.nodes if n.domain == d.name), 1)
        if slots <= base:
            assert d.name in index
            continue
        pieces = -(-slots // base)
        where = [index[f"{d.name}-{i}"] for i in range(1, pieces + 1)]
        assert where == list(range(where[0], where[0] + pieces))
        window = 1 << (pieces - 1).bit_length()
        assert where[0] % window == 0
        for i in range(1, pieces + 1):
            block = spec.blocks[index[f"{d.name}-{i}"]]
            assert {domain_of[n] for n in block.nodes} <= {d.name}
