"""The ``labeler`` extra: the Kubernetes and Prometheus clients the labeler needs.

The topology CLI works without them; the labeler's entry points check with :func:`missing_extra`
before they start, and say which to install (:data:`EXTRA_HINT`) instead of failing on an
import deep inside.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["EXTRA_HINT", "EXTRA_MODULES", "missing_extra"]

EXTRA_HINT = "pip install 'slinky-suite[labeler]'"
"""How to install the extra."""
EXTRA_MODULES = {"kubernetes": "kubernetes", "prometheus_client": "prometheus-client"}
"""Module -> distribution, for each package of the extra."""


def missing_extra(modules: Sequence[str] = tuple(EXTRA_MODULES)) -> list[str]:
    """The distributions of the extra whose ``modules`` cannot be imported."""
    missing = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a blocked import, or a module without a spec
            found = False
        if not found:
            missing.append(EXTRA_MODULES[module])
    return missing
