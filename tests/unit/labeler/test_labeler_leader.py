"""Leader election logic against an in-memory Lease API (unit level only)."""

from __future__ import annotations

from tests.unit.labeler.labeler_support import (
    ApiError,
    FakeClock,
    FakeLeases,
    connection_error,
    elector,
)

from slinky_topology.labeler.leader import format_time, parse_time

NS = "slinky"


def _spec(api: FakeLeases) -> dict[str, object]:
    spec: dict[str, object] = api.leases[(NS, "labeler")]["spec"]
    return spec


def test_time_round_trip() -> None:
    assert parse_time(format_time(1_800_000_000.25)) == 1_800_000_000.25
    assert parse_time(None) is None and parse_time("garbage") is None


def test_first_candidate_acquires_second_waits() -> None:
    api, clock = FakeLeases(), FakeClock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    assert a.try_acquire_or_renew() and a.is_leader
    assert not b.try_acquire_or_renew() and not b.is_leader
    assert _spec(api)["holderIdentity"] == "a"
    assert _spec(api)["leaseTransitions"] == 0


def test_leader_renews_and_keeps_the_lease() -> None:
    api, clock = FakeLeases(), FakeClock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    a.try_acquire_or_renew()
    for _ in range(20):
        clock.advance(2)
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()
    assert _spec(api)["renewTime"] == format_time(clock.now)


def test_expired_lease_is_taken_over() -> None:
    api, clock = FakeLeases(), FakeClock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    a.try_acquire_or_renew()
    clock.advance(14)
    assert not b.try_acquire_or_renew(), "not expired yet"
    clock.advance(2)
    assert b.try_acquire_or_renew()
    assert _spec(api)["holderIdentity"] == "b"
    assert _spec(api)["leaseTransitions"] == 1
    # the old leader stopped writing once its renew deadline passed
    assert not a.is_leader
    assert not a.try_acquire_or_renew()


def test_stale_leader_stops_writing_before_the_lease_expires() -> None:
    api, clock = FakeLeases(), FakeClock()
    a = elector(api, "a", clock)
    a.try_acquire_or_renew()
    api.fail = [connection_error("connection refused: api down")] * 10
    clock.advance(5)
    assert a.try_acquire_or_renew(), "a transient failure inside the deadline keeps leadership"
    clock.advance(6)
    assert not a.try_acquire_or_renew()
    assert not a.is_leader


def test_release_hands_over_at_once() -> None:
    api, clock = FakeLeases(), FakeClock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    a.try_acquire_or_renew()
    assert a.release()
    assert not a.is_leader
    assert _spec(api)["holderIdentity"] is None
    assert b.try_acquire_or_renew(), "an empty holder is free without waiting"
    assert not a.release(), "a non-leader has nothing to release"
    assert _spec(api)["holderIdentity"] == "b"


def test_conflict_means_someone_else_won() -> None:
    api, clock = FakeLeases(), FakeClock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    a.try_acquire_or_renew()
    clock.advance(20)
    real_replace = api.replace_lease

    def racing_replace(namespace: str, name: str, body: dict[str, object]) -> dict[str, object]:
        api.replace_lease = real_replace  # type: ignore[method-assign]
        real_replace(namespace, name, {**body, "spec": {**body["spec"], "holderIdentity": "a"}})  # type: ignore[dict-item]
        raise ApiError(409, "conflict")

    api.replace_lease = racing_replace  # type: ignore[method-assign,assignment]
    assert not b.try_acquire_or_renew()
    assert not b.is_leader


def test_only_one_leader_among_many_candidates() -> None:
    api, clock = FakeLeases(), FakeClock()
    candidates = [elector(api, f"pod-{i}", clock) for i in range(5)]
    for _ in range(30):
        clock.advance(2)
        for c in candidates:
            c.try_acquire_or_renew()
        assert sum(c.is_leader for c in candidates) == 1


def test_may_write_only_while_a_write_ends_before_the_lease_could_pass_on() -> None:
    """A write taking up to ``within`` seconds starts only if it ends before the Lease expires
    for the others (15 s after the renewal), and while the renewal is within the deadline."""
    api, clock = FakeLeases(), FakeClock()
    a = elector(api, "a", clock)
    assert not a.may_write(), "not leader yet"
    a.try_acquire_or_renew()
    clock.advance(4.9)
    assert a.may_write(10) and a.may_write(2)
    clock.advance(0.1)
    assert not a.may_write(10), "5 s + 10 s would end at the Lease's expiry"
    assert a.may_write(2)
    clock.advance(5)
    assert not a.may_write(2) and not a.is_leader, "past the renew deadline"
    assert a.try_acquire_or_renew() and a.may_write(10), "renewed"


def test_a_failed_round_says_why() -> None:
    api, clock = FakeLeases(), FakeClock()
    a = elector(api, "a", clock)
    api.fail.append(connection_error("read timed out", timeout=True))
    assert not a.try_acquire_or_renew()
    assert a.last_error == "fake API call: read timed out"
    assert a.try_acquire_or_renew() and a.last_error is None


def test_release_is_one_call_and_never_undoes_a_newer_holder() -> None:
    """Release replaces the Lease as this instance last wrote it (one call, so it fits in the
    grace period); when someone changed it since, the replace conflicts and nothing is lost."""
    api, clock = FakeLeases(), FakeClock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    a.try_acquire_or_renew()
    reads: list[str] = []
    real_get = api.get_lease

    def counting_get(namespace: str, name: str) -> dict[str, object] | None:
        reads.append(name)
        return real_get(namespace, name)

    api.get_lease = counting_get  # type: ignore[method-assign]
    assert a.release() and reads == []
    assert _spec(api)["holderIdentity"] is None

    api.get_lease = real_get  # type: ignore[method-assign]
    a.try_acquire_or_renew()
    clock.advance(16)  # a stalls past its Lease, b takes it over; a has had no round since
    assert b.try_acquire_or_renew()
    assert not a.release(), "the Lease changed since a wrote it: conflict"
    assert _spec(api)["holderIdentity"] == "b"
