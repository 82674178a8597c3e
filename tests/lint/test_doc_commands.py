"""Every helm/kubectl block of the suite's documents says whether the cluster tier runs it.

``tests/cluster/test_doc_commands.py`` runs the blocks marked ``runs``, exactly as written; this
test makes sure no such block is left without a mark (so none is silently untested) and that each
``not run`` mark gives its reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from slinky_harness.core import doc_commands
from slinky_harness.core.paths import REPO_ROOT

if TYPE_CHECKING:
    from pathlib import Path

DOCUMENTS = doc_commands.documents()


def test_the_documents_are_found() -> None:
    names = {path.name for path in DOCUMENTS}
    assert {"README.md", "MIGRATING.md", "testing.md", "releasing.md"} <= names
    assert sum(path.parent.parent.name == "charts" for path in DOCUMENTS) >= 5


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_command_block_is_marked(document: Path) -> None:
    assert doc_commands.unmarked(document) == []


def test_each_chart_install_is_run_somewhere() -> None:
    """Each chart's README runs at least one of its blocks, and so does the top-level README."""
    running = {path for path in DOCUMENTS if doc_commands.runnable(path)}
    readmes = {path for path in DOCUMENTS if path.name == "README.md"}
    assert readmes <= running, sorted(str(p) for p in readmes - running)
