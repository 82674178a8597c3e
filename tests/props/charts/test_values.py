"""Property tests over each chart's values, drawn from its own values.schema.json.

Oracle (issue 2): every schema-valid values file either renders manifests that pass every
render check, or fails with the chart's own ``fail``/``required`` message. A Go template runtime
error, a YAML error or an invalid manifest is a bug. Every schema-invalid values file is rejected
by Helm before rendering, with a message that names the offending key.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given, note
from hypothesis import strategies as st

from slinky_crdgen import cel
from slinky_harness.helm import charts, valuegen
from slinky_harness.helm import client as helm
from slinky_harness.k8s import manifests
from slinky_harness.k8s import schemas as kubeschema

CHARTS = charts.discover_charts()
NEWEST = kubeschema.newest_version()
# Build the validators (and import the CEL library, which raises the recursion limit once) before
# hypothesis runs: hypothesis warns when the limit changes inside an example.
SCHEMAS = kubeschema.schema_set(NEWEST)
cel.compile_rules(*next(iter(SCHEMAS.crds.values())))
REGISTRY = "registry.props.invalid"
CHART_FAILURE = re.compile(r"execution error at \([^)]*\): ")
BUG_MARKERS = (
    "nil pointer",
    "wrong type for value",
    "can't evaluate field",
    "invalid memory address",
    "index out of range",
    "interface conversion",
    "map has no entry",
    "error converting YAML to JSON",
    "cannot unmarshal",
    "YAML parse error",
    "unable to parse YAML",
    "error calling toYaml",
    "incompatible types for comparison",
)


def _schema(chart: charts.Chart) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((chart.path / "values.schema.json").read_text())
    return data


def _defaults(chart: charts.Chart) -> dict[str, Any]:
    data: dict[str, Any] = charts.load_yaml(chart.path / "values.yaml") or {}
    return data


def check_render(chart: charts.Chart, values: dict[str, Any]) -> None:
    """Apply the oracle to one values file."""
    values = valuegen.set_path(values, ("global", "imageRegistry"), REGISTRY)
    note("values file:\n" + yaml.safe_dump(values, sort_keys=True))
    result = helm.template(chart.path, values, kube_version=NEWEST)
    if not result.ok:
        bugs = [marker for marker in BUG_MARKERS if marker in result.stderr]
        assert CHART_FAILURE.search(result.stderr) and not bugs, (
            f"render failed without a chart message (bug markers: {bugs}):\n{result.stderr}"
        )
        return
    problems = manifests.all_invariants(
        result.docs, namespace=helm.DEFAULT_NAMESPACE, values=values, registry=REGISTRY
    )
    problems += SCHEMAS.validate_all(result.docs)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_schema_valid_values_render_or_fail_cleanly(chart: charts.Chart) -> None:
    """Invariant: schema-valid values render valid manifests or fail with the chart's own message."""
    schema = _schema(chart)
    validator = jsonschema.Draft7Validator(schema)

    @given(valuegen.values_strategy(schema, _defaults(chart)))
    def run(values: dict[str, Any]) -> None:
        errors = [e.message for e in validator.iter_errors(values)]
        assert not errors, f"the strategy drew schema-invalid values: {errors}"
        check_render(chart, values)

    run()


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_schema_invalid_values_are_rejected_before_rendering(chart: charts.Chart) -> None:
    """Invariant: an unknown key in any closed object, or a wrong-typed leaf, is refused by name."""
    schema = _schema(chart)
    validator = jsonschema.Draft7Validator(schema)
    closed = valuegen.closed_object_paths(schema)
    typed = valuegen.typed_leaf_paths(schema)

    unknown_key = (
        st.tuples(st.sampled_from(closed), st.from_regex(r"zz[a-z]{1,6}", fullmatch=True))
        .map(lambda c: (*c[0], c[1]))
        .map(lambda p: (p, "surprise"))
    )
    wrong_type = st.sampled_from(typed).map(lambda p: (p[0], "not-a-" + p[1]))

    @given(st.one_of(unknown_key, wrong_type))
    def run(mutation: tuple[tuple[str, ...], Any]) -> None:
        path, value = mutation
        values = valuegen.set_path({}, path, value)
        note("values file:\n" + yaml.safe_dump(values, sort_keys=True))
        if not list(validator.iter_errors(values)):
            return  # e.g. a key the schema allows after all
        result = helm.template(chart.path, values, kube_version=NEWEST)
        assert not result.ok, f"helm accepted schema-invalid values at {'.'.join(path)}"
        assert "schema" in result.stderr, result.stderr
        assert path[-1] in result.stderr, f"the error does not name {path[-1]!r}:\n{result.stderr}"

    run()
