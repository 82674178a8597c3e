"""Convert a CRD's ``openAPIV3Schema`` into a JSON Schema (draft 2020-12).

The render tier validates every ``slinky.slurm.net`` object our charts render with the
result, so the conversion mirrors what the API server accepts:

- ``nullable: true`` adds ``null`` to the type (and to ``enum``),
- ``x-kubernetes-int-or-string`` allows integers and strings,
- ``x-kubernetes-preserve-unknown-fields`` leaves the object open (and untyped nodes
  accept anything); every other object with ``properties`` gets
  ``additionalProperties: false`` (``strict``), because the API server would prune an
  unknown field silently (or refuse it under ``kubectl --validate=strict``),
- a property with a ``default`` is not required (the API server defaults before it
  validates), ``format: int32/int64`` become numeric bounds,
- ``x-kubernetes-list-type: set`` becomes ``uniqueItems``; CEL rules are kept as the
  annotation ``x-kubernetes-validations`` (see :mod:`slinky_crdgen.cel`).
"""

from __future__ import annotations

import copy
import re
from datetime import datetime
from typing import Any

import jsonschema as _jsonschema

from slinky_crdgen.errors import SchemaError

__all__ = [
    "DIALECT",
    "FORMAT_CHECKER",
    "crd_to_jsonschema",
    "crd_validator",
    "openapi_to_jsonschema",
    "version_schema",
]

DIALECT = "https://json-schema.org/draft/2020-12/schema"

_BOUNDS = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_COPY = (
    "description",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "multipleOf",
    "uniqueItems",
    "x-kubernetes-validations",
)


def version_schema(crd: dict[str, Any], version: str) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``version`` in ``crd``."""
    try:
        versions = crd["spec"]["versions"]
    except (KeyError, TypeError) as exc:
        raise SchemaError("not a CustomResourceDefinition: no spec.versions") from exc
    for entry in versions:
        if isinstance(entry, dict) and entry.get("name") == version:
            try:
                schema = entry["schema"]["openAPIV3Schema"]
            except (KeyError, TypeError) as exc:
                raise SchemaError(f"version {version} has no openAPIV3Schema") from exc
            if not isinstance(schema, dict):
                raise SchemaError(f"version {version}: openAPIV3Schema is not an object")
            return schema
    names = [e.get("name") for e in versions if isinstance(e, dict)]
    raise SchemaError(f"CRD has no version {version!r} (has {names})")


def openapi_to_jsonschema(node: dict[str, Any], *, strict: bool = True) -> dict[str, Any]:
    """Convert one structural OpenAPI v3 schema node (recursively)."""
    if not isinstance(node, dict):
        raise SchemaError(f"schema node is not an object: {node!r}")
    out: dict[str, Any] = {}
    nullable = node.get("nullable") is True
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True

    if int_or_string:
        types: list[str] | None = ["integer", "string"]
    elif "type" in node:
        types = [str(node["type"])]
    else:
        types = None  # schemaless (preserve-unknown-fields): anything goes
    if types is not None:
        if nullable:
            types.append("null")
        out["type"] = types[0] if len(types) == 1 else types

    for key in _COPY:
        if key in node:
            out[key] = copy.deepcopy(node[key])
    if "enum" in node:
        out["enum"] = list(node["enum"]) + ([None] if nullable else [])
    fmt = node.get("format")
    if isinstance(fmt, str):
        if fmt in _BOUNDS:
            low, high = _BOUNDS[fmt]
            out["minimum"] = max(low, out.get("minimum", low))
            out["maximum"] = min(high, out.get("maximum", high))
        else:
            out["format"] = fmt
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True

    props = node.get("properties")
    if isinstance(props, dict):
        out["properties"] = {
            k: openapi_to_jsonschema(v, strict=strict) for k, v in sorted(props.items())
        }
        required = [r for r in node.get("required", []) if "default" not in props.get(r, {})]
        if required:
            out["required"] = required
        if strict and not preserve:
            out["additionalProperties"] = False
    elif "required" in node:
        out["required"] = list(node["required"])
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out["additionalProperties"] = openapi_to_jsonschema(extra, strict=strict)
    elif extra is False:
        out["additionalProperties"] = False
    if isinstance(node.get("items"), dict):
        out["items"] = openapi_to_jsonschema(node["items"], strict=strict)
    for key in ("allOf", "anyOf", "oneOf"):
        if key in node and not int_or_string:
            out[key] = [openapi_to_jsonschema(sub, strict=False) for sub in node[key]]
    if isinstance(node.get("not"), dict):
        out["not"] = openapi_to_jsonschema(node["not"], strict=False)
    return out


def crd_to_jsonschema(crd: dict[str, Any], version: str, *, strict: bool = True) -> dict[str, Any]:
    """A JSON Schema for whole resources (``apiVersion``, ``kind``, ...) of ``crd``."""
    schema = version_schema(crd, version)
    try:
        group = str(crd["spec"]["group"])
        kind = str(crd["spec"]["names"]["kind"])
    except (KeyError, TypeError) as exc:
        raise SchemaError("CRD without spec.group or spec.names.kind") from exc
    out = openapi_to_jsonschema(schema, strict=strict)
    props = out.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", "const": f"{group}/{version}"}
    props["kind"] = {"type": "string", "const": kind}
    # ObjectMeta is validated by the API server itself; keep it open but typed.
    props["metadata"] = {"type": "object"}
    out["required"] = sorted({*out.get("required", []), "apiVersion", "kind"})
    out["$schema"] = DIALECT
    out["title"] = f"{kind} ({group}/{version})"
    return out


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
#: Format checker for the formats Kubernetes types use (``date-time`` as RFC 3339, like
#: metav1.Time); jsonschema only checks date-time when optional packages are installed.
FORMAT_CHECKER = _jsonschema.FormatChecker(formats=())


@FORMAT_CHECKER.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _RFC3339.match(value):
        return False
    datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    return True


def crd_validator(
    crd: dict[str, Any], version: str, *, strict: bool = True
) -> _jsonschema.Draft202012Validator:
    """A ready validator (with :data:`FORMAT_CHECKER`) for resources of ``crd``."""
    schema = crd_to_jsonschema(crd, version, strict=strict)
    return _jsonschema.Draft202012Validator(schema, format_checker=FORMAT_CHECKER)
