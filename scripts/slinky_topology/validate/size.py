"""The Kubernetes ConfigMap size limit (topology.md b.9)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slinky_topology.validate.findings import Findings

if TYPE_CHECKING:
    from slinky_topology.errors import Finding

__all__ = ["CONFIGMAP_LIMIT", "size_findings"]

CONFIGMAP_LIMIT = 1024 * 1024
"""Kubernetes ConfigMap data limit, bytes."""


def size_findings(text: str, what: str, location: str | None = None) -> list[Finding]:
    """An error when ``text`` does not fit one ConfigMap."""
    out = Findings(location)
    size = len(text.encode())
    if size > CONFIGMAP_LIMIT:
        out.error(
            what,
            f"is {size} bytes, over the {CONFIGMAP_LIMIT}-byte ConfigMap limit",
            "use the dynamic shape (skeleton + node annotations)",
        )
    return out.items
