"""Evaluate a CRD's CEL rules (``x-kubernetes-validations``) on a resource.

Uses ``cel-python`` (``celpy``, test dependency group), imported on first use. As on the
API server, defaults are applied before the rules run, and a rule runs with ``self``
bound to the value of the node that carries it, only when that value is present.
Transition rules (those naming ``oldSelf``) need the previous object; here they are
compiled (syntax checked) but not evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slinky_crdgen.defaulting import apply_defaults
from slinky_crdgen.errors import CrdGenError
from slinky_crdgen.jsonschema import version_schema

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["Rule", "compile_rules", "evaluate_rules", "iter_rules", "uses_old_self"]

_OLD_SELF = re.compile(r"\boldSelf\b")


@dataclass(frozen=True)
class Rule:
    """One rule and the schema path (``.spec.updateStrategy``) of the node carrying it."""

    path: str
    rule: str
    message: str | None


def uses_old_self(rule: str) -> bool:
    """Whether ``rule`` is a transition rule."""
    return bool(_OLD_SELF.search(rule))


def iter_rules(schema: dict[str, Any], path: str = "") -> Iterator[Rule]:
    """Every CEL rule in a structural schema, parents first."""
    for entry in schema.get("x-kubernetes-validations", []):
        yield Rule(path or ".", str(entry["rule"]), entry.get("message"))
    for key, sub in sorted(schema.get("properties", {}).items()):
        yield from iter_rules(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        yield from iter_rules(schema["items"], f"{path}[*]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from iter_rules(schema["additionalProperties"], f"{path}[*]")


def _celpy() -> Any:
    try:
        import celpy  # noqa: PLC0415 - optional test dependency, imported on use
    except ModuleNotFoundError as exc:
        raise CrdGenError(
            "cel-python is not installed (it is in the test dependency group)"
        ) from exc
    return celpy


def compile_rules(crd: dict[str, Any], version: str) -> list[str]:
    """Compile every rule of ``version``; return one message per rule that does not parse."""
    celpy = _celpy()
    env = celpy.Environment()
    errors: list[str] = []
    for rule in iter_rules(version_schema(crd, version)):
        try:
            env.compile(rule.rule)
        except Exception as exc:
            errors.append(f"{rule.path}: rule {rule.rule!r} does not compile: {exc}")
    return errors


def evaluate_rules(crd: dict[str, Any], version: str, obj: dict[str, Any]) -> list[str]:
    """Evaluate the rules on ``obj`` (after defaulting); return the failure messages."""
    celpy = _celpy()
    env = celpy.Environment()
    schema = version_schema(crd, version)
    errors: list[str] = []
    _Walker(celpy, env, errors).walk(schema, apply_defaults(schema, obj), "")
    return errors


@dataclass
class _Walker:
    celpy: Any
    env: Any
    errors: list[str]

    def walk(self, schema: dict[str, Any], value: Any, path: str) -> None:
        self.check(schema, value, path)
        if isinstance(value, dict):
            props = schema.get("properties", {})
            extra = schema.get("additionalProperties")
            for key, item in sorted(value.items()):
                if key in props:
                    self.walk(props[key], item, f"{path}.{key}")
                elif isinstance(extra, dict):
                    self.walk(extra, item, f"{path}[{key!r}]")
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for index, item in enumerate(value):
                self.walk(schema["items"], item, f"{path}[{index}]")

    def check(self, schema: dict[str, Any], value: Any, path: str) -> None:
        celpy, env, errors = self.celpy, self.env, self.errors
        where = path or "<root>"
        for entry in schema.get("x-kubernetes-validations", []):
            rule = str(entry["rule"])
            try:
                program = env.program(env.compile(rule))
            except Exception as exc:
                errors.append(f"{where}: rule {rule!r} does not compile: {exc}")
                continue
            if uses_old_self(rule):
                continue
            try:
                result = program.evaluate({"self": celpy.json_to_cel(value)})
            except Exception as exc:
                errors.append(f"{where}: rule {rule!r} failed to evaluate: {exc}")
                continue
            if isinstance(result, Exception):
                errors.append(f"{where}: rule {rule!r} failed to evaluate: {result}")
            elif not isinstance(result, celpy.celtypes.BoolType):
                errors.append(f"{where}: rule {rule!r} returned {result!r}, not a bool")
            elif not bool(result):
                errors.append(f"{where}: {entry.get('message') or f'failed rule: {rule}'}")
