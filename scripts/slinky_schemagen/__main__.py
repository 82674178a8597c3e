"""Run the values-schema generator: ``python -m slinky_schemagen``."""

from __future__ import annotations

import sys

from slinky_schemagen.cli import main

sys.exit(main())
