"""Bounds on every input, and the YAML/JSON loaders that enforce them before anything grows.

An input is refused, with an :class:`~slinky_topology.errors.InputError` naming it, when it is

* larger than :data:`MAX_INPUT_BYTES` or not UTF-8 (:func:`decode_text` names line and column);
* nested deeper than :data:`MAX_DEPTH` (YAML: counted while composing, so a deep document never
  reaches Python's recursion limit; JSON: ``json`` refuses first, then :func:`check_document`);
* a YAML document using more than :data:`MAX_ALIASES` aliases, aliases that refer to their own
  parent, or aliases that would make the document more than :data:`MAX_ALIAS_VALUES` values
  larger than it is written (an "alias bomb": ~600 bytes can stand for 10^9 values);
* naming more hosts than Slurm can run (:data:`MAX_HOSTS`, checked arithmetically by
  :func:`slinky_topology.hostlist.count` before a hostlist is expanded).

``location`` arguments name the input in messages: a path, ``builtin:...`` or ``configmap ...``.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from slinky_topology.errors import InputError

__all__ = [
    "MAX_ALIASES",
    "MAX_ALIAS_VALUES",
    "MAX_DEPTH",
    "MAX_FILE_HOSTS",
    "MAX_HOSTS",
    "MAX_INPUT_BYTES",
    "BoundedLoader",
    "check_document",
    "compose_and_load_yaml",
    "decode_text",
    "load_json",
    "load_structured",
    "load_yaml",
    "position",
    "too_large",
]

#: Largest input file read (``kubectl get nodes -o json`` of 65,536 Nodes at ~16 KiB each).
MAX_INPUT_BYTES = 1 << 30
#: Deepest nesting of lists and mappings (fabric files need 6, Node JSON about 10).
MAX_DEPTH = 64
#: Most YAML aliases (``*name``) one document may use.
MAX_ALIASES = 100
#: Most values aliases may add to a document beyond the values written out.
MAX_ALIAS_VALUES = 100_000
#: Most nodes of one Slurm cluster, so of one hostlist, fabric or Node list (slurmctld: 64 Ki).
MAX_HOSTS = 65_536
#: Most host names one topology file may list in all (16 topologies of :data:`MAX_HOSTS` nodes).
MAX_FILE_HOSTS = 16 * MAX_HOSTS


def position(text: str, index: int) -> tuple[int, int]:
    """1-based ``(line, column)`` of character ``index`` in ``text``."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def too_large(location: str) -> InputError:
    """The error for an input over :data:`MAX_INPUT_BYTES`."""
    return InputError(
        f"refused: larger than {MAX_INPUT_BYTES:,} bytes; give a smaller input "
        "(for Nodes: kubectl get nodes -l SELECTOR)",
        location=location,
    )


def decode_text(raw: bytes, location: str) -> str:
    """``raw`` as UTF-8 text; InputError at ``location:line:col`` of the first bad byte."""
    if len(raw) > MAX_INPUT_BYTES:
        raise too_large(location)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = raw[: exc.start].decode("utf-8")
        line, col = position(head, len(head))
        raise InputError(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the file as UTF-8",
            location=f"{location}:{line}:{col}",
        ) from None


class LimitExceeded(yaml.composer.ComposerError):
    """A YAML document exceeds a bound of this module (raised while composing)."""


class BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that counts aliases and nesting while it composes.

    Values a constructor cannot build (``2020-13-01``, integers of more than 4300 digits, an empty
    ``!!int``) raise ``ConstructorError`` at their mark instead of whatever PyYAML raised.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0
        self.depth = 0

    def _event(self) -> Any:
        return self.peek_event()  # type: ignore[no-untyped-call]

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                event = self._event()
                raise LimitExceeded(
                    None,
                    None,
                    f"more than {MAX_ALIASES} YAML aliases (*{event.anchor}); write the values "
                    "out instead of referring to anchors",
                    event.start_mark,
                )
            return super().compose_node(parent, index)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise LimitExceeded(
                    None,
                    None,
                    f"nested deeper than {MAX_DEPTH} levels; flatten the document",
                    self._event().start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except Exception as exc:
            # PyYAML's constructors fail with any type: "!!int" (IndexError), "!!bool x"
            # (KeyError), "!!timestamp x" (AttributeError), "2020-13-01" (ValueError)
            tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
            value = str(node.value)[:40] if isinstance(node, yaml.ScalarNode) else "this node"
            why = (
                f": {str(exc).split(';')[0]}" if isinstance(exc, ValueError | OverflowError) else ""
            )
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {value!r} as {tag}{why}", node.start_mark
            ) from None


def _yaml_error(exc: yaml.YAMLError, text: str, location: str, what: str) -> InputError:
    """One-line InputError at ``location:line:col`` for any PyYAML error."""
    if isinstance(exc, yaml.reader.ReaderError):
        line, col = position(text, exc.position)
        char = exc.character if isinstance(exc.character, int) else ord(exc.character)
        return InputError(
            f"not valid {what}: character #x{char:04x} is not allowed ({exc.reason}); remove it",
            location=f"{location}:{line}:{col}",
        )
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        where = f"{location}:{mark.line + 1}:{mark.column + 1}" if mark is not None else location
        lead = "refused" if isinstance(exc, LimitExceeded) else f"not valid {what}"
        return InputError(f"{lead}: {' '.join(problem.split())}", location=where)
    return InputError(f"not valid {what}: {' '.join(str(exc).split())}", location=location)


def compose_and_load_yaml(
    text: str, location: str, what: str = "YAML"
) -> tuple[yaml.Node | None, Any]:
    """The node tree (for line numbers) and the data of one YAML document, both bounded."""
    try:
        loader = BoundedLoader(text)  # the reader refuses control characters here already
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, text, location, what) from None
    if loader.aliases:  # without aliases, composing has bounded everything already
        check_document(data, location)
    return node, data


def load_yaml(text: str, location: str, what: str = "YAML") -> Any:
    """The data of one YAML (or JSON) document, bounded (see module doc)."""
    return compose_and_load_yaml(text, location, what)[1]


def load_json(text: str, location: str) -> Any:
    """The data of a JSON document, bounded; InputError at ``location:line:col``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON: {exc.msg}", location=f"{location}:{exc.lineno}:{exc.colno}"
        ) from None
    except RecursionError:
        raise InputError(
            f"refused: nested deeper than {MAX_DEPTH} levels; flatten the document",
            location=location,
        ) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise InputError(f"not valid JSON: {str(exc).split(';')[0]}", location=location) from None
    if _json_depth(data) > MAX_DEPTH:  # JSON has no aliases: only the depth to check
        raise InputError(
            f"refused: nested deeper than {MAX_DEPTH} levels; flatten the document",
            location=location,
        )
    return data


def _json_depth(data: Any) -> int:
    """Nesting depth of lists and dicts in ``data`` (as ``json`` builds it), level by level.

    Stops once past :data:`MAX_DEPTH`; looks at containers only, so a large Node list costs a
    fraction of parsing it.
    """
    level = [data]
    depth = 0
    while level and depth <= MAX_DEPTH:
        below: list[Any] = []
        for value in level:
            if type(value) is dict:
                below += [c for c in value.values() if type(c) is dict or type(c) is list]
            elif type(value) is list:
                below += [c for c in value if type(c) is dict or type(c) is list]
        depth += 1
        level = below
    return depth


def load_structured(text: str, location: str) -> Any:
    """A JSON document, else a YAML one; when neither, a file starting like JSON gets the JSON error."""
    try:
        return load_json(text, location)
    except InputError as exc:
        if exc.message.startswith("refused"):
            raise
        json_error = exc
    try:
        return load_yaml(text, location, "JSON or YAML")
    except InputError as exc:
        if exc.message.startswith("refused") or text.lstrip()[:1] not in ("{", "["):
            raise
        raise json_error from None


def check_document(data: Any, location: str) -> None:
    """Refuse ``data`` nested deeper than :data:`MAX_DEPTH`, holding itself, or inflated by aliases.

    Works on constructed data (a YAML alias is a second reference to one Python object), so it
    also guards documents loaded elsewhere. Cost: one visit per distinct container.
    """
    sizes: dict[int, int] = {}  # id(container) -> values in it, aliases expanded
    open_ids: set[int] = set()
    written = 0  # values as written: shared containers counted once

    def size(value: Any, depth: int) -> int:
        nonlocal written
        if isinstance(value, dict):
            children: list[Any] = [*value.keys(), *value.values()]
        elif isinstance(value, list):
            children = value
        else:
            written += 1
            return 1
        key = id(value)
        known = sizes.get(key)
        if known is not None:
            return known
        if key in open_ids:
            raise InputError(
                "refused: a YAML alias refers to a mapping or list that contains it; "
                "write the values out",
                location=location,
            )
        if depth > MAX_DEPTH:
            raise InputError(
                f"refused: nested deeper than {MAX_DEPTH} levels; flatten the document",
                location=location,
            )
        open_ids.add(key)
        written += 1
        total = 1 + sum(size(child, depth + 1) for child in children)
        open_ids.discard(key)
        sizes[key] = total
        return total

    expanded = size(data, 1)
    if expanded - written > MAX_ALIAS_VALUES:
        raise InputError(
            f"refused: YAML aliases expand the document from {written:,} to {expanded:,} "
            f"values (more than {MAX_ALIAS_VALUES:,} added); write the values out",
            location=location,
        )
