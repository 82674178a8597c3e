"""Shared pytest configuration: hypothesis profiles and suite-wide fixtures."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from tests import worker_summary

from slinky_harness.core.processes import install_sigterm_as_interrupt

# SIGTERM (a CI timeout, ``kill``) stops the run like Ctrl-C: every fixture's teardown runs and
# stops what it started (tests/cluster/test_processes.py).
install_sigterm_as_interrupt()

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


def pytest_sessionfinish(session: pytest.Session) -> None:
    worker_summary.ship(session)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent when xdist is not loaded
def pytest_testnodedown(node: Any, error: Any) -> None:
    worker_summary.merge(node)
