"""The controller: offline dry runs through main(), passes against a fake cluster, the watch
cache, the health server and NVML discovery with a fake NVML."""

from __future__ import annotations

import ctypes
import io
import json
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest
from tests.unit.labeler.labeler_support import (
    RACK_A,
    ApiError,
    FakeCluster,
    connection_error,
    gfd_fleet,
    node,
    tiered_fleet,
)

from slinky_topology.labeler import discover
from slinky_topology.labeler.cli import main, parse_config
from slinky_topology.labeler.controller import Controller, WatchGone
from slinky_topology.labeler.keys import CLIQUE_LABEL, SPEC_ANNOTATION
from slinky_topology.labeler.metrics import HealthServer, Metrics
from slinky_topology.labeler.reconcile import CONFIGMAP_KEY

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_topology.labeler.config import LabelerConfig

NS = "slinky"


def _nodes_file(tmp_path: Path, items: list[dict[str, Any]]) -> Path:
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def _run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def test_dry_run_from_nodes_prints_the_diff(tmp_path: Path) -> None:
    code, text = _run(["--from-nodes", str(_nodes_file(tmp_path, gfd_fleet())), "--dry-run"])
    assert code == 0
    assert "configmap default/gpu-topology (create):" in text
    assert "+- topology: nvlink" in text
    assert f"+ annotation {SPEC_ANNOTATION}=nvlink:{RACK_A}" in text
    assert "9 write(s): configmap create; nodes 8 add, 0 change, 0 remove" in text


def test_dry_run_against_current_state_is_empty(tmp_path: Path) -> None:
    items = tiered_fleet()
    code, text = _run(
        ["--from-nodes", str(_nodes_file(tmp_path, items)), "--output", "json", "--dry-run"]
    )
    assert code == 0
    plan = json.loads(text)
    cm = tmp_path / "topology.yaml"
    cm.write_text(plan["configmap"]["data"][CONFIGMAP_KEY])
    for item, change in zip(items, plan["nodes"], strict=True):
        meta = item["metadata"]
        meta.setdefault("annotations", {}).update(change["patch"]["metadata"]["annotations"])
        meta["labels"].update(change["patch"]["metadata"]["labels"])
    code, text = _run(
        ["--from-nodes", str(_nodes_file(tmp_path, items)), "--configmap-file", str(cm)]
    )
    assert code == 0
    assert text.strip() == "0 write(s): configmap unchanged; nodes 0 add, 0 change, 0 remove"


def test_dry_run_with_a_fabric_file(tmp_path: Path) -> None:
    fabric = tmp_path / "fabric.yaml"
    fabric.write_text(
        "apiVersion: fabric.example.org/v1alpha1\nkind: Fabric\nmetadata: {name: t}\n"
        "spec:\n  switches: [{name: leaf1}]\n  nodes:\n    - {name: 'n[1-2]', leaf: leaf1}\n"
    )
    items = [
        node("n1"),
        node("n2"),
        node("other", annotations={SPEC_ANNOTATION: "old"}),
    ]
    code, text = _run(
        ["--from-nodes", str(_nodes_file(tmp_path, items)), "--fabric-file", str(fabric)]
    )
    assert code == 0, text
    assert "node n1 (add):" in text
    assert "node other (remove):" in text
    assert f"- annotation {SPEC_ANNOTATION}=old" in text


def test_bad_input_and_usage_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cpu_only = _nodes_file(tmp_path, [node("cpu1", {"kubernetes.io/hostname": "cpu1"})])
    assert _run(["--from-nodes", str(cpu_only)])[0] == 1
    assert _run(["--from-nodes", str(tmp_path / "missing.json")])[0] == 1
    assert _run(["--preset", "nope"])[0] == 2
    assert _run(["--configmap-file", "x"])[0] == 2
    assert _run(["--renew-deadline", "20"])[0] == 2
    # a write must end before the Lease could pass on: 14 s + 2 s of retry period > 15 s
    assert _run(["--lease-name", "x", "--request-timeout", "14"])[0] == 2
    # /healthz must not fail on a quiet watch: it lasts up to 60 s + 10 s
    assert _run(["--stuck-seconds", "30"])[0] == 2
    assert "error" in capsys.readouterr().err


def _args(*extra: str) -> LabelerConfig:
    return parse_config(["--namespace", NS, "--qps", "0", *extra], environ={})


def test_pass_publishes_then_bad_input_keeps_last_good(tmp_path: Path) -> None:
    api = FakeCluster(tiered_fleet())
    metrics = Metrics()
    ctl = Controller(_args(), api, metrics=metrics, sleep=lambda _: None)
    ctl.relist()
    assert ctl.run_pass()
    good = api.configmaps[(NS, "gpu-topology")]["data"]
    assert len(api.patches) == 8
    ctl.relist()
    assert ctl.run_pass() and len(api.patches) == 8, "second pass: zero writes"

    # every topology label disappears (e.g. a broken GFD rollout): nothing is published
    for n in api.nodes.values():
        n["metadata"]["labels"] = {
            k: v
            for k, v in n["metadata"]["labels"].items()
            if not k.startswith(("fabric.", "accelerator."))
        }
    ctl.relist()
    assert not ctl.run_pass()
    assert api.configmaps[(NS, "gpu-topology")]["data"] == good
    assert len(api.patches) == 8
    (event,) = api.events
    assert event["reason"] == "TopologyInvalid" and event["type"] == "Warning"
    assert metrics.value("slinky_topology_labeler_errors_total", kind="validation") == 1
    assert ctl.ready() and ctl.last_pass_ok is False


def test_follower_does_not_write() -> None:
    class NotLeader:
        is_leader = False

        def may_write(self, within: float = 0.0) -> bool:
            return False

    api = FakeCluster(tiered_fleet())
    ctl = Controller(_args(), api, elector=NotLeader(), sleep=lambda _: None)  # type: ignore[arg-type]
    ctl.relist()
    assert not ctl.run_pass()
    assert not api.patches and not api.configmaps and not api.events


class LateRenewals:
    """An elector still the leader (``is_leader``) for ``leader_checks`` checks, whose renewal
    is fresh enough to write (``may_write``) only from check ``fresh_from`` on."""

    def __init__(self, *, fresh_from: int, leader_checks: int = 1_000) -> None:
        self.fresh_from = fresh_from
        self.leader_checks = leader_checks
        self.writable_checks = 0
        self.leader_asked = 0

    @property
    def is_leader(self) -> bool:
        self.leader_asked += 1
        return self.leader_asked <= self.leader_checks

    def may_write(self, within: float = 0.0) -> bool:
        self.writable_checks += 1
        return self.is_leader and self.writable_checks >= self.fresh_from


def test_a_late_renewal_pauses_the_write_and_the_pass_goes_on() -> None:
    """Invariant: while the Lease is still ours, a renewal too old to start a write holds the
    write back until a fresh one; the pass is not abandoned (before: it ended at once, so a busy
    API server failed a whole ``--once`` pass)."""
    api = FakeCluster(tiered_fleet())
    elector = LateRenewals(fresh_from=4)
    ctl = Controller(_args(), api, elector=elector, sleep=lambda _: None)  # type: ignore[arg-type]
    ctl.relist()
    assert ctl.run_pass()
    assert len(api.patches) == 8 and api.configmaps
    assert elector.writable_checks > 4, "the guard asked again after the late renewal"


def test_a_lost_lease_while_waiting_for_a_renewal_ends_the_pass_without_writing() -> None:
    """Invariant: a write held back for a renewal is refused once leadership is gone; nothing is
    written after that."""
    api = FakeCluster(tiered_fleet())
    elector = LateRenewals(fresh_from=10**9, leader_checks=5)
    ctl = Controller(_args(), api, elector=elector, sleep=lambda _: None)  # type: ignore[arg-type]
    ctl.relist()
    assert not ctl.run_pass()
    assert not api.patches and not api.configmaps


def test_watch_events_update_the_cache_and_410_relists() -> None:
    api = FakeCluster(gfd_fleet())
    ctl = Controller(_args(), api, sleep=lambda _: None)
    ctl.relist()
    ctl.dirty.clear()
    n1 = dict(api.nodes["gpu0001"])
    ctl.handle_event("MODIFIED", {**n1, "status": {"x": 1}})
    assert not ctl.dirty.is_set(), "status-only changes do not trigger a pass"
    ctl.handle_event("ADDED", node("gpu0100", {"nvidia.com/gpu.clique": f"{RACK_A}.1"}))
    assert ctl.dirty.is_set() and "gpu0100" in ctl.nodes
    ctl.handle_event("DELETED", node("gpu0100"))
    assert "gpu0100" not in ctl.nodes
    ctl.handle_event("BOOKMARK", {"metadata": {"resourceVersion": "555"}})
    assert ctl.resource_version == "555"
    with pytest.raises(WatchGone):
        ctl.handle_event("ERROR", {"code": 410, "message": "too old"})

    # the loop re-lists after 410 (event or exception) and survives other errors
    calls: list[str] = []
    real_list = api.list_nodes

    def counting_list(label_selector: str | None = None) -> tuple[list[dict[str, Any]], str]:
        calls.append("list")
        if len(calls) >= 3:
            ctl.stop.set()
        return real_list(label_selector)

    api.list_nodes = counting_list  # type: ignore[method-assign]
    api.watch_events = [("ERROR", {"code": 410, "message": "gone"})]
    ctl.resource_version = "1"
    ctl.stop.clear()

    def failing_watch(*_: Any, **__: Any) -> Any:
        raise ApiError(410, "Gone")

    seq = iter([lambda *a, **k: iter(api.watch_events), failing_watch])

    def broken(*_: Any, **__: Any) -> Any:
        raise connection_error("connection reset: API server restarting")

    def watch(rv: str, timeout: int, label_selector: str | None = None) -> Any:
        return next(seq, broken)(rv, timeout)

    api.watch_nodes = watch  # type: ignore[method-assign,assignment]
    ctl.watch_loop()
    assert calls == ["list", "list", "list"]
    assert ctl.metrics.value("slinky_topology_labeler_errors_total", kind="watch") >= 1


def test_the_node_cache_keeps_only_what_a_pass_reads() -> None:
    """Name, labels, annotations, resourceVersion: status and managedFields stay out."""
    full = node("gpu0001", {CLIQUE_LABEL: "a.1"}, {SPEC_ANNOTATION: "nvl:a"})
    full["metadata"]["managedFields"] = [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]
    full["metadata"]["resourceVersion"] = "7"
    full["status"] = {"capacity": {"nvidia.com/gpu": "4"}, "images": [{"names": ["x"]}]}
    fields = ("name", "labels", "annotations", "resourceVersion")
    slim = {"metadata": {k: full["metadata"][k] for k in fields}}
    ctl = Controller(_args(), FakeCluster([full]), sleep=lambda _: None)
    ctl.relist()
    assert ctl.nodes == {"gpu0001": slim}
    ctl.handle_event("MODIFIED", {**full, "metadata": {**full["metadata"], "resourceVersion": "8"}})
    assert ctl.nodes["gpu0001"]["metadata"]["resourceVersion"] == "8"
    assert set(ctl.nodes["gpu0001"]) == {"metadata"} and ctl.resource_version == "8"


def test_health_server_serves_metrics_and_probes() -> None:
    metrics = Metrics()
    metrics.nodes_seen.set(3)
    ready = {"v": False}
    server = HealthServer(metrics, 0, live=lambda: True, ready=lambda: ready["v"], host="127.0.0.1")
    server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        body = urllib.request.urlopen(f"{base}/metrics").read().decode()
        assert "slinky_topology_labeler_nodes_seen 3.0" in body
        assert urllib.request.urlopen(f"{base}/healthz").status == 200
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"{base}/readyz")
        ready["v"] = True
        assert urllib.request.urlopen(f"{base}/readyz").status == 200
    finally:
        server.stop()


class FakeNvml:
    """The few pynvml names discover uses."""

    class NVMLError(Exception):
        pass

    nvmlGpuFabricInfo_v2 = 2

    def __init__(self, states: list[int], clique: int = 1, fail_init: bool = False) -> None:
        self.states = states
        self.clique = clique
        self.fail_init = fail_init

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise self.NVMLError("driver not loaded")

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return len(self.states)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    class c_nvmlGpuFabricInfo_v2_t(ctypes.Structure):
        _fields_ = (
            ("version", ctypes.c_uint),
            ("clusterUuid", ctypes.c_uint8 * 16),
            ("status", ctypes.c_uint),
            ("cliqueId", ctypes.c_uint32),
            ("state", ctypes.c_uint8),
        )

    def nvmlDeviceGetGpuFabricInfoV(self, handle: int, ref: Any) -> None:
        info = ref._obj
        info.clusterUuid[:] = list(bytes.fromhex(RACK_A.replace("-", "")))
        info.state = self.states[handle]
        info.cliqueId = self.clique


def test_discover_reads_the_clique_and_patches_own_node() -> None:
    info = discover.read_fabric(FakeNvml([3, 3, 3, 3]))
    assert info.clique == f"{RACK_A}.1"
    api = FakeCluster([node("gpu0001")])
    code = discover.main(["--node-name", "gpu0001", "--once"], nvml=FakeNvml([3] * 4), api=api)
    assert code == 0
    assert api.nodes["gpu0001"]["metadata"]["labels"][CLIQUE_LABEL] == f"{RACK_A}.1"
    discover.main(["--node-name", "gpu0001", "--once"], nvml=FakeNvml([3] * 4), api=api)
    assert len(api.patches) == 1, "an unchanged value is not written again"


@pytest.mark.parametrize(
    ("nvml", "reason"),
    [
        (FakeNvml([], fail_init=True), "NVML init failed"),
        (FakeNvml([]), "no GPU"),
        (FakeNvml([3, 1]), "fabric state 1"),
    ],
)
def test_discover_degrades_cleanly(nvml: FakeNvml, reason: str) -> None:
    assert reason in discover.read_fabric(nvml).reason
    api = FakeCluster([node("gpu0001")])
    assert discover.main(["--node-name", "gpu0001", "--once"], nvml=nvml, api=api) == 0
    assert not api.patches


def test_discover_without_nvml_package_exits_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discover, "load_nvml", lambda: None)
    assert main(["discover", "--once", "--dry-run"]) == 0


FABRIC = """\
apiVersion: fabric.example.org/v1alpha1
kind: Fabric
metadata: {name: t}
spec:
  switches: [{name: leaf1}]
  nodes:
    - {name: 'n[1-2]', leaf: leaf1}
"""


def test_fabric_configmap_input_and_its_failures() -> None:
    api = FakeCluster([node("n1"), node("n2")])
    ctl = Controller(_args("--fabric-configmap", "fabric"), api, sleep=lambda _: None)
    ctl.relist()
    assert not ctl.run_pass(), "a missing fabric ConfigMap is bad input"
    assert api.events[-1]["reason"] == "TopologyInvalid" and not api.patches
    api.configmaps[(NS, "fabric")] = {
        "metadata": {"name": "fabric"},
        "data": {"fabric.yaml": FABRIC},
    }
    assert ctl.run_pass()
    assert {n for n, _ in api.patches} == {"n1", "n2"}
    text = api.configmaps[(NS, "gpu-topology")]["data"][CONFIGMAP_KEY]
    assert "switch: leaf1" in text

    def broken(namespace: str, name: str) -> dict[str, Any] | None:
        raise ApiError(500, "etcd timeout")

    api.get_configmap = broken  # type: ignore[method-assign]
    assert not ctl.run_pass(), "API errors fail the pass without crashing the controller"


def test_block_flags_shape_the_published_topology_and_skipped_nodes_are_counted() -> None:
    fleet = gfd_fleet(racks=1, per_rack=4)  # one NVLink domain of 4 nodes
    for item in fleet:
        name = item["metadata"]["name"]
        item["metadata"]["labels"]["slurm.example.com/name"] = name
    fleet.append(node("login1", {"kubernetes.io/hostname": "login1"}))  # no slurmd: no name
    api = FakeCluster(fleet)
    metrics = Metrics()
    flags = ("--block-sizes=2", "--slurm-name-key=slurm.example.com/name")
    ctl = Controller(_args(*flags), api, metrics=metrics, sleep=lambda _: None)
    ctl.relist()
    assert ctl.run_pass()
    text = api.configmaps[(NS, "gpu-topology")]["data"][CONFIGMAP_KEY]
    assert f"block: {RACK_A}-1\n" in text and f"block: {RACK_A}-2\n" in text
    assert "block_sizes: [2]" in text
    assert metrics.value("slinky_topology_labeler_nodes_seen") == 5
    assert metrics.value("slinky_topology_labeler_nodes_skipped") == 1

    refused = Controller(
        _args(*flags, "--oversized-domains=error"), api, metrics=Metrics(), sleep=lambda _: None
    )
    refused.relist()
    assert not refused.run_pass(), "a domain of 4 in blocks of 2, not split: the pass fails"
    assert api.configmaps[(NS, "gpu-topology")]["data"][CONFIGMAP_KEY] == text, "last good kept"
