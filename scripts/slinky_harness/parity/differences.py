"""The differences from upstream that are meant, each with its reason.

:data:`DIFFERENCES_FILE` lists them per upstream chart (read by :func:`load_intentional`); the
measurement leaves them out when it counts the cases that render equal, and the render tier fails
on an entry that no case uses any more. MIGRATING.md's section "What differs and why, field by
field" is generated from the same entries (:mod:`slinky_harness.parity.migrating`;
``nox -s docs`` runs it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slinky_harness.parity.source import CHARTS, UpstreamError, load_yaml

if TYPE_CHECKING:
    from slinky_harness.parity.compare import Difference

DIFFERENCES_FILE = Path(__file__).with_name("differences.yaml")
"""The documented intentional differences, per upstream chart (see :func:`load_intentional`)."""


@dataclass(frozen=True)
class Intentional:
    """A difference from upstream that is meant: objects of ``kind`` named ``name``, at ``path``
    (patterns in which ``*`` stands for any text; an empty ``path`` is an object only one side
    renders), in the renders of ``charts`` (upstream's names), for ``reason``."""

    kind: str
    path: str
    reason: str
    charts: tuple[str, ...]
    name: str = "*"

    @property
    def key(self) -> str:
        """How an outcome names this entry: ``<kind>/<name> <path>``."""
        return f"{self.kind}/{self.name} {self.path}".rstrip()

    def covers(self, difference: Difference) -> bool:
        return (
            _glob(self.kind, difference.kind)
            and _glob(self.name, difference.name)
            and _glob(self.path, difference.path)
        )


def _glob(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern``, where only ``*`` is special (any text, dots and
    brackets too): paths hold brackets, which ``fnmatch`` would read as character classes."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, text, flags=re.DOTALL) is not None


_ENTRY_KEYS = {"kind": True, "name": False, "path": True, "reason": True}
"""The keys of an intentional-difference entry, and whether each is required."""


def _intentional_entry(raw: Any, chart: str, where: str) -> Intentional:
    if not isinstance(raw, dict):
        raise UpstreamError(f"{where}: expected a mapping with kind, path and reason")
    unknown = sorted(set(map(str, raw)) - set(_ENTRY_KEYS))
    if unknown:
        raise UpstreamError(
            f"{where}: unknown key(s) {', '.join(unknown)}; an entry has {', '.join(_ENTRY_KEYS)}"
        )
    for key, required in _ENTRY_KEYS.items():
        if required and key not in raw:
            raise UpstreamError(f"{where}: '{key}' is missing; every entry names it")
        if key in raw and not isinstance(raw[key], str):
            raise UpstreamError(f"{where}.{key}: expected a string, found {raw[key]!r}")
    if not raw["reason"].strip():
        raise UpstreamError(f"{where}.reason is empty; say why ours differs on purpose")
    if not raw["kind"]:
        raise UpstreamError(f"{where}.kind is empty; write a kind or '*'")
    return Intentional(
        raw["kind"], raw["path"], " ".join(raw["reason"].split()), (chart,), raw.get("name", "*")
    )


def load_intentional(path: Path = DIFFERENCES_FILE) -> tuple[Intentional, ...]:
    """The intentional differences of ``path``: per upstream chart name (``slurm``,
    ``slurm-operator``, ``slurm-bridge``), a list of entries with ``kind``, ``path`` and
    ``reason`` and an optional ``name`` (``*`` when left out). ``kind``, ``name`` and ``path``
    are patterns matched against each :class:`Difference` (only ``*`` is special); a ``path`` of
    ``""`` matches an object that only one side renders. The render tier fails on an entry that
    no case of its chart uses, so the list never hides more than it says."""
    raw = load_yaml(path)
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise UpstreamError(f"{path}: expected a mapping of upstream chart names to lists")
    entries: list[Intentional] = []
    for chart, items in raw.items():
        if chart not in CHARTS:
            raise UpstreamError(f"{path}: {chart!r} is not an upstream chart ({', '.join(CHARTS)})")
        if not isinstance(items, list):
            raise UpstreamError(f"{path}: {chart} must be a list of entries (or [])")
        for index, item in enumerate(items):
            entries.append(_intentional_entry(item, str(chart), f"{path}: {chart}[{index}]"))
    return tuple(entries)
