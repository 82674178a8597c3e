"""Kubernetes structs slurm-cluster passes through from its values (a pod template's spec, a
container, a Service spec), checked against the Kubernetes OpenAPI schemas of the target version.

The chart's values schema keeps these objects open (any PodSpec field may be given), and the
Slinky resources they land in are custom resources, whose unknown fields the API server drops
without a word: ``podSpec.toleration`` (for ``tolerations``) or ``volumeMounts`` under
``podSpec`` (it belongs to the container) would install and do nothing. Here each key the user
gives is checked against its Kubernetes definition, strictly, at the values path, with "did you
mean" for a misspelt key and "move it" for a key of the pod given to the container or back.

Keys the chart declares itself with a shape of its own (``image`` as registry, repository and
tag; ``nodeSelector`` that takes ``null`` to drop a default) are the values schema's to check;
a key the chart declares as a Kubernetes object (``tolerations``, ``volumes``, ``resources``)
is checked here too. ``null`` values are skipped: Helm drops them before the chart sees them.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import jsonschema
from referencing import Registry, Resource

from slinky_conformance.report import Finding
from slinky_harness.helm import charts as chart_index
from slinky_harness.k8s import schemas as kubeschema

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from slinky_conformance.target import Target

CHART = "slurm-cluster"
DEFINITIONS = "https://kubernetes.io/api/_definitions.json"
POD = "io.k8s.api.core.v1.PodSpec"
CONTAINER = "io.k8s.api.core.v1.Container"
SERVICE = "io.k8s.api.core.v1.ServiceSpec"
KIND_NAMES = {POD: "pod spec", CONTAINER: "container", SERVICE: "Service spec"}


@dataclass(frozen=True)
class PassThrough:
    """A values path pattern (``*``: any key of a map) holding Kubernetes ``definition``;
    ``sibling``: the other struct of the same pod (the container of a pod spec, and back)."""

    where: tuple[str, ...]
    definition: str
    sibling: tuple[str, ...] = ()


def _component(base: tuple[str, ...], container: str, service: bool = True) -> list[PassThrough]:
    pod, box = (*base, "podSpec"), (*base, container)
    out = [PassThrough(pod, POD, box), PassThrough(box, CONTAINER, pod)]
    return [*out, PassThrough((*base, "service", "spec"), SERVICE)] if service else out


PASSTHROUGHS: tuple[PassThrough, ...] = (
    *_component(("controller",), "slurmctld"),
    *_component(("restapi",), "slurmrestd"),
    *_component(("accounting",), "slurmdbd"),
    *_component(("nodesets", "*"), "slurmd", service=False),
    *_component(("nodesetDefaults",), "slurmd", service=False),
    *_component(("loginsets", "*"), "login"),
    *_component(("loginsetDefaults",), "login"),
)
"""slurm-cluster's pass-through structs (its values.yaml says which Kubernetes type each is)."""


@cache
def _definitions(schema_dir: Path) -> tuple[dict[str, Any], Registry[Any]]:
    contents = json.loads((schema_dir / "_definitions.json").read_text())
    registry: Registry[Any] = Registry().with_resource(
        DEFINITIONS, Resource.from_contents(contents)
    )
    return contents["$defs"], registry


def _resolve(schema: dict[str, Any], node: Any) -> dict[str, Any]:
    """``node`` of the chart's schema with ``$ref`` and a one-item ``allOf`` followed."""
    for _ in range(8):
        if not isinstance(node, dict):
            return {}
        if "$ref" in node:
            node = schema.get("definitions", {}).get(str(node["$ref"]).rsplit("/", 1)[-1])
        elif len(node.get("allOf") or []) == 1 and not node.get("properties"):
            node = node["allOf"][0]
        else:
            return node
    return {}


def _chart_node(schema: dict[str, Any], parts: tuple[str, ...]) -> dict[str, Any]:
    node = _resolve(schema, schema)
    for part in parts:
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        node = _resolve(schema, props.get(part, extra if isinstance(extra, dict) else {}))
    return node


def _matches(values: Any, pattern: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(concrete path, value) of each place in ``values`` the pattern names."""
    found: list[tuple[tuple[str, ...], Any]] = [((), values)]
    for part in pattern:
        step = []
        for at, node in found:
            if not isinstance(node, dict):
                continue
            keys = [str(k) for k in node] if part == "*" else [part]
            step += [((*at, k), node[k]) for k in keys if k in node]
        found = step
    yield from ((at, node) for at, node in found if isinstance(node, dict))


def _checked_by_chart(prop: dict[str, Any]) -> bool:
    """A key the chart declares with a shape of its own (not a Kubernetes object)."""
    return "kubernetesObject" not in json.dumps(prop)


def _near(key: str, names: set[str]) -> str:
    near = difflib.get_close_matches(key, sorted(names), n=1, cutoff=0.6)
    return f"did you mean {near[0]}? " if near else ""


@dataclass(frozen=True)
class Checker:
    """Checks the pass-through structs of one target against one Kubernetes version."""

    target: Target
    kube_version: str

    def findings(self) -> list[Finding]:
        if CHART not in self.target.charts():
            return []
        block = self.target.user_block(CHART)
        schema = json.loads((chart_index.CHARTS_DIR / CHART / "values.schema.json").read_text())
        out: list[Finding] = []
        for rule in PASSTHROUGHS:
            for at, node in _matches(block, rule.where):
                chart_props = _chart_node(schema, at).get("properties") or {}
                out += self._struct(rule, at, node, chart_props)
        return out

    def _path(self, *parts: str | int) -> str:
        return self.target.path_of(CHART, *parts)

    def _struct(
        self, rule: PassThrough, at: tuple[str, ...], node: dict[str, Any], chart: dict[str, Any]
    ) -> list[Finding]:
        defs, _ = _definitions(kubeschema.SchemaSet(self.kube_version).schema_dir)
        props = set(defs[rule.definition]["properties"])
        kind = KIND_NAMES[rule.definition]
        out = []
        for key, value in node.items():
            if value is None or (key in chart and _checked_by_chart(chart[key])):
                continue
            if key in props:
                out += self._value(rule.definition, (*at, key), key, value)
            elif key not in chart:
                out.append(self._unknown(rule, at, key, props | set(chart), kind))
        return out

    def _unknown(
        self, rule: PassThrough, at: tuple[str, ...], key: str, names: set[str], kind: str
    ) -> Finding:
        defs, _ = _definitions(kubeschema.SchemaSet(self.kube_version).schema_dir)
        problem = f"unknown key: a Kubernetes {kind} has no field {key!r}"
        if rule.sibling:
            sibling = next(p for p in PASSTHROUGHS if p.where == rule.sibling)
            if key in defs[sibling.definition]["properties"]:
                concrete = [a if p == "*" else p for a, p in zip(at, rule.sibling, strict=True)]
                return Finding(
                    self._path(*at, key),
                    f"{problem} ({key} belongs to the {KIND_NAMES[sibling.definition]})",
                    f"move it to {self._path(*concrete, key)}",
                )
        fix = _near(key, names) + "correct the spelling or remove the key"
        return Finding(self._path(*at, key), problem, fix)

    def _value(
        self, definition: str, at: tuple[str | int, ...], key: str, value: Any
    ) -> list[Finding]:
        _, registry = _definitions(kubeschema.SchemaSet(self.kube_version).schema_dir)
        ref = {"$ref": f"{DEFINITIONS}#/$defs/{definition}/properties/{key}"}
        validator = jsonschema.Draft202012Validator(ref, registry=registry)
        out = []
        for error in validator.iter_errors(value):
            where = (*at, *error.absolute_path)
            schema = error.schema if isinstance(error.schema, dict) else {}
            if error.validator == "additionalProperties" and isinstance(error.instance, dict):
                known = set(schema.get("properties") or {})
                for extra in [k for k in error.instance if k not in known]:
                    out.append(
                        Finding(
                            self._path(*where, extra),
                            f"unknown key: Kubernetes has no field {extra!r} here",
                            _near(extra, known) + "correct the spelling or remove the key",
                        )
                    )
                continue
            out.append(
                Finding(
                    self._path(*where),
                    f"Kubernetes {self.kube_version} refuses it: {error.message}",
                    "give a value of the Kubernetes field's type and shape",
                )
            )
        return out
