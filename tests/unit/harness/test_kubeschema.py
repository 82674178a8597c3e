"""Strict schema validation rejects what the API server would reject, for each schema source."""

from __future__ import annotations

from typing import Any

from slinky_harness.k8s import schemas as kubeschema


def _service_monitor(**endpoint: Any) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "m", "namespace": "ns"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "endpoints": [{"port": "metrics", **endpoint}],
        },
    }


def test_known_versions_cover_the_supported_range() -> None:
    versions = kubeschema.known_versions()
    assert "1.29.0" in versions
    assert kubeschema.newest_version() == versions[-1]


def test_core_kind_unknown_field_is_rejected() -> None:
    schemas = kubeschema.schema_set("1.29.0")
    good = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}
    assert schemas.validate(good) == []
    bad = {**good, "dataa": {}}
    assert any("dataa" in p for p in schemas.validate(bad))


def test_core_kind_wrong_type_is_rejected() -> None:
    schemas = kubeschema.schema_set("1.29.0")
    bad = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": "two"},
    }
    assert any(".spec.replicas" in p for p in schemas.validate(bad))


def test_third_party_crds_validate_strictly() -> None:
    schemas = kubeschema.schema_set("1.29.0")
    assert schemas.validate(_service_monitor(interval="30s")) == []
    assert schemas.validate(_service_monitor(intervall="30s"))


def test_unknown_kind_is_an_error_not_a_pass() -> None:
    schemas = kubeschema.schema_set("1.29.0")
    problems = schemas.validate(
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    )
    assert problems and "no schema" in problems[0]


def test_slinky_resource_against_our_crd() -> None:
    schemas = kubeschema.schema_set("1.29.0")
    token = {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "Token",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"usernamee": "slurm"},
    }
    assert schemas.validate(token)
