"""Every chart's values.schema.json is strict, self-contained draft-07, and Helm enforces it."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from slinky_harness.helm import charts
from slinky_harness.helm import client as helm
from slinky_harness.k8s.manifests import walk

CHARTS = charts.discover_charts()
DRAFT7 = "http://json-schema.org/draft-07/schema#"


def _schema(chart: charts.Chart) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((chart.path / "values.schema.json").read_text())
    return data


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = str(node["$ref"]).removeprefix("#/")
        target: Any = schema
        for part in ref.split("/"):
            target = target[part]
        node = target
    return node


def _leaves_in(
    root: dict[str, Any], node: dict[str, Any], value: Any, path: tuple[str, ...]
) -> list[tuple[tuple[str, ...], Any, dict[str, Any]]]:
    """(path, default, schema) of every boolean or integer default in ``value``."""
    node = _resolve(root, node)
    if isinstance(value, dict):
        out = []
        for key, sub_value in value.items():
            sub = (node.get("properties") or {}).get(key)
            if sub is not None:
                out += _leaves_in(root, sub, sub_value, (*path, key))
        return out
    if isinstance(value, (bool, int)) and not isinstance(value, float):
        return [(path, value, node)]
    return []


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_schema_is_strict_self_contained_draft7(chart: charts.Chart) -> None:
    """draft-07, meta-valid, only local $refs, closed root that still accepts global and enabled."""
    schema = _schema(chart)
    assert schema.get("$schema") == DRAFT7
    jsonschema.Draft7Validator.check_schema(schema)
    remote = [
        f"{p}: {v}" for p, v in walk(schema) if p.endswith(".$ref") and not str(v).startswith("#/")
    ]
    assert not remote, f"remote $ref makes helm go to the network: {remote}"
    assert schema.get("additionalProperties") is False, "the values root must be closed"
    props = schema.get("properties", {})
    assert "global" in props and "enabled" in props, (
        "subchart use needs global and enabled at the root"
    )
    open_objects = [
        p
        for p, v in walk(schema)
        if isinstance(v, dict)
        and v.get("type") == "object"
        and "properties" in v
        and "additionalProperties" not in v
        and not p.startswith(".properties.global")
    ]
    assert not open_objects, (
        "objects with properties must say additionalProperties "
        f"(false for ours, true for Kubernetes pass-through): {open_objects}"
    )


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_values_and_scenarios_validate(chart: charts.Chart) -> None:
    """values.yaml and every ci scenario are valid against the schema."""
    validator = jsonschema.Draft7Validator(_schema(chart))
    for path in [chart.path / "values.yaml", *chart.ci_files]:
        errors = [
            f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(charts.load_yaml(path) or {})
        ]
        assert not errors, f"{path}: {errors}"


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
@pytest.mark.parametrize("binary", ["helm", "helm3"])
def test_unknown_key_is_rejected_by_name(chart: charts.Chart, binary: str) -> None:
    """A misspelled key fails before rendering, and the message names it."""
    result = helm.template(
        chart.path, {"replicaCuont": 2}, helm=binary, kube_version=chart.min_kube_version
    )
    assert not result.ok
    assert "replicaCuont" in result.stderr, result.stderr


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
@pytest.mark.parametrize("binary", ["helm", "helm3"])
def test_nested_unknown_key_and_wrong_type_are_rejected_by_name(
    chart: charts.Chart, binary: str
) -> None:
    """For sampled boolean and integer defaults, a wrong type and a sibling typo each fail naming the key."""
    schema = _schema(chart)
    defaults = charts.load_yaml(chart.path / "values.yaml") or {}
    leaves = [leaf for leaf in _leaves_in(schema, schema, defaults, ()) if len(leaf[0]) >= 2]
    assert leaves, "expected nested boolean or integer values to probe"
    for path, value in [(p, v) for p, v, _ in leaves[:: max(1, len(leaves) // 4)]][:5]:
        _probe(chart, binary, path, value)


def _probe(chart: charts.Chart, binary: str, path: tuple[str, ...], value: Any) -> None:
    wrong: dict[str, Any] = {}
    cursor = wrong
    for key in path[:-1]:
        cursor = cursor.setdefault(key, {})
    cursor[path[-1]] = "not-a-number" if not isinstance(value, bool) else "yes please"
    result = helm.template(chart.path, wrong, helm=binary, kube_version=chart.min_kube_version)
    assert not result.ok, f"{'.'.join(path)} accepted a string"
    assert path[-1] in result.stderr and path[-2] in result.stderr, result.stderr
    typo: dict[str, Any] = {}
    cursor = typo
    for key in path[:-1]:
        cursor = cursor.setdefault(key, {})
    cursor[path[-1] + "Typo"] = value
    result = helm.template(chart.path, typo, helm=binary, kube_version=chart.min_kube_version)
    assert not result.ok, f"{'.'.join(path)}Typo was accepted"
    assert f"{path[-1]}Typo" in result.stderr, result.stderr
