"""Run the CRD generator: ``python -m slinky_topology.crdgen``."""

from __future__ import annotations

import sys

from slinky_topology.crdgen.cli import main

sys.exit(main())
