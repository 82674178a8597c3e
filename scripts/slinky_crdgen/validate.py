"""Validate resources against CRDs the way the API server does (for tests and the harness).

:class:`ResourceValidator` looks a resource's CRD up by ``apiVersion``/``kind`` and reports,
as ``"<path>: <message>"`` strings:

1. JSON Schema errors (:func:`~slinky_crdgen.jsonschema.crd_validator`: types,
   required, enums, patterns, formats, unknown fields),
2. duplicate keys in ``x-kubernetes-list-type: map`` lists and duplicate ``set`` items,
3. when 1 and 2 found nothing (the API server also skips CEL on invalid objects), failed
   ``x-kubernetes-validations`` rules (:mod:`slinky_crdgen.cel`, needs cel-python).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from slinky_crdgen.cel import evaluate_rules
from slinky_crdgen.defaulting import apply_defaults
from slinky_crdgen.jsonschema import crd_validator, version_schema

if TYPE_CHECKING:
    from collections.abc import Mapping

    import jsonschema

__all__ = ["ResourceValidator", "list_errors"]


def list_errors(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """Duplicate list-map keys and set items in ``value`` (after defaulting)."""
    errors: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in props:
                errors += list_errors(props[key], item, f"{path}.{key}")
            elif isinstance(extra, dict):
                errors += list_errors(extra, item, f"{path}[{key!r}]")
    elif isinstance(value, list):
        items = schema.get("items")
        list_type = schema.get("x-kubernetes-list-type")
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen: set[str] = set()
        for index, item in enumerate(value):
            if list_type == "map" and isinstance(item, dict):
                ident = json.dumps([item.get(k) for k in keys])
            elif list_type == "set":
                ident = json.dumps(item, sort_keys=True)
            else:
                ident = ""
            if ident:
                if ident in seen:
                    errors.append(f"{path}[{index}]: Duplicate value: {ident}")
                seen.add(ident)
            if isinstance(items, dict):
                errors += list_errors(items, item, f"{path}[{index}]")
    return errors


class ResourceValidator:
    """Validates resources of the CRDs given as ``{(group, kind): crd}`` (see ``load_crds``)."""

    def __init__(self, crds: Mapping[tuple[str, str], dict[str, Any]], *, cel: bool = True) -> None:
        self.crds = crds
        self.cel = cel
        self._validators: dict[tuple[str, str, str], jsonschema.Draft202012Validator] = {}

    def errors(self, obj: Any) -> list[str]:
        """Every problem the API server would report for ``obj``; empty when it is valid."""
        if not isinstance(obj, dict):
            return ["<root>: a resource must be a mapping"]
        api_version = str(obj.get("apiVersion", ""))
        kind = str(obj.get("kind", ""))
        group, _, version = api_version.rpartition("/")
        crd = self.crds.get((group, kind))
        if crd is None:
            return [f"no CRD for {api_version} {kind}"]
        served = [v.get("name") for v in crd["spec"]["versions"] if v.get("served")]
        if version not in served:
            return [f"{group} {kind} does not serve version {version!r} (serves {served})"]
        key = (group, kind, version)
        if key not in self._validators:
            self._validators[key] = crd_validator(crd, version)
        errors = [
            f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in self._validators[key].iter_errors(obj)
        ]
        schema = version_schema(crd, version)
        errors += list_errors(schema, apply_defaults(schema, obj))
        if not errors and self.cel:
            errors = evaluate_rules(crd, version, obj)
        return errors
