"""Read a chart's values.yaml: every key with its default, line, helm-docs text and annotation.

The comment block of a key is the run of comment lines directly above it. As helm-docs does, its
description starts at the block's last ``# --`` line and takes the comment lines after it, except
``# @default --``, ``# @section --``, ``# @notationType --`` and ``# @raw`` lines; a leading
``(type)`` is helm-docs' type hint.

A ``# @schema`` annotation sits in the same block *above* the ``# --`` line (helm-docs ignores
what comes before the last ``# --``, so the annotation never reaches the README). Its YAML is the
rest of the ``# @schema`` line and the comment lines after it, up to the ``# --`` line, each
without its ``#`` and one space::

    # @schema {minimum: 1, maximum: 10}
    # -- Number of controller pods.
    replicas: 1

    # @schema
    # pattern: '^[a-z]+$'
    # maxLength: 40
    # -- Override the chart name.
    nameOverride: ""
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from slinky_schemagen.errors import AnnotationError

__all__ = ["Doc", "Key", "read_values"]

ANNOTATION = re.compile(r"^#\s*@schema\b(.*)$")
_HELM_DOCS_TAG = re.compile(r"^#\s*@(default|section|notationType) --|^#\s+@raw")
_CONTINUATION = re.compile(r"^#(\s?)(.*)$")
_TYPE_HINT = re.compile(r"^\((.*?)\)\s*(.*)$")
_FIX = (
    "write a YAML mapping of JSON Schema keywords on the `# @schema` line or on the comment "
    "lines after it, e.g. `# @schema {minimum: 1}`"
)


@dataclass(frozen=True)
class Doc:
    """The comment block of one key."""

    description: str | None
    """helm-docs description (``# --`` and its continuation lines), without the type hint."""
    type_hint: str | None
    """helm-docs type hint, e.g. ``int`` from ``# -- (int) ...``."""
    annotation: dict[str, Any] | None
    """The ``# @schema`` mapping, as written."""
    annotation_line: int | None
    """1-based line of the ``# @schema`` line."""


@dataclass(frozen=True)
class Key:
    """One mapping key of values.yaml and its default."""

    path: tuple[str, ...]
    line: int
    """1-based line of the key."""
    value: Any
    doc: Doc
    children: tuple[Key, ...] = field(default=())

    @property
    def dotted(self) -> str:
        return ".".join(self.path) or "(root)"


def read_values(text: str, file: str) -> Key:
    """The root of ``text`` (a values.yaml named ``file`` in messages) as a :class:`Key` tree.

    A key is named by its text as written (``true:`` is the key ``"true"``, as Helm reads it,
    not YAML 1.1's boolean), and each default is built from its own node."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise AnnotationError(file, line, f"not valid YAML ({exc}); fix the file") from exc
    if node is not None and not isinstance(node, yaml.MappingNode):
        raise AnnotationError(file, node.start_mark.line + 1, "the values root must be a mapping")
    reader = _Reader(text.splitlines(), file, set(), yaml.SafeLoader(""))
    children = reader.children(node, ())
    root = Key(
        (), 1, {c.path[-1]: c.value for c in children}, Doc(None, None, None, None), children
    )
    _refuse_orphans(reader.lines, reader.used, file)
    return root


@dataclass(frozen=True)
class _Reader:
    lines: list[str]
    file: str
    used: set[int]
    """0-based lines of the annotations read so far."""
    loader: yaml.SafeLoader
    """Builds each default from its node."""

    def children(self, node: yaml.Node | None, path: tuple[str, ...]) -> tuple[Key, ...]:
        if not isinstance(node, yaml.MappingNode):
            return ()
        out = []
        for key_node, value_node in node.value:
            name = str(key_node.value)
            line = key_node.start_mark.line
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise AnnotationError(
                    self.file,
                    line + 1,
                    "YAML merge keys (`<<`) are not supported: write the keys out",
                )
            doc = _doc(self.lines, line, self.file, self.used, (*path, name))
            if isinstance(value_node, yaml.MappingNode):
                sub = self.children(value_node, (*path, name))
                value: Any = {c.path[-1]: c.value for c in sub}
            else:
                sub, value = (), self.loader.construct_object(value_node, deep=True)
            out.append(Key((*path, name), line + 1, value, doc, sub))
        return tuple(out)


def _block(lines: list[str], index: int) -> list[tuple[int, str]]:
    """(0-based line, stripped text) of the comment lines directly above line ``index``."""
    start = index
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return [(i, lines[i].strip()) for i in range(start, index)]


def _doc(lines: list[str], index: int, file: str, used: set[int], path: tuple[str, ...]) -> Doc:
    block = _block(lines, index)
    starts = [n for n, (_, text) in enumerate(block) if text.startswith("# --")]
    cut = starts[-1] if starts else len(block)
    for line, text in block[cut:]:
        if ANNOTATION.match(text):
            raise AnnotationError(
                file,
                line + 1,
                f"the `# @schema` annotation of `{'.'.join(path)}` is below its `# --` line, where "
                "helm-docs would print it in the README: move it above the `# --` line",
            )
    description, hint = _description(block[cut:]) if starts else (None, None)
    annotation, annotation_line = _annotation(block[:cut], file, used, path)
    return Doc(description, hint, annotation, annotation_line)


def _description(block: list[tuple[int, str]]) -> tuple[str, str | None]:
    text = block[0][1].removeprefix("# --").strip()
    for _, line in block[1:]:
        if _HELM_DOCS_TAG.match(line):
            continue
        match = _CONTINUATION.match(line)
        if match:
            text += " " + match[2]
    hint = _TYPE_HINT.match(text)
    if hint and hint[1]:
        return hint[2].strip(), hint[1]
    return text.strip(), None


def _annotation(
    block: list[tuple[int, str]], file: str, used: set[int], path: tuple[str, ...]
) -> tuple[dict[str, Any] | None, int | None]:
    found = [n for n, (_, text) in enumerate(block) if ANNOTATION.match(text)]
    if not found:
        return None, None
    where = block[found[0]][0] + 1
    if len(found) > 1:
        raise AnnotationError(
            file,
            block[found[1]][0] + 1,
            f"`{'.'.join(path)}` has a second `# @schema` annotation (the first is on line {where}): "
            "merge them into one",
        )
    first = found[0]
    match = ANNOTATION.match(block[first][1])
    assert match is not None
    body = [match[1].strip()]
    for line, text in block[first + 1 :]:
        if text.startswith("# @"):
            break
        body.append(text[1:].removeprefix(" ") if text.startswith("#") else text)
        used.add(line)
    used.add(block[first][0])
    try:
        data = yaml.safe_load("\n".join(body))
    except yaml.YAMLError as exc:
        raise AnnotationError(
            file,
            where,
            f"malformed `# @schema` annotation of `{'.'.join(path)}`: {_yaml_problem(exc)}; {_FIX}",
        ) from exc
    if not isinstance(data, dict) or not data:
        raise AnnotationError(
            file,
            where,
            f"the `# @schema` annotation of `{'.'.join(path)}` is not a mapping "
            f"(got {type(data).__name__}): {_FIX}",
        )
    return {str(k): v for k, v in data.items()}, where


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """The YAML error in one line, without the marks that point into the joined annotation."""
    if isinstance(exc, yaml.MarkedYAMLError):
        return ": ".join(part for part in (exc.context, exc.problem) if part)
    return str(exc).splitlines()[0]


def _refuse_orphans(lines: list[str], used: set[int], file: str) -> None:
    for index, line in enumerate(lines):
        if ANNOTATION.match(line.strip()) and index not in used:
            raise AnnotationError(
                file,
                index + 1,
                "this `# @schema` annotation belongs to no key: put it in the comment block "
                "directly above a key, above that key's `# --` line",
            )
