"""Hand-written resources: valid ones (using every field of the API) pass, invalid ones fail."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from tests.unit.crdgen.crdgen_support import (
    GROUP,
    KINDS,
    VERSION,
    Sample,
    crds,
    resource_errors,
    samples,
    value_paths,
)
from tests.unit.crdgen.crdgen_support import schema_paths as all_paths

from slinky_crdgen.cel import evaluate_rules
from slinky_crdgen.defaulting import apply_defaults
from slinky_crdgen.jsonschema import (
    crd_to_jsonschema,
    crd_validator,
    openapi_to_jsonschema,
    version_schema,
)

VALID = samples("valid")
INVALID = samples("invalid")


@pytest.mark.parametrize("sample", VALID, ids=[s.id for s in VALID])
def test_valid_sample(sample: Sample) -> None:
    assert resource_errors(sample.obj) == []


@pytest.mark.parametrize("sample", INVALID, ids=[s.id for s in INVALID])
def test_invalid_sample(sample: Sample) -> None:
    assert sample.expect, f"{sample.path}: first line must be '# expect: <message part>'"
    errors = resource_errors(sample.obj)
    assert any(sample.expect in e for e in errors), errors


def test_valid_samples_use_every_field() -> None:
    """Each kind's valid samples set every spec and status field of its schema.

    Fields kept as preserve-unknown-fields (pod template spec, containers, Service spec,
    volume claim templates) count once set; what is inside them is not the CRD's business.
    """
    used: dict[str, set[str]] = defaultdict(set)
    for sample in VALID:
        crd = crds()[(GROUP, sample.obj["kind"])]
        used[sample.obj["kind"]] |= value_paths(version_schema(crd, VERSION), sample.obj)
    missing: dict[str, list[str]] = {}
    for kind in KINDS:
        schema = version_schema(crds()[(GROUP, kind)], VERSION)
        wanted = {p for p in all_paths(schema) if p.startswith((".spec", ".status"))}
        gaps = sorted(wanted - used[kind])
        if gaps:
            missing[kind] = gaps
    assert missing == {}


def test_every_kind_has_valid_and_invalid_samples() -> None:
    assert {s.obj["kind"] for s in VALID} == set(KINDS)
    assert {s.obj["kind"] for s in INVALID} >= set(KINDS) - {"RestApi"} | {"RestAPI"}


# -- converter semantics ----------------------------------------------------------------


def _validate(schema: dict[str, Any], value: Any) -> list[str]:
    import jsonschema  # noqa: PLC0415

    validator = jsonschema.Draft202012Validator(openapi_to_jsonschema(schema))
    return [e.message for e in validator.iter_errors(value)]


def test_nullable() -> None:
    schema = {"type": "string", "nullable": True, "enum": ["a"]}
    assert _validate(schema, None) == []
    assert _validate(schema, "b")
    assert _validate({"type": "string"}, None)


def test_int_or_string() -> None:
    schema = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    assert _validate(schema, 3) == [] and _validate(schema, "25%") == []
    assert _validate(schema, 1.5) and _validate(schema, [])


def test_preserve_unknown_fields() -> None:
    open_obj = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {"a": {"type": "integer"}},
    }
    assert _validate(open_obj, {"a": 1, "b": {"c": 2}}) == []
    assert _validate(open_obj, {"a": "x"})
    closed = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert _validate(closed, {"b": 1})
    assert _validate({"x-kubernetes-preserve-unknown-fields": True}, [1, "x"]) == []


def test_defaulted_required_fields_are_optional() -> None:
    schema = {
        "type": "object",
        "required": ["a", "b"],
        "properties": {"a": {"type": "boolean", "default": False}, "b": {"type": "string"}},
    }
    assert _validate(schema, {"b": "x"}) == []
    assert _validate(schema, {"a": True})


def test_whole_resource_schema() -> None:
    crd = crds()[(GROUP, "Token")]
    schema = crd_to_jsonschema(crd, VERSION)
    assert schema["properties"]["kind"]["const"] == "Token"
    assert schema["properties"]["apiVersion"]["const"] == f"{GROUP}/{VERSION}"
    errors = list(crd_validator(crd, VERSION).iter_errors({"apiVersion": "v1", "kind": "Token"}))
    assert errors


def test_defaulting_like_the_api_server() -> None:
    crd = crds()[(GROUP, "NodeSet")]
    schema = version_schema(crd, VERSION)
    out = apply_defaults(
        schema,
        {
            "spec": {
                "controllerRef": {"name": "s"},
                "updateStrategy": {"rollingUpdate": {}},
                "replicas": None,
                "partition": {},
            }
        },
    )
    spec = out["spec"]
    assert spec["replicas"] == 1 and spec["scalingMode"] == "StatefulSet"
    assert spec["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%"},
    }
    assert spec["partition"] == {"enabled": False}
    assert spec["workloadDisruptionProtection"] is True
    assert "ssh" not in spec, "absent objects are not created by defaulting"


def _cel_crd(rule: str) -> dict[str, Any]:
    return {
        "spec": {
            "group": "example.org",
            "names": {"kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"a": {"type": "integer"}},
                                    "x-kubernetes-validations": [
                                        {"rule": rule, "message": "bad a"}
                                    ],
                                }
                            },
                        }
                    },
                }
            ],
        }
    }


def test_cel_rule_evaluation() -> None:
    crd = _cel_crd("self.a > 1")
    assert evaluate_rules(crd, "v1", {"spec": {"a": 2}}) == []
    assert evaluate_rules(crd, "v1", {"spec": {"a": 1}}) == [".spec: bad a"]
    assert evaluate_rules(crd, "v1", {}) == [], "rules run only on present values"


def test_broken_cel_rule_is_reported() -> None:
    errors = evaluate_rules(_cel_crd("self.a >"), "v1", {"spec": {"a": 2}})
    assert len(errors) == 1 and "does not compile" in errors[0]


def test_transition_rules_are_only_compiled() -> None:
    assert evaluate_rules(_cel_crd("self.a == oldSelf.a"), "v1", {"spec": {"a": 2}}) == []
    errors = evaluate_rules(_cel_crd("self.a == oldSelf."), "v1", {"spec": {"a": 2}})
    assert errors and "does not compile" in errors[0]
