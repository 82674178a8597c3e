"""``core.progress.heartbeat``: a long step says what it is, then how long it has run."""

from __future__ import annotations

import io
import re
import time

import pytest

from slinky_harness.core.progress import elapsed, heartbeat


def test_a_step_says_what_and_how_long_it_should_take_then_its_progress_and_end() -> None:
    out = io.StringIO()
    with heartbeat("building x", "about 1 min", every=0.05, stream=out):
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert lines[0] == "building x: started; expected about 1 min"
    progress = [ln for ln in lines[1:-1] if ln.startswith("building x: still running, ")]
    assert len(progress) >= 3, lines  # 0.3 s at one line every 0.05 s
    assert all(ln.endswith("(expected about 1 min)") for ln in progress), lines
    assert re.fullmatch(r"building x: done after \d+s", lines[-1]), lines


def test_a_failing_step_says_it_failed_and_stops_speaking() -> None:
    out = io.StringIO()
    with pytest.raises(RuntimeError), heartbeat("x", "1 s", every=0.02, stream=out):
        raise RuntimeError("boom")
    said = out.getvalue()
    assert said.splitlines()[-1].startswith("x: FAILED after ")
    time.sleep(0.1)
    assert out.getvalue() == said, "progress lines went on after the step ended"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0, "0s"), (59.9, "59s"), (60, "1m00s"), (185, "3m05s"), (3600, "60m00s")],
)
def test_elapsed(seconds: float, shown: str) -> None:
    assert elapsed(seconds) == shown


def test_a_usually_instant_step_is_silent_when_quick_and_speaks_when_slow() -> None:
    quick = io.StringIO()
    with heartbeat("cache hit", "1 s", every=0.05, quiet_for=0.2, stream=quick):
        time.sleep(0.05)
    assert quick.getvalue() == ""
    slow = io.StringIO()
    with heartbeat("download", "1 min", every=0.05, quiet_for=0.1, stream=slow):
        time.sleep(0.35)
    lines = slow.getvalue().splitlines()
    assert lines[0] == "download: started; expected 1 min"
    assert any(ln.startswith("download: still running") for ln in lines), lines
    assert lines[-1].startswith("download: done after "), lines
