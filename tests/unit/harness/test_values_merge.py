"""helm/values.merge: Helm's coalescing of values layers, without running Helm."""

from __future__ import annotations

from slinky_harness.helm.values import merge


def test_maps_merge_key_by_key_and_everything_else_is_replaced() -> None:
    base = {"a": {"x": 1, "y": [1, 2]}, "b": "keep", "c": {"deep": {"k": 1}}}
    over = {"a": {"y": [3]}, "c": {"deep": {"j": 2}}, "d": 4}
    assert merge(base, over) == {
        "a": {"x": 1, "y": [3]},
        "b": "keep",
        "c": {"deep": {"k": 1, "j": 2}},
        "d": 4,
    }


def test_a_later_scalar_replaces_a_map_and_a_later_map_replaces_a_scalar() -> None:
    assert merge({"a": {"x": 1}}, {"a": "flat"}) == {"a": "flat"}
    assert merge({"a": "flat"}, {"a": {"x": 1}}) == {"a": {"x": 1}}


def test_layers_apply_in_order_and_none_is_empty() -> None:
    assert merge({"a": 1}, None, {"a": 2}, {"b": 3}) == {"a": 2, "b": 3}


def test_no_layer_is_changed_or_shared_with_the_result() -> None:
    base = {"a": {"list": [1]}}
    over = {"a": {"more": {"k": [2]}}}
    merged = merge(base, over)
    merged["a"]["list"].append(9)
    merged["a"]["more"]["k"].append(9)
    assert base == {"a": {"list": [1]}}
    assert over == {"a": {"more": {"k": [2]}}}
