"""Typed view of the compact API model (``model/<version>.yaml``).

The model is data: kinds, named types with fields, and the Kubernetes types they embed.
:func:`load_model` checks it strictly (unknown keys, unknown types, bad expressions) and
returns frozen dataclasses that :mod:`slinky_crdgen.schema` turns into CRDs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from slinky_crdgen.errors import ModelError

__all__ = [
    "SCALARS",
    "Field",
    "Kind",
    "KubernetesConfig",
    "ListOf",
    "MapOf",
    "Model",
    "Named",
    "PrinterColumn",
    "Scalar",
    "ScaleSubresource",
    "TypeDef",
    "TypeExpr",
    "Validation",
    "default_model_path",
    "load_model",
    "parse_type",
]

#: Scalar type names of the DSL and the OpenAPI schema each one stands for.
SCALARS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "bool": {"type": "boolean"},
    "int": {"type": "integer"},
    "int32": {"type": "integer", "format": "int32"},
    "int64": {"type": "integer", "format": "int64"},
    "uint": {"type": "integer"},
    "int-or-string": {"x-kubernetes-int-or-string": True},
}

#: Schema keywords a field or a named scalar may set directly.
VALUE_KEYS = (
    "default",
    "enum",
    "minimum",
    "maximum",
    "pattern",
    "format",
    "minLength",
    "maxLength",
)

FIELD_KEYS = frozenset(
    {
        "type",
        "description",
        "required",
        "nullable",
        "listType",
        "listMapKeys",
        "mapType",
        "schema",
        *VALUE_KEYS,
    }
)
TYPE_KEYS = frozenset(
    {"description", "fields", "inline", "mapType", "validations", "nullable", "scalar", *VALUE_KEYS}
)
KIND_KEYS = frozenset(
    {
        "kind",
        "plural",
        "singular",
        "listKind",
        "shortNames",
        "categories",
        "description",
        "spec",
        "status",
        "scale",
        "printerColumns",
    }
)
VALIDATION_KEYS = frozenset({"rule", "message", "messageExpression", "reason", "fieldPath"})
COLUMN_KEYS = frozenset({"name", "type", "jsonPath", "description", "priority", "format"})
SCALE_KEYS = frozenset({"specReplicasPath", "statusReplicasPath", "labelSelectorPath"})
TOP_KEYS = frozenset({"group", "version", "upstream", "kubernetes", "kinds", "types"})
KUBERNETES_KEYS = frozenset({"definitions", "descriptions", "types", "overlays"})

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Scalar:
    """A DSL scalar (``string``, ``int32``, ``int-or-string`` ...)."""

    name: str


@dataclass(frozen=True)
class Named:
    """A named type: one of ``types:`` or a Kubernetes alias (``k8s.<Name>``)."""

    name: str


@dataclass(frozen=True)
class ListOf:
    """``[]<item>``."""

    item: TypeExpr


@dataclass(frozen=True)
class MapOf:
    """``map[string]<value>``."""

    value: TypeExpr


TypeExpr = Scalar | Named | ListOf | MapOf


def parse_type(text: str) -> TypeExpr:
    """Parse a DSL type expression such as ``[]k8s.LocalObjectReference``."""
    expr = text.strip()
    if expr.startswith("[]"):
        return ListOf(parse_type(expr[2:]))
    if expr.startswith("map[string]"):
        return MapOf(parse_type(expr[len("map[string]") :]))
    if expr in SCALARS:
        return Scalar(expr)
    if _NAME.match(expr):
        return Named(expr)
    raise ModelError(f"bad type expression {text!r}")


@dataclass(frozen=True)
class Validation:
    """One CEL rule (``x-kubernetes-validations`` entry)."""

    rule: str
    message: str | None = None
    message_expression: str | None = None
    reason: str | None = None
    field_path: str | None = None

    def to_schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule}
        if self.message is not None:
            out["message"] = self.message
        if self.message_expression is not None:
            out["messageExpression"] = self.message_expression
        if self.reason is not None:
            out["reason"] = self.reason
        if self.field_path is not None:
            out["fieldPath"] = self.field_path
        return out


@dataclass(frozen=True)
class Field:
    """One field of a struct type."""

    name: str
    type: TypeExpr
    description: str | None = None
    required: bool = False
    nullable: bool = False
    schema: Literal["full", "preserve"] = "full"
    list_type: str | None = None
    list_map_keys: tuple[str, ...] = ()
    map_type: str | None = None
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TypeDef:
    """A named type of the model: a struct (``fields``) or a named scalar (``scalar``)."""

    name: str
    description: str | None = None
    fields: tuple[Field, ...] = ()
    inline: tuple[str, ...] = ()
    validations: tuple[Validation, ...] = ()
    map_type: str | None = None
    nullable: bool = False
    scalar: str | None = None
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PrinterColumn:
    """An ``additionalPrinterColumns`` entry; priority 1 columns show with ``-o wide``."""

    name: str
    type: str
    json_path: str
    description: str | None = None
    priority: int = 0
    format: str | None = None

    def to_schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.description is not None:
            out["description"] = self.description
        if self.priority:
            out["priority"] = self.priority
        if self.format is not None:
            out["format"] = self.format
        return out


@dataclass(frozen=True)
class ScaleSubresource:
    """Paths of the scale subresource."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None = None


@dataclass(frozen=True)
class Kind:
    """A kind of the API group."""

    kind: str
    plural: str
    singular: str
    list_kind: str
    spec: str
    status: str | None
    description: str | None = None
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    scale: ScaleSubresource | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()


@dataclass(frozen=True)
class KubernetesConfig:
    """Where the embedded Kubernetes types come from and how they are adjusted."""

    definitions: str
    descriptions: bool
    types: dict[str, str]
    overlays: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Model:
    """The whole model of one API version."""

    group: str
    version: str
    upstream: str
    kubernetes: KubernetesConfig
    kinds: tuple[Kind, ...]
    types: dict[str, TypeDef]
    source: str

    def resolve(self, name: str) -> TypeDef | str:
        """A model type, or the Kubernetes definition name behind a ``k8s.`` alias."""
        if name in self.types:
            return self.types[name]
        if name in self.kubernetes.types:
            return self.kubernetes.types[name]
        raise ModelError(f"{self.source}: unknown type {name!r}")


def default_model_path(version: str = "v1beta1") -> Path:
    """Path of the model file shipped with the package."""
    return Path(str(resources.files("slinky_crdgen.model") / f"{version}.yaml"))


def _mapping(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ModelError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def _check_keys(data: dict[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ModelError(f"{where}: unknown key(s) {', '.join(unknown)}")


def _opt_str(data: dict[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ModelError(f"{where}.{key}: expected a string, got {value!r}")
    return value


def _str(data: dict[str, Any], key: str, where: str) -> str:
    value = _opt_str(data, key, where)
    if value is None:
        raise ModelError(f"{where}: missing {key}")
    return value


def _str_list(data: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ModelError(f"{where}.{key}: expected a list of strings")
    return tuple(value)


def _bool(data: dict[str, Any], key: str, where: str, default: bool = False) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise ModelError(f"{where}.{key}: expected true or false, got {value!r}")
    return value


def _field(name: str, raw: object, where: str) -> Field:
    data = {"type": raw} if isinstance(raw, str) else _mapping(raw, where)
    _check_keys(data, FIELD_KEYS, where)
    schema_raw = data.get("schema", "full")
    if schema_raw not in ("full", "preserve"):
        raise ModelError(f"{where}.schema: expected full or preserve, got {schema_raw!r}")
    schema: Literal["full", "preserve"] = "preserve" if schema_raw == "preserve" else "full"
    list_type = _opt_str(data, "listType", where)
    if list_type not in (None, "atomic", "set", "map"):
        raise ModelError(f"{where}.listType: expected atomic, set or map, got {list_type!r}")
    keys = _str_list(data, "listMapKeys", where)
    if (list_type == "map") != bool(keys):
        raise ModelError(f"{where}: listMapKeys goes with listType map, and only with it")
    return Field(
        name=name,
        type=parse_type(_str(data, "type", where)),
        description=_opt_str(data, "description", where),
        required=_bool(data, "required", where),
        nullable=_bool(data, "nullable", where),
        schema=schema,
        list_type=list_type,
        list_map_keys=keys,
        map_type=_opt_str(data, "mapType", where),
        values={k: data[k] for k in VALUE_KEYS if k in data},
    )


def _validation(raw: object, where: str) -> Validation:
    data = _mapping(raw, where)
    _check_keys(data, VALIDATION_KEYS, where)
    return Validation(
        rule=_str(data, "rule", where),
        message=_opt_str(data, "message", where),
        message_expression=_opt_str(data, "messageExpression", where),
        reason=_opt_str(data, "reason", where),
        field_path=_opt_str(data, "fieldPath", where),
    )


def _typedef(name: str, raw: object, where: str) -> TypeDef:
    data = _mapping(raw, where)
    _check_keys(data, TYPE_KEYS, where)
    scalar = _opt_str(data, "scalar", where)
    fields_raw = _mapping(data.get("fields", {}), f"{where}.fields")
    if scalar is not None:
        if scalar not in SCALARS:
            raise ModelError(f"{where}.scalar: unknown scalar {scalar!r}")
        if fields_raw or "inline" in data or "validations" in data:
            raise ModelError(f"{where}: a scalar type has no fields, inline or validations")
    elif not fields_raw and "inline" not in data:
        raise ModelError(f"{where}: a type needs fields, inline or scalar")
    validations_raw = data.get("validations", [])
    if not isinstance(validations_raw, list):
        raise ModelError(f"{where}.validations: expected a list")
    return TypeDef(
        name=name,
        description=_opt_str(data, "description", where),
        fields=tuple(_field(k, v, f"{where}.fields.{k}") for k, v in fields_raw.items()),
        inline=_str_list(data, "inline", where),
        validations=tuple(
            _validation(v, f"{where}.validations[{i}]") for i, v in enumerate(validations_raw)
        ),
        map_type=_opt_str(data, "mapType", where),
        nullable=_bool(data, "nullable", where),
        scalar=scalar,
        values={k: data[k] for k in VALUE_KEYS if k in data},
    )


def _kind(raw: object, where: str) -> Kind:
    data = _mapping(raw, where)
    _check_keys(data, KIND_KEYS, where)
    kind = _str(data, "kind", where)
    scale = None
    if "scale" in data:
        sc = _mapping(data["scale"], f"{where}.scale")
        _check_keys(sc, SCALE_KEYS, f"{where}.scale")
        scale = ScaleSubresource(
            spec_replicas_path=_str(sc, "specReplicasPath", f"{where}.scale"),
            status_replicas_path=_str(sc, "statusReplicasPath", f"{where}.scale"),
            label_selector_path=_opt_str(sc, "labelSelectorPath", f"{where}.scale"),
        )
    columns = []
    for i, col_raw in enumerate(data.get("printerColumns", [])):
        cw = f"{where}.printerColumns[{i}]"
        col = _mapping(col_raw, cw)
        _check_keys(col, COLUMN_KEYS, cw)
        priority = col.get("priority", 0)
        if not isinstance(priority, int) or isinstance(priority, bool) or priority < 0:
            raise ModelError(f"{cw}.priority: expected an integer >= 0")
        columns.append(
            PrinterColumn(
                name=_str(col, "name", cw),
                type=_str(col, "type", cw),
                json_path=_str(col, "jsonPath", cw),
                description=_opt_str(col, "description", cw),
                priority=priority,
                format=_opt_str(col, "format", cw),
            )
        )
    return Kind(
        kind=kind,
        plural=_str(data, "plural", where),
        singular=_opt_str(data, "singular", where) or kind.lower(),
        list_kind=_opt_str(data, "listKind", where) or f"{kind}List",
        spec=_str(data, "spec", where),
        status=_opt_str(data, "status", where),
        description=_opt_str(data, "description", where),
        short_names=_str_list(data, "shortNames", where),
        categories=_str_list(data, "categories", where),
        scale=scale,
        printer_columns=tuple(columns),
    )


def _kubernetes(raw: object, where: str) -> KubernetesConfig:
    data = _mapping(raw, where)
    _check_keys(data, KUBERNETES_KEYS, where)
    types = _mapping(data.get("types", {}), f"{where}.types")
    for alias, target in types.items():
        if not alias.startswith("k8s.") or not isinstance(target, str):
            raise ModelError(f"{where}.types.{alias}: aliases are k8s.<Name>: <definition name>")
    overlays = _mapping(data.get("overlays", {}), f"{where}.overlays")
    return KubernetesConfig(
        definitions=str(_str(data, "definitions", where)),
        descriptions=_bool(data, "descriptions", where, default=True),
        types=dict(types),
        overlays={k: _mapping(v, f"{where}.overlays.{k}") for k, v in overlays.items()},
    )


def _check_references(model: Model) -> None:
    def check(expr: TypeExpr, where: str) -> None:
        if isinstance(expr, ListOf):
            check(expr.item, where)
        elif isinstance(expr, MapOf):
            check(expr.value, where)
        elif isinstance(expr, Named):
            try:
                model.resolve(expr.name)
            except ModelError as exc:
                raise ModelError(f"{where}: {exc}") from None

    for td in model.types.values():
        for f in td.fields:
            check(f.type, f"{model.source}: types.{td.name}.fields.{f.name}")
            if f.schema == "preserve" and not _names_kubernetes(f.type):
                raise ModelError(
                    f"{model.source}: types.{td.name}.fields.{f.name}: schema preserve is "
                    "for embedded Kubernetes types"
                )
        for name in td.inline:
            check(Named(name), f"{model.source}: types.{td.name}.inline")
    for kind in model.kinds:
        for name in [kind.spec] + ([kind.status] if kind.status else []):
            target = model.resolve(name)
            if not isinstance(target, TypeDef) or target.scalar is not None:
                raise ModelError(f"{model.source}: {kind.kind}: {name} must be a struct type")


def _names_kubernetes(expr: TypeExpr) -> bool:
    if isinstance(expr, ListOf):
        return _names_kubernetes(expr.item)
    if isinstance(expr, MapOf):
        return _names_kubernetes(expr.value)
    return isinstance(expr, Named) and expr.name.startswith("k8s.")


def load_model(path: Path | None = None) -> Model:
    """Read and check a model file (default: the packaged ``model/v1beta1.yaml``)."""
    path = path or default_model_path()
    source = path.name
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelError(f"cannot read model {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ModelError(f"{source}: not valid YAML: {exc}") from exc
    data = _mapping(raw, source)
    _check_keys(data, TOP_KEYS, source)
    kinds_raw = data.get("kinds")
    if not isinstance(kinds_raw, list) or not kinds_raw:
        raise ModelError(f"{source}: kinds must be a non-empty list")
    types_raw = _mapping(data.get("types", {}), f"{source}: types")
    model = Model(
        group=_str(data, "group", source),
        version=_str(data, "version", source),
        upstream=_opt_str(data, "upstream", source) or "",
        kubernetes=_kubernetes(data.get("kubernetes"), f"{source}: kubernetes"),
        kinds=tuple(_kind(k, f"{source}: kinds[{i}]") for i, k in enumerate(kinds_raw)),
        types={k: _typedef(k, v, f"{source}: types.{k}") for k, v in types_raw.items()},
        source=source,
    )
    seen: set[str] = set()
    for kind in model.kinds:
        if kind.kind in seen:
            raise ModelError(f"{source}: kind {kind.kind} is listed twice")
        seen.add(kind.kind)
    _check_references(model)
    return model
