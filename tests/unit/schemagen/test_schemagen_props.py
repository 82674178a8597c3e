"""Property test of the generator over random documented values files."""

from __future__ import annotations

import copy
import json
import string
from typing import Any

import jsonschema
from hypothesis import given, note
from hypothesis import strategies as st

from slinky_schemagen.chart import generate_text

KEYS = st.text(string.ascii_lowercase, min_size=1, max_size=6)
LEAVES = st.one_of(
    st.text(string.ascii_letters + " -", max_size=8),
    st.integers(-1000, 1000),
    st.booleans(),
    st.integers(-100, 100).map(lambda i: i + 0.5),
)
VALUES = st.recursive(
    LEAVES, lambda inner: st.dictionaries(KEYS, inner, min_size=1, max_size=4), max_leaves=12
)
TREES = st.dictionaries(KEYS, VALUES, min_size=1, max_size=4)


def to_yaml(values: dict[str, Any], indent: str = "") -> str:
    """A values.yaml with a `# --` comment on every key (JSON scalars are YAML scalars)."""
    out = ""
    for key, value in values.items():
        out += f"{indent}# -- Doc of {key}.\n"
        if isinstance(value, dict):
            out += f"{indent}{key}:\n" + to_yaml(value, indent + "  ")
        else:
            out += f"{indent}{key}: {json.dumps(value)}\n"
    return out


def paths(values: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key path of ``values``, objects and leaves."""
    found = []
    for key, value in values.items():
        found.append((*prefix, key))
        if isinstance(value, dict):
            found += paths(value, (*prefix, key))
    return found


def with_value(values: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(values)
    cursor = out
    for key in path[:-1]:
        cursor = cursor[key]
    cursor[path[-1]] = value
    return out


def get(values: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        values = values[key]
    return values


def wrong(value: Any) -> Any:
    """A value of another JSON type than ``value`` (an integer still passes as a number)."""
    if isinstance(value, str):
        return 7
    if isinstance(value, dict):
        return "not-an-object"
    return "not-a-" + type(value).__name__


@given(TREES)
def test_defaults_pass_unknown_keys_and_wrong_types_fail(values: dict[str, Any]) -> None:
    """Invariant: for any documented values file, the generated schema accepts the file itself,
    refuses an unknown key in every object (the root included), and refuses a value of another
    type at every key."""
    text = to_yaml(values)
    note(text)
    validator = jsonschema.Draft7Validator(generate_text(text, {}, "values.yaml"))
    assert validator.is_valid(values)
    assert not validator.is_valid({**values, "zzunknown": 1})
    for path in paths(values):
        current = get(values, path)
        if isinstance(current, dict):
            assert not validator.is_valid(with_value(values, (*path, "zzunknown"), 1)), path
        assert not validator.is_valid(with_value(values, path, wrong(current))), path
