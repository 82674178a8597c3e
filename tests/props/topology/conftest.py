"""Hypothesis profiles for the topology property tests.

``ci`` (default): derandomized, bounded examples, no deadline - this folder runs in well under a
minute on two cores. ``deep``: many more random examples for a nightly or local hunt. Pick with
``HYPOTHESIS_PROFILE=deep``.

Hypothesis profiles are process-global. A profile of the same name registered earlier (by a
shallower conftest that owns the whole props tier) is kept, so this file never overrides the
tier's own settings; it only fills in the profiles when run on its own.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.errors import InvalidArgument

_COMMON: dict[str, Any] = {
    "deadline": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
_PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"derandomize": True, "max_examples": 100, **_COMMON},
    "deep": {"max_examples": 1000, **_COMMON},
}

for _name, _options in _PROFILES.items():
    try:
        settings.get_profile(_name)
    except InvalidArgument:
        settings.register_profile(_name, **_options)

settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
