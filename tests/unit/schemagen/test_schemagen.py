"""The values-schema generator: types from defaults, closed objects, annotations, descriptions,
errors that name the values.yaml line, the hand-written part, deterministic atomic output.

Behaviour is asserted by validating sample values against the generated schema (jsonschema),
not by comparing the generator's text with a copy of itself.
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest

from slinky_schemagen import AnnotationError, SchemaGenError, main
from slinky_schemagen.chart import EXTRA_FILE, SCHEMA_FILE, generate_chart, generate_text

if TYPE_CHECKING:
    from pathlib import Path


def schema_of(values: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return generate_text(textwrap.dedent(values), extra or {}, "values.yaml")


def accepts(schema: dict[str, Any], values: dict[str, Any]) -> bool:
    return jsonschema.Draft7Validator(schema).is_valid(values)


def errors(schema: dict[str, Any], values: dict[str, Any]) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in jsonschema.Draft7Validator(schema).iter_errors(values)
    ]


BASIC = """
    # -- A name.
    name: demo
    # -- How many.
    count: 3
    # -- A ratio.
    ratio: 0.5
    # -- On or off.
    enabled: true
    # -- Ports.
    ports: [80]
    # -- A component.
    server:
      # -- Its port.
      port: 8080
"""


@pytest.mark.parametrize(
    ("values", "ok"),
    [
        pytest.param(
            {"name": "x", "count": 1, "ratio": 2, "enabled": False}, True, id="same-types"
        ),
        pytest.param({"ratio": 1}, True, id="integer-is-a-number"),
        pytest.param({"name": 1}, False, id="string-gets-integer"),
        pytest.param({"count": "3"}, False, id="integer-gets-string"),
        pytest.param({"count": 1.5}, False, id="integer-gets-float"),
        pytest.param({"enabled": "true"}, False, id="boolean-gets-string"),
        pytest.param({"ports": [443, 8443]}, True, id="array-items-from-first-element"),
        pytest.param({"ports": ["443"]}, False, id="array-item-wrong-type"),
        pytest.param({"server": {"port": 1}}, True, id="nested"),
        pytest.param({"server": []}, False, id="object-gets-array"),
    ],
)
def test_types_come_from_the_defaults(values: dict[str, Any], ok: bool) -> None:
    assert accepts(schema_of(BASIC), values) is ok


def test_every_object_is_closed_and_the_error_names_the_key() -> None:
    schema = schema_of(BASIC)
    top = errors(schema, {"nmae": "x"})
    assert len(top) == 1 and "'nmae'" in top[0]
    nested = errors(schema, {"server": {"prot": 1}})
    assert len(nested) == 1 and nested[0].startswith("server: ") and "'prot'" in nested[0]


def test_the_defaults_themselves_are_valid() -> None:
    schema = schema_of(BASIC)
    assert accepts(schema, {"name": "demo", "count": 3, "ratio": 0.5, "enabled": True})


def test_descriptions_are_the_helm_docs_text() -> None:
    schema = schema_of(
        """
        # -- (int) Seconds to wait,
        # at most an hour.
        # @default -- twice the timeout
        wait: null
        # @schema {minimum: 1}
        # -- Replicas.
        replicas: 1
        """
    )
    wait = schema["properties"]["wait"]
    assert wait["description"] == "Seconds to wait, at most an hour."
    assert accepts(schema, {"wait": None}) and accepts(schema, {"wait": 5})
    assert not accepts(schema, {"wait": "5"}), "the (int) type hint types a null default"
    assert schema["properties"]["replicas"]["description"] == "Replicas."


@pytest.mark.parametrize(
    ("annotation", "good", "bad"),
    [
        pytest.param("{enum: [a, b]}", "a", "c", id="enum"),
        pytest.param("{pattern: '^[a-z]+$'}", "abc", "ABC", id="pattern"),
        pytest.param("{maxLength: 3}", "abc", "abcd", id="maxLength"),
        pytest.param("{format: date}", "2026-01-01", 7, id="format-keeps-type"),
        pytest.param("{nullable: true}", None, 7, id="nullable"),
        pytest.param("{type: [string, 'null']}", None, 7, id="type-list"),
        pytest.param("{$ref: dnsLabelOrEmpty}", "my-name", "My_Name", id="shared-definition"),
    ],
)
def test_annotations_constrain_a_string(annotation: str, good: Any, bad: Any) -> None:
    schema = schema_of(
        f"""
        # @schema {annotation}
        # -- A value.
        value: a
        """
    )
    assert accepts(schema, {"value": good}), errors(schema, {"value": good})
    assert not accepts(schema, {"value": bad})


def test_block_annotation_and_numbers() -> None:
    schema = schema_of(
        """
        # @schema
        # type: number
        # minimum: 0
        # maximum: 10
        # -- Rate.
        qps: 5
        """
    )
    assert accepts(schema, {"qps": 2.5}) and accepts(schema, {"qps": 10})
    assert not accepts(schema, {"qps": 11}) and not accepts(schema, {"qps": -1})


def test_open_objects_and_maps() -> None:
    schema = schema_of(
        """
        # @schema {additionalProperties: true}
        # -- Pod security context (a Kubernetes struct).
        podSecurityContext:
          runAsNonRoot: true
        # @schema {additionalProperties: {type: string}}
        # -- Free-form annotations.
        annotations: {}
        # @schema {$ref: labelMap}
        # -- Node labels.
        nodeSelector: {}
        # @schema {additionalProperties: true}
        # -- Globals of a parent chart.
        global:
          # -- A registry.
          imageRegistry: ""
        """
    )
    assert accepts(schema, {"podSecurityContext": {"anything": {"at": "all"}}})
    assert accepts(schema, {"annotations": {"a": "b"}})
    assert not accepts(schema, {"annotations": {"a": 1}})
    assert accepts(schema, {"nodeSelector": {"kubernetes.io/os": "linux"}})
    assert not accepts(schema, {"nodeSelector": {"bad key!": "x"}})
    assert accepts(schema, {"global": {"other": 1, "imageRegistry": "r"}})
    assert not accepts(schema, {"global": {"imageRegistry": 1}}), "documented keys keep their type"


def test_array_item_annotation_replaces_inference() -> None:
    schema = schema_of(
        """
        # @schema {items: {$ref: toleration}}
        # -- Tolerations.
        tolerations:
          - key: gpu
            operator: Exists
        """
    )
    assert accepts(schema, {"tolerations": [{"key": "a", "effect": "NoSchedule"}]})
    assert not accepts(schema, {"tolerations": [{"efect": "NoSchedule"}]})


def test_only_reached_definitions_are_carried() -> None:
    schema = schema_of(
        """
        # @schema {$ref: labelSelector}
        # -- Selector.
        selector: {}
        """
    )
    assert set(schema["definitions"]) == {
        "labelSelector",
        "labelSelectorRequirement",
        "labelMap",
        "labelValue",
        "qualifiedName",
    }
    jsonschema.Draft7Validator.check_schema(schema)


def test_hand_written_part_adds_cross_field_rules() -> None:
    extra = {
        "title": "demo",
        "allOf": [
            {
                "if": {"properties": {"replicas": {"minimum": 2}}},
                "then": {"properties": {"leader": {"const": True}}},
            }
        ],
    }
    schema = schema_of(
        """
        # -- Replicas.
        replicas: 1
        # -- Leader election.
        leader: true
        """,
        extra,
    )
    assert schema["title"] == "demo"
    assert accepts(schema, {"replicas": 2, "leader": True})
    assert accepts(schema, {"replicas": 1, "leader": False})
    assert not accepts(schema, {"replicas": 2, "leader": False})


def test_hand_written_part_cannot_redefine_properties() -> None:
    with pytest.raises(SchemaGenError, match="properties cannot be set here"):
        generate_text("# -- A.\na: 1\n", {"properties": {}}, "values.yaml")


BAD = [
    pytest.param(
        "# @schema {minimum: 1\n# -- A.\na: 1\n",
        1,
        "malformed `# @schema` annotation of `a`",
        id="bad-yaml",
    ),
    pytest.param("# @schema 7\n# -- A.\na: 1\n", 1, "is not a mapping", id="not-a-mapping"),
    pytest.param(
        "# @schema {minimun: 1}\n# -- A.\na: 1\n", 1, "unknown keyword(s) minimun", id="typo"
    ),
    pytest.param(
        "# @schema {description: x}\n# -- A.\na: 1\n",
        1,
        "is the key's `# --` comment",
        id="description",
    ),
    pytest.param(
        "# @schema {minimum: one}\n# -- A.\na: 1\n", 1, "not valid draft-07", id="bad-value"
    ),
    pytest.param(
        "# @schema {$ref: nosuch}\n# -- A.\na: 1\n", 1, "unknown definition 'nosuch'", id="ref"
    ),
    pytest.param(
        "x: 1\n# -- A.\n# @schema {minimum: 1}\na: 1\n",
        3,
        "move it above the `# --` line",
        id="below-doc",
    ),
    pytest.param("# -- A.\na: 1\n\n# @schema {minimum: 1}\n", 4, "belongs to no key", id="orphan"),
    pytest.param(
        "# -- A.\nbase: &b {x: 1}\n# -- C.\nc:\n  <<: *b\n", 5, "merge keys", id="merge-key"
    ),
    pytest.param("# -- A.\na: []\n", 2, "empty list", id="empty-list"),
    pytest.param("# -- A.\na: {}\n", 2, "empty map", id="empty-map"),
    pytest.param("# -- A.\na: null\n", 2, "defaults to null", id="null"),
    pytest.param("# -- A.\na:\n  b: 1\n", 3, "`a.b` has no `# --` comment", id="undocumented"),
    pytest.param(
        "# @schema {maximum: 0}\n# -- A.\na: 1\n", 3, "fails its own schema", id="default-fails"
    ),
]


@pytest.mark.parametrize(("values", "line", "text"), BAD)
def test_errors_name_the_line_and_the_fix(values: str, line: int, text: str) -> None:
    with pytest.raises(AnnotationError) as info:
        generate_text(values, {}, "charts/x/values.yaml")
    assert info.value.line == line, str(info.value)
    assert str(info.value).startswith(f"charts/x/values.yaml:{line}: ")
    assert text in str(info.value)


def _chart(root: Path, values: str, extra: str = "title: demo\n") -> Path:
    chart = root / "demo"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text(values)
    (chart / EXTRA_FILE).write_text(extra)
    return chart


def test_cli_writes_checks_and_names_the_stale_chart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chart = _chart(tmp_path, textwrap.dedent(BASIC))
    assert main(["--check", str(chart)]) == 1
    err = capsys.readouterr().err
    assert f"{chart / SCHEMA_FILE} is stale; regenerate with: python -m slinky_schemagen" in err
    assert main([str(chart)]) == 0
    written = (chart / SCHEMA_FILE).read_text()
    assert written.endswith("}\n") and json.loads(written)["title"] == "demo"
    assert [p.name for p in chart.iterdir() if p.name.startswith(".")] == [], (
        "no temporary file left"
    )
    assert main(["--check", str(chart)]) == 0
    assert main([str(chart)]) == 0 and (chart / SCHEMA_FILE).read_text() == written


def test_cli_reports_a_malformed_annotation_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chart = _chart(tmp_path, "# @schema {minimum: [\n# -- A.\na: 1\n")
    assert main([str(chart)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"schemagen: error: {chart / 'values.yaml'}:1: ")
    assert not (chart / SCHEMA_FILE).exists()


def test_cli_refuses_a_chart_that_did_not_opt_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chart = _chart(tmp_path, "# -- A.\na: 1\n")
    (chart / EXTRA_FILE).unlink()
    assert main([str(chart)]) == 1
    assert f"create {EXTRA_FILE}" in capsys.readouterr().err
    assert main(["--bogus"]) == 2


def test_output_is_deterministic_and_sorted(tmp_path: Path) -> None:
    """Keys in any order give the same bytes; the text is sorted, 2-space JSON."""
    forward = _chart(tmp_path, "# -- B.\nb: 1\n# -- A.\na: x\n")
    first = generate_chart(forward)
    assert first == generate_chart(forward)
    (forward / "values.yaml").write_text("# -- A.\na: x\n# -- B.\nb: 1\n")
    assert generate_chart(forward) == first
    data = json.loads(first)
    assert first == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_required_and_nullable_reference() -> None:
    schema = schema_of(
        """
        # @schema {required: [name]}
        # -- A secret reference.
        secret:
          # -- Secret name.
          name: creds
        # @schema {$ref: dnsSubdomain, nullable: true}
        # -- An optional name.
        other: null
        """
    )
    assert accepts(schema, {"secret": {"name": "x"}, "other": None})
    assert not accepts(schema, {"secret": {}}), "required key missing"
    assert accepts(schema, {"other": "a.b"}) and not accepts(schema, {"other": "A_B"})


def test_keys_are_named_as_written() -> None:
    """`true:` and `1:` are the keys "true" and "1" (as Helm reads them), not YAML 1.1 scalars."""
    schema = schema_of(
        """
        # -- Labels that look like other scalars.
        looks:
          # -- A key spelled like a boolean.
          true: yes
          # -- A key spelled like a number.
          1: x
        """
    )
    assert accepts(schema, {"looks": {"true": False, "1": "y"}})
    assert not accepts(schema, {"looks": {"true": "no"}}), "yes is YAML 1.1's boolean true"


@pytest.mark.parametrize("definition", ["labelMap", "annotationMap"])
def test_map_keys_are_refused_as_additional_properties(definition: str) -> None:
    """A bad map key fails at the map itself (an additional property), never through
    `propertyNames`, which Helm reports at whichever sibling value it validated last."""
    schema = schema_of(
        f"""
        # @schema {{$ref: {definition}}}
        # -- A map.
        m: {{}}
        """
    )
    assert accepts(schema, {"m": {"example.com/role": "db", "app": "x"}})
    assert "propertyNames" not in json.dumps(schema)
    bad = errors(schema, {"m": {"bad key!": "x"}})
    assert bad and all(e.startswith("m: ") for e in bad), bad
    assert not accepts(schema, {"m": {"y": "x"}}), "a bare y is a YAML 1.1 boolean in Helm"
    assert not accepts(schema, {"m": {"a" * 254 + "/" + "b" * 63: "x"}}), "over 317 characters"


def test_resource_names_are_refused_at_the_map() -> None:
    schema = schema_of(
        """
        # @schema {$ref: resources}
        # -- Resources.
        resources: {}
        """
    )
    assert accepts(schema, {"resources": {"limits": {"nvidia.com/gpu": 8, "memory": "1Gi"}}})
    assert errors(schema, {"resources": {"limits": {"bad name!": 1}}})[0].startswith(
        "resources/limits: "
    )
    assert not accepts(schema, {"resources": {"limits": {"cpu": "lots"}}})


def _subchart(root: Path, values: str, extra: str = "title: sub\n") -> Path:
    sub = root / "demo" / "charts" / "sub"
    sub.mkdir(parents=True)
    (sub / "Chart.yaml").write_text("apiVersion: v2\nname: sub\nversion: 0.1.0\n")
    (sub / "values.yaml").write_text(values)
    if extra:
        (sub / EXTRA_FILE).write_text(extra)
    return sub


SUB_VALUES = """\
# -- Install the subchart.
enabled: true
# @schema {minimum: 1}
# -- Copies.
copies: 2
# @schema {$ref: annotationMap}
# -- Annotations.
annotations: {}
"""


def test_a_subchart_key_takes_the_subcharts_schema(tmp_path: Path) -> None:
    """The alias key closes over exactly the subchart's keys with the subchart's rules (and
    cross-field rules); the parent's `# --` texts describe them."""
    _subchart(
        tmp_path,
        SUB_VALUES,
        "title: sub\nallOf:\n  - if: {properties: {copies: {minimum: 3}}}\n"
        "    then: {properties: {enabled: {const: true}}}\n",
    )
    parent = tmp_path / "demo"
    (parent / "values.yaml").write_text(
        "# @schema {subchart: charts/sub}\n# -- The subchart.\nsub:\n"
        "  # -- Parent's words for copies.\n  copies: 2\n"
    )
    (parent / EXTRA_FILE).write_text("title: demo\n")
    schema = json.loads(generate_chart(parent))
    block = schema["properties"]["sub"]
    assert block["description"] == "The subchart."
    assert block["properties"]["copies"]["description"] == "Parent's words for copies."
    assert "annotationMap" in schema["definitions"], "the subchart's definitions come along"
    assert accepts(schema, {"sub": {"copies": 1, "annotations": {"a": "b"}, "enabled": False}})
    assert not accepts(schema, {"sub": {"copies": 0}}), "the subchart's minimum"
    assert not accepts(schema, {"sub": {"copeis": 1}}), "closed over the subchart's keys"
    assert not accepts(schema, {"sub": {"copies": 3, "enabled": False}}), "its cross-field rule"


@pytest.mark.parametrize(
    ("parent_values", "sub_extra", "text"),
    [
        pytest.param(
            "# @schema {subchart: charts/sub}\n# -- S.\nsub:\n  # -- Not there.\n  other: 1\n",
            "title: sub\n",
            "`sub.other` is not a value of the subchart 'charts/sub'",
            id="unknown-key",
        ),
        pytest.param(
            "# @schema {subchart: charts/sub}\n# -- S.\nsub:\n"
            "  # @schema {minimum: 5}\n  # -- Copies.\n  copies: 5\n",
            "title: sub\n",
            "move this `# @schema` annotation there",
            id="annotation-below",
        ),
        pytest.param(
            "# @schema {subchart: charts/sub, minimum: 1}\n# -- S.\nsub: {}\n",
            "title: sub\n",
            "names a subchart, so it says nothing else",
            id="other-keywords",
        ),
        pytest.param(
            "# @schema {subchart: charts/sub}\n# -- S.\nsub: {}\n",
            "",
            f"has no {EXTRA_FILE}: a subchart's schema must be generated too",
            id="not-opted-in",
        ),
        pytest.param(
            "# @schema {subchart: .}\n# -- S.\nsub: {}\n",
            "title: sub\n",
            "is its own subchart",
            id="cycle",
        ),
    ],
)
def test_subchart_errors_name_the_line_and_the_fix(
    tmp_path: Path, parent_values: str, sub_extra: str, text: str
) -> None:
    _subchart(tmp_path, SUB_VALUES, sub_extra)
    parent = tmp_path / "demo"
    (parent / "values.yaml").write_text(parent_values)
    (parent / EXTRA_FILE).write_text("title: demo\n")
    with pytest.raises(SchemaGenError) as caught:
        generate_chart(parent)
    assert text in str(caught.value)
    assert str(caught.value).startswith(str(parent / "values.yaml") + ":"), str(caught.value)


def test_a_subchart_needs_a_chart_folder() -> None:
    with pytest.raises(AnnotationError, match="names a subchart, but no chart folder"):
        schema_of("# @schema {subchart: charts/sub}\n# -- S.\nsub: {}\n")


@pytest.mark.parametrize(
    ("definition", "good", "bad"),
    [
        pytest.param(
            "intOrPercent", [0, 3, "0%", "25%", "100%"], [-1, "101%", "5", 1.5], id="intOrPercent"
        ),
        pytest.param(
            "imageRegistry",
            ["", "ghcr.io", "registry.example.com:5000/mirror"],
            ["https://ghcr.io", "y", 1],
            id="imageRegistry",
        ),
        pytest.param(
            "kubernetesManifest",
            [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {}}],
            [
                {"kind": "ConfigMap", "metadata": {}},
                {"apiVersion": "", "kind": "X", "metadata": {}},
            ],
            id="kubernetesManifest",
        ),
    ],
)
def test_shared_definitions(definition: str, good: list[Any], bad: list[Any]) -> None:
    schema = schema_of(
        f"""
        # @schema {{$ref: {definition}, nullable: true}}
        # -- A value.
        v: null
        """
    )
    for value in good:
        assert accepts(schema, {"v": value}), value
    for value in bad:
        assert not accepts(schema, {"v": value}), value


def test_a_definition_annotation_shares_a_keys_schema_with_a_map_of_entries() -> None:
    """`definition` turns a defaults key's generated schema into a definition that a map of
    entries can use, even when the map comes first in values.yaml."""
    schema = schema_of(
        """
        # @schema
        # patternProperties: {'[^a-z]': false}
        # additionalProperties: {$ref: pool}
        # -- Pools by name.
        pools: {}
        # @schema {definition: pool}
        # -- Defaults of every pool.
        poolDefaults:
          # @schema {minimum: 1}
          # -- Size.
          size: 2
          # -- Its name.
          label: x
        """
    )
    assert schema["properties"]["poolDefaults"] == {
        "allOf": [{"$ref": "#/definitions/pool"}],
        "description": "Defaults of every pool.",
    }
    assert accepts(schema, {"pools": {"a": {"size": 3}}, "poolDefaults": {"label": "y"}})
    assert not accepts(schema, {"pools": {"a": {"size": 0}}}), "the defaults' minimum"
    assert not accepts(schema, {"pools": {"a": {"sise": 3}}}), "closed like the defaults"
    assert not accepts(schema, {"pools": {"A1": {}}}), "the map's key rule"
    assert not accepts(schema, {"poolDefaults": {"size": 0}})


@pytest.mark.parametrize(
    ("values", "text"),
    [
        pytest.param(
            "# @schema {definition: labelMap}\n# -- A.\na:\n  # -- B.\n  b: 1\n",
            "`a` defines 'labelMap', which is already a definition",
            id="shadows-shared",
        ),
        pytest.param(
            "# @schema {definition: [x]}\n# -- A.\na:\n  # -- B.\n  b: 1\n",
            "`definition` of `a` must be a name",
            id="not-a-name",
        ),
    ],
)
def test_definition_errors(values: str, text: str) -> None:
    with pytest.raises(AnnotationError, match=re.escape(text)):
        schema_of(values)


def test_pattern_properties_type_an_optional_key_without_a_default() -> None:
    """An anchored patternProperties name admits and types a key that values.yaml leaves out,
    in a closed object as in an open one."""
    schema = schema_of(
        """
        # @schema {patternProperties: {'^registry$': {type: string, minLength: 1}}}
        # -- An image.
        image:
          # -- Repository.
          repository: r
        # @schema
        # additionalProperties: true
        # patternProperties: {'^imagePullPolicy$': {enum: [Always, Never]}}
        # -- A container passed through.
        container:
          # -- Arguments.
          args: [a]
        """
    )
    assert accepts(schema, {"image": {"registry": "ghcr.io"}, "container": {"other": 1}})
    assert not accepts(schema, {"image": {"registry": ""}})
    assert not accepts(schema, {"image": {"registri": "x"}}), "still closed"
    assert not accepts(schema, {"container": {"imagePullPolicy": "Sometimes"}})


def test_inferred_strings_take_the_hand_written_rule() -> None:
    extra = {"inferredStrings": {"not": {"enum": ["y", "n"]}}}
    schema = schema_of(
        """
        # -- A name.
        name: x
        # -- Arguments.
        args: [a]
        # @schema {not: {enum: [z]}}
        # -- An annotation's own `not` replaces the rule.
        pick: x
        # -- A number is not a string.
        count: 1
        """,
        extra,
    )
    assert not accepts(schema, {"name": "y"}) and accepts(schema, {"name": "yes"})
    assert not accepts(schema, {"args": ["n"]}), "array items inferred from the default too"
    assert "not" not in schema["properties"]["count"]
    assert "inferredStrings" not in schema
    assert accepts(schema, {"pick": "y"}) and not accepts(schema, {"pick": "z"})
