"""``nox -s <tier> -- <path>`` runs what the path names, not the whole tier beside it.

The noxfile imports nox, which the test environments do not install, so the test takes
``_targets`` out of noxfile.py as written (its AST) and runs it with the repository root.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from slinky_harness.core.paths import REPO_ROOT

Targets = Callable[[str, Sequence[str]], list[str]]


def _targets() -> Targets:
    tree = ast.parse((REPO_ROOT / "noxfile.py").read_text(encoding="utf-8"))
    (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_targets"]
    namespace: dict[str, object] = {"ROOT": REPO_ROOT, "Path": Path, "Sequence": Sequence}
    exec(compile(ast.Module([node], []), "noxfile.py", "exec"), namespace)
    return cast("Targets", namespace["_targets"])


def test_a_named_file_runs_alone() -> None:
    targets = _targets()
    one = "tests/unit/harness/test_noxfile_targets.py"
    assert targets("tests/unit", [one, "-n", "1"]) == [one, "-n", "1"]
    assert targets("tests/unit", [f"{one}::test_a_named_file_runs_alone"])[0].startswith(one)


def test_options_alone_keep_the_tier_folder() -> None:
    targets = _targets()
    assert targets("tests/unit", ["-k", "labeler", "-n", "1"]) == [
        "tests/unit",
        "-k",
        "labeler",
        "-n",
        "1",
    ]
    assert targets("tests/lint", []) == ["tests/lint"]
