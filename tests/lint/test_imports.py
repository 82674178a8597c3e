"""CONTRIBUTING's "may import" column, checked against every import of every module of scripts/.

The layout table's rows for ``scripts/...`` say what each package may import. Every backticked
name in a row's "may import" cell is a grant: ``core/`` (a subpackage of the harness),
``build/toolchain.py`` (one module of the harness) or ``slinky_topology`` (a package of
``scripts/``); a cell that says "the standard library only" also forbids third-party imports. A
module follows the most specific row whose folder holds it, and may import its own row's package
and what that row grants, nothing else of ``scripts/``. Every import counts, those under
``TYPE_CHECKING`` and inside functions too: a cycle in the types is a cycle in the design.
Rows whose folder does not exist yet are skipped (``slinky_conformance`` and ``slinky_harness/parity``
until they land).
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from slinky_harness.core.paths import REPO_ROOT

CONTRIBUTING = REPO_ROOT / "CONTRIBUTING.md"
SCRIPTS = REPO_ROOT / "scripts"
HARNESS = "slinky_harness"
_GRANT = re.compile(r"^(?:[a-z0-9_]+/(?:[a-z0-9_]+\.py)?|slinky_[a-z0-9_]+(?:\.[a-z0-9_]+)*)$")
_STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}


@dataclass(frozen=True)
class Rule:
    """One row of the layout table: the folder (``scripts/slinky_harness/core/``), its package
    (``slinky_harness.core``), the modules it grants and the cell's text."""

    folder: str
    package: str
    grants: tuple[str, ...]
    stdlib_only: bool
    text: str


@dataclass(frozen=True)
class Import:
    module: str
    """The importing module (``slinky_harness.helm.client``)."""
    where: str
    """``scripts/<path>:<line>``."""
    target: str
    """The module imported: ``from a.b import c`` is ``a.b.c`` when that is a module, else ``a.b``."""


def _grant(token: str, row: str) -> str:
    if not _GRANT.match(token):
        raise ValueError(
            f"CONTRIBUTING.md, row `{row}`: `{token}` in 'may import' is no grant; write `core/`, "
            "`build/toolchain.py` (harness) or `slinky_<package>`, and other words unquoted"
        )
    if token.startswith("slinky_"):
        return token
    return ".".join((HARNESS, *token.removesuffix("/").removesuffix(".py").split("/")))


def parse_rules(text: str) -> list[Rule]:
    """The ``scripts/`` rows of the "Repository layout" table."""
    section = text.split("## Repository layout", 1)[1].split("\n## ", 1)[0]
    rules = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) != 3 or not cells[0].startswith("`scripts/"):
            continue
        folder = cells[0].strip("`")
        package = ".".join(Path(folder).parts[1:])
        grants = tuple(_grant(t, folder) for t in re.findall(r"`([^`]+)`", cells[2]))
        stdlib_only = "the standard library only" in cells[2]
        rules.append(Rule(folder, package, grants, stdlib_only, cells[2]))
    return rules


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def module_imports(root: Path) -> list[Import]:
    """Every import of every module under ``root`` (a ``scripts/`` folder), relative ones
    resolved."""
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    known = {_module_name(p, root)[0] for p in files}
    found = []
    for path in files:
        name, is_package = _module_name(path, root)
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                subs = [f"{base}.{a.name}" for a in node.names]
                targets = [s for s in subs if s in known] or [base]
            where = f"{path.relative_to(root.parent)}:{getattr(node, 'lineno', 0)}"
            found += [Import(name, where, t) for t in targets]
    return found


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def violations(rules: list[Rule], imports: list[Import], first_party: set[str]) -> list[str]:
    """Each import its module's row does not allow, as ``<where> imports <target>: <rule>``."""
    out = []
    for imp in imports:
        rule = max(
            (r for r in rules if _within(imp.module, r.package)), key=lambda r: len(r.package)
        )
        top = imp.target.split(".")[0]
        if top in first_party:
            allowed = _within(imp.target, rule.package) or any(
                _within(imp.target, g) for g in rule.grants
            )
        else:
            allowed = not rule.stdlib_only or top in _STDLIB
        if not allowed:
            out.append(
                f"{imp.where} ({imp.module}) imports {imp.target}: CONTRIBUTING.md's row "
                f"`{rule.folder}` allows {rule.text!r}"
            )
    return out


def find_cycle(edges: dict[str, set[str]]) -> list[str]:
    """One cycle of the graph as ``[a, b, ..., a]``, or ``[]`` when it has none."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def _subpackage(module: str) -> str | None:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == HARNESS and len(parts) > 2 else None


def subpackage_graph(imports: list[Import]) -> dict[str, set[str]]:
    """Harness subpackage -> the harness subpackages its modules import."""
    edges: dict[str, set[str]] = {}
    for imp in imports:
        a, b = _subpackage(imp.module), _subpackage(imp.target)
        if a and b and a != b:
            edges.setdefault(a, set()).add(b)
    return edges


def _present(rules: list[Rule], root: Path) -> list[Rule]:
    return [r for r in rules if (root.parent / r.folder).is_dir()]


def _first_party(root: Path) -> set[str]:
    return {p.parent.name for p in root.glob("*/__init__.py")}


RULES = parse_rules(CONTRIBUTING.read_text(encoding="utf-8"))
IMPORTS = module_imports(SCRIPTS)


# --- the repository ----------------------------------------------------------------------------


def test_every_package_has_a_row() -> None:
    """Each package of scripts/ and each harness subpackage has its row, so none goes unchecked."""
    folders = {r.folder for r in RULES}
    packages = [p.parent for p in SCRIPTS.glob("*/__init__.py")]
    packages += [p.parent for p in (SCRIPTS / HARNESS).glob("*/__init__.py")]
    missing = [f"{p.relative_to(REPO_ROOT)}/" for p in packages]
    assert [f for f in missing if f not in folders] == [], "add a row to CONTRIBUTING.md's layout"


def test_every_import_is_one_its_row_allows() -> None:
    found = violations(_present(RULES, SCRIPTS), IMPORTS, _first_party(SCRIPTS))
    assert found == [], "\n".join(["import what your row grants, or change the row:", *found])


def test_the_rows_allow_no_cycle_between_harness_subpackages() -> None:
    """What the rows grant each other, among the harness's subpackages, is acyclic."""
    edges = {
        r.package: {g for g in (_subpackage(g + ".x") for g in r.grants) if g and g != r.package}
        for r in RULES
        if _subpackage(r.package + ".x")
    }
    cycle = find_cycle(edges)
    assert cycle == [], f"CONTRIBUTING.md's rows grant a cycle: {' -> '.join(cycle)}"


def test_no_import_cycle_between_harness_subpackages() -> None:
    cycle = find_cycle(subpackage_graph(IMPORTS))
    assert cycle == [], f"harness subpackages import in a cycle: {' -> '.join(cycle)}"


# --- the check itself --------------------------------------------------------------------------

TABLE = """\
## Repository layout

| path | holds | may import |
| --- | --- | --- |
| `scripts/slinky_harness/` | the harness | `slinky_topology` |
| `scripts/slinky_harness/core/` | mechanisms | the standard library only |
| `scripts/slinky_harness/helm/` | helm | `core/`, `build/toolchain.py` |
| `scripts/slinky_harness/build/` | tools | `core/` |
| `scripts/slinky_topology/` | the product | no other package of scripts/ |
| `scripts/slinky_later/` | not there yet | `slinky_harness` |

## Next
"""


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "scripts"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_parse_rules_reads_grants_of_scripts_rows() -> None:
    rules = {r.folder: r for r in parse_rules(TABLE)}
    assert rules["scripts/slinky_harness/helm/"].grants == (
        "slinky_harness.core",
        "slinky_harness.build.toolchain",
    )
    assert rules["scripts/slinky_harness/core/"].stdlib_only
    assert rules["scripts/slinky_topology/"].grants == ()
    assert rules["scripts/slinky_harness/"].package == "slinky_harness"


def test_a_word_in_backticks_that_is_no_grant_is_refused() -> None:
    table = TABLE.replace("`slinky_topology` |", "`crdgen` dependency group |")
    with pytest.raises(ValueError, match=r"row `scripts/slinky_harness/`: `crdgen`"):
        parse_rules(table)


def test_an_import_outside_the_row_is_named_with_module_import_and_rule(tmp_path: Path) -> None:
    """A cycle added on purpose (build imports helm, helm imports build) fails, naming the
    module, its line, the import and the row; a relative import and an import under
    TYPE_CHECKING count too; a granted module and the row's own package pass."""
    root = _tree(
        tmp_path,
        {
            "slinky_harness/__init__.py": "",
            "slinky_harness/build/__init__.py": "",
            "slinky_harness/build/toolchain.py": "from slinky_harness.core import x\n",
            "slinky_harness/build/gobuild.py": "from . import toolchain\n",
            "slinky_harness/build/labeler_image.py": "\nfrom slinky_harness.helm import client\n",
            "slinky_harness/core/__init__.py": "",
            "slinky_harness/core/x.py": "import yaml\nfrom ..build import gobuild\n",
            "slinky_harness/helm/__init__.py": "",
            "slinky_harness/helm/client.py": (
                "from typing import TYPE_CHECKING\nfrom slinky_harness.build import toolchain\n"
                "if TYPE_CHECKING:\n    from slinky_harness.build.gobuild import go\n"
            ),
            "slinky_topology/__init__.py": "import slinky_harness\n",
        },
    )
    rules = _present(parse_rules(TABLE), root)
    assert "scripts/slinky_later/" not in {r.folder for r in rules}
    imports = module_imports(root)
    found = violations(rules, imports, _first_party(root))
    assert found == [
        "scripts/slinky_harness/build/labeler_image.py:2 (slinky_harness.build.labeler_image) imports "
        "slinky_harness.helm.client: CONTRIBUTING.md's row `scripts/slinky_harness/build/` "
        "allows '`core/`'",
        "scripts/slinky_harness/core/x.py:1 (slinky_harness.core.x) imports yaml: "
        "CONTRIBUTING.md's row `scripts/slinky_harness/core/` allows 'the standard library only'",
        "scripts/slinky_harness/core/x.py:2 (slinky_harness.core.x) imports "
        "slinky_harness.build.gobuild: CONTRIBUTING.md's row `scripts/slinky_harness/core/` "
        "allows 'the standard library only'",
        "scripts/slinky_harness/helm/client.py:4 (slinky_harness.helm.client) imports "
        "slinky_harness.build.gobuild: CONTRIBUTING.md's row `scripts/slinky_harness/helm/` "
        "allows '`core/`, `build/toolchain.py`'",
        "scripts/slinky_topology/__init__.py:1 (slinky_topology) imports slinky_harness: "
        "CONTRIBUTING.md's row `scripts/slinky_topology/` allows 'no other package of scripts/'",
    ]
    graph = subpackage_graph(imports)
    assert find_cycle(graph) == [
        "slinky_harness.build",
        "slinky_harness.core",
        "slinky_harness.build",
    ]


def test_find_cycle_on_acyclic_and_cyclic_graphs() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
