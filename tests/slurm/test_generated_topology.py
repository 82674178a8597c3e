"""Generated topology (``slinky-topology``) in real slurmctld 26.05, for every fabric in
``tests/data/fabrics/``.

For each fabric the CLI writes ``topology.yaml`` and, where the fabric has that kind,
``topology.conf`` (tree, block); each must load (:func:`check_load`), and ``scontrol show
topology <name>`` must agree both with the generated file and with what the fabric file says
(switch -> nodes reached, switch levels, NVLink domain -> block members, aggregated blocks never
split a switch's subtree unless they hold it whole). The fabric is read here with PyYAML and
python-hostlist, independently of ``slinky_topology``.

Dynamic shape: the skeleton plus every ``topology.slinky.slurm.net/spec`` annotation, applied
with ``scontrol update NodeName=... Topology=...`` to static CLOUD nodes and with ``scontrol
create`` to dynamic nodes, must read back equal, and the result must be what the static file
lists. The fabrics under ``broken/`` are refused by the generator; a naive rendering of each (no
validation) shows what Slurm does instead, checked against ``tests/data/slurm/broken/``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hostlist
import jsonschema
import pytest
import yaml
from tests.worker_summary import records

from slinky_harness.slurm.check import LoadResult, check_load
from slinky_harness.slurm.conf import parse_records
from slinky_harness.slurm.topology import (
    BlockTopology,
    TreeTopology,
    assert_blocks_match,
    assert_tree_matches,
    expand,
    parse_topology_conf,
    parse_topology_yaml,
    read_blocks,
    read_tree,
)
from slinky_topology import cli

if TYPE_CHECKING:
    from collections.abc import Callable

    from slinky_harness.slurm.ctld import CtldFactory, SlurmCtld

DATA = Path(__file__).resolve().parents[1] / "data"
FABRICS = DATA / "fabrics"
FABRIC_FILES = sorted(p.name for p in FABRICS.glob("*.yaml"))
BROKEN_FABRICS = sorted(p.stem for p in (FABRICS / "broken").glob("*.yaml"))
SLURM_BROKEN = DATA / "slurm" / "broken"

CONF_FORMATS = {"tree": "topology.conf-tree", "block": "topology.conf-block"}
LARGE = "large-1000.yaml"
LARGE_SECONDS: list[list[Any]] = records("slurm.large_fabric_seconds")
"""[test, shape, seconds] of the 1,000-node fabric's generation + load + checks, for the tier's
summary. A figure, not a pass mark: speed is measured by ``nox -s bench``, not by timed tests."""


# --- the fabric, read independently of slinky_topology ------------------------------------------


@dataclass
class FabricView:
    """What a fabric file says about present nodes (state up or down; absent ones are left out)."""

    parent: dict[str, str | None] = field(default_factory=dict)
    leaf: dict[str, str] = field(default_factory=dict)
    domain: dict[str, str] = field(default_factory=dict)
    clique: dict[str, str] = field(default_factory=dict)
    partitions: dict[str, set[str]] = field(default_factory=dict)
    kube: dict[str, str] = field(default_factory=dict)
    """Slurm node name -> Kubernetes node name (the annotations' key)."""
    present: list[str] = field(default_factory=list)
    hostlists: list[str] = field(default_factory=list)
    """Name expressions of the present node entries, for ``NodeName=`` lines."""
    domains: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def ancestors(self, switch: str) -> list[str]:
        out = [switch]
        while (up := self.parent[out[-1]]) is not None:
            out.append(up)
        return out

    def height(self, switch: str) -> int:
        kids = [s for s, p in self.parent.items() if p == switch]
        return 1 + max(self.height(k) for k in kids) if kids else 0

    def request(self, name: str) -> dict[str, Any]:
        return next(r for r in self.requests if r["name"] == name)

    def in_scope(self, request: dict[str, Any]) -> list[str]:
        wanted = set(request.get("partitions", ()))
        return [n for n in self.present if not wanted or self.partitions[n] & wanted]

    def tree_reach(self, request: dict[str, Any]) -> dict[str, set[str]]:
        """Switch -> in-scope nodes below it, for the switches the tree keeps (``maxTiers``)."""
        max_tiers = request.get("maxTiers")
        kept = [s for s in self.parent if max_tiers is None or self.height(s) < max_tiers]
        reach: dict[str, set[str]] = {s: set() for s in kept}
        for node in self.in_scope(request):
            if node in self.leaf:
                for s in self.ancestors(self.leaf[node]):
                    if s in reach:
                        reach[s].add(node)
        return reach

    def tree_roots(self, request: dict[str, Any]) -> list[str]:
        """Switches the tree keeps whose parent it does not keep."""
        kept = self.tree_reach(request)
        return [s for s in kept if self.parent[s] not in kept]

    def block_members(self, request: dict[str, Any]) -> dict[str, set[str]]:
        """Base block -> in-scope nodes: one block per domain, per clique with ``subdomain``."""
        by_clique = request.get("source") == "subdomain"
        members: dict[str, set[str]] = {d: set() for d in self.domains}
        for node in self.in_scope(request):
            if node not in self.domain:
                continue
            unit = self.domain[node]
            if by_clique and node in self.clique:
                members.pop(unit, None)
                unit = f"{unit}.{self.clique[node]}"
            members.setdefault(unit, set()).add(node)
        return members


def read_fabric(path: Path) -> FabricView:
    spec = yaml.safe_load(path.read_text())["spec"]
    view = FabricView()
    view.parent = {s["name"]: s.get("parent") for s in spec.get("switches", [])}
    view.domains = [d["name"] for d in spec.get("nvlinkDomains", [])]
    for d in spec.get("nvlinkDomains", []):
        for part in d.get("partitions", []):
            for expr in part["nodes"]:
                view.clique.update(dict.fromkeys(expand(expr), part["id"]))
    for entry in spec["nodes"]:
        if entry.get("state") == "absent":
            continue
        names = expand(entry["name"])
        kube = expand(entry["k8sNode"]) if "k8sNode" in entry else names
        view.hostlists.append(entry["name"])
        for name, k8s in zip(names, kube, strict=True):
            view.present.append(name)
            view.kube[name] = k8s
            view.partitions[name] = set(entry.get("partitions", ()))
            if "leaf" in entry:
                view.leaf[name] = entry["leaf"]
            if "nvlinkDomain" in entry:
                view.domain[name] = entry["nvlinkDomain"]
                if entry["nvlinkDomain"] not in view.domains:
                    view.domains.append(entry["nvlinkDomain"])
    view.requests = spec.get("topologies") or [
        *([{"name": "fabric", "type": "tree"}] if view.parent else []),
        *([{"name": "nvlink", "type": "block"}] if view.domains else []),
    ]
    return view


# --- what slurmctld shows, against the fabric and against the generated file ----------------------


def assert_tree_is_fabric(shown_text: str, view: FabricView, request: dict[str, Any]) -> None:
    shown = read_tree(shown_text)
    reach = view.tree_reach(request)
    assert set(shown) == set(reach), "switches"
    for switch, seen in shown.items():
        assert seen.nodes == reach[switch], f"nodes reached by {switch}"
        assert seen.level == view.height(switch), f"level of {switch}"


def assert_blocks_are_fabric(shown_text: str, view: FabricView, request: dict[str, Any]) -> None:
    base, aggregated = read_blocks(shown_text)
    members = view.block_members(request)
    for unit, nodes in members.items():
        assert unit in base, f"block {unit}"
        assert base[unit] == nodes, f"members of block {unit}"
    for extra in set(base) - set(members):
        assert not base[extra], f"{extra} is no NVLink domain but holds nodes"
    placed = [n for nodes in base.values() for n in nodes]
    assert len(placed) == len(set(placed)), "a node in two base blocks"
    assert set(placed) == {n for ns in members.values() for n in ns}
    # Locality: an aggregated block that reaches into a switch's subtree and beyond it holds that
    # subtree's block nodes whole, so it never splits a leaf or spine.
    in_blocks = set(placed)
    reach = view.tree_reach({"name": "whole fabric"})
    for size, nodes in aggregated:
        for switch in view.parent:
            below = reach[switch] & in_blocks
            if nodes & below and nodes - below:
                assert below <= nodes, f"aggregated block of {size} splits switch {switch}"


def check_shown(
    shown_text: str,
    model: TreeTopology | BlockTopology | None,
    view: FabricView,
    request: dict[str, Any],
) -> None:
    """Slurm's view of one topology equals the generated file's and what the fabric says."""
    if isinstance(model, TreeTopology):
        assert_tree_matches(shown_text, model)
        assert_tree_is_fabric(shown_text, view, request)
    elif isinstance(model, BlockTopology):
        assert_blocks_match(shown_text, model)
        assert_blocks_are_fabric(shown_text, view, request)
        assert max(len(n) for n in view.block_members(request).values()) <= model.sizes[0]
    else:
        assert parse_records(shown_text) == [], "flat topology lists nothing"


# --- generation through the CLI -----------------------------------------------------------------


def run_cli(tmp: Path, *args: str) -> str:
    out = tmp / f"out{len(list(tmp.glob('out*')))}"
    assert cli.main([*args, "-o", str(out)]) == 0, args
    return out.read_text()


def slurm_conf(view: FabricView, *, plugin: str | None = None, dynamic: bool = False) -> str:
    lines = [f"TopologyPlugin=topology/{plugin}"] if plugin else []
    if dynamic:
        lines.append(f"MaxNodeCount={len(view.present)}")
    else:
        lines += [f"NodeName={expr} CPUs=1 State=CLOUD" for expr in view.hostlists]
    lines.append("PartitionName=all Nodes=ALL Default=YES")
    return "\n".join(lines) + "\n"


@dataclass
class Generated:
    """The generated files of one fabric: file name -> text, and how each topology is modelled."""

    view: FabricView
    files: dict[str, dict[str, str]]
    """Slurm file name -> {"static": text, "dynamic": text, "annotations": JSON text}."""
    models: dict[str, list[tuple[str, str, TreeTopology | BlockTopology | None]]]
    """Slurm file name -> [(name shown by Slurm, fabric request name, model of the static file)]."""
    plugin: dict[str, str | None]


def generate(fabric: Path, tmp: Path) -> Generated:
    view = read_fabric(fabric)
    src = ("--fabric", str(fabric))
    static = run_cli(tmp, "generate", *src, "--shape", "static")
    named = parse_topology_yaml(static)
    assert [t.name for t in named] == [r["name"] for r in view.requests]
    files = {
        "topology.yaml": {
            "static": static,
            "dynamic": run_cli(tmp, "generate", *src, "--shape", "dynamic"),
            "annotations": run_cli(tmp, "annotations", *src),
        }
    }
    models: dict[str, list[tuple[str, str, TreeTopology | BlockTopology | None]]] = {
        "topology.yaml": [(t.name, t.name, t.model) for t in named]
    }
    plugin: dict[str, str | None] = {"topology.yaml": None}
    for kind, fmt in CONF_FORMATS.items():
        first = next((r for r in view.requests if r["type"] == kind), None)
        if first is None:
            continue
        name = f"topology.conf ({kind})"
        conf = run_cli(tmp, "generate", *src, "--format", fmt, "--shape", "static")
        files[name] = {
            "static": conf,
            "dynamic": run_cli(tmp, "generate", *src, "--format", fmt, "--shape", "dynamic"),
            "annotations": run_cli(tmp, "annotations", *src, "--format", fmt),
        }
        models[name] = [("default", first["name"], parse_topology_conf(conf))]
        plugin[name] = kind
    return Generated(view, files, models, plugin)


_generated: dict[str, Generated] = {}


@pytest.fixture
def generated(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Generated]:
    """Factory: fabric file name -> :class:`Generated` (generated once per session)."""

    def get(name: str) -> Generated:
        if name not in _generated:
            _generated[name] = generate(FABRICS / name, tmp_path_factory.mktemp("gen"))
        return _generated[name]

    return get


def _files_for(
    gen: Generated, name: str, shape: str, *, dynamic_nodes: bool = False
) -> dict[str, str]:
    return {
        "slurm.conf": slurm_conf(gen.view, plugin=gen.plugin[name], dynamic=dynamic_nodes),
        name.split(" ", maxsplit=1)[0]: gen.files[name][shape],
    }


# --- tests -----------------------------------------------------------------------------------------


def test_fabric_files_exist_and_are_schema_valid() -> None:
    assert {"nvl72-racks.yaml", "superpod-h100.yaml", "partial-racks.yaml"} <= set(FABRIC_FILES)
    assert {"mixed-padding.yaml", LARGE} <= set(FABRIC_FILES)
    assert len(read_fabric(FABRICS / LARGE).present) == 1000
    schema = json.loads((DATA.parents[1] / "schemas" / "fabric.schema.json").read_text())
    validator = jsonschema.Draft7Validator(schema)
    paths = [FABRICS / f for f in FABRIC_FILES]
    paths += [FABRICS / "broken" / f"{c}.yaml" for c in BROKEN_FABRICS]
    for path in paths:
        problems = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
        assert not problems, (path.name, problems)


@pytest.mark.parametrize("fabric", FABRIC_FILES)
def test_generated_files_load_and_match_fabric(
    fabric: str, generated: Callable[[str], Generated], slurm_root: Path
) -> None:
    started = time.monotonic()
    gen = generated(fabric)
    for name in gen.files:
        result = check_load(_files_for(gen, name, "static"), root=slurm_root)
        assert result.accepted, (name, result.errors, dict(result.failures))
        assert not result.errors, (name, result.errors)
        for shown_name, request_name, model in gen.models[name]:
            shown = result.topologies[shown_name if name == "topology.yaml" else ""]
            check_shown(shown, model, gen.view, gen.view.request(request_name))
        # Slurm's only complaint: a tree with several roots (jobs cannot span them).
        split = [
            request
            for _, request, _ in gen.models[name]
            if gen.view.request(request)["type"] == "tree"
            and len(gen.view.tree_roots(gen.view.request(request))) > 1
        ]
        warnings = [_message(w) for w in result.warnings]
        if split:
            assert any("no switch can reach all nodes" in w for w in warnings), (split, warnings)
        else:
            assert not warnings, (name, warnings)
        if name == "topology.yaml":
            default = next(
                t
                for t, r in zip(gen.models[name], gen.view.requests, strict=True)
                if r.get("clusterDefault")
            )
            assert result.topologies[""] == result.topologies[default[0]]
    if fabric == LARGE:
        LARGE_SECONDS.append(["generate + load + check", "static", time.monotonic() - started])


def _apply(ctld: SlurmCtld, verb: str, specs: dict[str, str]) -> None:
    """One ``scontrol`` reading one command per node from stdin (one RPC per node, as the
    operator sends them, without a process per node)."""
    lines = []
    for node, spec in specs.items():
        topo = f" Topology={spec}" if spec or verb == "update" else ""
        extra = " CPUs=1 State=CLOUD" if verb == "create" else ""
        lines.append(f"{verb} NodeName={node}{extra}{topo}\n")
    res = ctld.run(ctld._client("scontrol"), input="".join(lines), check=False, timeout=300)
    assert res.ok, res.output[-2000:]


def _read_back(ctld: SlurmCtld) -> dict[str, str]:
    return {
        r["NodeName"]: r.get("Topology", "")
        for r in parse_records(ctld.scontrol("show", "node", "-o"))
    }


@pytest.mark.parametrize("nodes", ["static-cloud", "dynamic"])
@pytest.mark.parametrize("fabric", FABRIC_FILES)
def test_annotations_apply_and_read_back(
    fabric: str, nodes: str, generated: Callable[[str], Generated], start_ctld: CtldFactory
) -> None:
    started = time.monotonic()
    gen = generated(fabric)
    slurm_name = {k: s for s, k in gen.view.kube.items()}
    dynamic = nodes == "dynamic"
    for name, texts in gen.files.items():
        by_kube: dict[str, str] = json.loads(texts["annotations"])
        assert set(by_kube) == set(slurm_name), "one annotation per present node"
        specs = {slurm_name[k]: v for k, v in by_kube.items()}
        with start_ctld(_files_for(gen, name, "dynamic", dynamic_nodes=dynamic)) as ctld:
            _apply(ctld, "create" if dynamic else "update", specs)
            assert _read_back(ctld) == specs, name
            # skeleton + annotations == the static file, as the fabric says
            for shown_name, request_name, model in gen.models[name]:
                shown = ctld.show_topology(shown_name)
                check_shown(shown, model, gen.view, gen.view.request(request_name))
    if fabric == LARGE:
        LARGE_SECONDS.append(
            ["generate + apply annotations + check", nodes, time.monotonic() - started]
        )


# --- fabrics the validator rejects: what Slurm does with them ------------------------------------


def _hosts(exprs: list[str]) -> str:
    names: list[str] = []
    for e in exprs:
        names += [n for n in expand(e) if n not in names]
    return str(hostlist.collect_hostlist(names))


def naive_files(fabric: Path) -> dict[str, str]:
    """The fabric written as-is into Slurm files, with no validation (what a generator without
    our checks would produce): every switch lists its children or its nodes, every NVLink domain
    is a block; one topology -> topology.conf, several -> topology.yaml."""
    spec = yaml.safe_load(fabric.read_text())["spec"]
    switches = [s["name"] for s in spec.get("switches", [])]
    kids = {s: [c["name"] for c in spec["switches"] if c.get("parent") == s] for s in switches}
    on_leaf = {s: [n["name"] for n in spec["nodes"] if n.get("leaf") == s] for s in switches}
    domains = list(dict.fromkeys(n["nvlinkDomain"] for n in spec["nodes"] if "nvlinkDomain" in n))
    in_domain = {
        d: [n["name"] for n in spec["nodes"] if n.get("nvlinkDomain") == d] for d in domains
    }
    all_nodes = _hosts([n["name"] for n in spec["nodes"]])
    conf = f"NodeName={all_nodes} CPUs=1 State=CLOUD\nPartitionName=all Nodes=ALL Default=YES\n"
    requests = spec["topologies"]
    if len(requests) == 1:
        kind = requests[0]["type"]
        if kind == "tree":
            lines = [
                f"SwitchName={s} Switches={','.join(kids[s])}"
                if kids[s]
                else f"SwitchName={s} Nodes={_hosts(on_leaf[s])}"
                for s in switches
            ]
        else:
            lines = [f"BlockName={d} Nodes={_hosts(in_domain[d])}" for d in domains]
            lines.append("BlockSizes=" + ",".join(map(str, requests[0]["blockSizes"])))
        return {
            "slurm.conf": f"TopologyPlugin=topology/{kind}\n{conf}",
            "topology.conf": "\n".join(lines) + "\n",
        }
    items: list[dict[str, Any]] = []
    for r in requests:
        item: dict[str, Any] = {
            "topology": r["name"],
            "cluster_default": bool(r.get("clusterDefault")),
        }
        if r["type"] == "tree":
            item["tree"] = {
                "switches": [
                    {"switch": s, "children": ",".join(kids[s])}
                    if kids[s]
                    else {"switch": s, "nodes": _hosts(on_leaf[s])}
                    for s in switches
                ]
            }
        else:
            item["block"] = {
                "block_sizes": r["blockSizes"],
                "blocks": [{"block": d, "nodes": _hosts(in_domain[d])} for d in domains],
            }
        items.append(item)
    return {"slurm.conf": conf, "topology.yaml": yaml.safe_dump(items, sort_keys=False)}


def _message(line: str) -> str:
    return line.split("] ", 1)[-1]


def test_broken_fabrics_exist() -> None:
    assert {"node-in-two-blocks", "switch-cycle", "two-cluster-defaults"} <= set(BROKEN_FABRICS)
    assert set(BROKEN_FABRICS) <= {p.name for p in SLURM_BROKEN.iterdir()}


@pytest.mark.parametrize("case", BROKEN_FABRICS)
def test_rejected_fabric_and_what_slurm_does(
    case: str, slurm_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fabric = FABRICS / "broken" / f"{case}.yaml"
    assert cli.main(["generate", "--fabric", str(fabric), "-o", str(tmp_path / "t.yaml")]) == 1
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "t.yaml").exists(), "nothing written for a rejected fabric"

    files = naive_files(fabric)
    result: LoadResult = check_load(files, root=slurm_root)
    expect: dict[str, Any] = yaml.safe_load((SLURM_BROKEN / case / "expect.yaml").read_text())
    mentions = str(expect.get("mentions", ""))
    if expect["outcome"] == "rejected":
        assert not result.started
        fatal = [_message(ln) for ln in result.errors if "fatal" in _message(ln)]
        assert fatal, result.log
        assert not mentions or any(mentions in ln for ln in fatal), fatal
    elif expect["outcome"] == "warned":
        assert result.accepted, result.errors
        assert any(mentions in _message(ln) for ln in result.warnings), result.warnings
    else:
        assert expect["outcome"] == "accepted"
        assert result.accepted, result.errors
        assert not mentions or not any(
            mentions in _message(ln) for ln in result.warnings + result.errors
        )

    # The observed effect, derived from the naive files.
    if case == "node-in-two-blocks":
        model = parse_topology_conf(files["topology.conf"])
        assert isinstance(model, BlockTopology)
        base, _ = read_blocks(result.topologies[""])
        shared = set.intersection(*(set(n) for n in model.blocks.values()))
        assert shared and all(shared <= nodes for nodes in base.values()), "kept in both blocks"
    elif case == "node-under-two-leaves":
        model = parse_topology_conf(files["topology.conf"])
        assert isinstance(model, TreeTopology)
        shown = read_tree(result.topologies[""])
        for leaf in model.leaves():
            assert shown[leaf].nodes == set(model.nodes[leaf]), "kept under both leaves"
    elif case == "two-cluster-defaults":
        named = parse_topology_yaml(files["topology.yaml"])
        first, second = (t.name for t in named if t.cluster_default)
        texts = result.topologies
        assert texts[""] == texts[first] != texts[second], "the first default wins"
