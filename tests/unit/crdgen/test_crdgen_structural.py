"""Every generated schema is structural; the checker itself catches each rule."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from tests.unit.crdgen.crdgen_support import GROUP, VERSION, crds, schema_paths

from slinky_crdgen.cel import compile_rules
from slinky_crdgen.dsl import load_model
from slinky_crdgen.errors import DefinitionsError
from slinky_crdgen.jsonschema import version_schema
from slinky_crdgen.k8s import Definitions
from slinky_crdgen.structural import structural_errors

if TYPE_CHECKING:
    from pathlib import Path

KIND_IDS = sorted(kind for _, kind in crds())


def _crd(kind: str) -> dict[str, Any]:
    crd: dict[str, Any] = crds()[(GROUP, kind)]
    return crd


@pytest.mark.parametrize("kind", KIND_IDS)
def test_schema_is_structural(kind: str) -> None:
    assert structural_errors(version_schema(_crd(kind), VERSION)) == []


@pytest.mark.parametrize("kind", KIND_IDS)
def test_cel_rules_compile(kind: str) -> None:
    assert compile_rules(_crd(kind), VERSION) == []


@pytest.mark.parametrize("kind", KIND_IDS)
def test_printer_columns_and_subresources_point_at_fields(kind: str) -> None:
    crd = _crd(kind)
    (version,) = crd["spec"]["versions"]
    assert version["served"] and version["storage"]
    paths = schema_paths(version["schema"]["openAPIV3Schema"])
    for column in version.get("additionalPrinterColumns", []):
        if column["jsonPath"] != ".metadata.creationTimestamp":
            assert column["jsonPath"] in paths, column
        assert column["type"] in {"integer", "number", "string", "boolean", "date"}
    subresources = version["subresources"]
    assert subresources["status"] == {}
    assert ".status" in paths
    scale = subresources.get("scale")
    if scale:
        schema = version["schema"]["openAPIV3Schema"]
        assert schema["properties"]["spec"]["properties"]["replicas"]["format"] == "int32"
        assert schema["properties"]["status"]["properties"]["replicas"]["format"] == "int32"
        assert schema["properties"]["status"]["properties"]["selector"]["type"] == "string"
        for key in ("specReplicasPath", "statusReplicasPath", "labelSelectorPath"):
            assert scale[key] in paths


# -- the checker ---------------------------------------------------------------------------


def _root(**spec: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object", **spec}}}


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"properties": {}}, "<root>: type must be object"),
        (_root(properties={"a": {"description": "x"}}), ".spec.a: type is missing"),
        (_root(properties={"a": {"$ref": "#/x", "type": "string"}}), "$ref is not allowed"),
        (
            _root(properties={"a": {"type": "string"}}, additionalProperties={"type": "string"}),
            "mutually exclusive",
        ),
        (_root(properties={"a": {"type": "array"}}), "an array needs items"),
        (
            _root(properties={"a": {"type": "string"}}, anyOf=[{"type": "object"}]),
            ".spec.anyOf[0]: type is not allowed inside",
        ),
        (
            _root(properties={"a": {"type": "string"}}, allOf=[{"description": "d"}]),
            "description is not allowed inside",
        ),
        (
            _root(properties={"a": {"type": "string"}}, **{"not": {"default": 1}}),
            "default is not allowed inside",
        ),
        (_root(properties={"a": {"type": "integer", "default": "x"}}), "default 'x' is invalid"),
        (_root(properties={"a": {"type": "string", "foo": 1}}), "unknown schema keyword 'foo'"),
        (
            _root(
                properties={
                    "a": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
                }
            ),
            "uniqueItems cannot be set to true",
        ),
        (
            _root(
                properties={
                    "a": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["k"],
                        "items": {"type": "object", "properties": {"k": {"type": "string"}}},
                    }
                }
            ),
            "list-map key 'k' must be required or defaulted",
        ),
        (
            _root(properties={"a": {"type": "string", "x-kubernetes-map-type": "atomic"}}),
            "x-kubernetes-map-type on a non-object",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "metadata": {
                        "type": "object",
                        "properties": {
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                        },
                    }
                },
            },
            "only name and generateName may be restricted",
        ),
        (
            _root(properties={}, **{"x-kubernetes-validations": [{"rule": " "}]}),
            "needs a rule",
        ),
        (
            _root(properties={"a": {"type": "object", "properties": {}, "default": {"y": 1}}}),
            "Additional properties are not allowed",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "metadata": {
                        "type": "object",
                        "properties": {"name": {"type": "string", "default": "x"}},
                    }
                },
            },
            "defaults are not allowed inside metadata",
        ),
        (
            _root(
                properties={
                    "a": {
                        "type": "array",
                        "x-kubernetes-list-type": "set",
                        "items": {"type": "object", "properties": {}},
                    }
                }
            ),
            "a set's items must be scalars or atomic",
        ),
    ],
)
def test_checker_rejects(schema: dict[str, Any], message: str) -> None:
    """Schemas kube-apiserver 1.36.3 refuses (each case was checked against one)."""
    errors = structural_errors(schema, strict=False)
    assert any(message in e for e in errors), errors


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (_root(additionalProperties=False), "additionalProperties: false is not allowed"),
        (_root(additionalProperties=True), "additionalProperties: true needs preserve"),
        (
            _root(properties={"a": {"type": "string"}}, oneOf=[{"properties": {"b": {}}}]),
            "property 'b' is not specified outside",
        ),
        (_root(properties={"a": {"type": "string", "enum": [1]}}), "enum value 1 does not match"),
        (
            _root(properties={"a": {"type": "string", "x-kubernetes-int-or-string": True}}),
            "int-or-string nodes must not set type",
        ),
        (_root(required=["missing"], properties={}), "required property 'missing'"),
        (_root(properties={"a": {"type": "string", "default": None}}), "null default needs"),
    ],
)
def test_strict_rules(schema: dict[str, Any], message: str) -> None:
    """Rules the docs state (or plain hygiene) that kube-apiserver 1.36.3 lets through."""
    assert any(message in e for e in structural_errors(schema)), structural_errors(schema)
    assert structural_errors(schema, strict=False) == []


def test_checker_accepts_kubernetes_forms() -> None:
    schema = _root(
        properties={
            "ios": {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            },
            "free": {"x-kubernetes-preserve-unknown-fields": True, "nullable": True},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "s": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "d": {"type": "string", "default": "x", "enum": ["x", "y"]},
        },
    )
    assert structural_errors(schema) == []


# -- Kubernetes definitions ---------------------------------------------------------------


def _definitions() -> Definitions:
    k8s = load_model().kubernetes
    return Definitions(k8s.definitions, descriptions=False, overlays=k8s.overlays)


def test_full_podspec_converts_to_a_structural_schema() -> None:
    """PodSpec could be embedded fully: the converter handles it, it is just big.

    The model keeps it (and Container, ServiceSpec) as preserve-unknown-fields; this test
    documents the size a full schema would add per pod template.
    """
    pod = _definitions().structural("io.k8s.api.core.v1.PodSpec")
    schema = {"type": "object", "properties": {"spec": pod}}
    assert structural_errors(schema) == []
    ports = pod["properties"]["containers"]["items"]["properties"]["ports"]
    assert ports["x-kubernetes-list-type"] == "map"  # protocol default restored by overlay
    assert pod["properties"]["containers"]["items"]["properties"]["resources"]
    size = len(json.dumps(pod))
    assert size > 50_000, size


def test_int_or_string_and_quantity() -> None:
    defs = _definitions()
    strategy = defs.structural("io.k8s.api.apps.v1.DeploymentStrategy")
    surge = strategy["properties"]["rollingUpdate"]["properties"]["maxSurge"]
    assert surge["x-kubernetes-int-or-string"] is True and "type" not in surge
    claim = defs.structural("io.k8s.api.core.v1.PersistentVolumeClaimSpec")
    storage = claim["properties"]["resources"]["properties"]["requests"]["additionalProperties"]
    assert storage["x-kubernetes-int-or-string"] is True and "pattern" in storage


def test_recursive_and_unsupported_definitions_are_refused(tmp_path: Path) -> None:
    defs = {
        "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
        "B": {"type": ["object", "null"], "properties": {"a": {"$ref": "#/$defs/A"}}},
        "U": {"type": ["string", "integer"]},
        "K": {"type": "string", "x-new-thing": True},
        "N": {"description": "untyped"},
    }
    path = tmp_path / "_definitions.json"
    path.write_text(json.dumps({"$defs": defs}), encoding="utf-8")
    converter = Definitions("9.99", path=path)
    with pytest.raises(DefinitionsError, match="cannot be inlined: A -> B -> A"):
        converter.structural("A")
    with pytest.raises(DefinitionsError, match="unsupported type"):
        converter.structural("U")
    with pytest.raises(DefinitionsError, match="unsupported keyword 'x-new-thing'"):
        converter.structural("K")
    with pytest.raises(DefinitionsError, match="schema without a type"):
        converter.structural("N")


def test_unknown_definition_and_overlay() -> None:
    with pytest.raises(DefinitionsError, match="unknown Kubernetes definition"):
        _definitions().structural("io.k8s.api.core.v1.Nope")
    with pytest.raises(DefinitionsError, match="overlay for unknown definition"):
        Definitions("1.36", overlays={"io.k8s.api.core.v1.Nope": {}})
    with pytest.raises(DefinitionsError, match="no definitions for Kubernetes"):
        Definitions("0.1")
