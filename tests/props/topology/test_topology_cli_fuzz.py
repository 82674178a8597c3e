"""Property tests: whatever bytes an input holds, the CLI ends in one clean line per problem.

Invariant shared by every test here (:func:`_ends_cleanly`): ``main(argv)`` returns 0, 1 or 2 and
raises nothing; stderr holds no traceback; with 0 it holds no error, with 1 only ``warning:`` lines
and one or more ``error:`` lines each naming the input file, with 2 exactly one usage line
``slinky-topology...: error: ...; see ... --help``.

Inputs: random bytes, random YAML (well-formed documents, and token soup with anchors, aliases,
tags and deep brackets), and junk shaped like each input kind (fabric files drawn from
``fabric.schema.json`` with wrong types, missing keys and odd hostlists mixed in; topology.yaml and
topology.conf; annotations; Node lists; ibnetdiscover dumps), each fed to every subcommand that
reads that kind.
"""

from __future__ import annotations

import io
import json
import string
from contextlib import redirect_stderr, redirect_stdout
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from slinky_topology.cli import main
from slinky_topology.sources import fabric_file, k8s_nodes

if TYPE_CHECKING:
    from pathlib import Path

GOOD_TOPOLOGY = "- topology: t\n  cluster_default: true\n  flat: true\n"

# Subcommands by the input kind they read; "{in}" is the input file, "{good}" a valid topology.
FABRIC: list[tuple[str, ...]] = [
    ("generate", "--fabric", "{in}"),
    ("generate", "--fabric", "{in}", "--format", "topology.conf-block"),
    ("annotations", "--fabric", "{in}", "--format", "topology.conf-tree"),
    ("explain", "n1", "--fabric", "{in}"),
]
NODES: list[tuple[str, ...]] = [
    ("generate", "--from-nodes", "{in}"),
    ("annotations", "--from-nodes", "{in}"),
    ("generate", "--from-nodes", "{in}", "--preset", "gfd", "--shape", "static"),
    ("explain", "n1", "--from-nodes", "{in}", "--label-map", "leaf=l,spine=s,accelerator=d"),
]
IB: list[tuple[str, ...]] = [
    ("generate", "--ibnetdiscover", "{in}", "--format", "topology.conf-tree")
]
TOPOLOGY: list[tuple[str, ...]] = [("check", "{in}")]
ANNOTATIONS: list[tuple[str, ...]] = [("check", "{good}", "--annotations", "{in}")]
EVERY = FABRIC + NODES + IB + TOPOLOGY + ANNOTATIONS


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz")
    (path / "good.yaml").write_text(GOOD_TOPOLOGY)
    return path


def _ends_cleanly(workdir: Path, argv: tuple[str, ...], content: bytes, suffix: str) -> None:
    """Run ``argv`` on ``content`` and check the invariant of the module docstring."""
    path = workdir / f"input{suffix}"
    path.write_bytes(content)
    args = [
        a.replace("{in}", str(path)).replace("{good}", str(workdir / "good.yaml")) for a in argv
    ]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    text = err.getvalue()
    assert "Traceback" not in text
    lines = [ln for ln in text.splitlines() if not ln.startswith("warning: ")]
    if code == 0:
        assert lines == [], text
    elif code == 1:
        assert lines, text
        for line in lines:
            assert line.startswith(f"error: {path}"), text
    else:
        assert code == 2, (code, text)
        assert len(lines) == 1 and lines[0].startswith("slinky-topology"), text
        assert ": error: " in lines[0] and lines[0].endswith(" --help"), text


def _suffix(argv: tuple[str, ...]) -> str:
    return ".json" if "--annotations" in argv or "--from-nodes" in argv else ".yaml"


# ------------------------------------------------------------------ random bytes and YAML

_TOKENS = st.sampled_from(
    [
        "- ",
        ": ",
        "? ",
        "&a ",
        "*a",
        "&b ",
        "*b",
        "!!str ",
        "!!int ",
        "!!binary ",
        "!!set ",
        "!!python/tuple ",
        "[",
        "]",
        "{",
        "}",
        ", ",
        "\n",
        "\n  ",
        "\n    ",
        "\t",
        "'",
        '"',
        "|\n  ",
        ">-\n  ",
        "#",
        "---\n",
        "...\n",
        "%YAML 1.1\n",
        "<<: ",
        "~",
        "null",
        "true",
        ".inf",
        "-.inf",
        ".nan",
        "0x1F",
        "1e400",
        "2020-13-01",
        "9" * 60,
        "n[0-999999][0-9999]",
        "n[1-",
        "name",
        "nodes",
        "spec",
        "items",
        "metadata",
        "labels",
        "topology",
        "tree",
        "block",
        "switches",
        "block_sizes",
        "blocks",
        "\x00",
        "\ufeff",
        "\u2028",
        "é",
    ]
)
_yaml_soup = st.lists(_TOKENS, max_size=40).map("".join)

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["n[1-4]", "n[0-999999][0-999999]", "t:u", "", "a,b", "-"])
)
_json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


def _rarely(draw: st.DrawFn, per_mille: int) -> bool:
    """True about ``per_mille`` times in 1000 (hypothesis leans to small integers, so small
    means "no")."""
    return draw(st.integers(0, 999)) >= 1000 - per_mille


@st.composite
def _documents(draw: st.DrawFn, values: st.SearchStrategy[Any]) -> bytes:
    """``values`` written as JSON, block YAML or flow YAML, sometimes cut short."""
    value = draw(values)
    style = draw(st.sampled_from(["json", "block", "flow"]))
    if style == "json":
        text = json.dumps(value)
    else:
        text = yaml.safe_dump(value, default_flow_style=style == "flow", allow_unicode=True)
    if _rarely(draw, 100):
        text = text[: len(text) - draw(st.integers(1, max(1, len(text))))]
    return text.encode("utf-8", "surrogatepass")


@example(b"!!int", FABRIC[0])  # PyYAML's constructors raise IndexError, KeyError,
@example(b"!!bool x", NODES[0])  # AttributeError on these; found by the deep profile
@example(b"!!timestamp x", TOPOLOGY[0])
@example(b"a: 2020-13-01", ANNOTATIONS[0])
@given(
    st.binary(max_size=400) | _yaml_soup.map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from(EVERY),
)
def test_random_bytes_end_cleanly(workdir: Path, content: bytes, argv: tuple[str, ...]) -> None:
    """Random bytes and YAML token soup, to every subcommand: see the module invariant."""
    _ends_cleanly(workdir, argv, content, _suffix(argv))


@given(_documents(_json_values), st.sampled_from(EVERY))
def test_random_yaml_ends_cleanly(workdir: Path, content: bytes, argv: tuple[str, ...]) -> None:
    """Random well-formed JSON/YAML documents (some cut short), to every subcommand: see the
    module invariant."""
    _ends_cleanly(workdir, argv, content, _suffix(argv))


# ------------------------------------------------------------------ schema-shaped junk

# Valid values first (hypothesis shrinks towards them), then the odd ones junk may pick.
_GOOD_HOSTLISTS = ["n1", "n[1-4]", "gpu[0001-0018]", "r[1-2]n[1-3]", "n[1-2],n[2-3]", "n[01-18]"]
_BAD_HOSTLISTS = [
    "n[0-999999][0-999999]",
    "n[0-70000]",
    "n[0-40000],m[0-40000]",
    "n[1-",
    "n]",
    "n[4-1]",
    "",
    "n 1",
    "n[" + "9" * 70 + "]",
    "n[[1]]",
    "a,,b",
    "n[1-2]x[a]",
]
_HOSTLISTS = st.sampled_from(_GOOD_HOSTLISTS + _BAD_HOSTLISTS)
_GOOD_NAMES = ["a", "b", "leaf1", "spine", "r1", "rack-2", "t", "n1"]
_NAMES = st.sampled_from([*_GOOD_NAMES, "x" * 70, "", "a b", "a:b", "é"])


def _junk() -> st.SearchStrategy[Any]:
    return _json_values


@st.composite
def _shaped(
    draw: st.DrawFn, schema: dict[str, Any], root: dict[str, Any], per_mille: int, depth: int = 0
) -> Any:
    """A value shaped like ``schema`` (a JSON Schema node) with junk at about ``per_mille``/1000
    of its places: a wrong type, a bad hostlist or name, an unknown key."""

    def odd() -> bool:
        return _rarely(draw, per_mille)

    if depth > 8 or odd():
        return draw(_junk())
    ref = schema.get("$ref")
    if ref is not None:
        name = ref.rsplit("/", 1)[-1]
        if name == "hostlist":
            return draw(_HOSTLISTS if odd() else st.sampled_from(_GOOD_HOSTLISTS))
        if name == "name":
            return draw(_NAMES if odd() else st.sampled_from(_GOOD_NAMES))
        return draw(_shaped(root["definitions"][name], root, per_mille, depth + 1))
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    if "oneOf" in schema:
        return draw(
            st.sampled_from(schema["oneOf"]).flatmap(
                lambda s: _shaped(s, root, per_mille, depth + 1)
            )
        )
    kind = schema.get("type")
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ()))
        out: dict[str, Any] = {}
        for key, sub in props.items():
            if key in required or draw(st.booleans()):
                out[key] = draw(_shaped(sub, root, per_mille, depth + 1))
        if odd():
            out[draw(st.text(max_size=6))] = draw(_junk())
        return out
    if kind == "array":
        item = schema.get("items", {})
        return draw(st.lists(_shaped(item, root, per_mille, depth + 1), max_size=4))
    if kind == "integer":
        if odd():
            return draw(st.sampled_from([10**30, 2.0, 1.5, -1, 0, float("inf")]))
        return draw(st.integers(1, 72))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "string":
        return draw(st.sampled_from(["25.05", "25.11", "24.11", "x"]))
    return draw(_junk())


# A third of the documents carry no junk (they reach the layout), the rest some.
_fabrics = st.sampled_from([0, 0, 20, 100]).flatmap(
    lambda rate: _shaped(fabric_file.schema(), fabric_file.schema(), rate)
)

_LABEL_KEYS = sorted(
    {k for p in k8s_nodes.PRESETS.values() for k in (*p.tiers, *p.domains)} | {"l", "s", "d"}
)


@st.composite
def _node_lists(draw: st.DrawFn) -> Any:
    """``kubectl get nodes -o json``-shaped documents with junk in places."""

    def node(i: int) -> Any:
        if _rarely(draw, 60):
            return draw(_junk())
        labels: Any = {
            k: draw(st.sampled_from(["a", "b", "x.1", "x.2", "", "a b", "..."]))
            for k in draw(st.lists(st.sampled_from(_LABEL_KEYS), max_size=4, unique=True))
        }
        if _rarely(draw, 60):
            labels = draw(_junk())
        meta: Any = {
            "name": draw(st.sampled_from([f"n{i}", "n1", "n[1]", "", "a,b"])),
            "labels": labels,
        }
        if _rarely(draw, 60):
            meta = draw(_junk())
        return {"kind": "Node", "metadata": meta}

    items = [node(i) for i in range(draw(st.integers(0, 6)))]
    if _rarely(draw, 150):
        return {"items": draw(_junk())}
    if _rarely(draw, 150):
        return items
    return {"apiVersion": "v1", "kind": "List", "items": items}


@st.composite
def _topology_yaml(draw: st.DrawFn) -> Any:
    """topology.yaml-shaped lists: tree, block and flat items with junk in places."""

    def maybe(value: Any) -> Any:
        return draw(_junk()) if _rarely(draw, 80) else value

    items = []
    for _ in range(draw(st.integers(0, 3))):
        item: dict[str, Any] = {"topology": maybe(draw(_NAMES))}
        if draw(st.booleans()):
            item["cluster_default"] = maybe(draw(st.booleans()))
        kind = draw(st.sampled_from(["tree", "block", "flat", "ring"]))
        if kind == "tree":
            switches = [
                {
                    "switch": maybe(draw(_NAMES)),
                    "children": maybe(draw(_HOSTLISTS)),
                    "nodes": maybe(draw(_HOSTLISTS)),
                }
                for _ in range(draw(st.integers(0, 3)))
            ]
            item["tree"] = maybe({"switches": maybe(switches)})
        elif kind == "block":
            blocks = [
                {"block": maybe(draw(_NAMES)), "nodes": maybe(draw(_HOSTLISTS))}
                for _ in range(draw(st.integers(0, 3)))
            ]
            item["block"] = maybe(
                {
                    "block_sizes": maybe(draw(st.lists(st.integers(-1, 40), max_size=3))),
                    "blocks": maybe(blocks),
                }
            )
        else:
            item[kind] = maybe(True)
        items.append(maybe(item))
    return items


_CONF_LINES = st.one_of(
    st.builds("SwitchName={} Switches={} Nodes={}".format, _NAMES, _HOSTLISTS, _HOSTLISTS),
    st.builds("SwitchName={} Nodes={}".format, _NAMES, _HOSTLISTS),
    st.builds("BlockName={} Nodes={}".format, _NAMES, _HOSTLISTS),
    st.builds(
        "BlockSizes={}".format, st.sampled_from(["1", "2,4", "a,b", "-1", "9" * 30, "", "4,2"])
    ),
    st.builds("{}={}".format, st.text(string.ascii_letters, max_size=8), st.text(max_size=8)),
    st.sampled_from(["# comment", "", "SwitchName", "LinkSpeed=1", "SwitchName=a SwitchName=b"]),
)
_topology_conf = st.lists(_CONF_LINES, max_size=8).map("\n".join)

_GUIDS = st.sampled_from(["S-0001", "S-0002", "S-0003", "H-0100", "H-0101", "S-zz", "R-0005"])
_IB_LINES = st.one_of(
    st.builds(
        'Switch 36 "{}" # "{}"'.format,
        _GUIDS,
        st.sampled_from(["MF0;leaf01:MQM", "spine", "", "a b"]),
    ),
    st.builds(
        'Ca 1 "{}" # "{}"'.format, _GUIDS, st.sampled_from(["gpu01 mlx5_0", "n[1] x", "", "a,b c"])
    ),
    st.builds('[{}] "{}"[{}]'.format, st.integers(0, 40), _GUIDS, st.integers(0, 40)),
    st.sampled_from(["vendid=0x2c9", "#", "", "junk line", "switchguid=0x1(1)"]),
)
_ibnetdiscover = st.lists(_IB_LINES, max_size=12).map("\n".join)

_annotations = st.dictionaries(
    st.sampled_from(["n1", "n2", "", "a b"]),
    st.sampled_from(["t:default", "", "t:", "t:::", "x:y,x:z", "t:a:b"]) | _junk(),
    max_size=4,
)


def _encoded(values: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    return _documents(values)


@given(_encoded(_fabrics), st.sampled_from(FABRIC))
def test_fabric_shaped_junk_ends_cleanly(
    workdir: Path, content: bytes, argv: tuple[str, ...]
) -> None:
    """Fabric files drawn from fabric.schema.json, wrong in places: see the module invariant."""
    _ends_cleanly(workdir, argv, content, ".yaml")


@given(_encoded(_node_lists()), st.sampled_from(NODES))
def test_node_list_shaped_junk_ends_cleanly(
    workdir: Path, content: bytes, argv: tuple[str, ...]
) -> None:
    """Node lists with odd names, labels and shapes: see the module invariant."""
    _ends_cleanly(workdir, argv, content, ".json")


@given(
    st.one_of(
        _encoded(_topology_yaml()).map(lambda b: (b, ".yaml")),
        _topology_conf.map(lambda t: (t.encode(), ".conf")),
        _encoded(_annotations).map(lambda b: (b, ".json")),
        _ibnetdiscover.map(lambda t: (t.encode(), ".ib")),
    )
)
def test_file_shaped_junk_ends_cleanly(workdir: Path, content_suffix: tuple[bytes, str]) -> None:
    """topology.yaml, topology.conf, annotations and ibnetdiscover look-alikes, each to the
    subcommand that reads it: see the module invariant."""
    content, suffix = content_suffix
    readers: dict[str, list[tuple[str, ...]]] = {
        ".yaml": TOPOLOGY,
        ".conf": TOPOLOGY,
        ".json": ANNOTATIONS,
        ".ib": IB,
    }
    argvs = readers[suffix]
    for argv in argvs:
        _ends_cleanly(workdir, argv, content, suffix)


_FLAG_WORDS = st.sampled_from(
    [
        "generate",
        "annotations",
        "check",
        "explain",
        "--fabric",
        "default",
        "--from-nodes",
        "--ibnetdiscover",
        "--format",
        "topology.yaml",
        "topology.conf-tree",
        "values",
        "svg",
        "--shape",
        "static",
        "dynamic",
        "--check",
        "--preset",
        "gfd",
        "auto",
        "zz",
        "--label-map",
        "leaf=a",
        "x",
        "--slurm-name-key",
        "--node-selector",
        "a=b",
        "novalue",
        "--ib-node-regex",
        "(",
        "^gpu",
        "--annotations",
        "--version",
        "-h",
        "--",
        "-",
        "n1",
        "gpu0001",
    ]
)
_flag_text = st.text(string.ascii_letters + string.digits + "-=,[]().^", max_size=8).filter(
    lambda t: not t.startswith(("-o", "--o", "--fr"))  # no output flag, no --from-cluster
)


@given(st.lists(_FLAG_WORDS | _flag_text, max_size=8))
def test_random_flags_end_cleanly(workdir: Path, argv: list[str]) -> None:
    """Random command lines (never -o, never --from-cluster): exit 0, 1 or 2, no traceback, and a
    usage error is one line."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    text = err.getvalue()
    assert code in (0, 1, 2) and "Traceback" not in text
    lines = [ln for ln in text.splitlines() if not ln.startswith("warning: ")]
    if code == 2:
        assert len(lines) == 1 and ": error: " in lines[0], text
    elif code == 1:
        assert lines and all(ln.startswith("error: ") for ln in lines), text
