"""The labeler against a silent API server, a lost Lease, SIGTERM mid-pass, a deleted
ConfigMap and a stuck loop: client timeouts, leadership checked before every write, stopping
at the next write, the owned ConfigMap watched, ``/healthz`` failing when a loop stops beating.

The silent API server is a loopback socket that accepts and never answers
(:class:`~tests.unit.labeler.labeler_support.SilentServer`); the lost Lease goes through the
real :class:`~slinky_topology.labeler.leader.LeaderElector` on an in-memory Lease API.
"""

from __future__ import annotations

import signal
import threading
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

# imported up front: the timings below exclude them (the client loads CoreV1Api on first use,
# seconds when no bytecode is cached)
import kubernetes.client.api.core_v1_api
import kubernetes.config.kube_config
import pytest
from tests.unit.labeler.labeler_support import (
    ApiError,
    FakeClock,
    FakeCluster,
    FakeLeases,
    SilentServer,
    elector,
    gfd_fleet,
    tiered_fleet,
)

from slinky_topology import cli
from slinky_topology.labeler import cli as labeler_cli
from slinky_topology.labeler.cli import main, parse_config
from slinky_topology.labeler.controller import Controller
from slinky_topology.labeler.kube import KubeAPIError, KubeClusterAPI, load_clients
from slinky_topology.labeler.leader import format_time
from slinky_topology.labeler.metrics import HealthServer
from slinky_topology.sources import k8s_nodes

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from slinky_topology.labeler.config import LabelerConfig

NS = "slinky"
CM = "gpu-topology"
# Bound on a call that must give up after a 1 s request timeout against a server that never
# answers (without a timeout it would wait forever). Generous: on a loaded 2-core CI machine the
# same call has taken just over 3 s.
GIVES_UP_WITHIN = 10.0
PASSES = "slinky_topology_labeler_passes_total"
ERRORS = "slinky_topology_labeler_errors_total"


def _args(*extra: str) -> LabelerConfig:
    return parse_config(["--namespace", NS, "--qps", "0", *extra], environ={})


def _wait_for(check: Callable[[], bool], seconds: float, what: str) -> float:
    """Poll ``check`` until true; return the seconds it took (fail after ``seconds``)."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > seconds:
            raise AssertionError(f"{what}: not within {seconds}s")
        time.sleep(0.02)
    return time.monotonic() - started


class Running:
    """``run_forever`` of a controller in a thread; stopped (and its watches ended) on exit."""

    def __init__(self, ctl: Controller, api: FakeCluster) -> None:
        self.ctl = ctl
        self.api = api
        self.thread = threading.Thread(target=ctl.run_forever, name="run-forever", daemon=True)

    def __enter__(self) -> Running:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.ctl.stop.set()
        self.api.close()
        self.thread.join(10)
        assert not self.thread.is_alive(), "run_forever did not return"


# --- a silent API server ------------------------------------------------------------------------


def test_once_against_a_silent_api_server_ends_within_the_request_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SilentServer() as server:
        kubeconfig = server.kubeconfig(tmp_path)
        started = time.monotonic()
        code = main(
            ["--once", f"--kubeconfig={kubeconfig}", "--metrics-port=0", "--request-timeout=1"]
        )
        seconds = time.monotonic() - started
        assert server.connections, "the labeler reached the silent server"
    assert code == 1
    assert seconds < GIVES_UP_WITHIN, f"--once took {seconds:.1f}s against a silent API server"
    assert "error: listing Nodes failed" in capsys.readouterr().err


def test_generate_from_cluster_against_a_silent_api_server_ends_within_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(k8s_nodes, "CLUSTER_TIMEOUT", 1.0)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with SilentServer() as server:
        # $KUBECONFIG, as the client read it at import
        kubeconfig = str(server.kubeconfig(tmp_path))
        monkeypatch.setattr(
            kubernetes.config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", kubeconfig
        )
        started = time.monotonic()
        code = cli.main(["generate", "--from-cluster"])
        seconds = time.monotonic() - started
        assert server.connections
    assert code == 1
    assert seconds < GIVES_UP_WITHIN, (
        f"generate --from-cluster took {seconds:.1f}s against a silent server"
    )
    assert "listing Nodes failed" in capsys.readouterr().err


def test_a_silent_watch_stream_is_dropped_and_the_watch_restarted(tmp_path: Path) -> None:
    with SilentServer(headers=True) as server:
        real = KubeClusterAPI(load_clients(str(server.kubeconfig(tmp_path))), timeout=0.5)
        started = time.monotonic()
        error: KubeAPIError | None = None
        try:
            list(real.watch_nodes("1", timeout_seconds=1))
        except KubeAPIError as exc:
            error = exc
        seconds = time.monotonic() - started
        assert error is not None and error.timeout and error.status is None, repr(error)
        assert error.retriable and str(error).startswith("watch nodes: "), str(error)
        assert "timed out" in str(error)
        assert 1.0 <= seconds < GIVES_UP_WITHIN, (
            "dropped after the watch timeout plus the request timeout"
        )

        # the controller's watch loop: Nodes listed (in memory), watched on the silent stream
        api = FakeCluster(gfd_fleet())
        lists: list[str] = []
        list_nodes = api.list_nodes

        def counting(label_selector: str | None = None) -> tuple[list[dict[str, Any]], str]:
            lists.append("list")
            return list_nodes(label_selector)

        api.list_nodes = counting  # type: ignore[method-assign]
        api.watch_nodes = real.watch_nodes  # type: ignore[method-assign]
        ctl = Controller(_args("--watch-timeout=1", "--request-timeout=0.5"), api)
        thread = threading.Thread(target=ctl.watch_loop, daemon=True)
        thread.start()
        try:
            _wait_for(lambda: len(lists) >= 2, 10, "the watch restarted after a silent stream")
        finally:
            ctl.stop.set()
            thread.join(5)
    assert not thread.is_alive()
    assert ctl.metrics.value(ERRORS, kind="watch") >= 1


# --- leadership before every write --------------------------------------------------------------


@pytest.mark.parametrize("how", ["taken-over", "expired"])
def test_no_write_after_the_lease_is_lost_even_between_retries(how: str) -> None:
    """The API fails (503) so the pass retries; meanwhile the Lease goes to ``b`` (taken over
    and seen at the next election round, or expired without renewal). The retry is refused."""
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, "a", clock), elector(leases, "b", clock)
    assert a.try_acquire_or_renew()
    api = FakeCluster(tiered_fleet())
    api.fail = [ApiError(503, "etcd leader changed")] * 5

    def sleep(seconds: float) -> None:  # a retry's backoff
        clock.sleep(seconds)
        if how == "taken-over" and len(clock.sleeps) == 1:
            spec = leases.leases[(NS, "labeler")]["spec"]
            spec.update(holderIdentity="b", renewTime=format_time(clock.now))
            assert not a.try_acquire_or_renew(), "a's next round sees b"

    ctl = Controller(
        _args("--lease-name=labeler", "--request-timeout=2"), api, elector=a, sleep=sleep
    )
    ctl.relist()
    assert not ctl.run_pass()
    assert not api.configmaps and not api.patches and not api.events, "nothing written"
    assert ctl.metrics.value(PASSES, result="interrupted") == 1
    if how == "taken-over":
        assert len(api.fail) == 4, "one try before the loss, none after"
    else:
        # 5 failed tries over 0.5+1+2+4+8 s of backoff: the 6th would start 15.5 s after the
        # last renewal, past the Lease's 15 s; it already stops once 13 s have passed
        assert sum(clock.sleeps) > 13 and not api.fail
        assert b.try_acquire_or_renew(), "the Lease is free for b"


# --- SIGTERM --------------------------------------------------------------------------------------


def test_stop_interrupts_a_long_pass_at_its_next_write() -> None:
    api = FakeCluster(gfd_fleet(racks=8, per_rack=18))  # 144 node patches, paced at 20/s: 7 s
    ctl = Controller(_args("--qps=20", "--burst=1"), api)
    ctl.relist()
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(ctl.run_pass()))
    thread.start()
    _wait_for(lambda: len(api.patches) >= 3, 5, "the pass writing")
    ctl.stop.set()
    at_stop = len(api.patches)
    stopped = time.monotonic()
    thread.join(5)
    seconds = time.monotonic() - stopped
    # the whole pass takes 7 s: stopping well within half of it is stopping at the next write
    assert not thread.is_alive() and seconds < 3.5, f"the pass went on for {seconds:.1f}s"
    assert result == [False]
    assert len(api.patches) <= at_stop + 1 < 144, "at most the write in flight"
    assert ctl.metrics.value(PASSES, result="interrupted") == 1


def test_sigterm_ends_run_forever_mid_pass_and_releases_the_lease() -> None:
    leases = FakeLeases()
    api = FakeCluster(gfd_fleet(racks=8, per_rack=18))
    api.block_watches = True
    ctl = Controller(
        _args("--lease-name=labeler", "--qps=20", "--burst=1", "--debounce-seconds=0"),
        api,
        elector=elector(leases, "a", time.time),
    )
    previous = labeler_cli.stop_on_signals(ctl)
    try:
        with Running(ctl, api) as running:
            _wait_for(lambda: len(api.patches) >= 3, 10, "the first pass writing")
            signal.raise_signal(signal.SIGTERM)  # the handler runs here, in the main thread
            stopped = time.monotonic()
            running.thread.join(5)
            seconds = time.monotonic() - stopped
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    # the first pass alone takes 7 s: ending well within half of it is ending mid-pass
    assert seconds < 3.5, f"run_forever went on for {seconds:.1f}s after SIGTERM"
    assert len(api.patches) < 144
    spec = leases.leases[(NS, "labeler")]["spec"]
    assert spec["holderIdentity"] is None and spec["leaseDurationSeconds"] == 1, "released"


# --- the owned ConfigMap ----------------------------------------------------------------------------


def test_a_deleted_or_edited_configmap_is_restored_within_seconds() -> None:
    api = FakeCluster(tiered_fleet())
    api.block_watches = True
    ctl = Controller(_args("--debounce-seconds=0.1"), api)
    with Running(ctl, api):
        _wait_for(lambda: (NS, CM) in api.configmaps, 5, "the first pass")
        good = api.configmaps[(NS, CM)]["data"]
        api.delete_configmap(NS, CM)
        restored = _wait_for(lambda: (NS, CM) in api.configmaps, 5, "the ConfigMap restored")

        edited = api.get_configmap(NS, CM)
        assert edited is not None
        edited["data"] = {"topology.yaml": "edited by hand\n"}
        api.replace_configmap(NS, CM, edited)
        _wait_for(lambda: api.configmaps[(NS, CM)]["data"] == good, 5, "the edit undone")
        time.sleep(0.3)
    assert restored < 1.5, f"restored after {restored:.1f}s (resync: 300 s)"
    # ours, ours again after the delete, the hand edit, ours again; no pass for our own writes
    assert api.cm_writes == ["create", "create", "replace", "replace"]


# --- /healthz ------------------------------------------------------------------------------------


def _status(server: HealthServer, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.fixture
def health() -> Iterator[Callable[[Controller], HealthServer]]:
    servers: list[HealthServer] = []

    def start(ctl: Controller) -> HealthServer:
        server = HealthServer(ctl.metrics, 0, live=ctl.live, ready=ctl.ready, host="127.0.0.1")
        servers.append(server.start())
        return server

    yield start
    for server in servers:
        server.stop()


def test_healthz_fails_when_a_loop_is_stuck(
    health: Callable[[Controller], HealthServer],
) -> None:
    api = FakeCluster(tiered_fleet())
    api.block_watches = True
    hang = threading.Event()

    def stuck_watch(*_: Any, **__: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        hang.wait(30)  # a call that never returns (whatever the timeouts)
        return iter(())

    api.watch_nodes = stuck_watch  # type: ignore[method-assign]
    args = (
        "--watch-timeout=1",
        "--request-timeout=0.2",
        "--retry-period=0.5",
        "--stuck-seconds=1.5",
    )
    ctl = Controller(_args(*args), api)
    server = health(ctl)
    try:
        with Running(ctl, api):
            _wait_for(ctl.ready, 5, "the first list")
            assert _status(server, "/healthz") == 200
            seconds = _wait_for(lambda: _status(server, "/healthz") == 503, 5, "/healthz failing")
            assert ctl.stuck_loops() == ["watch"]
    finally:
        hang.set()
    assert seconds < 2.5


def test_healthz_stays_ok_while_the_loops_cycle(
    health: Callable[[Controller], HealthServer],
) -> None:
    api = FakeCluster(tiered_fleet())
    api.block_watches = True  # each watch lasts --watch-timeout, then starts again
    ctl = Controller(
        _args(
            "--watch-timeout=1",
            "--request-timeout=0.2",
            "--retry-period=0.5",
            "--stuck-seconds=1.5",
        ),
        api,
    )
    server = health(ctl)
    with Running(ctl, api):
        _wait_for(ctl.ready, 5, "the first list")
        for _ in range(12):
            assert _status(server, "/healthz") == 200
            time.sleep(0.25)
    assert sorted(ctl.beats) == ["configmap-watch", "main", "watch"]
