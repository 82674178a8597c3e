"""The harness's one exception base.

Every error the harness raises derives from :class:`HarnessError`, so that a CLI's ``main`` (and a
test that wants any harness failure) catches one type. Each subpackage defines its own subclasses
(``ToolError``, ``ControlPlaneError``, ``SlurmCommandError``, ...) beside the code that raises them;
a subclass that also means a built-in category (a bad value, a time-out) names that built-in as a
second base so that ``except ValueError`` / ``except TimeoutError`` keep catching it.
"""

from __future__ import annotations

__all__ = ["HarnessError", "WaitTimeout"]


class HarnessError(RuntimeError):
    """A harness step failed; the message says what, where, and how to fix it."""


class WaitTimeout(HarnessError, TimeoutError):
    """:func:`slinky_harness.core.polling.wait_for` gave up; the message names what it waited for."""
