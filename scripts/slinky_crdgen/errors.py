"""Exceptions raised by the CRD generator and its validators.

All derive from :class:`CrdGenError`. The generator is a package of its own, beside the product
package ``slinky_topology`` and independent of it: it is a build and test tool, never shipped in
the wheel or the labeler image.
"""

from __future__ import annotations

__all__ = ["CrdGenError", "DefinitionsError", "ModelError", "SchemaError", "StaleOutputError"]


class CrdGenError(Exception):
    """Base class of every error raised by ``slinky_crdgen``."""


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
