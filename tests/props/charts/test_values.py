"""Property tests over each chart's values, drawn from its own values.schema.json.

Oracle (issue 2): every schema-valid values file either renders manifests that pass every
render check, or fails with the chart's own ``fail``/``required`` message, one that the chart's
message table proves (a row of ``tests/chart_messages.py``'s ``ROWS`` printed by
the same template format). A Go template runtime error, a YAML error, an invalid manifest or a
message no row has is a bug. Every schema-invalid values file is rejected by Helm before
rendering, with a message that names the offending key.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import shutil
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest
import yaml
from hypothesis import given, note
from hypothesis import strategies as st
from tests.chart_messages import ROWS, template_messages

from slinky_crdgen import cel
from slinky_harness.helm import charts, valuegen
from slinky_harness.helm import client as helm
from slinky_harness.k8s import manifests
from slinky_harness.k8s import schemas as kubeschema

if TYPE_CHECKING:
    import re
    from pathlib import Path

CHARTS = charts.discover_charts()
NEWEST = kubeschema.newest_version()
# Build the validators (and import the CEL library, which raises the recursion limit once) before
# hypothesis runs: hypothesis warns when the limit changes inside an example.
SCHEMAS = kubeschema.schema_set(NEWEST)
cel.compile_rules(*next(iter(SCHEMAS.crds.values())))
REGISTRY = "registry.props.invalid"
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


@functools.cache
def message_table(chart: str) -> tuple[re.Pattern[str], ...]:
    """The message formats of ``chart``'s templates that a row of its message table proves (the
    row's message is one the format prints); validate.yaml's list format matches no single
    message, so it is never one of them."""
    formats, _ = template_messages(next(c for c in CHARTS if c.name == chart))
    rows = [row.message for row in ROWS if row.chart == chart]
    patterns = (f.pattern() for f in formats)
    return tuple(p for p in patterns if any(p.fullmatch(message) for message in rows))


def unknown_messages(result: helm.HelmResult) -> list[str]:
    """The messages of a failed render that are not in the failing chart's message table (all
    of Helm's error when no template failed)."""
    failure = result.template_failure()
    if failure is None:
        return [result.stderr.strip()]
    known = message_table(failure.chart) if failure.chart in {c.name for c in CHARTS} else ()
    return [m for m in failure.messages if not any(p.fullmatch(m) for p in known)]


def check_render(chart: charts.Chart, values: dict[str, Any]) -> None:
    """Apply the oracle to one values file."""
    values = valuegen.set_path(values, ("global", "imageRegistry"), REGISTRY)
    note("values file:\n" + yaml.safe_dump(values, sort_keys=True))
    result = helm.template(chart.path, values, kube_version=NEWEST)
    if not result.ok:
        bugs = [marker for marker in BUG_MARKERS if marker in result.stderr]
        assert not bugs, f"render failed with bug markers {bugs}:\n{result.stderr}"
        unknown = unknown_messages(result)
        assert not unknown, (
            f"render failed with messages not in {chart.name}'s message table "
            f"(tests/chart_messages.py ROWS): {unknown}\n{result.stderr}"
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


def _copy_with_template(tmp_path: Path, name: str, template: str) -> charts.Chart:
    source = next(c for c in CHARTS if c.name == name)
    copy = shutil.copytree(source.path, tmp_path / name)
    (copy / "templates" / "zz-added.yaml").write_text(template, encoding="utf-8")
    return dataclasses.replace(source, path=copy)


def test_the_oracle_calls_a_message_outside_the_table_a_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chart message that no row of the table has fails the oracle, though it is a clean
    ``fail`` of the chart's own template."""
    monkeypatch.setitem(globals(), "note", lambda text: None)  # hypothesis notes only in @given
    chart = _copy_with_template(
        tmp_path, "gpu-topology-labeler", '{{- fail "no row says this" }}\n'
    )
    with pytest.raises(AssertionError, match=r"not in gpu-topology-labeler's message table"):
        check_render(chart, {})


def test_the_oracle_accepts_a_message_of_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A message a row proves, with other numbers than the row's, is the chart's own refusal."""
    monkeypatch.setitem(globals(), "note", lambda text: None)  # hypothesis notes only in @given
    chart = next(c for c in CHARTS if c.name == "gpu-topology-labeler")
    for values in (
        {"controller": {"replicas": 3, "leaderElection": {"enabled": False}}},
        {"controller": {"requestTimeoutSeconds": 14}},
    ):
        result = helm.template(chart.path, values, kube_version=NEWEST)
        assert not result.ok, f"{values} renders: the case proves nothing"
        assert unknown_messages(result) == [], result.describe()
        check_render(chart, values)
