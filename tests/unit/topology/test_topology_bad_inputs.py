"""Bad inputs to slinky-topology: each ends in exit 1 or 2 and one stderr line naming the input.

The corpus covers every input kind (fabric file, topology file, annotations, Node JSON,
ibnetdiscover dump) and the flags. Inputs that used to exhaust memory or time run in a child
process with a memory cap, so the test fails cleanly (instead of taking the test run down) when a
bound is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from slinky_topology import limits
from slinky_topology.cli import main
from slinky_topology.errors import InputError
from slinky_topology.limits import MAX_ALIASES, MAX_DEPTH, MAX_HOSTS
from slinky_topology.parse import parse_topology_yaml
from slinky_topology.sources import fabric_file

DATA = Path(__file__).resolve().parents[2] / "data" / "topology"
IB = str(DATA / "ib" / "two-tier.ibnetdiscover")
FAB = "apiVersion: fabric.example.org/v1alpha1\nkind: Fabric\n"
GOOD_TOPOLOGY = "- topology: t\n  cluster_default: true\n  flat: true\n"


def _bomb(levels: int = 9, fan: int = 9, indent: str = "    ") -> str:
    """``levels`` lists of ``fan`` aliases to the list before: fan**levels values, ~600 bytes."""
    lines = [f"{indent}- &a {{name: x}}"]
    prev = "a"
    for i in range(levels):
        lines.append(f"{indent}- &a{i} [{', '.join([f'*{prev}'] * fan)}]")
        prev = f"a{i}"
    return "\n".join(lines) + "\n"


def _node(name: str, labels: object = None, **meta: object) -> dict[str, object]:
    return {"metadata": {"name": name, "labels": labels or {}, **meta}}


def _nodes(*items: object) -> str:
    return json.dumps({"items": list(items)})


@dataclass(frozen=True)
class Bad:
    """One bad input: ``argv`` with ``{in}`` for the input file and ``{good}`` for a valid
    topology.yaml; the error line must start ``error: <in><where>: `` and contain ``says``."""

    argv: tuple[str, ...]
    content: str | bytes = ""
    where: str = ""
    says: str = ""
    code: int = 1
    suffix: str = ".yaml"


def _fabric(content: str | bytes, where: str, says: str) -> Bad:
    return Bad(("generate", "--fabric", "{in}"), content, where, says)


def _check(content: str | bytes, where: str, says: str, suffix: str = ".yaml") -> Bad:
    return Bad(("check", "{in}"), content, where, says, suffix=suffix)


def _annotations(content: str | bytes, where: str, says: str) -> Bad:
    return Bad(("check", "{good}", "--annotations", "{in}"), content, where, says, suffix=".json")


def _from_nodes(content: str | bytes, where: str, says: str, *flags: str) -> Bad:
    return Bad(("generate", "--from-nodes", "{in}", *flags), content, where, says, suffix=".json")


def _ib(content: str | bytes, where: str, says: str) -> Bad:
    return Bad(("generate", "--ibnetdiscover", "{in}"), content, where, says, suffix=".ib")


def _usage(says: str, *argv: str) -> Bad:
    return Bad(tuple(argv), says=says, code=2)


CORPUS = [
    # ---- fabric files (--fabric)
    pytest.param(_fabric(b"apiVersion: \xff\n", ":1:13", "not UTF-8"), id="fabric-not-utf8"),
    pytest.param(_fabric("a: b\x00\n", ":1:5", "#x0000 is not allowed"), id="fabric-nul-char"),
    pytest.param(_fabric("", "::$", "not of type 'object'"), id="fabric-empty"),
    pytest.param(
        _fabric(FAB + "spec:\n  nodes: [{name: a\n", ":5:1", "not valid YAML/JSON"),
        id="fabric-truncated",
    ),
    pytest.param(_fabric(FAB + "spec:\n\tnodes: []\n", ":4:1", "'\\t'"), id="fabric-tab"),
    pytest.param(
        _fabric("[" * 5000 + "]" * 5000, f":1:{MAX_DEPTH + 1}", "deeper than"),
        id="fabric-deep-lists",
    ),
    pytest.param(
        _fabric("a: " + "{a: " * 3000 + "1" + "}" * 3000, ":1:", "deeper than"),
        id="fabric-deep-mappings",
    ),
    pytest.param(
        _fabric(FAB + "spec: &s {nodes: [*s]}\n", "", "refers to a mapping or list that contains"),
        id="fabric-recursive-alias",
    ),
    pytest.param(
        _fabric(FAB + "spec: {nodes: [*x]}\n", ":3:16", "undefined alias"),
        id="fabric-undefined-alias",
    ),
    pytest.param(
        _fabric(
            FAB + "x: &n {name: a}\nspec: {nodes: [" + ", ".join(["*n"] * (MAX_ALIASES + 1)) + "]}",
            ":4:",
            f"more than {MAX_ALIASES} YAML aliases",
        ),
        id="fabric-too-many-aliases",
    ),
    pytest.param(
        _fabric(
            FAB + "spec:\n  nodes: [{name: 'n[0-60000],m[0-60000]'}]\n",
            "::$.spec.nodes[0].name",
            "120,002 nodes",
        ),
        id="fabric-ranges-add-up",
    ),
    pytest.param(
        _fabric(
            FAB + "spec:\n  nodes: [{name: 'n[0-40000]'}, {name: 'm[0-40000]'}]\n",
            "::$.spec.nodes[1].name",
            "80,002 nodes",
        ),
        id="fabric-entries-add-up",
    ),
    pytest.param(
        _fabric(FAB + "spec: {nodes: [{name: 'n[1-'}]}\n", "::$.spec.nodes[0].name", "unclosed"),
        id="fabric-bad-hostlist",
    ),
    pytest.param(
        _fabric(
            FAB + "spec: {nodes: [{name: 'n[1-2]', k8sNode: 'k[1-3]'}]}\n",
            "::$.spec.nodes[0].k8sNode",
            "names 3 Kubernetes nodes for 2 nodes",
        ),
        id="fabric-k8snode-count",
    ),
    pytest.param(
        _fabric("[1, 2]\n", "::$", "is not of type 'object' (line 1)"), id="fabric-root-list"
    ),
    pytest.param(
        _fabric("[" + ", ".join(["123456789"] * 5000) + "]\n", "::$", "..."),
        id="fabric-long-schema-message-is-cut",
    ),
    pytest.param(
        _fabric(FAB + "spec: {nodes: [5]}\n", "::$.spec.nodes[0]", "not of type 'object'"),
        id="fabric-node-int",
    ),
    pytest.param(
        _fabric(FAB + "spec: {nodes: [{name: 5}]}\n", "::$.spec.nodes[0].name", "not of type"),
        id="fabric-name-int",
    ),
    pytest.param(
        _fabric(
            FAB + "spec: {nodes: [{name: a}], topologies: [{name: t, type: block, "
            "blockSizes: [.inf]}]}\n",
            "::$.spec.topologies[0].blockSizes",
            "not valid under any",
        ),
        id="fabric-block-sizes-inf",
    ),
    pytest.param(
        _fabric(
            FAB + "spec: {nodes: [], nvlinkDomains: [{name: d, slots: " + "9" * 5000 + "}]}\n",
            ":3:",
            "Exceeds the limit",
        ),
        id="fabric-5000-digit-integer",
    ),
    pytest.param(
        _fabric(FAB + "spec: {nodes: [{name: 2020-13-01}]}\n", ":3:", "month must be in"),
        id="fabric-impossible-date",
    ),
    pytest.param(
        _fabric(FAB + "spec: !!python/object:os.system {}\n", ":3:7", "constructor"),
        id="fabric-python-tag",
    ),
    pytest.param(
        _fabric(FAB + "spec: {? [a]: b}\n", ":3:", "unhashable key"), id="fabric-list-as-key"
    ),
    pytest.param(
        _fabric(FAB + "spec: {nodes: [{name: n1, leaf: nope}]}\n", "", "leaf switch nope"),
        id="fabric-unknown-leaf",
    ),
    # ---- topology files (check FILE)
    pytest.param(
        _check(b"SwitchName=s1 Nodes=\xff\n", ":1:21", "not UTF-8", ".conf"), id="conf-not-utf8"
    ),
    pytest.param(_check(b"- topology: \xff\n", ":1:13", "not UTF-8"), id="yaml-not-utf8"),
    pytest.param(
        _check("SwitchName=s1 Nodes=n[0-60000],m[0-60000]\n", ":1", "120,002 hosts", ".conf"),
        id="conf-ranges-add-up",
    ),
    pytest.param(
        _check(
            "".join(f"SwitchName=s{i} Nodes=n[0-65535]\n" for i in range(17)),
            ":17",
            "more than 1,048,576 host names",
            ".conf",
        ),
        id="conf-lines-add-up",
    ),
    pytest.param(_check("- " + "[" * 5000 + "]" * 5000, ":1:", "deeper than"), id="yaml-deep"),
    pytest.param(
        _check("- topology: t\n  block:\n    block_sizes: [.inf]\n", ":3", "list of integers"),
        id="yaml-block-sizes-inf",
    ),
    pytest.param(
        _check("- topology: t\n  block:\n    block_sizes: [1.5]\n", ":3", "list of integers"),
        id="yaml-block-sizes-fraction",
    ),
    pytest.param(
        _check("- topology: t\n  block:\n    block_sizes: [true]\n", ":3", "list of integers"),
        id="yaml-block-sizes-bool",
    ),
    pytest.param(
        _check("- topology: t\n  tree: {1: a, b: c}\n", ":2", "unknown tree key 1"),
        id="yaml-int-and-str-keys-tree",
    ),
    pytest.param(
        _check("- topology: t\n  block: {1: a, b: c}\n", ":2", "unknown block key 1"),
        id="yaml-int-and-str-keys-block",
    ),
    pytest.param(
        _check("- topology: t\n  tree: {switches: [{switch: s\n", ":3:1", "not valid YAML"),
        id="yaml-truncated",
    ),
    pytest.param(_check("- topology: t\x00\n", ":1:14", "#x0000"), id="yaml-nul-char"),
    pytest.param(
        _check("- topology: t\n  tree: {switches: [{switch: s, nodes: 5}]}\n", ":2", "string"),
        id="yaml-nodes-int",
    ),
    pytest.param(
        _check("- &x {topology: t, tree: {switches: [*x]}}\n", "", "contains it"),
        id="yaml-recursive-alias",
    ),
    pytest.param(_check("5\n", "", "must be a list of topologies"), id="yaml-scalar"),
    # ---- annotations (check FILE --annotations JSON)
    pytest.param(_annotations(b'{"a": "\xff"}', ":1:8", "not UTF-8"), id="annotations-not-utf8"),
    pytest.param(
        _annotations("[" * 100_000 + "]" * 100_000, "", "deeper than"), id="annotations-deep"
    ),
    pytest.param(_annotations('{"a": ', ":1:7", "not valid JSON"), id="annotations-truncated"),
    pytest.param(
        _annotations('{"a": "b"}\x00', ":1:11", "not valid JSON: Extra data"),
        id="annotations-nul-after-json",
    ),
    pytest.param(_annotations('{"n1": 5}', "", "node name -> string"), id="annotations-int-value"),
    pytest.param(
        _annotations('{"n1": "t:::"}', "", "is not topology:unit"), id="annotations-bad-spec"
    ),
    # ---- Kubernetes Nodes (--from-nodes)
    pytest.param(_from_nodes('{"items": 5}', "::$.items", "not int"), id="nodes-items-int"),
    pytest.param(_from_nodes('{"items": "abc"}', "::$.items", "not str"), id="nodes-items-str"),
    pytest.param(
        _from_nodes(
            _nodes(_node("a", {"nvidia.com/gpu.clique": 5})),
            "::$.items[0].metadata.labels",
            "not int (quote the value)",
        ),
        id="nodes-integer-label",
    ),
    pytest.param(
        _from_nodes(
            _nodes(_node("a", {"fabric.topograph.run/tier-0": ["x"]})),
            "::$.items[0].metadata.labels",
            "not list",
        ),
        id="nodes-list-label",
    ),
    pytest.param(
        _from_nodes(_nodes(_node("a", ["x"])), "::$.items[0].metadata.labels", "mapping"),
        id="nodes-labels-list",
    ),
    pytest.param(
        _from_nodes(
            _nodes(_node("a", {"nvidia.com/gpu.clique": "x.1"}, annotations=["k"])),
            "::$.items[0].metadata.annotations",
            "mapping",
            "--slurm-name-key",
            "k",
        ),
        id="nodes-annotations-list",
    ),
    pytest.param(
        _from_nodes(_nodes({"metadata": {"name": 5}}), "::$.items[0]", "no metadata.name"),
        id="nodes-name-int",
    ),
    pytest.param(_from_nodes("null", "", "expected a NodeList"), id="nodes-null"),
    pytest.param(_from_nodes(b"\xff", ":1:1", "not UTF-8"), id="nodes-not-utf8"),
    pytest.param(_from_nodes("[" * 100_000 + "]" * 100_000, "", "deeper"), id="nodes-deep-json"),
    pytest.param(_from_nodes("- " * 3000 + "x", ":1:", "deeper"), id="nodes-deep-yaml"),
    pytest.param(
        _from_nodes("items: [\n", ":2:1", "not valid JSON or YAML"), id="nodes-truncated-yaml"
    ),
    pytest.param(
        _from_nodes(
            _nodes(*({"metadata": {"name": f"n{i}"}} for i in range(MAX_HOSTS + 1))),
            "",
            "65,537 Nodes",
        ),
        id="nodes-over-slurm-limit",
    ),
    pytest.param(_from_nodes('{"items": []}', "", "no Nodes are in the input"), id="nodes-none"),
    # ---- ibnetdiscover dumps (--ibnetdiscover)
    pytest.param(_ib(b'Switch 36 "S-1" # "\xff"\n', ":1:20", "not UTF-8"), id="ib-not-utf8"),
    pytest.param(_ib("hello world\n", ":1", "unrecognised"), id="ib-garbage"),
    pytest.param(_ib("", "", "no Switch or Ca records"), id="ib-empty"),
    pytest.param(_ib('[1] "S-1"[2]\n', ":1", "port line before"), id="ib-port-first"),
    # ---- flags and output
    pytest.param(
        _usage("--ib-node-regex", "generate", "--ibnetdiscover", IB, "--ib-node-regex", "("),
        id="flag-bad-regex",
    ),
    pytest.param(
        _usage("--label-map 'x'", "generate", "--from-nodes", IB, "--label-map", "x"),
        id="flag-bad-label-map",
    ),
    pytest.param(
        _usage("not '-'", "generate", "--fabric", "default", "-o", "-", "--check"),
        id="flag-check-stdout",
    ),
    pytest.param(
        _usage("invalid choice", "generate", "--fabric", "default", "--preset", "zz"),
        id="flag-bad-preset",
    ),
    pytest.param(_usage("--nope", "generate", "--fabric", "default", "--nope"), id="flag-unknown"),
    pytest.param(
        Bad(("generate", "--fabric", "default", "-o", "{in}", "--check"), b"\xff", ":1:1", "UTF-8"),
        id="check-target-not-utf8",
    ),
    pytest.param(
        Bad(("generate", "--fabric", ""), where="''", says="the file name is empty"),
        id="fabric-empty-name",
    ),
]


@pytest.mark.parametrize("case", CORPUS)
def test_bad_input_ends_in_one_line(
    case: Bad, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"input{case.suffix}"
    path.write_bytes(case.content if isinstance(case.content, bytes) else case.content.encode())
    good = tmp_path / "good.yaml"
    good.write_text(GOOD_TOPOLOGY)
    argv = [a.replace("{in}", str(path)).replace("{good}", str(good)) for a in case.argv]
    code = main(argv)
    out, err = capsys.readouterr()
    assert (code, "Traceback" not in err) == (case.code, True), err
    assert err.endswith("\n") and err.count("\n") == 1, err
    if case.code == 1:
        name = "" if case.where.startswith("'") else str(path)
        assert err.startswith(f"error: {name}{case.where}"), err
        assert out == ""
    else:
        assert err.startswith("slinky-topology") and err.endswith(" --help\n"), err
    assert case.says in err


def test_validation_problems_each_name_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fabric = tmp_path / "fabric.yaml"
    fabric.write_text(FAB + "spec: {switches: [{name: a, parent: a}], nodes: [{name: n1}]}\n")
    assert main(["generate", "--fabric", str(fabric)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(ln.startswith(f"error: {fabric}: fabric fabric: ") for ln in lines)
    assert any("loops back" in ln for ln in lines)


def test_many_problems_are_capped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "topology.conf"
    conf.write_text("".join(f"BlockName=b Nodes=n{i}\n" for i in range(300)))
    assert main(["check", str(conf)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 101
    assert all(ln.startswith(f"error: {conf}") for ln in lines)
    assert lines[-1].endswith("more problems not shown")


def test_duplicate_key_keeps_the_last_value() -> None:
    """YAML keeps the last of two equal keys; the parser reads its lines from the same one."""
    doc = parse_topology_yaml(
        "- topology: t\n  tree: {switches: [], switches: [{switch: a, nodes: n1}]}\n", "t.yaml"
    )
    assert [s.name for s in doc.topologies[0].spec.switches] == ["a"]  # type: ignore[union-attr]


def test_integral_float_block_sizes_read_as_integers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON Schema's ``integer`` admits 18.0; it means 18 (it used to crash the layout)."""
    outs = []
    for size in ("18", "18.0"):
        fabric = tmp_path / f"f{size}.yaml"
        fabric.write_text(
            FAB + "spec:\n  nvlinkDomains: [{name: r1, slots: 18}]\n"
            "  nodes: [{name: 'g[01-18]', nvlinkDomain: r1}]\n"
            f"  topologies: [{{name: nvl, type: block, clusterDefault: true, blockSizes: [{size}]}}]\n"
        )
        assert main(["generate", "--fabric", str(fabric)]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]


# The CLI in a child whose address space is capped at 1 GiB (a missing bound ends in MemoryError
# there, not in an out-of-memory test run).
_CHILD = (
    "import resource, runpy; "
    "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
    "runpy.run_module('slinky_topology.cli', run_name='__main__')"
)


BLOW_UPS = [
    pytest.param(
        ("generate", "--fabric"),
        FAB + "spec:\n  nodes: [{name: 'n[0-999999][0-999999]'}]\n",
        "::$.spec.nodes[0].name",
        "1,000,000,000,000 nodes",
        id="fabric-47-byte-hostlist",
    ),
    pytest.param(
        ("generate", "--fabric"),
        FAB + "spec:\n  nodes:\n" + _bomb(),
        "",
        "YAML aliases expand the document",
        id="fabric-alias-bomb",
    ),
    pytest.param(
        ("generate", "--fabric"),
        FAB + "spec: {nodes: [{name: n1, k8sNode: 'k[0-999999][0-999999]'}]}\n",
        "::$.spec.nodes[0].k8sNode",
        "1,000,000,000,000 Kubernetes nodes",
        id="fabric-k8snode-hostlist",
    ),
    pytest.param(
        ("generate", "--fabric"),
        FAB + "spec: {nodes: [], nvlinkDomains: [{name: d, partitions: "
        "[{id: p, nodes: ['n[0-999999][0-999999]']}]}]}\n",
        "::$.spec.nvlinkDomains[0].partitions[0].nodes[0]",
        "1,000,000,000,000 nodes",
        id="fabric-partition-hostlist",
    ),
    pytest.param(
        ("check",),
        "SwitchName=s1 Nodes=n[0-999999][0-999999]\n",
        ":1",
        "1,000,000,000,000 hosts",
        id="conf-hostlist",
    ),
    pytest.param(
        ("check",),
        "- topology: t\n  tree:\n    switches:\n" + _bomb(indent="      "),
        "",
        "YAML aliases expand the document",
        id="yaml-alias-bomb",
    ),
    pytest.param(
        ("check", "{good}", "--annotations"),
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"k{i}: &a{i} [{', '.join(['*a' if i == 0 else f'*a{i - 1}'] * 9)}]\n" for i in range(9)
        ),
        "",
        "YAML aliases expand the document",
        id="annotations-alias-bomb",
    ),
]


@pytest.mark.parametrize(("argv", "content", "where", "says"), BLOW_UPS)
def test_blow_ups_are_refused_in_a_moment(
    argv: tuple[str, ...], content: str, where: str, says: str, tmp_path: Path
) -> None:
    """Inputs of a few hundred bytes that stand for 10^9..10^12 values are refused before they are
    expanded: in a child capped at 1 GiB, in well under the timeout, with one line."""
    path = tmp_path / ("input.conf" if content.startswith("SwitchName") else "input.yaml")
    path.write_text(content)
    good = tmp_path / "good.yaml"
    good.write_text(GOOD_TOPOLOGY)
    args = [a.replace("{good}", str(good)) for a in argv]
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, *args, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        check=False,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1, proc.stderr[-2000:]
    assert proc.stderr.startswith(f"error: {path}{where}: ") and says in proc.stderr
    assert elapsed < 15, f"took {elapsed:.1f} s"


@pytest.mark.parametrize("big", ["/dev/zero", "file"])
def test_endless_input_is_cut_at_the_size_limit(
    big: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """/dev/zero (or a runaway pipe) is read up to MAX_INPUT_BYTES, then refused; a larger
    regular file is refused by its size, unread."""
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", 1 << 16)
    if big == "file":
        big = str(tmp_path / "nodes.json")
        Path(big).write_text(" " * (1 << 17))
    assert main(["generate", "--from-nodes", big]) == 1
    assert capsys.readouterr().err == (
        f"error: {big}: refused: larger than 65,536 bytes; give a smaller input "
        "(for Nodes: kubectl get nodes -l SELECTOR)\n"
    )


def test_fabric_data_loaded_elsewhere_is_bounded_too() -> None:
    """fabric_from_data checks data another loader built (yaml.safe_load of an alias bomb)."""
    data = yaml.safe_load(FAB + "spec:\n  nodes:\n" + _bomb())
    with pytest.raises(InputError, match="YAML aliases expand the document"):
        fabric_file.fabric_from_data(data, "configmap ns/fabric:fabric.yaml")
    loop: dict[str, object] = {"apiVersion": "fabric.example.org/v1alpha1", "kind": "Fabric"}
    loop["spec"] = {"nodes": [loop]}
    with pytest.raises(InputError, match="contains it"):
        fabric_file.fabric_from_data(loop, "x")
