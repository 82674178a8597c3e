"""Hypothesis profiles for the topology property tests.

``ci`` (default): derandomized, bounded examples, no deadline - the whole folder runs in well under
a minute on two cores. ``deep``: many more random examples for a nightly or local hunt. Pick with
``HYPOTHESIS_PROFILE=deep``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=100,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep",
    max_examples=1000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
