"""The props tier's mutation targets see through a ``$ref`` wrapped in a single-item ``allOf``.

slinky_schemagen writes a key that refers to a definition as ``{allOf: [{$ref}], description}``
(draft-07 ignores the siblings of a bare ``$ref``). The unknown-key and wrong-type mutations of
``tests/props`` must reach the closed objects and typed leaves behind such a key, as they do behind
a bare ``$ref``.
"""

from __future__ import annotations

from typing import Any

from slinky_harness.helm import valuegen

PROBE = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"periodSeconds": {"type": "integer"}, "enabled": {"type": "boolean"}},
}


def schema(liveness: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "definitions": {"probe": PROBE},
        "properties": {"name": {"type": "string"}, "liveness": liveness},
    }


BARE = schema({"$ref": "#/definitions/probe"})
WRAPPED = schema({"allOf": [{"$ref": "#/definitions/probe"}], "description": "Liveness."})


def test_closed_objects_behind_a_wrapped_ref() -> None:
    assert valuegen.closed_object_paths(WRAPPED) == [(), ("liveness",)]
    assert valuegen.closed_object_paths(WRAPPED) == valuegen.closed_object_paths(BARE)


def test_typed_leaves_behind_a_wrapped_ref() -> None:
    expected = [(("liveness", "periodSeconds"), "integer"), (("liveness", "enabled"), "boolean")]
    assert valuegen.typed_leaf_paths(WRAPPED) == expected
    assert valuegen.typed_leaf_paths(BARE) == expected


def test_unwrap_keeps_the_siblings_of_the_allof() -> None:
    node = valuegen.unwrap(WRAPPED, WRAPPED["properties"]["liveness"])
    assert node["description"] == "Liveness."
    assert node["properties"] == PROBE["properties"]
    assert "allOf" not in node


def test_a_longer_allof_is_left_alone() -> None:
    """Two or more allOf items are real conjunctions: nothing is merged."""
    node = {"allOf": [{"$ref": "#/definitions/probe"}, {"required": ["enabled"]}]}
    assert valuegen.unwrap(schema(node), node) == node
