"""Hypothesis strategies for chart values, derived from a chart's ``values.schema.json``.

Leaves (strings, numbers, booleans, enums) come from ``hypothesis-jsonschema`` on the leaf's
sub-schema, so patterns, ranges and enums are honoured. Objects are built here:

- a closed object (``additionalProperties: false``) draws each property or leaves it out
  (the chart default then applies);
- a map (``additionalProperties`` is a schema) draws zero to two entries with DNS-label keys;
- an open object or array, i.e. a Kubernetes struct passed through verbatim (resources,
  affinity, tolerations, ...), is drawn from :data:`KUBERNETES_SAMPLES` or kept at its default:
  generating arbitrary Kubernetes objects would only test Kubernetes' own schema.

``mutations`` turns valid values into schema-invalid ones (an unknown key in a closed object,
or a wrong type on a leaf), which Helm must reject before rendering.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

Schema = dict[str, Any]

KUBERNETES_SAMPLES: dict[str, list[Any]] = {
    "resources": [
        {},
        {"requests": {"cpu": "100m", "memory": "128Mi"}},
        {"limits": {"cpu": "2", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
    ],
    "nodeSelector": [{}, {"kubernetes.io/os": "linux"}, {"nvidia.com/gpu.present": "true"}],
    "affinity": [
        {},
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                            ]
                        }
                    ]
                }
            }
        },
    ],
    "tolerations": [[], [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]],
    "topologySpreadConstraints": [
        [],
        [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
            }
        ],
    ],
    "podAnnotations": [{}, {"example.com/note": "drawn"}],
    "podLabels": [{}, {"example.com/team": "hpc"}],
    "annotations": [{}, {"example.com/note": "drawn"}],
    "labels": [{}, {"example.com/team": "hpc"}],
    "extraEnv": [[], [{"name": "EXTRA_SETTING", "value": "1"}]],
    "extraArgs": [[], ["--zap-devel=false"]],
    "imagePullSecrets": [[], ["pull-secret"], [{"name": "pull-secret"}]],
}

MAP_KEYS = st.from_regex(r"[a-z][a-z0-9]{0,7}", fullmatch=True)


def resolve(root: Schema, node: Schema) -> Schema:
    """Follow local ``$ref`` pointers until a real schema node."""
    seen = 0
    while "$ref" in node:
        target: Any = root
        for part in str(node["$ref"]).removeprefix("#/").split("/"):
            target = target[part]
        node = target
        seen += 1
        if seen > 32:
            raise ValueError(f"$ref cycle at {node}")
    return node


def unwrap(root: Schema, node: Schema) -> Schema:
    """``node`` resolved, with a single-item ``allOf`` (how draft-07, and slinky_schemagen, put a
    description beside a ``$ref``) merged into it."""
    node = resolve(root, node)
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
        merged = {k: v for k, v in node.items() if k != "allOf"}
        node = {**unwrap(root, node["allOf"][0]), **merged}
    return node


def _is_open(node: Schema) -> bool:
    additional = node.get("additionalProperties", True)
    return additional is True or (additional == {} and "properties" not in node)


def go_pattern(pattern: str) -> str:
    """``pattern`` with each ``$`` anchor as Go reads it: the very end of the text. Helm checks
    patterns with Go's regexp, where ``$`` never matches before a trailing newline; Python's
    ``re`` (which hypothesis-jsonschema draws from) lets ``^$`` match ``"\\n"``, a value Helm
    refuses. ``\\Z`` is Python's end of text."""
    out: list[str] = []
    escaped = in_class = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            out.append("\\Z")
            continue
        out.append(char)
    return "".join(out)


def _go_patterns(node: Any) -> Any:
    """A copy of the schema ``node`` with every ``pattern`` rewritten by :func:`go_pattern`."""
    if isinstance(node, dict):
        return {
            k: go_pattern(v) if k == "pattern" and isinstance(v, str) else _go_patterns(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_go_patterns(v) for v in node]
    return node


def _leaf(root: Schema, node: Schema) -> st.SearchStrategy[Any]:
    leaf = {k: v for k, v in node.items() if k not in {"description", "title", "examples"}}
    if "definitions" in root:
        leaf["definitions"] = root["definitions"]
    leaf["$schema"] = "http://json-schema.org/draft-07/schema#"
    return from_schema(_go_patterns(leaf))


def strategy(
    root: Schema, node: Schema, key: str = "", default: Any = None
) -> st.SearchStrategy[Any]:
    """A strategy for values valid against ``node`` (a sub-schema of ``root``)."""
    node = unwrap(root, node)
    if key in KUBERNETES_SAMPLES:
        return st.sampled_from(KUBERNETES_SAMPLES[key])
    for combinator in ("oneOf", "anyOf"):
        if combinator in node and "properties" not in node:
            if all(
                "type" in resolve(root, n) and resolve(root, n)["type"] != "object"
                for n in node[combinator]
            ):
                return _leaf(root, node)
            return st.one_of([strategy(root, sub, key, default) for sub in node[combinator]])
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        props: dict[str, Schema] = node.get("properties") or {}
        defaults = default if isinstance(default, dict) else {}
        additional = node.get("additionalProperties", True)
        if props and additional is False:
            required = set(node.get("required") or [])
            return st.fixed_dictionaries(
                {
                    k: strategy(root, v, k, defaults.get(k))
                    for k, v in props.items()
                    if k in required
                },
                optional={
                    k: strategy(root, v, k, defaults.get(k))
                    for k, v in props.items()
                    if k not in required
                },
            )
        if isinstance(additional, dict) and additional:
            return st.dictionaries(MAP_KEYS, strategy(root, additional, "", None), max_size=2)
        return st.just(copy.deepcopy(default) if default is not None else {})
    if kind == "array":
        items = resolve(root, node.get("items") or {})
        if not items or (_is_open(items) and items.get("type") == "object"):
            return st.just(copy.deepcopy(default) if default is not None else [])
        low = int(node.get("minItems", 0))
        high = max(low, min(low + 2, int(node.get("maxItems", low + 2))))
        return st.lists(
            strategy(root, items),
            min_size=low,
            max_size=high,
            unique_by=_freeze if node.get("uniqueItems") else None,
        )
    return _leaf(root, node)


def _freeze(value: Any) -> str:
    return repr(value)


def values_strategy(schema: Schema, defaults: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Whole values files valid against ``schema`` (a chart's values.schema.json)."""
    drawn = strategy(schema, schema, "", defaults)
    return drawn.map(lambda v: v if isinstance(v, dict) else {})


def closed_object_paths(
    schema: Schema, node: Schema | None = None, path: tuple[str, ...] = ()
) -> list[tuple[str, ...]]:
    """Paths of every closed object reachable through properties (no maps, no arrays)."""
    node = unwrap(schema, schema if node is None else node)
    found = []
    if node.get("additionalProperties") is False and node.get("properties"):
        found.append(path)
        for key, sub in node["properties"].items():
            if key != "global":
                found += closed_object_paths(schema, sub, (*path, key))
    return found


def typed_leaf_paths(
    schema: Schema, node: Schema | None = None, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], str]]:
    """(path, type) of every boolean or integer leaf reachable through closed objects."""
    node = unwrap(schema, schema if node is None else node)
    found: list[tuple[tuple[str, ...], str]] = []
    if node.get("type") in ("boolean", "integer") and path:
        found.append((path, str(node["type"])))
    if node.get("additionalProperties") is False:
        for key, sub in (node.get("properties") or {}).items():
            found += typed_leaf_paths(schema, sub, (*path, key))
    return found


def set_path(values: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``values`` with ``path`` set to ``value`` (intermediate objects created)."""
    result = copy.deepcopy(values)
    cursor = result
    for key in path[:-1]:
        nxt = cursor.get(key)
        if not isinstance(nxt, dict):
            nxt = cursor[key] = {}
        cursor = nxt
    cursor[path[-1]] = value
    return result
