"""Reading input files: text, and documents that may be JSON or YAML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from slinky_topology.errors import InputError

__all__ = ["read_structured", "read_text"]


def read_text(path: str) -> str:
    """The UTF-8 text of ``path``; InputError naming the file when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", location=path) from None


def read_structured(path: str) -> Any:
    """The document in ``path``, parsed as JSON, else as YAML; InputError when it is neither."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InputError(f"not JSON or YAML: {exc}", location=path) from None
