"""Write generated text to what the user named, atomically where the target allows it.

:func:`write_output` picks the way by what ``target`` is:

* ``-``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``: the descriptor this
  process already has open (so ``-o /dev/stdout >> log`` appends and never replaces ``log``);
* an existing FIFO, character or block device or socket: opened and written as it is;
* a regular file or a new path: symlinks are resolved first (the link stays, its target gets the
  text), then a temporary file in the target's own folder is written, fsynced and renamed over it
  with :func:`os.replace`, so a reader sees the old or the new file, never a part. An existing
  file keeps its mode (and, where allowed, owner and group); a new one gets ``mode`` (default
  0644) less the umask.

While the temporary file exists, SIGINT, SIGTERM and SIGHUP remove it and then take their usual
course: the process ends by that signal (exit status 128+N in a shell), or the handler installed
before runs (Python's SIGINT handler raises KeyboardInterrupt, which removes the file on its way
out). Signals the process ignores stay ignored. Handlers are only installed on the main thread.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import sys
import tempfile
import threading
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slinky_topology.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

__all__ = ["DEFAULT_MODE", "STDOUT", "drop_stream", "write_output"]

#: Mode of a new file, before the umask.
DEFAULT_MODE = 0o644
#: The name that means standard output.
STDOUT = "-"
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_FD_PATH = re.compile(r"/(?:dev/fd|proc/self/fd)/([0-9]+)")
_STD_PATHS = {"/dev/stdout": 1, "/dev/stderr": 2}


def _fd_of(name: str) -> int | None:
    """The descriptor ``name`` stands for, for the names of this process's own descriptors."""
    if name in _STD_PATHS:
        return _STD_PATHS[name]
    m = _FD_PATH.fullmatch(name)
    return int(m.group(1)) if m else None


def _write_fd(fd: int, text: str) -> None:
    if fd in (1, 2):
        stream = sys.stdout if fd == 1 else sys.stderr
        try:
            stream.write(text)
            stream.flush()
        except BrokenPipeError:
            drop_stream(stream)
            raise
        return
    data = memoryview(text.encode("utf-8"))
    while data:
        data = data[os.write(fd, data) :]


def drop_stream(stream: Any) -> None:
    """Point ``stream``'s descriptor at /dev/null (its reader is gone), so that flushing it at
    exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real descriptor (tests capture output)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class _TempGuard:
    """Removes ``tmp`` on exit and on SIGINT/SIGTERM/SIGHUP, then lets the signal act."""

    def __init__(self) -> None:
        self.tmp: str | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _TempGuard:
        if threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                previous = signal.getsignal(sig)
                if previous is not signal.SIG_IGN:
                    self._previous[sig] = previous
                    signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._remove()
        finally:
            for sig, previous in self._previous.items():
                signal.signal(sig, previous)

    def _remove(self) -> None:
        tmp, self.tmp = self.tmp, None
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        previous = self._previous.get(signum, signal.SIG_DFL)
        if callable(previous):
            # Python's SIGINT handler raises KeyboardInterrupt: unwinding through __exit__
            # removes the file; a handler that returns lets the write go on.
            previous(signum, frame)
            return
        self._remove()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """Hold the three signals back while the temporary file changes hands."""
        if not self._previous:
            yield
            return
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _replace(path: Path, text: str, mode: int, owner: tuple[int, int] | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = memoryview(text.encode("utf-8"))
    with _TempGuard() as guard:
        with guard.quiet():
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            guard.tmp = tmp
        try:
            os.fchmod(fd, mode)
            if owner is not None:
                with suppress(PermissionError):  # only root may give a file away
                    os.fchown(fd, *owner)
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        with guard.quiet():
            Path(tmp).replace(path)  # os.replace: atomic within one folder
            guard.tmp = None


def write_output(target: str | os.PathLike[str], text: str, *, mode: int | None = None) -> None:
    """Write ``text`` (UTF-8) to ``target`` as the module doc says.

    ``mode``: permission bits of a new file (default :data:`DEFAULT_MODE`), less the umask; an
    existing file keeps its own. Raises :class:`InputError` naming ``target`` when it cannot be
    written (a folder, a missing permission, a symlink loop).
    """
    name = os.fspath(target)
    if not name:
        raise InputError("the output file name is empty")
    try:
        fd = 1 if name == STDOUT else _fd_of(name)
        if fd is not None:
            _write_fd(fd, text)
            return
        try:
            st: os.stat_result | None = Path(name).stat()
        except FileNotFoundError:
            st = None  # a new file, or a symlink to one
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise InputError("is a folder; name a file to write", location=name)
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(name, "w", encoding="utf-8", newline="") as fh:  # noqa: PTH123 - any file type
                fh.write(text)
            return
        real = Path(os.path.realpath(name))
        if st is None:
            _replace(real, text, (DEFAULT_MODE if mode is None else mode) & ~_umask(), None)
        else:
            _replace(real, text, stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid))
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", location=name) from None
