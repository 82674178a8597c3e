"""Figures that tests record for the terminal summary, merged across pytest-xdist workers.

The slurm and cluster tiers run their tests in several worker processes (``-n``); what a worker
records (start-up times, "measured:" proofs) would stay in that worker. :func:`records` gives a
named list that every process fills; at the end of a worker's session the lists travel to the
controller with xdist's ``workeroutput``, and the controller's lists then hold every worker's
entries, so a tier's ``pytest_terminal_summary`` prints one report as if the run had one process.
Without xdist the lists are simply this process's.

Import this module as ``tests.worker_summary`` (one instance per process).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

__all__ = ["merge", "records", "ship"]

_KEY = "slinky_worker_summary"
_RECORDS: dict[str, list[Any]] = {}


def records(name: str) -> list[Any]:
    """The list named ``name``; entries must be JSON-like (xdist sends them between processes)."""
    return _RECORDS.setdefault(name, [])


def ship(session: pytest.Session) -> None:
    """In an xdist worker, hand every list to the controller (``pytest_sessionfinish``)."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # an xdist worker: ship everything recorded here
        output[_KEY] = {name: list(entries) for name, entries in _RECORDS.items()}


def merge(node: Any) -> None:
    """In the controller, add a finished worker's lists to ours (``pytest_testnodedown``)."""
    for name, entries in getattr(node, "workeroutput", {}).get(_KEY, {}).items():
        records(name).extend(entries)
