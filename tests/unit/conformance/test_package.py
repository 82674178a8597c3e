"""The conformance command is a package of its own (issue 31, item 1): ``python -m
slinky_conformance`` and the ``slinky-conformance`` console script start it, ``nox -s conformance``
installs its own dependency group, and that group is enough to load every module of it.

The group's sufficiency is read in a child interpreter whose import system refuses every
third-party module that no distribution of the group brings (directly or through their own
requirements), as an environment with only that group would: every module of
``slinky_conformance`` must import there (an optional import that fails quietly is fine). The
suite's own distribution (``pip install -e .``, which the session installs too) is allowed with
its dependencies. What a step imports only when it runs is proven by ``nox -s conformance``
itself, which has nothing but these.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata

from packaging.requirements import Requirement

from slinky_harness.core.paths import REPO_ROOT

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
GROUP = "conformance"
TEST_TOOLS = {"pytest", "hypothesis", "hypothesis-jsonschema", "junitparser", "pytest-xdist"}

ONLY_THE_GROUP = """
import importlib, json, pkgutil, sys

class OutsideTheGroup:
    BLOCKED = set(json.loads(sys.argv[1]))

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, OutsideTheGroup())
import slinky_conformance
for info in pkgutil.walk_packages(slinky_conformance.__path__, "slinky_conformance."):
    if not info.name.endswith("__main__"):
        importlib.import_module(info.name)
print(json.dumps(sorted({name.partition(".")[0] for name in sys.modules} & OutsideTheGroup.BLOCKED)))
"""
"""``python -c ONLY_THE_GROUP BLOCKED_JSON``: import every module of the package with the
top-level modules of ``BLOCKED_JSON`` refused; prints those loaded all the same (before)."""


def group_requirements(name: str) -> list[Requirement]:
    """The requirements of dependency group ``name``, its included groups resolved."""
    found: list[Requirement] = []
    for item in PYPROJECT["dependency-groups"][name]:
        if isinstance(item, dict):
            found += group_requirements(item["include-group"])
        else:
            found.append(Requirement(item))
    return found


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(requirements: list[Requirement]) -> set[str]:
    """The distributions ``requirements`` bring (normalised names), with what they require in
    turn (requirements of an extra left out)."""
    seen: set[str] = set()
    todo = [r.name for r in requirements]
    while todo:
        name = _norm(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.requires(name) or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def test_the_conformance_group_holds_no_test_tool() -> None:
    names = {_norm(r.name) for r in group_requirements(GROUP)}
    assert names, f"pyproject.toml has an empty dependency group {GROUP}"
    assert not names & TEST_TOOLS, sorted(names & TEST_TOOLS)


def test_the_conformance_group_is_enough_to_load_the_package() -> None:
    allowed = closure([*group_requirements(GROUP), Requirement("slinky-suite")])
    owners = metadata.packages_distributions()
    blocked = sorted(
        module
        for module, dists in owners.items()
        if not {_norm(d) for d in dists} & allowed and module not in sys.stdlib_module_names
    )
    assert "pytest" in blocked and "yaml" not in blocked, "the refused modules are read"
    proc = subprocess.run(
        [sys.executable, "-c", ONLY_THE_GROUP, json.dumps(blocked)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"needs a distribution outside the {GROUP} group:\n{proc.stderr}"


def test_the_console_script_and_the_module_start_the_cli() -> None:
    tool = tomllib.loads((REPO_ROOT / "tools" / "conformance" / "pyproject.toml").read_text())
    target = tool["project"]["scripts"]["slinky-conformance"]
    module, _, func = target.partition(":")
    assert module == "slinky_conformance.cli", target
    assert callable(getattr(importlib.import_module(module), func))
    proc = subprocess.run(
        [sys.executable, "-m", "slinky_conformance", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: slinky-conformance"), proc.stdout[:200]


def test_nox_conformance_installs_the_conformance_group_only() -> None:
    """The ``conformance`` session of the noxfile installs this group and no other."""
    tree = ast.parse((REPO_ROOT / "noxfile.py").read_text())
    (session,) = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "conformance"
    ]
    installs = [
        [a.value for a in call.args if isinstance(a, ast.Constant)]
        for call in ast.walk(session)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "_install"
    ]
    assert installs == [[GROUP]], installs
