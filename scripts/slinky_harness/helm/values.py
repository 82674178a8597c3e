"""Helm's values merge, the one copy in the harness.

``helm install -f a.yaml -f b.yaml`` coalesces values so: maps merge key by key, recursively; any
other value (a list, a string, a number) given later replaces what came before. (A ``null`` given
later replaces too; Helm would delete the key. No caller passes one.) The
harness needs the same result without running Helm (a profile under harness overrides, a chart's
defaults under a scenario); :func:`merge` computes it, with deep copies so that no layer is
changed or shared with the result.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["merge"]


def merge(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """``layers`` merged in order, later winning (see the module doc); ``None`` layers count as
    empty."""
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in (layer or {}).items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merge(out[key], value)
            else:
                out[key] = copy.deepcopy(value)
    return out
