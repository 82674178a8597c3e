"""Leader election on a ``coordination.k8s.io/v1`` Lease (client-go's algorithm, simplified).

One Lease per release: ``spec.holderIdentity`` names the leader, which renews ``renewTime``
every ``retry_period``; another instance takes over only once ``renewTime +
leaseDurationSeconds`` has passed. Writes use the Lease's ``resourceVersion``, so two
candidates racing for an expired Lease cannot both win (the loser gets 409 Conflict). The
leader stops writing when it could not renew within ``renew_deadline`` and releases the Lease
(empty holder, ``leaseDurationSeconds: 1``) on shutdown so a successor starts at once.

A write is started only while it can end before the Lease could pass to another instance
(:meth:`LeaderElector.may_write`: renewed less than ``lease_duration - within`` seconds ago,
``within`` being the client timeout of the write); callers check it before every try, retries
included, so no write lands after the Lease was lost.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from typing import TYPE_CHECKING, Any

from slinky_topology.labeler.kube import KubeAPIError

if TYPE_CHECKING:
    from collections.abc import Callable

    from slinky_topology.labeler.kube import LeaseAPI

__all__ = ["LeaderElector", "format_time", "parse_time"]

log = logging.getLogger("slinky_topology.labeler")


def format_time(seconds: float) -> str:
    """``MicroTime`` text of a Unix time."""
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: Any) -> float | None:
    """Unix time of a ``MicroTime``/``Time`` text (``None`` when absent or unreadable)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class LeaderElector:
    """Acquire, renew and release one Lease; only ``is_leader`` instances write."""

    def __init__(
        self,
        api: LeaseAPI,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("need retry_period < renew_deadline < lease_duration")
        self.api = api
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._clock = clock
        self._last_renew: float | None = None
        self._lease: dict[str, Any] | None = None  # as this instance last wrote it
        self.last_error: str | None = None
        """Why the last round failed (an API error, not a lost race); ``None`` after a round
        that reached a decision."""

    @property
    def is_leader(self) -> bool:
        """Leader now: renewed within ``renew_deadline`` (a stale leader stops writing)."""
        return (
            self._last_renew is not None and self._clock() - self._last_renew < self.renew_deadline
        )

    def may_write(self, within: float = 0.0) -> bool:
        """Leader, and a write started now (taking at most ``within`` seconds) ends before the
        Lease expires for the other candidates (``lease_duration`` after the last renewal)."""
        last = self._last_renew
        if last is None or not self.is_leader:
            return False
        return self._clock() - last + within < self.lease_duration

    def _body(self, spec: dict[str, Any], version: str | None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if version:
            meta["resourceVersion"] = version
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta,
            "spec": spec,
        }

    def try_acquire_or_renew(self) -> bool:
        """One election round; return whether this instance holds the Lease now."""
        now = self._clock()
        stamp = format_time(now)
        self.last_error = None
        try:
            lease = self.api.get_lease(self.namespace, self.name)
            if lease is None:
                spec: dict[str, Any] = {
                    "holderIdentity": self.identity,
                    "leaseDurationSeconds": int(self.lease_duration),
                    "acquireTime": stamp,
                    "renewTime": stamp,
                    "leaseTransitions": 0,
                }
                written = self.api.create_lease(self.namespace, self._body(spec, None))
                return self._won(now, "acquired", written)
            spec = dict(lease.get("spec") or {})
            holder: str = spec.get("holderIdentity") or ""
            version = (lease.get("metadata") or {}).get("resourceVersion")
            renewed = parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime"))
            duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
            if holder == self.identity:
                spec["renewTime"] = stamp
                spec["leaseDurationSeconds"] = int(self.lease_duration)
                written = self.api.replace_lease(
                    self.namespace, self.name, self._body(spec, version)
                )
                return self._won(now, "renewed", written)
            if holder and renewed is not None and renewed + duration > now:
                self._lost("held by " + holder)
                return False
            spec.update(
                holderIdentity=self.identity,
                leaseDurationSeconds=int(self.lease_duration),
                acquireTime=stamp,
                renewTime=stamp,
                leaseTransitions=int(spec.get("leaseTransitions") or 0) + (1 if holder else 0),
            )
            written = self.api.replace_lease(self.namespace, self.name, self._body(spec, version))
            return self._won(now, "taken over from " + (holder or "nobody"), written)
        except KubeAPIError as exc:
            if exc.status == 409:
                self._lost("conflict")
                return False
            self.last_error = str(exc)[:300]
            log.warning("lease round failed", extra={"lease": self.name, "error": self.last_error})
            return self.is_leader

    def _won(self, now: float, how: str, lease: dict[str, Any]) -> bool:
        if not self.is_leader:
            log.info("leader", extra={"lease": self.name, "identity": self.identity, "how": how})
        self._last_renew = now
        self._lease = lease
        return True

    def _lost(self, why: str) -> None:
        if self._last_renew is not None:
            log.info("not leader", extra={"lease": self.name, "why": why})
        self._last_renew = None

    def release(self) -> bool:
        """Give the Lease up if held; return whether it was released.

        One call: the Lease as this instance last wrote it is replaced (with its
        resourceVersion: when anyone changed it since, the replace fails and nothing is lost).
        """
        was_leader = self._last_renew is not None
        self._last_renew = None
        lease, self._lease = self._lease, None
        if not was_leader:
            return False
        try:
            if lease is None:
                lease = self.api.get_lease(self.namespace, self.name)
            if lease is None:
                return False
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") != self.identity:
                return False
            spec["holderIdentity"] = None
            spec["leaseDurationSeconds"] = 1
            spec["renewTime"] = format_time(self._clock())
            version = (lease.get("metadata") or {}).get("resourceVersion")
            self.api.replace_lease(self.namespace, self.name, self._body(spec, version))
            return True
        except KubeAPIError as exc:
            if exc.status == 409:
                log.info(
                    "lease changed since our last renewal; not released", extra={"lease": self.name}
                )
                return False
            log.warning("lease release failed", extra={"lease": self.name, "error": str(exc)[:300]})
            return False
