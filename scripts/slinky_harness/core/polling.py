"""Waiting with a time-out: the one polling loop of the harness.

``wait_for(probe, ...)`` calls ``probe`` until it returns something truthy and returns that value:
the probe answers "is it there yet?" (an object, a line, ``True``), never "is there still a
problem?". To wait until something is gone, the probe says so (``lambda: not pods()``). After
``timeout`` seconds it raises :class:`~slinky_harness.core.errors.WaitTimeout` naming ``what``
and, when ``detail`` is given, what ``detail()`` says about the last state.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TypeVar

from slinky_harness.core.errors import WaitTimeout

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["wait_for"]

T = TypeVar("T")


def wait_for(
    probe: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    every: float = 0.25,
    detail: Callable[[], object] | None = None,
    sleep: Callable[[float], object] = time.sleep,
) -> T:
    """Poll ``probe`` every ``every`` seconds until it returns a truthy value; return that value.

    The probe runs at least once, and once more after the deadline has passed, so that a slow
    machine that stalls the loop past the deadline still sees a condition that has become true.
    ``sleep`` is the pause between probes (a test passes a recorder).
    """
    deadline = time.monotonic() + timeout
    while True:
        expired = time.monotonic() > deadline
        value = probe()
        if value:
            return value
        if expired:
            last = f"; last seen: {detail()}" if detail is not None else ""
            raise WaitTimeout(f"timed out after {timeout:g} s waiting for {what}{last}")
        sleep(every)
