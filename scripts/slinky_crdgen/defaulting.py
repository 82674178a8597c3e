"""Structural defaulting, as the API server applies it before validation."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["apply_defaults"]


def apply_defaults(schema: dict[str, Any], value: Any) -> Any:
    """Return a copy of ``value`` with the schema's defaults filled in.

    Like the API server: a ``null`` in a non-nullable field is dropped first, a missing
    property with a ``default`` gets a copy of it, and the walk continues into every
    present value (defaults of defaulted objects apply too).
    """
    return _default(schema, copy.deepcopy(value))


def _default(schema: dict[str, Any], value: Any) -> Any:
    if isinstance(value, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            for key in [k for k, v in value.items() if v is None and k in props]:
                if not props[key].get("nullable"):
                    del value[key]
            for key, prop in props.items():
                if key not in value and "default" in prop:
                    value[key] = copy.deepcopy(prop["default"])
            for key, item in list(value.items()):
                if key in props:
                    value[key] = _default(props[key], item)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in list(value.items()):
                value[key] = _default(extra, item)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            return [_default(items, item) for item in value]
    return value
