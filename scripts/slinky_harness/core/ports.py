"""Free TCP ports: the one allocator of the harness.

A port is drawn at random from :data:`PORT_RANGE`, below Linux's ephemeral range (32768-60999), so
that no outgoing connection takes it between the choice and the component's ``bind``. It is
reserved across processes (pytest-xdist workers, two nox sessions, a demo beside a test run) by an
exclusive ``flock`` on ``<lock folder>/<port>.lock`` that this process holds until
:func:`release` or its exit: the kernel drops the lock when the process dies, SIGKILL included, so
a crashed run leaks no reservation. The lock folder is ``$SLINKY_PORTS_DIR`` or
``/tmp/slinky-ports``.

A port is only handed out when nothing listens on it, on the wildcard address or on loopback
(:func:`in_use`).
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import threading
from pathlib import Path

from slinky_harness.core.errors import HarnessError

__all__ = ["PORT_RANGE", "PortError", "accepts", "allocate", "allocate_one", "in_use", "release"]

PORT_RANGE = range(12000, 32000)
"""Where ports are drawn from: below the ephemeral range, above the well-known services."""

_lock = threading.Lock()
_held: dict[int, int] = {}  # port -> file descriptor of its lock file


class PortError(HarnessError):
    """No free port could be reserved."""


def _lock_dir() -> Path:
    folder = Path(os.environ.get("SLINKY_PORTS_DIR", "/tmp/slinky-ports"))
    folder.mkdir(mode=0o1777, parents=True, exist_ok=True)
    return folder


def in_use(port: int) -> bool:
    """Whether something on this machine listens on ``port`` (wildcard or loopback address)."""
    for host in ("0.0.0.0", "127.0.0.1"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError:
                return True
    return False


def accepts(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port`` (a daemon is up)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _reserve(port: int, folder: Path) -> bool:
    fd = os.open(folder / f"{port}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    if in_use(port):
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        return False
    _held[port] = fd
    return True


def allocate(count: int = 1, *, exclude: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """Reserve ``count`` distinct free ports (none of ``exclude``); :class:`PortError` if the range
    has too few."""
    folder = _lock_dir()
    ports: list[int] = []
    with _lock:
        # From a random point, once round the range: every port is tried at most once.
        offset = random.randrange(len(PORT_RANGE))
        for step in range(len(PORT_RANGE)):
            if len(ports) == count:
                return ports
            port = PORT_RANGE[(offset + step) % len(PORT_RANGE)]
            if port not in _held and port not in exclude and _reserve(port, folder):
                ports.append(port)
        if len(ports) == count:
            return ports
        for port in ports:
            _free(port)
    raise PortError(f"no {count} free port(s) in {PORT_RANGE.start}-{PORT_RANGE.stop - 1}")


def allocate_one() -> int:
    """One free port, reserved until :func:`release` or the end of this process."""
    return allocate(1)[0]


def _free(port: int) -> None:
    fd = _held.pop(port, None)
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def release(*ports: int) -> None:
    """Give ports back (after their component stopped); unknown ports are ignored."""
    with _lock:
        for port in ports:
            _free(port)
