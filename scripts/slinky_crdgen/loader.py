"""Read CRD files back: ``load_crds`` for the harness and the tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from slinky_crdgen.errors import SchemaError

__all__ = ["load_crds"]


def load_crds(folder: Path | str) -> dict[tuple[str, str], dict[str, Any]]:
    """Every CustomResourceDefinition in ``folder``'s ``*.yaml``/``*.yml`` files.

    Returns ``{(group, kind): crd}``; multi-document files are fine, other kinds of
    documents are skipped, and a CRD defined twice is an error.
    """
    root = Path(folder)
    if not root.is_dir():
        raise SchemaError(f"{root} is not a folder")
    out: dict[tuple[str, str], dict[str, Any]] = {}
    where: dict[tuple[str, str], Path] = {}
    paths = sorted([*root.glob("*.yaml"), *root.glob("*.yml")])
    for path in paths:
        try:
            docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except (OSError, yaml.YAMLError) as exc:
            raise SchemaError(f"cannot read {path}: {exc}") from exc
        for doc in docs:
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc.get("spec")
            try:
                key = (str(spec["group"]), str(spec["names"]["kind"]))  # type: ignore[index]
            except (KeyError, TypeError) as exc:
                raise SchemaError(f"{path}: CRD without spec.group or spec.names.kind") from exc
            if key in out:
                raise SchemaError(f"{path}: {key[1]}.{key[0]} is also defined in {where[key]}")
            out[key] = doc
            where[key] = path
    return out
