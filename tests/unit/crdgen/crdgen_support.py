"""Shared helpers of the crdgen unit tests (not a conftest: module names stay unique)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from slinky_crdgen import load_crds
from slinky_crdgen.cli import default_output
from slinky_crdgen.validate import ResourceValidator

REPO = Path(__file__).resolve().parents[3]
CRD_DIR = default_output()
DATA = REPO / "tests" / "data" / "crds"
GROUP = "slinky.slurm.net"
VERSION = "v1beta1"
KINDS = ("Controller", "NodeSet", "LoginSet", "RestApi", "Accounting", "Token")


@dataclass(frozen=True)
class Sample:
    """One resource of a sample file, with the error an invalid one must produce."""

    path: Path
    index: int
    obj: dict[str, Any]
    expect: str | None

    @property
    def id(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}#{self.index}"


@functools.cache
def crds() -> dict[tuple[str, str], dict[str, Any]]:
    """The committed CRDs, read once (callers must not modify them)."""
    return load_crds(CRD_DIR)


def samples(kind: str) -> list[Sample]:
    """Every document of ``tests/data/crds/<kind>/*.yaml`` (``valid`` or ``invalid``)."""
    out: list[Sample] = []
    for path in sorted((DATA / kind).glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        first = text.splitlines()[0] if text else ""
        expect = first.removeprefix("# expect:").strip() if first.startswith("# expect:") else None
        for index, doc in enumerate(yaml.safe_load_all(text)):
            assert isinstance(doc, dict), f"{path}: document {index} is not a mapping"
            out.append(Sample(path, index, doc, expect))
    return out


def resource_errors(obj: dict[str, Any]) -> list[str]:
    """Schema, list and CEL errors of a slinky.slurm.net resource, as the API server sees."""
    return _validator().errors(obj)


@functools.cache
def _validator() -> ResourceValidator:
    return ResourceValidator(crds())


def schema_paths(schema: dict[str, Any], path: str = "") -> set[str]:
    """Every property path of a structural schema (``.spec.ssh.sssdConfRef.key``)."""
    out: set[str] = set()
    for key, sub in schema.get("properties", {}).items():
        out.add(f"{path}.{key}")
        out |= schema_paths(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        out |= schema_paths(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        out |= schema_paths(schema["additionalProperties"], f"{path}{{}}")
    return out


def value_paths(schema: dict[str, Any], value: Any, path: str = "") -> set[str]:
    """The schema paths a resource sets (walked along the schema)."""
    out: set[str] = set()
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if isinstance(props, dict) and key in props:
                out.add(f"{path}.{key}")
                out |= value_paths(props[key], item, f"{path}.{key}")
            elif isinstance(extra, dict):
                out |= value_paths(extra, item, f"{path}{{}}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            out |= value_paths(schema["items"], item, f"{path}[]")
    return out
