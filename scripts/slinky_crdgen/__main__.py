"""Run the CRD generator: ``python -m slinky_crdgen``."""

from __future__ import annotations

import sys

from slinky_crdgen.cli import main

sys.exit(main())
