"""``python -m slinky_topology.labeler``: the controller (or ``discover``)."""

from __future__ import annotations

import sys

from slinky_topology.labeler.cli import main

if __name__ == "__main__":
    sys.exit(main())
