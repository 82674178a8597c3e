"""Turn the values.yaml key tree into JSON Schema (draft-07).

- The type of a key comes from its default: string, integer, number, boolean, object, or array
  whose items take the type of the first element. A ``null`` default takes the helm-docs type
  hint (``# -- (int) ...``) plus ``null``, or the annotation's ``type``.
- Every object is closed (``additionalProperties: false``); its keys with a ``# --`` comment
  become its properties, and an undocumented key is an error. An annotation that sets
  ``additionalProperties`` (``true``, or a schema for maps with free keys) opens it: then only
  its documented keys become properties.
- ``description`` is the key's helm-docs text, so README and schema say the same thing.
- The ``# @schema`` annotation is merged over what the default says; ``$ref: <definition>``
  replaces it (kept beside the description as ``allOf: [{$ref}]``: draft-07 ignores the
  siblings of a ``$ref``), ``nullable: true`` adds ``null``.
- ``definition: <name>`` also makes the key's schema a definition of that name (the key refers
  to it), so a map of entries shaped like a defaults key says ``additionalProperties: {$ref:
  <name>}``; ``patternProperties`` with an anchored name (``^registry$``) types an optional key
  that has no default (and, in a closed object, admits it).
- the hand-written part's ``inferredStrings`` (a schema) is merged into every string whose type
  comes from its default (e.g. refusing a bare ``y``/``n``); an annotation wins over it.
- ``subchart: <folder>`` (alone) makes the key the values of a dependency (its alias): the
  subchart's own generated schema, whose values.yaml owns every key and rule; the keys written
  under it here only lend their ``# --`` descriptions, so this chart's README and schema agree.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema

from slinky_schemagen.definitions import PREFIX, expand_refs
from slinky_schemagen.errors import AnnotationError, SchemaGenError

if TYPE_CHECKING:
    from collections.abc import Callable

    from slinky_schemagen.comments import Key

__all__ = ["CROSS_FIELD", "KEYWORDS", "Context", "build_root"]

CROSS_FIELD = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "required", "dependencies")
"""Keywords that state rules across fields: what a schema's root (the hand-written part of a
chart, or a subchart's schema that its key carries) says beyond types and properties."""

KEYWORDS = frozenset(
    {
        "$ref",
        "$comment",
        "type",
        "enum",
        "const",
        "format",
        "pattern",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
        "additionalProperties",
        "propertyNames",
        "patternProperties",
        "minProperties",
        "maxProperties",
        *CROSS_FIELD,
        "examples",
        "nullable",
        "subchart",
        "definition",
    }
)
"""What a ``# @schema`` annotation may say: draft-07 keywords, ``nullable``, ``subchart`` and
``definition``.
``properties`` and ``description`` are not among them: they come from the keys and ``# --``
comments."""


HINTS = {
    "int": "integer",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "string": "string",
    "bool": "boolean",
    "boolean": "boolean",
    "list": "array",
    "object": "object",
}
"""helm-docs type hints that give a ``null`` default its type."""


_META = jsonschema.Draft7Validator(jsonschema.Draft7Validator.META_SCHEMA)
"""Checks each key's schema against the draft-07 meta-schema (built once: building is slow)."""


@dataclass(frozen=True)
class Context:
    file: str
    """values.yaml as named in messages."""
    definitions: frozenset[str]
    """Definition names a ``$ref`` may use."""
    subchart: Callable[[str], dict[str, Any]] | None = None
    """The generated schema of the subchart in a folder relative to the chart (None: no chart
    folder, so a ``subchart`` annotation is an error)."""
    found: dict[str, Any] = field(default_factory=dict)
    """Definitions the subcharts' schemas and ``definition`` annotations brought (name ->
    schema), for the root to carry."""
    declared: set[str] = field(default_factory=set)
    """Names of the ``definition`` annotations (known before any key is built)."""
    strings: dict[str, Any] = field(default_factory=dict)
    """Merged into every string schema inferred from a default (``inferredStrings``)."""


def build_root(root: Key, ctx: Context) -> dict[str, Any]:
    """The schema of the whole values file: a closed object of its documented keys."""
    _declare(root, ctx)
    return _object(root, {}, ctx)


def _declare(key: Key, ctx: Context) -> None:
    """Collect the ``definition`` names first: a ``$ref`` may come before the key defining it."""
    name = (key.doc.annotation or {}).get("definition")
    if name is not None:
        if not isinstance(name, str) or not name or "/" in name:
            raise _fail(
                key, ctx, f"`definition` of `{key.dotted}` must be a name", at_annotation=True
            )
        if name in ctx.definitions or name in ctx.declared:
            raise _fail(
                key,
                ctx,
                f"`{key.dotted}` defines {name!r}, which is already a definition: pick another name",
                at_annotation=True,
            )
        ctx.declared.add(name)
    for child in key.children:
        _declare(child, ctx)


def _fail(key: Key, ctx: Context, message: str, *, at_annotation: bool = False) -> AnnotationError:
    line = key.doc.annotation_line if at_annotation and key.doc.annotation_line else key.line
    return AnnotationError(ctx.file, line, message)


def key_schema(key: Key, ctx: Context) -> dict[str, Any]:
    """The schema of one key: inferred from its default, then its annotation merged over."""
    annotation = _annotation(key, ctx)
    if "subchart" in annotation:
        return _subchart(key, annotation, ctx)
    definition = annotation.pop("definition", None)
    nullable = annotation.pop("nullable", False)
    ref = annotation.pop("$ref", None)
    if ref is not None:
        schema: dict[str, Any] = {"allOf": [{"$ref": ref}]}
        if nullable:
            schema = {"anyOf": [{"$ref": ref}, {"type": "null"}]}
    else:
        schema = _inferred(key, annotation, ctx)
    schema.update(annotation)
    if nullable and ref is None:
        kinds = schema["type"] if isinstance(schema.get("type"), list) else [schema.get("type")]
        schema["type"] = [*[k for k in kinds if k != "null"], "null"]
    if key.doc.description:
        schema["description"] = key.doc.description
    _check(key, schema, ctx)
    if definition is None:
        return schema
    description = schema.pop("description", None)
    ctx.found[definition] = schema
    out: dict[str, Any] = {"allOf": [{"$ref": PREFIX + definition}]}
    if description:
        out["description"] = description
    return out


def _annotation(key: Key, ctx: Context) -> dict[str, Any]:
    raw = key.doc.annotation or {}
    unknown = sorted(set(raw) - KEYWORDS)
    if unknown:
        hint = ""
        if "description" in unknown:
            hint = " (the description is the key's `# --` comment)"
        elif "properties" in unknown:
            hint = (
                " (properties are the keys under it in values.yaml, each with its `# --` comment)"
            )
        raise _fail(
            key,
            ctx,
            f"unknown keyword(s) {', '.join(unknown)} in the `# @schema` annotation of "
            f"`{key.dotted}`{hint}: use draft-07 keywords such as type, enum, pattern, minimum, "
            "maximum, items, additionalProperties, $ref, or nullable",
            at_annotation=True,
        )
    if not isinstance(raw.get("nullable", False), bool):
        raise _fail(
            key, ctx, f"`nullable` of `{key.dotted}` must be true or false", at_annotation=True
        )
    expanded: dict[str, Any] = expand_refs(raw)
    return expanded


def _subchart(key: Key, annotation: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """The key's schema is the subchart's: its properties and rules; descriptions from here."""
    folder, sub = _load_subchart(key, annotation, ctx)
    properties: dict[str, Any] = sub.get("properties", {})
    _describe(key, folder, properties, ctx)
    for name, definition in (sub.get("definitions") or {}).items():
        if ctx.found.setdefault(name, definition) != definition:
            raise _fail(
                key,
                ctx,
                f"the subchart {folder!r} of `{key.dotted}` defines {name!r} differently from "
                "another subchart: rename one of them",
                at_annotation=True,
            )
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if properties:
        schema["properties"] = properties
    schema.update({k: sub[k] for k in CROSS_FIELD if k in sub})
    if key.doc.description:
        schema["description"] = key.doc.description
    return schema


def _load_subchart(
    key: Key, annotation: dict[str, Any], ctx: Context
) -> tuple[str, dict[str, Any]]:
    folder = annotation.pop("subchart")
    if annotation or not isinstance(folder, str) or not folder:
        raise _fail(
            key,
            ctx,
            f"the `# @schema` annotation of `{key.dotted}` names a subchart, so it says nothing "
            "else: write `# @schema {subchart: charts/<name>}` alone (the subchart's values.yaml "
            "owns the rules)",
            at_annotation=True,
        )
    if ctx.subchart is None:
        raise _fail(key, ctx, f"`{key.dotted}` names a subchart, but no chart folder was given")
    try:
        return folder, copy.deepcopy(ctx.subchart(folder))
    except SchemaGenError as exc:
        raise _fail(
            key, ctx, f"subchart {folder!r} of `{key.dotted}`: {exc}", at_annotation=True
        ) from exc


def _describe(key: Key, folder: str, properties: dict[str, Any], ctx: Context) -> None:
    """The keys written under a subchart's key lend their descriptions, nothing else."""
    for child in key.children:
        name = child.path[-1]
        if name not in properties:
            raise _fail(
                child,
                ctx,
                f"`{child.dotted}` is not a value of the subchart {folder!r}: remove it, or add "
                f"it to {folder}/values.yaml",
            )
        if child.doc.annotation is not None:
            raise _fail(
                child,
                ctx,
                f"`{child.dotted}` belongs to the subchart {folder!r}, whose values.yaml owns its "
                "rules: move this `# @schema` annotation there",
                at_annotation=True,
            )
        if child.doc.description:
            properties[name]["description"] = child.doc.description


def _inferred(key: Key, annotation: dict[str, Any], ctx: Context) -> dict[str, Any]:
    value = key.value
    if value is None:
        return _null(key, annotation, ctx)
    if isinstance(value, dict):
        return _object(key, annotation, ctx)
    if isinstance(value, list):
        if "items" in annotation or value:
            out: dict[str, Any] = {"type": "array"}
            if "items" not in annotation:
                out["items"] = _plain(value[0], key, ctx)
            return out
        raise _fail(
            key,
            ctx,
            f"`{key.dotted}` defaults to an empty list, so its item type is unknown: add "
            "`# @schema {items: {type: string}}` (or a `$ref`) above its `# --` line",
        )
    return _scalar(value, ctx)


def _scalar(value: Any, ctx: Context) -> dict[str, Any]:
    kind = _scalar_type(value)
    if kind == "string":
        return {"type": kind, **copy.deepcopy(ctx.strings)}
    return {"type": kind}


def _scalar_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _null(key: Key, annotation: dict[str, Any], ctx: Context) -> dict[str, Any]:
    if "type" in annotation:
        return {}
    hint = key.doc.type_hint
    if hint in HINTS:
        return {"type": [HINTS[hint], "null"]}
    raise _fail(
        key,
        ctx,
        f"`{key.dotted}` defaults to null, so its type is unknown: give its `# --` comment a "
        "helm-docs type hint such as `# -- (int) ...`, or add `# @schema {type: [integer, 'null']}`"
        f"{f' (type hint {hint!r} is not one of ' + ', '.join(sorted(HINTS)) + ')' if hint else ''}",
    )


def _object(key: Key, annotation: dict[str, Any], ctx: Context) -> dict[str, Any]:
    is_open = annotation.get("additionalProperties", False) is not False
    if key.path and not key.children and "additionalProperties" not in annotation:
        raise _fail(
            key,
            ctx,
            f"`{key.dotted}` defaults to an empty map, so what it holds is unknown: add "
            "`# @schema {additionalProperties: {type: string}}` for a map with free keys, "
            "`{$ref: labelMap}` (or another definition), `{additionalProperties: true}` for a "
            "Kubernetes struct passed through, or `{additionalProperties: false}` if it must stay empty",
        )
    properties: dict[str, Any] = {}
    for child in key.children:
        documented = child.doc.description is not None or child.doc.annotation is not None
        if not documented:
            if is_open:
                continue
            raise _fail(
                child,
                ctx,
                f"`{child.dotted}` has no `# --` comment, and `{key.dotted}` is a closed object: "
                f"document it, or open `{key.dotted}` (`# @schema {{additionalProperties: true}}`, "
                "or a `$ref` to a definition) when it is a Kubernetes struct passed through",
            )
        properties[child.path[-1]] = key_schema(child, ctx)
    out: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if properties:
        out["properties"] = properties
    return out


def _plain(value: Any, key: Key, ctx: Context) -> dict[str, Any]:
    """The schema of an array item, from the first element of the default."""
    if isinstance(value, dict):
        return {
            "type": "object",
            "additionalProperties": False,
            "properties": {str(k): _plain(v, key, ctx) for k, v in value.items()},
        }
    if isinstance(value, list) and value:
        return {"type": "array", "items": _plain(value[0], key, ctx)}
    if value is None or isinstance(value, list):
        raise _fail(
            key,
            ctx,
            f"the items of `{key.dotted}` cannot be inferred from its default: add "
            "`# @schema {items: {...}}` above its `# --` line",
        )
    return _scalar(value, ctx)


def _check(key: Key, schema: dict[str, Any], ctx: Context) -> None:
    problem = jsonschema.exceptions.best_match(_META.iter_errors(schema))
    if problem is not None:
        where = "/".join(map(str, problem.absolute_path)) or "(top)"
        raise _fail(
            key,
            ctx,
            f"the schema of `{key.dotted}` is not valid draft-07 at {where}: {problem.message}; "
            "fix its `# @schema` annotation",
            at_annotation=True,
        )
    for name in sorted(_direct_refs(schema) - ctx.definitions - ctx.declared - set(ctx.found)):
        raise _fail(
            key,
            ctx,
            f"`{key.dotted}` refers to the unknown definition {name!r}: use one of "
            f"{', '.join(sorted(ctx.definitions))}, or define it in the chart's "
            "values.schema.extra.yaml under `definitions`",
            at_annotation=True,
        )


def _direct_refs(node: Any) -> set[str]:
    """Names of the local definitions ``$ref`` points to under ``node``, properties excluded (a
    property's own references were checked when it was built)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value.removeprefix(PREFIX))
            elif key != "properties":
                found |= _direct_refs(value)
    elif isinstance(node, list):
        for item in node:
            found |= _direct_refs(item)
    return found
