"""Check that a CRD schema is *structural*, as the API server requires.

Implements the rules of "Specifying a structural schema" in the Kubernetes CRD
documentation plus the checks ``apiextensions.k8s.io/v1`` applies to the extensions:

1. every node has a non-empty ``type``, except nodes with
   ``x-kubernetes-int-or-string: true`` or ``x-kubernetes-preserve-unknown-fields: true``;
2. inside ``allOf``/``anyOf``/``oneOf``/``not`` no ``type``, ``description``, ``default``,
   ``nullable``, ``additionalProperties`` or ``x-kubernetes-*`` extension (the one
   exception is the ``anyOf: [{type: integer}, {type: string}]`` form of int-or-string);
3. no ``$ref``, ``definitions``, ``dependencies``, ``patternProperties``,
   ``additionalItems``, ``id``, ``$schema`` or ``uniqueItems: true``; only known keys;
4. ``additionalProperties`` and ``properties`` are mutually exclusive;
5. an array has ``items`` (one schema), list and map extensions are well formed
   (list-map keys are scalar properties of the items that are required or defaulted, set
   items are scalars or atomic);
6. at the root: ``type: object``, and ``metadata`` restricts nothing but
   ``name``/``generateName`` and has no defaults; ``x-kubernetes-embedded-resource``
   objects declare their type;
7. every ``default`` validates against its own node, unknown fields included.

With ``strict=True`` (the default) it also applies rules the documentation states but
kube-apiserver 1.36 does not enforce, and plain hygiene: every property or item
constrained inside a junctor is specified outside it; no ``type`` beside
``x-kubernetes-int-or-string``; ``additionalProperties`` is a schema (not ``true`` without
preserve-unknown-fields, not ``false``); ``required`` names specified properties; ``enum``
values match the node type; a ``null`` default needs ``nullable``.
"""

from __future__ import annotations

from typing import Any

import jsonschema as _jsonschema

from slinky_crdgen.jsonschema import DIALECT, openapi_to_jsonschema

__all__ = ["ALLOWED_KEYS", "structural_errors"]

#: Fields of ``JSONSchemaProps`` in ``apiextensions.k8s.io/v1``.
ALLOWED_KEYS = frozenset(
    {
        "description",
        "type",
        "format",
        "title",
        "default",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "multipleOf",
        "enum",
        "maxProperties",
        "minProperties",
        "required",
        "items",
        "allOf",
        "oneOf",
        "anyOf",
        "not",
        "properties",
        "additionalProperties",
        "externalDocs",
        "example",
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    }
)
_FORBIDDEN = {
    "$ref": "$ref is not allowed; inline the referenced schema",
    "definitions": "definitions is not allowed",
    "dependencies": "dependencies is not allowed",
    "patternProperties": "patternProperties is not allowed",
    "additionalItems": "additionalItems is not allowed",
    "id": "id is not allowed",
    "$schema": "$schema is not allowed",
    "uniqueItems": "uniqueItems cannot be set to true (use x-kubernetes-list-type: set)",
}
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
_JUNCTORS = ("allOf", "anyOf", "oneOf")
_NOT_IN_JUNCTOR = (
    "type",
    "description",
    "default",
    "nullable",
    "additionalProperties",
    "title",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
)
_REASONS = frozenset(
    {"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"}
)
_SCALARS = frozenset({"string", "integer", "number", "boolean"})


class _Errors(list[str]):
    """Collected messages; :meth:`lint` adds one only in strict mode."""

    def __init__(self, *, strict: bool) -> None:
        super().__init__()
        self.strict = strict

    def lint(self, message: str) -> None:
        if self.strict:
            self.append(message)


def structural_errors(schema: Any, *, strict: bool = True) -> list[str]:
    """Every structural-schema violation of an ``openAPIV3Schema``; empty when valid."""
    errors = _Errors(strict=strict)
    if not isinstance(schema, dict):
        return ["<root>: schema is not an object"]
    if schema.get("type") != "object":
        errors.append("<root>: type must be object")
    for key in ("nullable", "x-kubernetes-int-or-string", "x-kubernetes-embedded-resource"):
        if schema.get(key):
            errors.append(f"<root>: {key} is not allowed at the root")
    _node(schema, "", errors, in_metadata=False)
    meta = schema.get("properties", {}).get("metadata")
    if isinstance(meta, dict):
        _check_root_metadata(meta, errors)
    return list(errors)


def _is_int_or_string_form(sub: list[Any]) -> bool:
    forms = [s.get("type") if isinstance(s, dict) and set(s) == {"type"} else None for s in sub]
    return sorted(f for f in forms if f) == ["integer", "string"] and len(forms) == 2


def _node(node: Any, path: str, errors: _Errors, *, in_metadata: bool) -> None:
    where = path or "<root>"
    if not isinstance(node, dict):
        errors.append(f"{where}: schema node is not an object")
        return
    for key in node:
        if key in _FORBIDDEN and not (key == "uniqueItems" and node[key] is False):
            errors.append(f"{where}: {_FORBIDDEN[key]}")
        elif key not in ALLOWED_KEYS and key not in _FORBIDDEN:
            errors.append(f"{where}: unknown schema keyword {key!r}")

    int_or_string = node.get("x-kubernetes-int-or-string") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    node_type = node.get("type")
    if node_type is None or node_type == "":
        if not (int_or_string or preserve):
            errors.append(
                f"{where}: type is missing (only int-or-string or "
                "preserve-unknown-fields nodes may omit it)"
            )
    elif node_type not in _TYPES:
        errors.append(f"{where}: unknown type {node_type!r}")
    if int_or_string and node_type is not None:
        errors.lint(f"{where}: x-kubernetes-int-or-string nodes must not set type")
    if "x-kubernetes-preserve-unknown-fields" in node and not preserve:
        errors.append(f"{where}: x-kubernetes-preserve-unknown-fields must be true if set")

    props = node.get("properties")
    extra = node.get("additionalProperties")
    if props is not None and extra is not None:
        errors.append(f"{where}: properties and additionalProperties are mutually exclusive")
    if extra is False:
        errors.lint(f"{where}: additionalProperties: false is not allowed")
    if extra is True and not preserve:
        errors.lint(f"{where}: additionalProperties: true needs preserve-unknown-fields")
    if (props is not None or extra is not None) and node_type not in (None, "object"):
        errors.append(f"{where}: properties on a node of type {node_type}")
    if node_type == "array" and not isinstance(node.get("items"), dict):
        errors.append(f"{where}: an array needs items (one schema)")
    if "items" in node and node_type not in (None, "array"):
        errors.append(f"{where}: items on a node of type {node_type}")
    for req in node.get("required", []):
        if props is not None and req not in props:
            errors.lint(f"{where}: required property {req!r} is not specified")

    _check_extensions(node, where, errors)
    _check_enum_and_default(node, where, errors, in_metadata=in_metadata)
    _check_junctors(node, where, errors, int_or_string=int_or_string)

    if isinstance(props, dict):
        for key, sub in sorted(props.items()):
            _node(sub, f"{path}.{key}", errors, in_metadata=in_metadata or key == "metadata")
    if isinstance(extra, dict):
        _node(extra, f"{path}{{*}}", errors, in_metadata=in_metadata)
    if isinstance(node.get("items"), dict):
        _node(node["items"], f"{path}[*]", errors, in_metadata=in_metadata)


def _check_extensions(node: dict[str, Any], where: str, errors: _Errors) -> None:
    list_type = node.get("x-kubernetes-list-type")
    keys = node.get("x-kubernetes-list-map-keys")
    items_raw = node.get("items")
    items: dict[str, Any] = items_raw if isinstance(items_raw, dict) else {}
    if list_type is not None:
        if node.get("type") != "array":
            errors.append(f"{where}: x-kubernetes-list-type on a non-array")
        if list_type not in ("atomic", "set", "map"):
            errors.append(f"{where}: x-kubernetes-list-type must be atomic, set or map")
        if (
            list_type == "set"
            and items.get("type") not in _SCALARS
            and items.get("x-kubernetes-map-type") != "atomic"
        ):
            errors.append(f"{where}: a set's items must be scalars or atomic")
    if list_type == "map":
        if not keys:
            errors.append(f"{where}: a list-map needs x-kubernetes-list-map-keys")
        if items.get("type") != "object":
            errors.append(f"{where}: a list-map's items must be objects")
        item_props = items.get("properties", {})
        required = set(items.get("required", []))
        for key in keys or []:
            prop = item_props.get(key)
            if not isinstance(prop, dict):
                errors.append(f"{where}: list-map key {key!r} is not an item property")
            elif prop.get("type") not in _SCALARS and not prop.get("x-kubernetes-int-or-string"):
                errors.append(f"{where}: list-map key {key!r} must be a scalar")
            elif key not in required and "default" not in prop:
                errors.append(f"{where}: list-map key {key!r} must be required or defaulted")
    elif keys is not None:
        errors.append(f"{where}: x-kubernetes-list-map-keys needs x-kubernetes-list-type: map")
    map_type = node.get("x-kubernetes-map-type")
    if map_type is not None:
        if map_type not in ("atomic", "granular"):
            errors.append(f"{where}: x-kubernetes-map-type must be atomic or granular")
        if node.get("type") != "object":
            errors.append(f"{where}: x-kubernetes-map-type on a non-object")
    if node.get("x-kubernetes-embedded-resource") and node.get("type") != "object":
        errors.append(f"{where}: x-kubernetes-embedded-resource needs type object")
    rules = node.get("x-kubernetes-validations")
    if rules is not None:
        if not isinstance(rules, list):
            errors.append(f"{where}: x-kubernetes-validations must be a list")
            return
        for i, rule in enumerate(rules):
            if (
                not isinstance(rule, dict)
                or not isinstance(rule.get("rule"), str)
                or not (rule["rule"].strip())
            ):
                errors.append(f"{where}: x-kubernetes-validations[{i}] needs a rule")
                continue
            unknown = set(rule) - {
                "rule",
                "message",
                "messageExpression",
                "reason",
                "fieldPath",
                "optionalOldSelf",
            }
            if unknown:
                errors.append(f"{where}: x-kubernetes-validations[{i}]: unknown {sorted(unknown)}")
            if "reason" in rule and rule["reason"] not in _REASONS:
                errors.append(f"{where}: x-kubernetes-validations[{i}]: bad reason")
            msg = rule.get("message")
            if msg is not None and (not isinstance(msg, str) or not msg.strip() or "\n" in msg):
                errors.append(f"{where}: x-kubernetes-validations[{i}]: bad message")


def _check_enum_and_default(
    node: dict[str, Any], where: str, errors: _Errors, *, in_metadata: bool
) -> None:
    if "default" in node:
        if in_metadata:
            errors.append(f"{where}: defaults are not allowed inside metadata")
        if node["default"] is None and not node.get("nullable"):
            errors.lint(f"{where}: a null default needs nullable: true")
        else:
            validator = _jsonschema.Draft202012Validator(
                {"$schema": DIALECT, **openapi_to_jsonschema(node, strict=True)}
            )
            for err in validator.iter_errors(node["default"]):
                errors.append(f"{where}: default {node['default']!r} is invalid: {err.message}")
    if "enum" in node:
        enum = node["enum"]
        if not isinstance(enum, list) or not enum:
            errors.append(f"{where}: enum must be a non-empty list")
        else:
            sub = {k: v for k, v in node.items() if k not in ("enum", "default")}
            validator = _jsonschema.Draft202012Validator(
                {"$schema": DIALECT, **openapi_to_jsonschema(sub, strict=True)}
            )
            for value in enum:
                if next(iter(validator.iter_errors(value)), None) is not None:
                    errors.lint(f"{where}: enum value {value!r} does not match the node type")


def _check_junctors(
    node: dict[str, Any], where: str, errors: _Errors, *, int_or_string: bool
) -> None:
    for key in _JUNCTORS:
        if key not in node:
            continue
        subs = node[key]
        if not isinstance(subs, list):
            errors.append(f"{where}: {key} must be a list")
            continue
        if int_or_string and key == "anyOf" and _is_int_or_string_form(subs):
            continue
        for i, sub in enumerate(subs):
            _junctor_node(sub, node, f"{where}.{key}[{i}]", errors)
    if "not" in node:
        _junctor_node(node["not"], node, f"{where}.not", errors)


def _junctor_node(sub: Any, outer: dict[str, Any], where: str, errors: _Errors) -> None:
    if not isinstance(sub, dict):
        errors.append(f"{where}: schema node is not an object")
        return
    for key in _NOT_IN_JUNCTOR:
        if key in sub:
            errors.append(f"{where}: {key} is not allowed inside allOf/anyOf/oneOf/not")
    outer_props = outer.get("properties", {})
    for prop, prop_schema in sub.get("properties", {}).items():
        if prop not in outer_props:
            errors.lint(f"{where}: property {prop!r} is not specified outside the junctor")
        else:
            _junctor_node(prop_schema, outer_props[prop], f"{where}.{prop}", errors)
    if "items" in sub:
        if not isinstance(outer.get("items"), dict):
            errors.lint(f"{where}: items are not specified outside the junctor")
        else:
            _junctor_node(sub["items"], outer["items"], f"{where}[*]", errors)
    for key in (*_JUNCTORS, "not"):
        nested = sub.get(key)
        for inner in nested if isinstance(nested, list) else [nested] if nested else []:
            _junctor_node(inner, outer, f"{where}.{key}", errors)


def _check_root_metadata(meta: dict[str, Any], errors: _Errors) -> None:
    allowed_props = {"name", "generateName"}
    props = meta.get("properties", {})
    for key in props:
        if key not in allowed_props:
            errors.append(f".metadata: only name and generateName may be restricted, not {key}")
    for key in meta:
        if key not in ("type", "properties", "description"):
            errors.append(f".metadata: {key} is not allowed at the root metadata")
