"""Build CustomResourceDefinition objects from the model."""

from __future__ import annotations

import copy
from typing import Any

from slinky_crdgen.dsl import (
    SCALARS,
    Field,
    Kind,
    ListOf,
    MapOf,
    Model,
    Named,
    Scalar,
    TypeDef,
    TypeExpr,
)
from slinky_crdgen.errors import ModelError
from slinky_crdgen.k8s import Definitions, int_or_string

__all__ = ["build_crd", "build_crds", "load_definitions", "type_schema"]

_API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. "
    "Servers should convert recognized schemas to the latest internal value, and may "
    "reject unrecognized values."
)
_KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. "
    "Servers may infer this from the endpoint the client submits requests to. In CamelCase."
)


def load_definitions(model: Model) -> Definitions:
    """The Kubernetes definitions the model names, with the model's overlays."""
    return Definitions(
        model.kubernetes.definitions,
        descriptions=model.kubernetes.descriptions,
        overlays=model.kubernetes.overlays,
    )


class _Builder:
    def __init__(self, model: Model, defs: Definitions) -> None:
        self.model = model
        self.defs = defs
        for alias, name in model.kubernetes.types.items():
            if name not in defs:
                raise ModelError(f"{model.source}: {alias} names unknown definition {name!r}")

    def expr(self, expr: TypeExpr, *, preserve: bool, stack: tuple[str, ...]) -> dict[str, Any]:
        if isinstance(expr, Scalar):
            if expr.name == "int-or-string":
                return int_or_string()
            return dict(SCALARS[expr.name])
        if isinstance(expr, ListOf):
            return {"type": "array", "items": self.expr(expr.item, preserve=preserve, stack=stack)}
        if isinstance(expr, MapOf):
            value = self.expr(expr.value, preserve=preserve, stack=stack)
            return {"type": "object", "additionalProperties": value}
        return self.named(expr, preserve=preserve, stack=stack)

    def named(self, expr: Named, *, preserve: bool, stack: tuple[str, ...]) -> dict[str, Any]:
        target = self.model.resolve(expr.name)
        if isinstance(target, str):
            if preserve:
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            return self.defs.structural(target)
        return self.typedef(target, stack)

    def typedef(self, td: TypeDef, stack: tuple[str, ...]) -> dict[str, Any]:
        if td.name in stack:
            chain = " -> ".join((*stack, td.name))
            raise ModelError(f"{self.model.source}: recursive type {chain}")
        stack = (*stack, td.name)
        if td.scalar is not None:
            out = self.expr(Scalar(td.scalar), preserve=False, stack=stack)
            out.update(copy.deepcopy(td.values))
            if td.description:
                out["description"] = td.description
            return out
        out = {"type": "object"}
        if td.description:
            out["description"] = td.description
        props: dict[str, Any] = {}
        required: list[str] = []
        for name in td.inline:
            inlined = self.named(Named(name), preserve=False, stack=stack)
            if inlined.get("type") != "object" or "properties" not in inlined:
                raise ModelError(f"{self.model.source}: types.{td.name}: cannot inline {name}")
            props.update(inlined["properties"])
            required.extend(inlined.get("required", []))
        for f in td.fields:
            if f.name in props:
                raise ModelError(f"{self.model.source}: types.{td.name}: field {f.name} twice")
            props[f.name] = self.field(f, stack)
            if f.required:
                required.append(f.name)
        out["properties"] = props
        if required:
            out["required"] = sorted(set(required))
        if td.nullable:
            out["nullable"] = True
        if td.map_type:
            out["x-kubernetes-map-type"] = td.map_type
        if td.validations:
            out["x-kubernetes-validations"] = [v.to_schema() for v in td.validations]
        return out

    def field(self, f: Field, stack: tuple[str, ...]) -> dict[str, Any]:
        out = self.expr(f.type, preserve=f.schema == "preserve", stack=stack)
        if f.description:
            out["description"] = f.description
        out.update(copy.deepcopy(f.values))
        if f.nullable:
            out["nullable"] = True
        if f.list_type:
            if out.get("type") != "array":
                raise ModelError(f"{self.model.source}: field {f.name}: listType on a non-list")
            out["x-kubernetes-list-type"] = f.list_type
            if f.list_map_keys:
                out["x-kubernetes-list-map-keys"] = list(f.list_map_keys)
        if f.map_type:
            out["x-kubernetes-map-type"] = f.map_type
        return out


def type_schema(model: Model, name: str, defs: Definitions | None = None) -> dict[str, Any]:
    """The structural schema of model type ``name`` (handy in tests)."""
    builder = _Builder(model, defs or load_definitions(model))
    return builder.named(Named(name), preserve=False, stack=())


def build_crd(model: Model, kind: Kind, defs: Definitions) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind."""
    builder = _Builder(model, defs)
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string", "description": _API_VERSION_DOC},
        "kind": {"type": "string", "description": _KIND_DOC},
        "metadata": {"type": "object"},
        "spec": builder.named(Named(kind.spec), preserve=False, stack=()),
    }
    if kind.status is not None:
        properties["status"] = builder.named(Named(kind.status), preserve=False, stack=())
    root: dict[str, Any] = {"type": "object", "properties": properties}
    if kind.description:
        root["description"] = kind.description
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": kind.list_kind,
        "plural": kind.plural,
        "singular": kind.singular,
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    if kind.categories:
        names["categories"] = list(kind.categories)
    subresources: dict[str, Any] = {}
    if kind.status is not None:
        subresources["status"] = {}
    if kind.scale is not None:
        scale = {
            "specReplicasPath": kind.scale.spec_replicas_path,
            "statusReplicasPath": kind.scale.status_replicas_path,
        }
        if kind.scale.label_selector_path:
            scale["labelSelectorPath"] = kind.scale.label_selector_path
        subresources["scale"] = scale
    version: dict[str, Any] = {
        "name": model.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": root},
    }
    if subresources:
        version["subresources"] = subresources
    if kind.printer_columns:
        version["additionalPrinterColumns"] = [c.to_schema() for c in kind.printer_columns]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.plural}.{model.group}"},
        "spec": {
            "group": model.group,
            "names": names,
            "scope": "Namespaced",
            "versions": [version],
        },
    }


def build_crds(model: Model, defs: Definitions | None = None) -> dict[str, dict[str, Any]]:
    """Every CRD of the model, keyed by file name (``<group>_<plural>.yaml``)."""
    defs = defs or load_definitions(model)
    return {
        f"{model.group}_{kind.plural}.yaml": build_crd(model, kind, defs) for kind in model.kinds
    }
