"""Exceptions raised by the topology library.

Library code raises these; only :func:`slinky_topology.cli.main` prints them. ``str(exc)`` is the
sentence a user reads, locations included (``path:line`` or ``path::$.json.path``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Finding", "InputError", "Severity", "TopologyError", "ValidationError"]

Severity = Literal["error", "warning"]


class TopologyError(Exception):
    """Base class of every error this package raises on purpose."""


class InputError(TopologyError):
    """An input file, document or argument cannot be read or parsed.

    ``location`` names where: a file path, optionally followed by ``:line`` or ``::$.json.path``.
    """

    def __init__(self, message: str, *, location: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        if self.location:
            return f"{self.location}: {self.message}"
        return self.message


@dataclass(frozen=True, slots=True)
class Finding:
    """One validation result: what is wrong, on which object, where, and how to fix it.

    ``subject`` names the object (``switch leaf01``, ``block rack03``, ``node gpu0001``,
    ``topology nvl``); ``location`` is ``path:line`` when the finding comes from a file.
    """

    severity: Severity
    subject: str
    message: str
    fix: str = ""
    location: str | None = None

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        fix = f" (fix: {self.fix})" if self.fix else ""
        return f"{where}{self.subject}: {self.message}{fix}"


class ValidationError(TopologyError):
    """The input or output breaks one or more rules; ``findings`` lists every error found."""

    def __init__(self, findings: list[Finding] | tuple[Finding, ...], *, what: str = "") -> None:
        self.findings = tuple(findings)
        self.what = what
        super().__init__(str(self))

    def __str__(self) -> str:
        errors = [f for f in self.findings if f.severity == "error"]
        shown = errors or list(self.findings)
        head = f"{self.what}: " if self.what else ""
        if len(shown) == 1:
            return f"{head}{shown[0]}"
        lines = [f"{head}{len(shown)} problems found:"]
        lines.extend(f"  - {f}" for f in shown)
        return "\n".join(lines)
