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


SPREAD = frozenset({
    "tests/cluster/test_charts.py",
    "tests/cluster/test_conformance.py",
    "tests/cluster/test_ct_install.py",
    "tests/cluster/test_doc_commands.py",
    "tests/cluster/test_security.py",
    "tests/cluster/test_umbrella.py",
    "tests/cluster/test_umbrella_crds.py",
})  # fmt: skip
"""Files whose tests are independent of each other and short next to the file's set-up: with
``--dist loadscope`` xdist hands them out one test at a time (a worker sets up such a file's
module fixtures, a control plane, once for the tests it gets in a row)."""

REAL_NODE = frozenset({
    "tests/cluster/test_conformance_real_pods.py",
    "tests/cluster/test_real_node.py",
    "tests/cluster/test_real_slurm.py",
})  # fmt: skip
"""Files that start the real node (slinky_harness.k8s.realnode), of which the machine runs one at
a time: they are one scope, run one after the other in one worker. As scopes of their own, two
of them could start at once in two workers, and one worker would sit out the other's node on the
node's lock (minutes) instead of running other files' tests."""


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadscope":
        return None
    paths = SPREAD | REAL_NODE
    missing = sorted(path for path in paths if not (config.rootpath / path).is_file())
    if missing:
        raise pytest.UsageError(
            f"tests/conftest.py SPREAD or REAL_NODE names files that do not exist: {missing}"
        )
    from xdist.scheduler import LoadScopeScheduling  # noqa: PLC0415 - only with xdist loaded

    class SpreadScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """loadscope, except that a test of a :data:`SPREAD` file is a scope of its own and the
        :data:`REAL_NODE` files are one scope. Scopes with more tests go first
        (``--loadscope-reorder``, the default), so the whole files start at once and the single
        tests fill the workers around them."""

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if path in SPREAD:
                return nodeid
            if path in REAL_NODE:
                return "real-node"
            scope: str = super()._split_scope(nodeid)
            return scope

    return SpreadScheduling(config, log)
