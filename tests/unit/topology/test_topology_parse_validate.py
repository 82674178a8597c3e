"""Parsers (topology.conf / topology.yaml) and the validator's Slurm rules, one case per rule."""

from __future__ import annotations

import re

import pytest

from slinky_topology.errors import InputError
from slinky_topology.model import Block, BlockSpec, Topology, TopologyDoc, TreeSpec, TreeSwitch
from slinky_topology.parse import detect_format, parse_topology_conf, parse_topology_yaml
from slinky_topology.validate import (
    block_sizes_findings,
    parse_block_sizes,
    size_findings,
    validate_doc,
    validate_specs,
    version_findings,
)

TREE_B1 = """\
SwitchName=leaf01 Nodes=gpu[0001-0018]
SwitchName=leaf02 Nodes=gpu[0019-0036]
SwitchName=spine1 Switches=leaf[01-02]
"""

BLOCK_B2 = """\
BlockName=nvl01 Nodes=gpu[0001-0018]
BlockName=nvl02 Nodes=gpu[0019-0036]
BlockName=nvl03
BlockName=nvl04 Nodes=gpu[0055-0072]
BlockSizes=18,36,72
"""

YAML_B4 = """\
- topology: fabric
  cluster_default: true
  tree:
    switches:
      - switch: spine1
        children: leaf[01-02]
      - switch: leaf01
        nodes: gpu[0001-0018]
      - switch: leaf02
        nodes: gpu[0019-0036]
- topology: nvl
  cluster_default: false
  block:
    block_sizes: [18, 36]
    blocks:
      - block: nvl01
        nodes: gpu[0001-0018]
      - block: nvl02
        nodes: gpu[0019-0036]
- topology: cpu
  cluster_default: false
  flat: true
"""


def _errors(doc: TopologyDoc, conf: bool = False) -> list[str]:
    return [str(f) for f in validate_doc(doc, conf=conf, location="f") if f.severity == "error"]


def _warnings(doc: TopologyDoc, conf: bool = False) -> list[str]:
    return [str(f) for f in validate_doc(doc, conf=conf, location="f") if f.severity == "warning"]


def test_documented_examples_parse_and_validate() -> None:
    """The examples of topology.md b.1, b.2 and b.4 are valid."""
    tree = parse_topology_conf(TREE_B1)
    assert tree.topologies[0].name == "default"
    assert tree.topologies[0].spec == TreeSpec(
        (
            TreeSwitch("leaf01", (), tuple(f"gpu{i:04d}" for i in range(1, 19))),
            TreeSwitch("leaf02", (), tuple(f"gpu{i:04d}" for i in range(19, 37))),
            TreeSwitch("spine1", ("leaf01", "leaf02")),
        )
    )
    block = parse_topology_conf(BLOCK_B2)
    spec = block.topologies[0].spec
    assert isinstance(spec, BlockSpec)
    assert spec.block_sizes == (18, 36, 72)
    assert spec.blocks[2] == Block("nvl03")
    yml = parse_topology_yaml(YAML_B4)
    assert [t.kind for t in yml.topologies] == ["tree", "block", "flat"]
    for doc, conf in ((tree, True), (block, True), (yml, False)):
        assert _errors(doc, conf) == []
        assert _warnings(doc, conf) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("SwitchName=s1 Nodes=n[1-", "2: unclosed", id="bad-hostlist-line-2"),
        pytest.param("SwitchName=s1 Color=red", "unknown key color", id="unknown-key"),
        pytest.param("Frobnicate=1", "unknown line", id="unknown-line"),
        pytest.param("SwitchName=s1 SwitchName=s2", "twice", id="duplicate-key"),
        pytest.param("BlockName=b1\nBlockSizes=a,b", "not a list of integers", id="bad-sizes"),
        pytest.param("BlockName=b1 Nodes=n1\nSwitchName=s1 Nodes=n2", "mixes", id="mixed"),
        pytest.param("SwitchName", "expected Key=Value", id="no-equals"),
    ],
)
def test_conf_syntax_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_topology_conf("# header\n" + text, "topology.conf")
    assert str(info.value).startswith("topology.conf")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "- cluster_default: true\n  topology: a\n  flat: true\n",
            "first key",
            id="topology-not-first",
        ),
        pytest.param(
            "- topology: a\n  flat: true\n  tree: {switches: []}\n", "exactly one", id="two-plugins"
        ),
        pytest.param("topology: a\n", "must be a list", id="not-a-list"),
        pytest.param(
            "- topology: a\n  cluster_default: maybe\n  flat: true\n",
            "true or false",
            id="bad-bool",
        ),
        pytest.param("- topology: a\n  ring: {rings: []}\n", "not supported", id="ring"),
        pytest.param(
            "- topology: a\n  tree:\n    switches:\n      - switch: s\n        nodes: n[\n",
            ":4: unclosed",
            id="bad-hostlist-line",
        ),
        pytest.param("- topology: [\n", "not valid YAML", id="yaml-syntax"),
        pytest.param(
            "- topology: a\n  block: {blocks: [{block: b, size: 3}]}\n",
            "block items take",
            id="unknown-block-key",
        ),
    ],
)
def test_yaml_errors(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_topology_yaml(text, "topology.yaml")


@pytest.mark.parametrize(
    ("text", "conf", "message"),
    [
        pytest.param(
            "SwitchName=s1 Nodes=n1\nSwitchName=s1 Nodes=n2\n",
            True,
            "f:2: switch s1: has already been defined",
            id="duplicate-switch",
        ),
        pytest.param(
            "SwitchName=s1 Switches=s2 Nodes=n1\nSwitchName=s2\n",
            True,
            "both Switches= and Nodes=",
            id="switches-and-nodes",
        ),
        pytest.param("SwitchName=s1 Switches=s9\n", True, "invalid child s9", id="undefined-child"),
        pytest.param("SwitchName=s1 Switches=s1\n", True, "invalid child s1", id="self-child"),
        pytest.param(
            "SwitchName=a Switches=b\nSwitchName=b Switches=a\n", True, "not a tree", id="cycle"
        ),
        pytest.param("SwitchName=" + "s" * 65 + "\n", True, "at most 64", id="long-name"),
        pytest.param("SwitchName=s,1\n", True, "not hostlist-safe", id="unsafe-name"),
        pytest.param(
            "BlockName=b1 Nodes=n1\nBlockName=b1 Nodes=n2\nBlockSizes=1\n",
            True,
            "block b1: has already been defined",
            id="duplicate-block",
        ),
        pytest.param(
            "BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n2\nBlockSizes=2\n",
            True,
            "node n2: is in blocks b1 and b2",
            id="node-in-two-blocks",
        ),
        pytest.param(
            "BlockName=b1 Nodes=n1\nBlockSizes=2,6\n",
            True,
            "not a power of two",
            id="blocksizes-ratio",
        ),
        pytest.param(
            "BlockName=b1 Nodes=n1\nBlockSizes=2,3\n",
            True,
            "not a multiple",
            id="blocksizes-multiple",
        ),
        pytest.param(
            "BlockName=b1 Nodes=n1\nBlockSizes=0\n", True, "positive", id="blocksizes-zero"
        ),
        pytest.param(
            "BlockName=b1 Nodes=n1\nBlockSizes=1,65536\n", True, "2^15", id="blocksizes-level"
        ),
        pytest.param(
            "BlockName=b1\n", True, "no nodes and BlockSizes is not set", id="empty-blocks-no-sizes"
        ),
        pytest.param("BlockSizes=4\n", True, "has no blocks", id="no-blocks"),
        pytest.param("", True, "defines no topology", id="empty-file"),
        pytest.param(
            "- topology: a\n  flat: true\n- topology: b\n  flat: true\n",
            False,
            "0 topologies have cluster_default",
            id="no-default",
        ),
        pytest.param(
            "- topology: a\n  cluster_default: true\n  flat: true\n"
            "- topology: a\n  cluster_default: true\n  flat: true\n",
            False,
            "topology a: defined 2 times",
            id="duplicate-topology",
        ),
        pytest.param(
            "- topology: a\n  cluster_default: true\n  tree: {switches: []}\n",
            False,
            "has no switches",
            id="no-switches",
        ),
        pytest.param(
            "- topology: a\n  cluster_default: true\n  tree:\n    switches:\n"
            "      - {switch: s1, children: s2, nodes: n1}\n      - {switch: s2}\n",
            False,
            "both children and nodes",
            id="yaml-children-and-nodes",
        ),
    ],
)
def test_rule_errors(text: str, conf: bool, message: str) -> None:
    doc = parse_topology_conf(text) if conf else parse_topology_yaml(text)
    errors = _errors(doc, conf)
    assert any(message in e for e in errors), errors


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "SwitchName=l1 Nodes=n1\nSwitchName=l2 Nodes=n1\nSwitchName=s Switches=l[1-2]\n",
            "under several leaf switches",
            id="node-two-leaves",
        ),
        pytest.param(
            "SwitchName=l1 Nodes=n1\nSwitchName=l2 Nodes=n2\n",
            "2 root switches",
            id="no-common-root",
        ),
        pytest.param(
            "SwitchName=l1 Nodes=n1\nSwitchName=a Switches=l1\nSwitchName=b Switches=l1\n",
            "has 2 parents",
            id="two-parents",
        ),
        pytest.param(
            "BlockName=b1 Nodes=n[1-3]\nBlockSizes=2\n",
            "more than the base size",
            id="block-over-base",
        ),
    ],
)
def test_rule_warnings(text: str, message: str) -> None:
    doc = parse_topology_conf(text)
    assert _errors(doc, True) == []
    assert any(message in w for w in _warnings(doc, True)), _warnings(doc, True)


def test_deep_tree_is_fatal() -> None:
    lines = [f"SwitchName=s{i} Switches=s{i + 1}" for i in range(22)] + ["SwitchName=s22 Nodes=n1"]
    assert any("not a tree" in e for e in _errors(parse_topology_conf("\n".join(lines)), True))
    ok = [f"SwitchName=s{i} Switches=s{i + 1}" for i in range(19)] + ["SwitchName=s19 Nodes=n1"]
    assert _errors(parse_topology_conf("\n".join(ok)), True) == []


def test_coverage_warnings_with_known_nodes() -> None:
    doc = parse_topology_conf(TREE_B1)
    found = validate_doc(doc, conf=True, known_nodes=["gpu0001", "gpu0002", "ghost", "other"])
    texts = " ".join(str(f) for f in found)
    assert "34 unknown node names" in texts
    assert "lacks access to 2 nodes" in texts


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param("fabric:spine1:leaf01,nvl:nvl01", None, id="valid"),
        pytest.param("", None, id="empty-removes"),
        pytest.param("nvl:nvl09", "block nvl09 does not exist", id="missing-block"),
        pytest.param("fabric:leaf01", None, id="leaf-only-path"),
        pytest.param("fabric:spine9:leaf01", "first switch spine9", id="missing-first-switch"),
        pytest.param("fabric:spine1", "not a leaf", id="path-ends-above-leaf"),
        pytest.param("fabric:leaf01:spine1", "not a child", id="path-wrong-order"),
        pytest.param("other:x", "unknown topology other", id="unknown-topology"),
        pytest.param("cpu:x", "is flat", id="flat-has-no-units"),
        pytest.param("nvl", "not topology:unit", id="no-unit"),
        pytest.param("nvl:nvl01,nvl:nvl02", "twice", id="topology-twice"),
    ],
)
def test_annotation_rules(spec: str, message: str | None) -> None:
    doc = parse_topology_yaml(YAML_B4)
    found = [str(f) for f in validate_specs(doc, {"node-a": spec})]
    if message is None:
        assert found == []
    else:
        assert any(message in f for f in found), found


def test_block_sizes_findings_accepts_documented_values() -> None:
    assert block_sizes_findings((18, 36, 72), "t") == []
    assert block_sizes_findings((4, 16), "t") == []  # ratio 4 = 2^2
    assert block_sizes_findings((8, 8), "t")  # not increasing


def test_size_limit() -> None:
    assert size_findings("x" * 1024 * 1024, "f") == []
    assert "over the 1048576-byte" in str(size_findings("x" * (1024 * 1024 + 1), "f")[0])


def test_detect_format() -> None:
    assert detect_format("", "a/topology.yaml") == "yaml"
    assert detect_format("- topology: a") == "yaml"
    assert detect_format("# c\nSwitchName=x") == "conf"


def test_line_numbers_do_not_affect_equality() -> None:
    a = Topology("t", True, TreeSpec((TreeSwitch("s", line=1),)), line=3)
    b = Topology("t", True, TreeSpec((TreeSwitch("s", line=9),)))
    assert a == b


@pytest.mark.parametrize(
    ("version", "yaml_format", "dynamic", "message"),
    [
        pytest.param("26.05", True, True, None, id="current"),
        pytest.param("24.11", True, False, "topology.yaml needs Slurm >= 25.05", id="yaml-old"),
        pytest.param("24.11", False, True, "dynamic topology", id="dynamic-old"),
        pytest.param("24.11", False, False, "fewer nodes than the base", id="partial-old"),
    ],
)
def test_version_gates(version: str, yaml_format: bool, dynamic: bool, message: str | None) -> None:
    doc = parse_topology_conf("BlockName=b1 Nodes=n[1-2]\nBlockSizes=4\n")
    found = [
        str(f) for f in version_findings(version, doc, yaml_format=yaml_format, dynamic=dynamic)
    ]
    if message is None:
        assert found == []
    else:
        assert any(message in f for f in found), found


@pytest.mark.parametrize(
    ("text", "feature"),
    [
        pytest.param(
            "SwitchName=s1 Switches=l[1-2]\nSwitchName=l1 Nodes=n1\nSwitchName=l2\n",
            "leaf switch without nodes",
            id="empty-leaf",
        ),
        pytest.param(
            "BlockName=b1 Nodes=n[1-2]\nBlockName=b2\nBlockSizes=2\n",
            "block without nodes",
            id="empty-block",
        ),
    ],
)
def test_node_less_units_need_25_05(text: str, feature: str) -> None:
    doc = parse_topology_conf(text)
    old = [str(f) for f in version_findings("24.11", doc, yaml_format=False, dynamic=False)]
    assert len(old) == 1, old
    assert feature in old[0] and ">= 25.05" in old[0], old
    assert version_findings("26.05", doc, yaml_format=False, dynamic=False) == []


@pytest.mark.parametrize("version", ["25.11", "23.02", "latest", "26.5"])
def test_unproven_versions_are_refused_with_the_proven_list(version: str) -> None:
    doc = parse_topology_conf("SwitchName=s1 Nodes=n[1-2]\n")
    found = [str(f) for f in version_findings(version, doc, yaml_format=False, dynamic=False)]
    assert len(found) == 1, found
    assert repr(version) in found[0]
    assert "24.11" in found[0] and "26.05" in found[0], found


def test_many_switches_warn() -> None:
    lines = ["SwitchName=top Switches=l[0000-1000]"]
    lines += [f"SwitchName=l{i:04d} Nodes=n{i}" for i in range(1001)]
    warnings = _warnings(parse_topology_conf("\n".join(lines)), True)
    assert any("1002 switches" in w for w in warnings)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("18,x", "'18,x' is not a comma-separated list of integers", id="text"),
        pytest.param("18,27", "27 is not a multiple of the base 18", id="not-multiple"),
        pytest.param("18,54", "54 / 18 is not a power of two", id="not-power-of-two"),
        pytest.param("0", "values must be positive", id="zero"),
    ],
)
def test_parse_block_sizes_names_the_value(text: str, message: str) -> None:
    """What --block-sizes (CLI and labeler) accepts: the BlockSizes rules of a fabric file."""
    with pytest.raises(InputError, match=re.escape(message)) as err:
        parse_block_sizes(text, "topology.blockSizes")
    assert str(err.value).startswith("topology.blockSizes")
    assert parse_block_sizes("18,36,72") == (18, 36, 72)
