"""The labeler's logs: JSON lines on stderr, one object per record.

Each line holds ``time`` (UTC, milliseconds), ``level``, ``logger``, ``msg`` and every ``extra``
field of the record (``exc`` with the traceback when there is one). The controller and
``discover`` log through the ``slinky_topology`` logger tree; :func:`setup_logging` installs the
handler once per process (again replaces it).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

__all__ = ["JsonFormatter", "setup_logging"]

_STD_ATTRS = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__.keys() | {"message", "asctime"}
)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, msg and every ``extra`` field."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STD_ATTRS and not key.startswith("_"):
                body[key] = value
        if record.exc_info:
            body["exc"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str, sort_keys=False)


class _StderrHandler(logging.Handler):
    """Writes to the current ``sys.stderr`` (looked up per record, not bound once)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # logging's contract: a handler reports its own failure, never raises
            self.handleError(record)


def setup_logging(level: str) -> None:
    """JSON lines at ``level`` (``debug``, ``info``, ...) for the ``slinky_topology`` loggers."""
    handler = _StderrHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("slinky_topology")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
