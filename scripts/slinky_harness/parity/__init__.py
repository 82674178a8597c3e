"""Parity: upstream Slinky's charts (v1.2.1) and ours, rendered side by side.

Our charts ``slurm-cluster``, ``slurm-operator`` and ``slurm-bridge`` are meant to be drop-in
successors of upstream's ``slurm``, ``slurm-operator`` and ``slurm-bridge``: they accept upstream's
values layout unchanged and render the same Slinky custom resources. This package measures how far
they are from that, never copying anything of upstream into the repository. One module per
concern:

* :mod:`~slinky_harness.parity.source`: the upstream charts, our chart that succeeds each, and
  where upstream's packaged charts come from (``SLINKY_UPSTREAM_CHARTS``);
* :mod:`~slinky_harness.parity.suites`: the cases, upstream's defaults and one values overlay per
  test of upstream's helm-unittest suites (read from the Go module cache);
* :mod:`~slinky_harness.parity.compare`: what of two renders is compared, field by field;
* :mod:`~slinky_harness.parity.differences`: the differences that are meant, each with its
  reason (``differences.yaml``; MIGRATING.md's field-by-field section is generated from it);
* :mod:`~slinky_harness.parity.measure`: every case rendered by both charts, and the report;
* :mod:`~slinky_harness.parity.floor`: the ratchet (``floor.yaml``) the counts never fall below.

``python -m slinky_harness.apps.parity`` prints the measurement; the render tier
(``tests/render/test_parity.py``) holds it to the floor.
"""

from __future__ import annotations

from slinky_harness.parity.compare import Difference, compare
from slinky_harness.parity.differences import DIFFERENCES_FILE, Intentional, load_intentional
from slinky_harness.parity.floor import FLOOR_FILE, FLOOR_KEYS, below_floor, load_floor
from slinky_harness.parity.measure import ChartReport, Outcome, measure
from slinky_harness.parity.source import (
    CHARTS,
    REFERENCE_ENV,
    VERSION,
    UpstreamChart,
    UpstreamError,
    reference,
    upstream_chart,
    upstream_values,
)
from slinky_harness.parity.suites import (
    SetPathError,
    TestCase,
    all_cases,
    apply_set,
    build_set_value,
    load_cases,
    parse_set_path,
    suite_files,
)

__all__ = [
    "CHARTS",
    "DIFFERENCES_FILE",
    "FLOOR_FILE",
    "FLOOR_KEYS",
    "REFERENCE_ENV",
    "VERSION",
    "ChartReport",
    "Difference",
    "Intentional",
    "Outcome",
    "SetPathError",
    "TestCase",
    "UpstreamChart",
    "UpstreamError",
    "all_cases",
    "apply_set",
    "below_floor",
    "build_set_value",
    "compare",
    "load_cases",
    "load_floor",
    "load_intentional",
    "measure",
    "parse_set_path",
    "reference",
    "suite_files",
    "upstream_chart",
    "upstream_values",
]
