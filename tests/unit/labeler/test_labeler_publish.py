"""Publishing: token bucket, backoff, merge patches, validate-before-publish, Events, metrics."""

from __future__ import annotations

import pytest
from tests.unit.labeler.labeler_support import (
    ApiError,
    FakeClock,
    FakeCluster,
    connection_error,
    tiered_fleet,
)

from slinky_topology.errors import ValidationError
from slinky_topology.labeler.metrics import Metrics
from slinky_topology.labeler.publish import (
    Backoff,
    Publisher,
    PublishError,
    TokenBucket,
    validate_topology_text,
    with_retries,
)
from slinky_topology.labeler.reconcile import (
    CONFIGMAP_KEY,
    ConfigMapChange,
    Plan,
    current_from_items,
    desired_state,
    reconcile,
)

NS = "slinky"
CM = "gpu-topology"


def _publisher(api: FakeCluster, clock: FakeClock, **kw: object) -> tuple[Publisher, Metrics]:
    metrics = Metrics()
    pub = Publisher(
        api,
        namespace=NS,
        configmap=CM,
        limiter=TokenBucket(0, 1),
        backoff=Backoff(initial=0.5, factor=2, maximum=4, attempts=5),
        metrics=metrics,
        sleep=clock.sleep,
        now=lambda: "2026-11-30T00:00:00Z",
        **kw,  # type: ignore[arg-type]
    )
    return pub, metrics


def test_token_bucket_allows_burst_then_qps() -> None:
    clock = FakeClock(0.0)
    bucket = TokenBucket(qps=10, burst=3, clock=clock, sleep=clock.sleep)
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]
    waited = bucket.acquire()
    assert waited == pytest.approx(0.1)
    clock.advance(10)  # refills to the burst, not beyond
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]


def test_token_bucket_paces_a_long_run() -> None:
    clock = FakeClock(0.0)
    bucket = TokenBucket(qps=20, burst=5, clock=clock, sleep=clock.sleep)
    for _ in range(105):
        bucket.acquire()
    # 5 from the burst, 100 paced at 20/s
    assert clock.now == pytest.approx(5.0)


def test_token_bucket_zero_qps_is_unlimited() -> None:
    clock = FakeClock(0.0)
    bucket = TokenBucket(qps=0, burst=1, clock=clock, sleep=clock.sleep)
    assert all(bucket.try_acquire() for _ in range(100))
    assert bucket.acquire() == 0 and not clock.sleeps


def test_backoff_is_exponential_and_capped() -> None:
    assert Backoff(initial=0.5, factor=2, maximum=3, attempts=6).delays() == [
        0.5,
        1.0,
        2.0,
        3,
        3,
    ]


def test_retries_retriable_errors_then_succeeds() -> None:
    clock = FakeClock()
    errors = [ApiError(503), ApiError(429), connection_error("connection reset")]

    def call() -> str:
        if errors:
            raise errors.pop(0)
        return "ok"

    assert with_retries(call, Backoff(attempts=5), sleep=clock.sleep) == "ok"
    assert clock.sleeps == [0.5, 1.0, 2.0]


def test_does_not_retry_client_errors_and_gives_up_after_attempts() -> None:
    clock = FakeClock()
    with pytest.raises(ApiError):
        with_retries(lambda: (_ for _ in ()).throw(ApiError(403)), Backoff(), sleep=clock.sleep)
    assert clock.sleeps == []

    def always() -> None:
        raise ApiError(500)

    with pytest.raises(ApiError):
        with_retries(always, Backoff(attempts=3), sleep=clock.sleep)
    assert clock.sleeps == [0.5, 1.0]
    assert ApiError(409).retriable and not ApiError(422).retriable
    assert connection_error("refused").retriable


def test_other_exceptions_are_not_api_errors_and_pass_through_at_once() -> None:
    """A bug (here a KeyError) is neither retried nor turned into a failed write."""
    clock = FakeClock()
    with pytest.raises(KeyError):
        with_retries(lambda: dict[str, int]()["missing"], Backoff(), sleep=clock.sleep)
    assert clock.sleeps == []


def test_publish_then_second_pass_is_zero_writes() -> None:
    items = tiered_fleet()
    api = FakeCluster(items)
    clock = FakeClock()
    pub, metrics = _publisher(api, clock)
    plan = reconcile(desired_state(items), current_from_items(items))
    assert pub.apply(plan) == 9
    assert api.cm_writes == ["create"]
    cm = api.configmaps[(NS, CM)]
    assert cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpu-topology-labeler"
    name, body = api.patches[0]
    assert name == "node01" and set(body["metadata"]) == {"labels", "annotations"}
    assert metrics.value("slinky_topology_labeler_writes_total", kind="node_add") == 8
    assert metrics.value("slinky_topology_labeler_writes_total", kind="configmap_create") == 1

    nodes, _ = api.list_nodes()
    cur = current_from_items(nodes, api.get_configmap(NS, CM)["data"])  # type: ignore[index]
    again = reconcile(desired_state(nodes), cur)
    assert again.writes == 0
    assert pub.apply(again) == 0
    assert len(api.patches) == 8 and api.cm_writes == ["create"]


def test_replace_uses_resource_version_and_retries_conflicts() -> None:
    items = tiered_fleet()
    api = FakeCluster(items)
    clock = FakeClock()
    pub, metrics = _publisher(api, clock)
    pub.apply(reconcile(desired_state(items), current_from_items(items)))
    text = api.configmaps[(NS, CM)]["data"][CONFIGMAP_KEY]
    api.fail = [ApiError(409, "conflict")]
    plan = Plan((), ConfigMapChange("replace", {CONFIGMAP_KEY: text + "# note\n"}))
    assert pub.apply(plan) == 1
    assert api.cm_writes == ["create", "replace"]
    assert clock.sleeps == [0.5]
    assert metrics.value("slinky_topology_labeler_errors_total", kind="api_retry") == 1


def test_api_failure_after_retries_is_a_publish_error() -> None:
    items = tiered_fleet()
    api = FakeCluster(items)
    pub, metrics = _publisher(api, FakeClock())
    api.fail = [ApiError(500)] * 10
    with pytest.raises(PublishError):
        pub.apply(reconcile(desired_state(items), current_from_items(items)))
    assert metrics.value("slinky_topology_labeler_errors_total", kind="api") == 1
    assert not api.configmaps and not api.patches


def test_broken_topology_is_never_published() -> None:
    items = tiered_fleet()
    api = FakeCluster(items)
    pub, metrics = _publisher(api, FakeClock())
    pub.apply(reconcile(desired_state(items), current_from_items(items)))
    good = dict(api.configmaps[(NS, CM)]["data"])
    for bad in (
        "",
        "- topology: x\n  cluster_default: true\n  flat: true\n",
        "- topology: a\n  cluster_default: true\n  block:\n    block_sizes: [3, 5]\n"
        "    blocks:\n      - block: b1\n",
    ):
        plan = Plan((), ConfigMapChange("replace", {CONFIGMAP_KEY: bad}))
        with pytest.raises(ValidationError):
            pub.apply(plan)
        assert api.configmaps[(NS, CM)]["data"] == good
    pub.record_failure(ValidationError([]), "TopologyInvalid")
    (event,) = api.events
    assert event["type"] == "Warning" and event["reason"] == "TopologyInvalid"
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": CM,
        "namespace": NS,
    }
    assert "last good topology is kept" in event["message"]
    assert metrics.value("slinky_topology_labeler_errors_total", kind="validation") == 1


def test_validate_accepts_generated_text() -> None:
    desired = desired_state(tiered_fleet())
    validate_topology_text(desired.configmap[CONFIGMAP_KEY])


def test_guard_stops_writes_when_leadership_is_lost() -> None:
    items = tiered_fleet()
    api = FakeCluster(items)
    pub, _ = _publisher(api, FakeClock(), guard=lambda: False)
    with pytest.raises(PublishError, match="not the leader"):
        pub.apply(reconcile(desired_state(items), current_from_items(items)))
    assert not api.configmaps and not api.patches
