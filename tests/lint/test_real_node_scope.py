"""Every cluster-tier file that starts the real node is in tests/conftest.py's ``REAL_NODE``.

The machine runs one real node at a time (a lock): two files that each start it, as scopes of
their own, can start at once in two xdist workers, and one worker then waits minutes on the lock
instead of running tests. ``REAL_NODE`` makes them one scope, run in one worker in turn.
"""

from __future__ import annotations

import re

from tests.conftest import REAL_NODE

from slinky_harness.core.paths import REPO_ROOT

STARTS_A_NODE = re.compile(
    r"slinky_harness\.k8s(\.realnode|\.realpods| import realpods| import realnode)"
    r"|--real-pods\W+(always|auto)"
)
"""What a file that starts the real node has: the node's modules, or conformance's flag asking
for real pods (``--real-pods never`` keeps a conformance run off the node)."""


def test_every_file_that_starts_the_real_node_is_one_scope() -> None:
    starting = {
        str(path.relative_to(REPO_ROOT))
        for path in (REPO_ROOT / "tests" / "cluster").rglob("test_*.py")
        if STARTS_A_NODE.search(path.read_text(encoding="utf-8"))
    }
    assert starting, "no cluster-tier file starts the real node: the pattern is out of date"
    assert starting <= REAL_NODE, (
        f"add to tests/conftest.py REAL_NODE: {sorted(starting - REAL_NODE)}"
    )
