"""The one port allocator: reservations hold across processes and end with their holder."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from slinky_harness.core import ports

if TYPE_CHECKING:
    from pathlib import Path

# A second process that reserves ports from the same lock folder, prints them, and keeps them
# until its stdin closes.
_HOLDER = """
import sys
from slinky_harness.core import ports
ports.PORT_RANGE = range(int(sys.argv[2]), int(sys.argv[3]))
print(" ".join(map(str, ports.allocate(int(sys.argv[1])))), flush=True)
sys.stdin.read()
"""


@pytest.fixture(autouse=True)
def lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "ports"
    monkeypatch.setenv("SLINKY_PORTS_DIR", str(folder))
    return folder


def small_range(monkeypatch: pytest.MonkeyPatch, size: int) -> range:
    # A free stretch, so that the test measures the allocator, not this machine's listeners.
    for start in range(14000, 31000, 97):
        window = range(start, start + size)
        if not any(ports.in_use(port) for port in window):
            monkeypatch.setattr(ports, "PORT_RANGE", window)
            return window
    pytest.fail(f"no {size} consecutive free ports on this machine")


def test_ports_are_distinct_free_and_inside_the_range() -> None:
    got = ports.allocate(20)
    try:
        assert len(set(got)) == 20
        assert all(port in ports.PORT_RANGE for port in got)
        assert not any(ports.in_use(port) for port in got)
    finally:
        ports.release(*got)


def test_a_port_another_process_holds_is_never_handed_out_and_comes_back_when_it_exits(
    monkeypatch: pytest.MonkeyPatch, lock_dir: Path
) -> None:
    window = small_range(monkeypatch, 6)
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, "4", str(window.start), str(window.stop)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={"SLINKY_PORTS_DIR": str(lock_dir), "PYTHONPATH": ":".join(sys.path)},
    ) as holder:  # fmt: skip
        assert holder.stdin is not None
        assert holder.stdout is not None
        theirs = {int(port) for port in holder.stdout.readline().split()}
        assert len(theirs) == 4
        ours = ports.allocate(2)
        assert set(ours) == set(window) - theirs
        with pytest.raises(ports.PortError, match="no 1 free port"):
            ports.allocate(1)
        ports.release(*ours)
        holder.stdin.close()
        holder.wait(10)
    # The holder's locks died with it, without any release call.
    again = ports.allocate(6)
    assert set(again) == set(window)
    ports.release(*again)


def test_a_port_with_a_listener_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    window = small_range(monkeypatch, 3)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", window[1]))
        busy.listen()
        got = ports.allocate(2)
        assert sorted(got) == [window[0], window[2]]
        ports.release(*got)


def test_a_failed_request_keeps_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    window = small_range(monkeypatch, 3)
    with pytest.raises(ports.PortError):
        ports.allocate(4)
    assert sorted(ports.allocate(3)) == list(window)
