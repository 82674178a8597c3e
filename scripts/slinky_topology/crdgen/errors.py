"""Exceptions raised by the CRD generator and its validators.

All derive from :class:`slinky_topology.errors.TopologyError`, the package's base error.
"""

from __future__ import annotations

from slinky_topology.errors import TopologyError

__all__ = ["CrdGenError", "DefinitionsError", "ModelError", "SchemaError", "StaleOutputError"]


class CrdGenError(TopologyError):
    """Base class of every error raised by ``slinky_topology.crdgen``."""


class ModelError(CrdGenError):
    """The compact API model (``model/*.yaml``) is malformed."""


class DefinitionsError(CrdGenError):
    """The Kubernetes OpenAPI definitions are missing or use an unsupported construct."""


class SchemaError(CrdGenError):
    """A CRD or schema given to a helper is malformed."""


class StaleOutputError(CrdGenError):
    """The committed CRD files differ from what the model generates."""

    def __init__(self, message: str, diff: str) -> None:
        super().__init__(message)
        self.diff = diff
