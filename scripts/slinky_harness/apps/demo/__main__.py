"""``python -m slinky_harness.apps.demo``: the demo (:func:`slinky_harness.apps.demo.run.main`)."""

from __future__ import annotations

from slinky_harness.apps.demo.run import main
from slinky_harness.core.processes import run_main

raise SystemExit(run_main(main))
