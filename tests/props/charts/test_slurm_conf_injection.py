"""Property test: no slurm-cluster value smuggles a setting into a Slurm config file.

Invariant: put strings with line breaks, carriage returns, other control characters, whitespace,
``#``, ``\\`` or ``,`` followed by a setting (``SlurmUser=root``, ``AuthType=auth/none``) into any
string value or settings-map key of slurm-cluster (one to three at a time). Then either Helm
refuses the values with a message naming one of those values (a schema location under its path,
or its dotted path in the chart's own message), or the render succeeds and the settings Slurm
would read from what the chart hands the operator (slurm.conf: ``Controller.spec.extraConf``,
ClusterName, SlurmctldHost and the NodeSet partition lines; the ``slurmd --conf`` node lines;
slurmdbd.conf: ``Accounting.spec.extraConf`` and the storage settings) are those of the baseline
render with every scheduling setting filled in (the chart's own vocabulary) plus the keys the
values name themselves (settings-map keys, and the settings of the two keys documented as raw
lines, ``controller.extraConf`` and ``accounting.extraConf``).

Slurm's parser is modelled conservatively: every Unicode line break ends a line, ``#`` starts a
comment, every whitespace character separates ``Key=value`` tokens, and on a ``PartitionName=``
or ``NodeName=`` line only the first token is a global setting.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st

from slinky_harness.helm import charts, valuegen
from slinky_harness.helm import client as helm
from slinky_harness.helm.values import merge
from slinky_harness.k8s import schemas as kubeschema

CHART = next(c for c in charts.discover_charts() if c.name == "slurm-cluster")
NEWEST = kubeschema.newest_version()
SCHEMA: dict[str, Any] = json.loads((CHART.path / "values.schema.json").read_text())

BASE: dict[str, Any] = {
    "accounting": {"enabled": True},
    "partitions": {"p1": {"nodesets": ["ALL"], "config": "MaxTime=UNLIMITED", "topology": "t1"}},
    "controller": {"extraConfMap": {"MinJobAge": 300}},
    "scheduling": {
        "preset": "fairshare",  # opt-in: every scheduling line is live
        "schedulerParameters": {"bf_window": 100},
        "priority": {"flags": ["MAX_TRES"]},
    },
    "topology": {"params": ["SwitchAsNodeRank"], "yaml": "- topology: t1\n  flat: true\n"},
    "nodesets": {"compute": {"extraConfMap": {"Features": ["ib"]}, "gpu": {"count": 1}}},
}
"""Values that switch on every path to a Slurm config file, so that drawn values are live."""

RAW_LINES = {("controller", "extraConf"), ("accounting", "extraConf")}
"""Keys documented as raw config lines: their lines are what the values ask for."""

SLURM_KEYS = {
    "clusterName",
    "externalConfig",
    "storageConfig",
    "extraConf",
    "extraConfMap",
    "scheduling",
    "partitions",
    "partitionDefaults",
    "partition",
    "topology",
    "gpu",
}
"""A slot under one of these keys reaches a Slurm config file."""
BLOCK_KEYS = {"partitionname", "nodename", "nodeset", "downnodes", "frontendname", "switchname"}
INJECTED = ("SlurmUser=root", "AuthType=auth/none")
SEPARATORS = ("\n", "\r", "\r\n", " ", "\t", "\x0b", "\x0c", "#", "\\\n", ",", "\x85", "\u2028")
KEY = "<key>"
"""Marks a slot whose drawn string becomes a map key (with value ``1``)."""

Path = tuple[str, ...]


# -- where strings can go -------------------------------------------------------------------------


def _takes_string(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "string" or (isinstance(kind, list) and "string" in kind)


def _subschemas(node: dict[str, Any]) -> list[dict[str, Any]]:
    node = valuegen.resolve(SCHEMA, node)
    found = [node]
    for combinator in ("allOf", "oneOf", "anyOf"):
        for sub in node.get(combinator, []):
            found += _subschemas(sub)
    return found


def slots(node: dict[str, Any], base: Any, path: Path = ()) -> list[Path]:
    """Every path of ``values`` that takes a string: leaves, list items (as the whole list) and
    map keys (ending in :data:`KEY`), through map entries of ``base`` (or an entry ``s1``)."""
    found: list[Path] = []
    for sub in _subschemas(node):
        if _takes_string(sub) and path:
            found.append(path)
        items = sub.get("items")
        if (
            sub.get("type") == "array"
            and isinstance(items, dict)
            and any(_takes_string(i) for i in _subschemas(items))
        ):
            found.append(path)
        for key, prop in (sub.get("properties") or {}).items():
            if key != "global":
                child = base.get(key) if isinstance(base, dict) else None
                found += slots(prop, child, (*path, key))
        additional = sub.get("additionalProperties")
        if isinstance(additional, dict) and additional:
            found.append((*path, KEY))
            entries = list(base) if isinstance(base, dict) and base else ["s1"]
            entry = entries[0]
            found += slots(
                additional, base.get(entry) if isinstance(base, dict) else None, (*path, entry)
            )
    return sorted(set(found))


def _defaults() -> dict[str, Any]:
    data: dict[str, Any] = charts.load_yaml(CHART.path / "values.yaml") or {}
    return data


ALL_SLOTS = slots(SCHEMA, merge(_defaults(), BASE))
SLURM_SLOTS = [s for s in ALL_SLOTS if SLURM_KEYS.intersection(s)]
OTHER_SLOTS = [s for s in ALL_SLOTS if not SLURM_KEYS.intersection(s)]


def place(values: dict[str, Any], slot: Path, text: str) -> dict[str, Any]:
    """``values`` with ``text`` at ``slot``: a list for list slots, a map key for key slots."""
    current: Any = values
    for key in slot[:-1] if slot[-1] == KEY else slot:
        current = current.get(key) if isinstance(current, dict) else None
    node = SCHEMA
    for key in slot:
        node = _child(node, "*" if key == KEY else key)
    if slot[-1] == KEY:
        # the entry keeps a value of the map's own kind: an existing entry, an object, a string or 1
        entries = list(current.values()) if isinstance(current, dict) else []
        if entries:
            entry: Any = copy.deepcopy(entries[0])
        elif any(s.get("type") == "object" or "properties" in s for s in _subschemas(node)):
            entry = {}
        elif any(s.get("type") == "string" for s in _subschemas(node)):
            entry = "x"
        else:
            entry = 1
        return valuegen.set_path(values, slot[:-1], {text: entry})
    takes_list = any(s.get("type") == "array" for s in _subschemas(node))
    takes_str = any(_takes_string(s) for s in _subschemas(node))
    value: Any = [text] if takes_list and (not takes_str or isinstance(current, list)) else text
    return valuegen.set_path(values, slot, value)


def _child(node: dict[str, Any], key: str) -> dict[str, Any]:
    for sub in _subschemas(node):
        props = sub.get("properties") or {}
        if key in props:
            return dict(props[key])
        additional = sub.get("additionalProperties")
        if isinstance(additional, dict) and additional:
            return additional
    return {}


# -- what Slurm would read --------------------------------------------------------------------------


def settings_of(text: str, *, first_line_is_block: bool = False) -> set[str]:
    """Global setting names Slurm would read from ``text`` (lower case), conservatively."""
    keys: set[str] = set()
    for index, line in enumerate(text.splitlines()):
        tokens = line.split("#", 1)[0].split()
        if not tokens:
            continue
        head = tokens[0].split("=", 1)[0].lower()
        block = head in BLOCK_KEYS or (index == 0 and first_line_is_block)
        for token in tokens[:1] if block else tokens:
            if "=" in token:
                keys.add(token.split("=", 1)[0].lower())
    return keys


def slurm_settings(docs: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for doc in docs:
        spec = doc.get("spec") or {}
        kind = doc.get("kind")
        if kind == "Controller":
            found |= settings_of(str(spec.get("extraConf", "")))
            found |= settings_of(f"ClusterName={spec.get('clusterName', '')}")
            if spec.get("external"):
                found |= settings_of(f"SlurmctldHost={spec['externalConfig']['host']}")
        elif kind == "NodeSet":
            name = doc["metadata"]["name"]
            part = spec.get("partition") or {}
            if part.get("enabled"):
                found |= settings_of(f"PartitionName={name} Nodes={name} {part.get('config', '')}")
            found |= settings_of(f"NodeName={name} {spec.get('extraConf', '')}")
        elif kind == "Accounting":
            found |= settings_of(str(spec.get("extraConf", "")))
            storage = spec.get("storageConfig") or {}
            for key, field in (
                ("StorageHost", "host"),
                ("StorageLoc", "database"),
                ("StorageUser", "username"),
            ):
                if field in storage:
                    found |= settings_of(f"{key}={storage[field]}")
    return found


SETTINGS_MAPS = (("controller", "extraConfMap"), ("accounting", "extraConfMap"))
"""Maps whose keys are global settings of slurm.conf or slurmdbd.conf."""


def asked_for(values: dict[str, Any]) -> set[str]:
    """Setting names the values name themselves: settings-map keys and raw lines."""
    keys: set[str] = set()
    for section, key in SETTINGS_MAPS:
        keys |= {str(k).lower() for k in (values.get(section) or {}).get(key) or {}}
    for section, key in RAW_LINES:
        raw = (values.get(section) or {}).get(key) or []
        for line in raw.splitlines() if isinstance(raw, str) else raw:
            keys |= settings_of(str(line))
    return keys


# -- the property -----------------------------------------------------------------------------------

FULL = merge(
    BASE,
    {
        "scheduling": {
            "priority": {"calcPeriod": "5", "weightTRES": "CPU=1", "weights": {"assoc": 1}},
            "preemption": {"exemptTime": "1"},
        }
    },
)
"""BASE with every optional scheduling setting filled in: the chart's own vocabulary."""
CHART_SETTINGS: set[str] = {"slurmctldhost"}  # written only for an external slurmctld
for _values in (BASE, FULL):
    _render = helm.template(CHART.path, _values, kube_version=NEWEST)
    assert _render.ok, _render.describe()
    CHART_SETTINGS |= slurm_settings(_render.docs)
assert not CHART_SETTINGS & {s.split("=")[0].lower() for s in INJECTED}

hostile = st.one_of(
    st.builds(
        lambda pre, sep, setting: pre + sep + setting,
        st.sampled_from(["", "a", "7-0", "x1", "MaxTime"]),
        st.sampled_from(SEPARATORS),
        st.sampled_from(INJECTED),
    ),
    st.text(
        alphabet=st.characters(codec="utf-8", categories=("Cc", "Zs", "Zl", "Lu", "Nd", "Po")),
        min_size=1,
        max_size=10,
    ),
    st.sampled_from(["a", "abc", "t1"]),
)


def _dotted(slot: Path) -> str:
    return ".".join(k for k in slot if k != KEY)


def _names_a_slot(result: helm.HelmResult, placed: list[tuple[Path, str]]) -> bool:
    stderr = result.stderr
    pointers = ["/" + "/".join(k for k in slot if k != KEY) for slot, _ in placed]
    locations = [e.pointer for e in result.schema_errors(groups=True) if e.pointer]
    if locations:
        return all(
            any(loc.startswith(p) or p.startswith(loc) for p in pointers) for loc in locations
        )
    if result.template_failure() is None:
        return False
    return any(
        _dotted(slot) in stderr or ".".join(_dotted(slot).split(".")[:-1]) in stderr
        for slot, _ in placed
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(SLURM_SLOTS), min_size=1, max_size=2, unique=True),
    st.lists(st.sampled_from(OTHER_SLOTS), max_size=1),
    st.data(),
)
def test_values_never_add_settings_to_slurm_config(
    slurm_slots: list[Path], other_slots: list[Path], data: st.DataObject
) -> None:
    """Invariant (module docstring): Slurm config files only grow by the settings values ask for."""
    values = copy.deepcopy(BASE)
    placed: list[tuple[Path, str]] = []
    for slot in slurm_slots + other_slots:
        text = data.draw(hostile, label=".".join(slot))
        values = place(values, slot, text)
        placed.append((slot, text))
    note("values file:\n" + helm.values_text(values))
    result = helm.template(CHART.path, values, kube_version=NEWEST)
    if not result.ok:
        assert _names_a_slot(result, placed), (
            f"refused without naming {[_dotted(s) for s, _ in placed]}:\n{result.stderr}"
        )
        return
    extra = slurm_settings(result.docs) - CHART_SETTINGS - asked_for(values)
    assert not extra, f"settings nobody asked for reach Slurm: {sorted(extra)}"
