"""The labeler image's build context holds the product package and nothing else.

The context is the repository root filtered by ``.dockerignore`` (``slinky_harness.image`` builds
with podman, the release workflow with ``docker/build-push-action``, both from the root). Its file
list is computed here with the rules of Docker's ``.dockerignore`` (moby/patternmatcher): Go
``filepath.Match`` patterns plus ``**``, a pattern that matches a folder matches everything in it,
``!`` re-includes, and the last pattern that matches a path (or one of its parent folders) decides.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = "scripts/slinky_topology"


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``.dockerignore`` line: its pattern (cleaned) and whether it re-includes (``!``)."""

    pattern: str
    regex: re.Pattern[str]
    include: bool


def _regex(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(f"{out}\\Z")


def parse_rules(text: str) -> list[Rule]:
    """The rules of a ``.dockerignore`` text (comments and blank lines skipped)."""
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        include = line.startswith("!")
        pattern = os.path.normpath(line.removeprefix("!").strip()).lstrip("/")
        if pattern == ".":
            pattern = "*"
        rules.append(Rule(pattern, _regex(pattern), include))
    return rules


def excluded(path: str, rules: list[Rule]) -> bool:
    """Whether ``path`` (relative, POSIX) stays out of the context."""
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    result = False
    for rule in rules:
        if any(rule.regex.match(c) for c in candidates):
            result = not rule.include
    return result


def context_files(root: Path) -> set[str]:
    """Files of ``root`` that a build with its ``.dockerignore`` sends as the context. Folders
    that are excluded and that no re-including rule reaches are not walked (.venv, .git)."""
    rules = parse_rules((root / ".dockerignore").read_text())
    reincluded = [r.pattern for r in rules if r.include]
    out: set[str] = set()
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root).as_posix()
        prefix = "" if rel == "." else f"{rel}/"
        dirs[:] = [
            d
            for d in dirs
            if not excluded(prefix + d, rules)
            or any(p.startswith(f"{prefix}{d}/") or "*" in p for p in reincluded)
        ]
        out.update(prefix + f for f in files if not excluded(prefix + f, rules))
    return out


def _touch(root: Path, *paths: str) -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x\n")


def test_the_rules_keep_the_product_package_and_drop_the_rest(tmp_path: Path) -> None:
    """The repository's own .dockerignore on a tree with one file of each kind."""
    shutil.copy(ROOT / ".dockerignore", tmp_path / ".dockerignore")
    kept = [
        "pyproject.toml",
        "LICENSE",
        f"{PRODUCT}/__init__.py",
        f"{PRODUCT}/labeler/controller.py",
        f"{PRODUCT}/data/fabric.schema.json",
    ]
    dropped = [
        "README.md",
        "Dockerfile",
        "noxfile.py",
        ".venv/lib/python3.11/site-packages/kubernetes/__init__.py",
        ".git/HEAD",
        "charts/gpu-topology-labeler/Chart.yaml",
        "tests/unit/test_x.py",
        "scripts/slinky_harness/image.py",
        "scripts/slinky_crdgen/cli.py",
        "scripts/slinky_suite.egg-info/PKG-INFO",
        f"{PRODUCT}/__pycache__/cli.cpython-311.pyc",
        f"{PRODUCT}/labeler/__pycache__/kube.cpython-311.pyc",
    ]
    _touch(tmp_path, *kept, *dropped)
    assert context_files(tmp_path) == set(kept)


def test_the_build_context_of_this_checkout_is_the_product_package() -> None:
    """Whatever lies in the checkout (virtual environments, caches, builds): only pyproject.toml,
    LICENSE and the product package reach the build."""
    files = context_files(ROOT)
    outside = sorted(f for f in files if f not in {"pyproject.toml", "LICENSE"})
    outside = [f for f in outside if not f.startswith(f"{PRODUCT}/")]
    assert outside == [], "files outside the product package in the image's build context"
    assert "pyproject.toml" in files and "LICENSE" in files
    assert f"{PRODUCT}/labeler/__main__.py" in files
    assert not [f for f in files if "__pycache__" in f]


def test_podman_reads_the_dockerignore() -> None:
    """podman and buildah prefer a .containerignore: there must be none to override it."""
    assert not (ROOT / ".containerignore").exists()


def test_every_copy_of_the_dockerfile_reads_from_the_context() -> None:
    """The Dockerfile's COPY sources (other than from a build stage) are all in the context."""
    files = context_files(ROOT)
    sources: list[str] = []
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        words = line.split()
        if words[:1] != ["COPY"] or any(w.startswith("--from=") for w in words):
            continue
        sources += [w for w in words[1:-1] if not w.startswith("--")]
    assert sources, "the Dockerfile copies files from the context"
    for source in (s.rstrip("/") for s in sources):
        found = source in files or any(f.startswith(f"{source}/") for f in files)
        if not found:
            pytest.fail(f"Dockerfile: COPY {source}: not in the build context (.dockerignore)")
