"""Fixtures of the real-Slurm tier: one Slurm 26.05 chroot per machine, one slurmctld per test.

The chroot (Debian sid, debootstrap) is built once per machine by
``slinky_harness.build.slurm_chroot.ensure_chroot`` into
``${SLINKY_SUITE_CACHE:-~/.cache/slinky-suite}/slurm-chroot/`` and reused by every later session.
The tier needs Linux and root; elsewhere it is skipped, unless ``SLINKY_REQUIRE_SLURM=1`` (CI) turns
the skip into a failure. Every test in this folder gets the ``slurm`` marker. The terminal summary
reports the chroot time (cold build or warm reuse) and controller start-up times.

Accounting: ``slurm_db`` is one private MariaDB per session (:func:`slinky_harness.slurm.dbd.mariadb`,
about 2-4 s); ``sched_cluster`` starts, per test, slurmdbd (operator's slurmdbd.conf for the rendered
Accounting, a fresh database), slurmctld on slurm-cluster's rendered slurm.conf lines and emulated
slurmd (see ``scheduling_support``); their start-up times are in the summary too.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.slurm import scheduling_support as sched
from tests.worker_summary import records

from slinky_harness.build.slurm_chroot import (
    CHROOT_ENV,
    SLURM_SERIES,
    SUITE,
    cache_root,
    chroot_info,
    ensure_chroot,
)
from slinky_harness.slurm.ctld import slurmctld
from slinky_harness.slurm.dbd import mariadb

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from contextlib import AbstractContextManager
    from typing import Any

    from slinky_harness.slurm.conf import ConfigFiles
    from slinky_harness.slurm.ctld import CtldFactory, SlurmCtld
    from slinky_harness.slurm.dbd import MariaDB

    ClusterFactory = Callable[..., AbstractContextManager[sched.Cluster]]

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "slurm"

COLD_BUILD_TIMEOUT_S = 1800
# What the summary reports; filled in every xdist worker, merged in the controller.
_chroot_times: list[float] = records("slurm.chroot_seconds")
_starts: list[float] = records("slurm.ctld_starts")
_daemon_starts: list[tuple[str, float]] = records("slurm.daemon_starts")
_chroot_state: list[str] = records("slurm.chroot_state")
_large: list[list[Any]] = records("slurm.large_fabric_seconds")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slurm: needs real Slurm 26.05 in the cached chroot (tests/slurm, nox -s slurm)"
    )


def _chroot_is_warm() -> bool:
    return (cache_root() / f"{SUITE}-{SLURM_SERIES}" / ".slinky-chroot.json").exists()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A cold chroot build (about 1.5 min, longer on a slow mirror) happens in the setup of the first
    # test here; give the tier room under pytest-timeout. Every harness call has its own timeout.
    cold_cap = config.pluginmanager.hasplugin("timeout") and not _chroot_is_warm()
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.slurm)
            if cold_cap:
                item.add_marker(pytest.mark.timeout(COLD_BUILD_TIMEOUT_S))


def _unavailable() -> str | None:
    if not sys.platform.startswith("linux"):
        return "real Slurm needs Linux"
    if os.geteuid() != 0:
        return "real Slurm needs root (debootstrap, chroot, mount namespaces)"
    for tool in ("unshare", "chroot", "mount"):
        if shutil.which(tool, path=CHROOT_ENV["PATH"]) is None:
            return f"real Slurm needs {tool}"
    return None


@pytest.fixture(scope="session")
def slurm_root() -> Path:
    """The Slurm chroot, built on first use (about 1.5 min cold), then reused."""
    reason = _unavailable()
    if reason is not None:
        if os.environ.get("SLINKY_REQUIRE_SLURM") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    warm = _chroot_is_warm()
    started = time.monotonic()
    root = ensure_chroot()
    _chroot_times.append(time.monotonic() - started)
    info = chroot_info(root)
    _chroot_state.append(
        f"{'reused' if warm else 'built'} {root} (slurm {info.slurm_version}, "
        f"emulator {'yes' if info.emulator else 'no'}, slurmdbd and MariaDB "
        f"{'yes' if info.accounting else 'no'}, cold build took {info.build_seconds:.0f} s)"
    )
    return root


@pytest.fixture
def slurm_data() -> Path:
    """``tests/data/slurm``: hand-written config folders."""
    return DATA


@pytest.fixture
def start_ctld(slurm_root: Path, tmp_path: Path) -> CtldFactory:
    """Factory: ``with start_ctld(files) as ctld:`` starts a controller in a fresh work folder."""
    counter = iter(range(1000))

    @contextmanager
    def factory(files: ConfigFiles) -> Iterator[SlurmCtld]:
        t0 = time.monotonic()
        with slurmctld(files, root=slurm_root, workdir=tmp_path / f"ctld{next(counter)}") as ctld:
            _starts.append(time.monotonic() - t0)
            yield ctld

    return factory


@pytest.fixture(scope="session")
def slurm_db(slurm_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    """One private MariaDB for the session (own data folder, socket, free port; 2-4 s)."""
    if not chroot_info(slurm_root).accounting:
        pytest.fail("the Slurm chroot has no slurmdbd/MariaDB (recipe < 3)")
    with mariadb(root=slurm_root, workdir=tmp_path_factory.mktemp("mariadb")) as db:
        _daemon_starts.append(("mariadb", db.start_seconds))
        yield db


@pytest.fixture
def sched_cluster(
    slurm_root: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> ClusterFactory:
    """Factory: ``with sched_cluster(values, nodes=2) as c:`` renders slurm-cluster with ``values``,
    starts slurmdbd (when they enable accounting; a fresh database in the session's MariaDB),
    slurmctld on the rendered lines and one emulated slurmd per node."""
    if not chroot_info(slurm_root).emulator:
        pytest.skip("Debian sid has no slurm-wlm-emulator at the moment")
    counter = iter(range(1000))

    @contextmanager
    def factory(values: Mapping[str, Any], *, nodes: int = 2) -> Iterator[sched.Cluster]:
        accounting = bool((values.get("accounting") or {}).get("enabled"))
        db = request.getfixturevalue("slurm_db") if accounting else None
        workdir = tmp_path / f"cluster{next(counter)}"
        with sched.cluster(values, root=slurm_root, workdir=workdir, database=db, nodes=nodes) as c:
            for name, seconds in c.timings.items():
                _daemon_starts.append((name, seconds))
            yield c

    return factory


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _chroot_state:
        return
    tr = terminalreporter
    tr.section("real Slurm")
    tr.write_line(
        f"chroot: {_chroot_state[0]}; set-up per worker: {max(_chroot_times):.2f} s at most "
        f"({len(_chroot_times)} worker(s))"
    )
    if _starts:
        tr.write_line(
            f"slurmctld starts: {len(_starts)}, mean {sum(_starts) / len(_starts):.2f} s, "
            f"max {max(_starts):.2f} s"
        )
    by_daemon: dict[str, list[float]] = {}
    for name, seconds in _daemon_starts:
        by_daemon.setdefault(name, []).append(seconds)
    for name, times in by_daemon.items():
        tr.write_line(
            f"{name} starts (accounting and scheduling tests): {len(times)}, "
            f"mean {sum(times) / len(times):.2f} s, "
            f"max {max(times):.2f} s"
        )
    for what, shape, seconds in sorted(_large, key=lambda r: (str(r[0]), str(r[1]))):
        tr.write_line(f"1,000-node fabric, {what} ({shape} nodes): {seconds:.1f} s")
    for line in sched.PROOFS:
        tr.write_line(f"measured: {line}")
