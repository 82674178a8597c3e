"""The findings factory: every :class:`~slinky_topology.errors.Finding` is built here, one way.

A rule module gets a :class:`Findings` collector for one input (its ``location``, a file path or
``None`` for an in-memory model) and calls :meth:`Findings.error` or :meth:`Findings.warning`
with the subject, the sentence and the fix; the collector adds the location (``path:line`` when a
line is known). :func:`raise_on_errors` turns the errors of a list into a
:class:`~slinky_topology.errors.ValidationError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slinky_topology.errors import Finding, Severity, ValidationError

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Findings", "at", "raise_on_errors"]


def at(location: str | None, line: int | None) -> str | None:
    """``path:line``, ``path``, ``line N`` or ``None``: where a finding points."""
    if location is None:
        return f"line {line}" if line is not None else None
    return f"{location}:{line}" if line is not None else location


class Findings:
    """Collects the findings of one input, all built by :meth:`add`."""

    __slots__ = ("items", "location")

    def __init__(self, location: str | None = None) -> None:
        self.location = location
        self.items: list[Finding] = []

    def add(
        self,
        severity: Severity,
        subject: str,
        message: str,
        fix: str,
        *,
        line: int | None = None,
        location: str | None = None,
    ) -> None:
        """Record one finding; ``line`` is a line of :attr:`location`, ``location`` overrides it."""
        where = location if location is not None else at(self.location, line)
        self.items.append(Finding(severity, subject, message, fix=fix, location=where))

    def error(self, subject: str, message: str, fix: str, *, line: int | None = None) -> None:
        """A rule Slurm treats as fatal, or one of ours (the message then says "(ours)")."""
        self.add("error", subject, message, fix, line=line)

    def warning(self, subject: str, message: str, fix: str, *, line: int | None = None) -> None:
        """Something Slurm accepts with a log line, or a choice the user should know about."""
        self.add("warning", subject, message, fix, line=line)

    def extend(self, findings: Iterable[Finding]) -> None:
        self.items.extend(findings)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.items if f.severity == "error"]


def raise_on_errors(findings: Iterable[Finding], what: str = "") -> None:
    """Raise :class:`ValidationError` listing the errors in ``findings``, if any."""
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise ValidationError(errors, what=what)
