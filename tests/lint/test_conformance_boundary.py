"""The harness never imports the conformance command (issue 31, item 1).

``slinky_conformance`` is a product built on the harness: it may import ``slinky_harness``, and
the operations several callers share (slurmctld's ``test_only``, the object wait, NodeSet
placement) live in the harness so that the cluster tier and the demo use them without it. An
import the other way round would make the harness depend on a program; every ``import`` and
``from ... import`` of every harness module, at any depth (inside functions and
``TYPE_CHECKING`` blocks too), is read from its syntax tree.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import pytest

from slinky_harness.core.paths import REPO_ROOT

if TYPE_CHECKING:
    from pathlib import Path

HARNESS = REPO_ROOT / "scripts" / "slinky_harness"
CONFORMANCE = "slinky_conformance"


def imported_modules(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """(line, module) of every import in ``source``, relative ones left out (they stay inside
    their own package)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def conformance_imports(folder: Path, base: Path = REPO_ROOT) -> list[str]:
    """``path:line: module`` (the path below ``base``) for each import of the conformance package
    under ``folder``."""
    return [
        f"{path.relative_to(base)}:{line}: {module}"
        for path in sorted(folder.rglob("*.py"))
        for line, module in imported_modules(path.read_text(), str(path))
        if module == CONFORMANCE or module.startswith(f"{CONFORMANCE}.")
    ]


def test_no_harness_module_imports_the_conformance_package() -> None:
    assert HARNESS.is_dir(), HARNESS
    found = conformance_imports(HARNESS)
    assert not found, (
        "the harness imports slinky_conformance; move what both need into the harness:\n"
        + "\n".join(found)
    )


@pytest.mark.parametrize(
    "source",
    [
        "import slinky_conformance\n",
        "from slinky_conformance.steps import live\n",
        "def f():\n    from slinky_conformance import cli  # lazy\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import slinky_conformance.target as t\n",
    ],
)
def test_the_check_sees_every_form_of_import(source: str, tmp_path: Path) -> None:
    """The walk finds an import at module level, inside a function and under TYPE_CHECKING."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "mod.py").write_text(source)
    (folder / "other.py").write_text("import slinky_conformance_like\nfrom . import mod\n")
    assert [
        line.split(": ")[-1].split(".")[0] for line in conformance_imports(folder, tmp_path)
    ] == [CONFORMANCE]
