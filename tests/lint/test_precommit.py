"""``.pre-commit-config.yaml``: local hooks only, each running something that exists here.

A hook whose entry names a missing module, test file or tool would fail only on the machine of
whoever installs the hooks; this test fails first. The hooks cover what CONTRIBUTING asks before
a commit: ruff check, ruff format, the generated schemas, CRDs and chart READMEs, and the commit
rule (subject at most 72 characters, blank line before the body).
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from slinky_harness.core.paths import REPO_ROOT

CONFIG = REPO_ROOT / ".pre-commit-config.yaml"
VENV_BIN = Path(sys.executable).parent


def _hooks() -> list[dict[str, Any]]:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    return [hook for repo in config["repos"] for hook in repo["hooks"]]


HOOKS = _hooks()


def _tracked() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    return out.stdout.splitlines()


def _defines_main(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return False
    origin = Path(spec.origin)
    if origin.name == "__init__.py" and (origin.parent / "__main__.py").is_file():
        origin = origin.parent / "__main__.py"
    tree = ast.parse(origin.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body) or (
        origin.name == "__main__.py"
    )


def entry_problems(entry: str) -> list[str]:
    """Why ``entry`` would not run here (empty: it would)."""
    argv = shlex.split(entry)
    if argv[:2] == ["python", "-m"]:
        module, args = argv[2], argv[3:]
        if importlib.util.find_spec(module) is None:
            return [f"no module {module}"]
        if module.startswith("slinky_") and not _defines_main(module):
            return [f"{module} has no main(argv) -> int"]
        if module == "pytest":
            paths = [a for a in args if not a.startswith("-") and a.endswith(".py")]
            missing = [p for p in paths if not (REPO_ROOT / p).is_file()]
            return [f"no test file {p}" for p in missing] + ([] if paths else ["no test file"])
        return []
    if not (VENV_BIN / argv[0]).is_file():
        return [f"{argv[0]} is not a tool of the lint environment ({VENV_BIN})"]
    return []


def test_every_hook_is_local_and_runs_in_the_suites_environment() -> None:
    """No hook fetches a repository or builds an environment: repo local, language system."""
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    assert [repo["repo"] for repo in config["repos"]] == ["local"]
    assert {hook["language"] for hook in HOOKS} == {"system"}
    ids = [hook["id"] for hook in HOOKS]
    assert len(ids) == len(set(ids)), ids


@pytest.mark.parametrize("hook", HOOKS, ids=lambda h: h["id"])
def test_each_hook_points_at_an_existing_entry(hook: dict[str, Any]) -> None:
    assert entry_problems(hook["entry"]) == [], f"hook {hook['id']}: fix its entry"


@pytest.mark.parametrize("hook", [h for h in HOOKS if "files" in h], ids=lambda h: h["id"])
def test_each_file_pattern_matches_a_tracked_file(hook: dict[str, Any]) -> None:
    pattern = re.compile(hook["files"])
    assert any(pattern.search(path) for path in _tracked()), f"hook {hook['id']} never runs"


def test_the_hooks_cover_the_checks_contributing_asks_for() -> None:
    entries = " | ".join(hook["entry"] for hook in HOOKS)
    for wanted in (
        "ruff check",
        "ruff format --check",
        "slinky_schemagen --check",
        "slinky_crdgen --check",
        "tests/lint/test_generated.py",
    ):
        assert wanted in entries, f"no hook runs {wanted}"
    commit = [hook for hook in HOOKS if hook.get("stages") == ["commit-msg"]]
    assert [hook["entry"] for hook in commit] == ["python -m slinky_harness.apps.commit_msg"]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("python -m slinky_nosuch --check", "no module slinky_nosuch"),
        ("python -m slinky_harness.core.paths", "slinky_harness.core.paths has no main"),
        ("python -m pytest -q tests/lint/test_nosuch.py", "no test file tests/lint/test_nosuch.py"),
        ("nosuchtool check", "nosuchtool is not a tool of the lint environment"),
    ],
)
def test_a_broken_entry_is_named(entry: str, problem: str) -> None:
    found = entry_problems(entry)
    assert len(found) == 1 and found[0].startswith(problem), found
