"""Kubernetes OpenAPI definitions converted to structural CRD schemas.

The definitions come from the ``kubernetes-validate`` package, which ships one JSON
Schema (draft 2020-12) set per Kubernetes minor in
``kubernetes-json-schema/v1.<minor>.0-local/_definitions.json``. :class:`Definitions`
turns one definition into the structural OpenAPI v3 subset the API server accepts in a
CRD: every ``$ref`` inlined, ``null`` dropped from type unions, int-or-string and
quantities as ``x-kubernetes-int-or-string``, list and map markers kept, patch and GVK
extensions dropped, schemaless objects marked ``x-kubernetes-preserve-unknown-fields``.
Anything else it does not know raises :class:`DefinitionsError`, so a new construct in
a later Kubernetes release is noticed instead of copied blindly.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

from slinky_crdgen.errors import DefinitionsError

__all__ = ["Definitions", "definitions_path", "int_or_string"]

_PREFIX = "#/$defs/"

#: Keywords copied as they are.
_KEEP = frozenset(
    {
        "format",
        "enum",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "pattern",
        "default",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
    }
)
#: Keywords dropped: strategic-merge-patch hints, GVK tags and union discriminators have
#: no place in a CRD schema (the API server rejects unknown JSONSchemaProps fields).
_DROP = frozenset(
    {
        "x-kubernetes-patch-strategy",
        "x-kubernetes-patch-merge-key",
        "x-kubernetes-group-version-kind",
        "x-kubernetes-unions",
        "$schema",
        "$id",
    }
)
#: Formats the API server knows; int32/int64 and date-time are the ones Kubernetes uses.
_FORMATS = frozenset({"int32", "int64", "date-time", "byte", "double", "float", "date"})
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})


def int_or_string() -> dict[str, Any]:
    """The structural form of an int-or-string value, as controller-gen writes it."""
    return {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }


def definitions_path(version: str) -> Path:
    """Path of ``_definitions.json`` for Kubernetes ``version`` (``"1.36"``)."""
    try:
        root = resources.files("kubernetes_validate")
    except ModuleNotFoundError as exc:
        raise DefinitionsError(
            "the kubernetes-validate package is not installed (it is in the test dependency "
            "group: uv sync --group test)"
        ) from exc
    path = Path(str(root / "kubernetes-json-schema" / f"v{version}.0-local" / "_definitions.json"))
    if not path.is_file():
        raise DefinitionsError(f"kubernetes-validate has no definitions for Kubernetes {version}")
    return path


def _non_null_type(node: dict[str, Any], where: str) -> str | None:
    raw = node.get("type")
    if raw is None:
        return None
    types = [raw] if isinstance(raw, str) else [t for t in raw if t != "null"]
    if len(types) != 1 or types[0] not in _TYPES:
        raise DefinitionsError(f"{where}: unsupported type {raw!r}")
    return str(types[0])


def _union_types(node: dict[str, Any], key: str, where: str) -> set[str]:
    types: set[str] = set()
    for alt in node[key]:
        t = _non_null_type(alt, where)
        if t is None or set(alt) - {"type"}:
            raise DefinitionsError(f"{where}: unsupported {key} alternative {alt!r}")
        types.add(t)
    return types


class Definitions:
    """One Kubernetes minor's OpenAPI definitions, converted on demand."""

    def __init__(
        self,
        version: str,
        *,
        descriptions: bool = True,
        overlays: dict[str, dict[str, Any]] | None = None,
        path: Path | None = None,
    ) -> None:
        self.version = version
        self.descriptions = descriptions
        self.overlays = overlays or {}
        self.path = path or definitions_path(version)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DefinitionsError(f"cannot read {self.path}: {exc}") from exc
        defs = data.get("$defs") if isinstance(data, dict) else None
        if not isinstance(defs, dict):
            raise DefinitionsError(f"{self.path}: no $defs object")
        self._defs: dict[str, Any] = defs
        for name in self.overlays:
            if name not in defs:
                raise DefinitionsError(f"overlay for unknown definition {name!r}")
        self._cache: dict[str, dict[str, Any]] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._defs

    def structural(self, name: str) -> dict[str, Any]:
        """The structural schema of definition ``name`` (a fresh copy)."""
        if name not in self._cache:
            self._cache[name] = self._definition(name, ())
        return copy.deepcopy(self._cache[name])

    # -- conversion ---------------------------------------------------------------------

    def _definition(self, name: str, stack: tuple[str, ...]) -> dict[str, Any]:
        if name not in self._defs:
            raise DefinitionsError(f"unknown Kubernetes definition {name!r}")
        if name in stack:
            chain = " -> ".join((*stack, name))
            raise DefinitionsError(f"recursive definition cannot be inlined: {chain}")
        out = self._node(self._defs[name], (*stack, name), name)
        overlay = self.overlays.get(name)
        if overlay:
            _apply_overlay(out, overlay, name)
        return out

    def _node(self, node: object, stack: tuple[str, ...], where: str) -> dict[str, Any]:
        if not isinstance(node, dict):
            raise DefinitionsError(f"{where}: expected a schema object")
        if "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str) or not ref.startswith(_PREFIX):
                raise DefinitionsError(f"{where}: unsupported $ref {ref!r}")
            resolved = self._definition(ref[len(_PREFIX) :], stack)
            extra = set(node) - {"$ref", "description", *_DROP}
            if extra:
                raise DefinitionsError(f"{where}: unsupported keys beside $ref: {sorted(extra)}")
            if self.descriptions and isinstance(node.get("description"), str):
                resolved["description"] = node["description"]
            return resolved

        out: dict[str, Any] = {}
        if self.descriptions and isinstance(node.get("description"), str):
            out["description"] = node["description"]
        for key in ("oneOf", "anyOf"):
            if key in node:
                types = _union_types(node, key, where)
                if types not in ({"integer", "string"}, {"number", "string"}):
                    raise DefinitionsError(f"{where}: unsupported {key} of {sorted(types)}")
                # IntOrString and Quantity: the API server's int-or-string.
                out.update(int_or_string())
        node_type = _non_null_type(node, where)
        if node_type is not None:
            out["type"] = node_type
        for key, value in node.items():
            if key in ("description", "type", "oneOf", "anyOf") or key in _DROP:
                continue
            if key == "properties":
                out["properties"] = {
                    prop: self._node(sub, stack, f"{where}.{prop}") for prop, sub in value.items()
                }
            elif key == "items":
                out["items"] = self._node(value, stack, f"{where}[]")
            elif key == "additionalProperties":
                if isinstance(value, bool):
                    if value:
                        out["x-kubernetes-preserve-unknown-fields"] = True
                else:
                    out["additionalProperties"] = self._node(value, stack, f"{where}{{}}")
            elif key == "required":
                out["required"] = list(value)
            elif key == "format":
                if value in _FORMATS:
                    out["format"] = value
            elif key == "enum":
                out["enum"] = [v for v in value if v is not None]
            elif key in _KEEP:
                out[key] = copy.deepcopy(value)
            else:
                raise DefinitionsError(f"{where}: unsupported keyword {key!r}")
        if out.get("type") == "object" and not {"properties", "additionalProperties"} & set(out):
            # Free-form objects (FieldsV1, RawExtension): keep what the user wrote.
            out["x-kubernetes-preserve-unknown-fields"] = True
        if out.get("type") == "array" and "items" not in out:
            raise DefinitionsError(f"{where}: array without items")
        if "type" not in out and "x-kubernetes-int-or-string" not in out:
            raise DefinitionsError(f"{where}: schema without a type")
        _fix_list_map(out, where)
        return out


def _fix_list_map(node: dict[str, Any], where: str) -> None:
    """Keep ``x-kubernetes-list-type: map`` only when the API server accepts it.

    A CRD's list-map keys must be required or defaulted in the item schema. The published
    definitions omit the Go defaults (``protocol: TCP``); overlays put them back. A key
    that is still neither required nor defaulted downgrades the list to ``atomic`` (the
    whole list is then replaced on server-side apply instead of merged by key).
    """
    if node.get("x-kubernetes-list-type") != "map":
        return
    keys = node.get("x-kubernetes-list-map-keys")
    items = node.get("items", {})
    props = items.get("properties", {})
    required = set(items.get("required", []))
    if not keys or any(k not in props for k in keys):
        raise DefinitionsError(f"{where}: list-map keys {keys!r} are not item properties")
    if all(k in required or "default" in props[k] for k in keys):
        return
    node["x-kubernetes-list-type"] = "atomic"
    del node["x-kubernetes-list-map-keys"]


def _apply_overlay(node: dict[str, Any], overlay: dict[str, Any], where: str) -> None:
    for key, value in overlay.items():
        if key == "properties":
            props = node.get("properties")
            if not isinstance(props, dict) or not isinstance(value, dict):
                raise DefinitionsError(f"overlay {where}: no properties to patch")
            for prop, sub in value.items():
                if prop not in props or not isinstance(sub, dict):
                    raise DefinitionsError(f"overlay {where}: unknown property {prop!r}")
                _apply_overlay(props[prop], sub, f"{where}.{prop}")
        else:
            node[key] = copy.deepcopy(value)
