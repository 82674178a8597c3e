"""Exceptions raised by the values-schema generator.

All derive from :class:`SchemaGenError`; ``str()`` of each is the sentence the CLI prints: it
names the file (and line, for values.yaml) and says how to fix it.
"""

from __future__ import annotations

__all__ = ["AnnotationError", "SchemaGenError", "StaleSchemaError"]


class SchemaGenError(Exception):
    """Base class of every error raised by ``slinky_schemagen``."""


class AnnotationError(SchemaGenError):
    """A values.yaml key cannot be turned into a schema: a malformed ``# @schema`` annotation,
    an undocumented key in a closed object, or a default whose type cannot be inferred."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: {message}")
        self.file = file
        self.line = line


class StaleSchemaError(SchemaGenError):
    """A committed values.schema.json differs from what its chart's values.yaml generates."""

    def __init__(self, message: str, diff: str) -> None:
        super().__init__(message)
        self.diff = diff
