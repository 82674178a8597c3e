"""The shared definitions (``definitions.yaml``) and ``$ref`` handling.

Annotations, the chart's hand-written part and ``definitions.yaml`` name a definition by its short
name (``$ref: labelMap``); the output spells it ``#/definitions/labelMap`` and carries exactly the
definitions it reaches, so every values.schema.json is self-contained (Helm never fetches a
remote ``$ref``).
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

from slinky_schemagen.errors import SchemaGenError

__all__ = ["PREFIX", "SHARED_FILE", "expand_refs", "load_shared", "reachable", "refs_in"]

PREFIX = "#/definitions/"
SHARED_FILE = Path(__file__).with_name("definitions.yaml")


def expand_refs(node: Any) -> Any:
    """A copy of ``node`` with every short ``$ref`` name spelled ``#/definitions/<name>``."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and not value.startswith("#"):
                out[key] = PREFIX + value
            else:
                out[key] = expand_refs(value)
        return out
    if isinstance(node, list):
        return [expand_refs(item) for item in node]
    return node


def refs_in(node: Any) -> set[str]:
    """Definition names the ``$ref`` values under ``node`` point to (``#/definitions/<name>``)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                if not value.startswith(PREFIX):
                    raise SchemaGenError(
                        f"$ref {value!r} is not a local definition: name one of {SHARED_FILE.name}"
                        " (or of the chart's definitions) as `$ref: <name>`"
                    )
                found.add(value.removeprefix(PREFIX))
            else:
                found |= refs_in(value)
    elif isinstance(node, list):
        for item in node:
            found |= refs_in(item)
    return found


def load_shared(path: Path = SHARED_FILE) -> dict[str, Any]:
    """Name -> schema of every shared definition, ``$ref`` names expanded (a fresh copy)."""
    return copy.deepcopy(_load(path))


@functools.cache
def _load(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SchemaGenError(f"cannot read the shared definitions {path}: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise SchemaGenError(f"{path}: expected a mapping of definition names to schemas")
    expanded: dict[str, Any] = expand_refs(data)
    return expanded


def reachable(schema: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    """The definitions ``schema`` reaches, directly or through other definitions."""
    out: dict[str, Any] = {}
    todo = sorted(refs_in(schema))
    while todo:
        name = todo.pop()
        if name in out:
            continue
        if name not in definitions:
            known = ", ".join(sorted(definitions))
            raise SchemaGenError(f"unknown definition {name!r} in a $ref; known: {known}")
        out[name] = definitions[name]
        todo += sorted(refs_in(definitions[name]) - set(out))
    return out
