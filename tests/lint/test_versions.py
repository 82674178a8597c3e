"""A chart that changed since the merge base with the target branch has a higher version.

Without a base (no ``origin/main`` in the clone) the check skips, unless
``SLINKY_REQUIRE_VERSION_BASE=1`` (set by CI, which fetches the target branch) makes it fail;
``SLINKY_VERSION_BASE`` names another revision to compare with (see ``versions_support``).
"""

from __future__ import annotations

import os
import subprocess
from typing import TYPE_CHECKING

import pytest
import yaml
from tests.lint import versions_support

from slinky_harness.core.paths import REPO_ROOT
from slinky_harness.helm import charts

if TYPE_CHECKING:
    from pathlib import Path

CHARTS = charts.discover_charts()
CI = REPO_ROOT / ".github" / "workflows" / "ci.yaml"


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )


def _semver(text: str) -> tuple[int, int, int, bool]:
    core, _, pre = text.partition("-")
    major, minor, patch = (int(x) for x in core.split("."))
    return major, minor, patch, not pre  # a release sorts after its pre-releases


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_version_bumped_when_chart_changed(chart: charts.Chart) -> None:
    """ct's version-increment rule, against the merge base (a fresh clone of main compares HEAD with
    itself: nothing changed)."""
    try:
        commit = versions_support.merge_base(REPO_ROOT, os.environ)
    except versions_support.MissingBaseError as exc:
        pytest.fail(str(exc))
    if commit is None:
        target = versions_support.target(os.environ)
        pytest.skip(
            f"no {target} to compare with: the version-bump rule does not apply "
            f"({versions_support.REQUIRE_ENV}=1 makes this a failure)"
        )
    rel = chart.path.relative_to(REPO_ROOT)
    if _git("diff", "--quiet", commit, "--", str(rel)).returncode == 0:
        return  # unchanged since the merge base
    old = _git("show", f"{commit}:{rel}/Chart.yaml")
    if old.returncode != 0:
        return  # a new chart
    old_version = str(yaml.safe_load(old.stdout)["version"])
    assert _semver(chart.version) > _semver(old_version), (
        f"{rel} changed since {commit[:10]} but its version is still {chart.version} (was {old_version}): "
        "bump it in Chart.yaml and add a CHANGELOG entry"
    )


# -- the base itself, in throwaway repositories ---------------------------------------------------


def _repo(path: Path, *, commits: int = 1) -> Path:
    """A repository at ``path`` on branch ``main`` with ``commits`` commits and no remote."""

    def run(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
            cwd=path,
            capture_output=True,
            text=True,
            check=True,
        )

    path.mkdir(parents=True, exist_ok=True)
    run("init", "-q", "-b", "main")
    for n in range(commits):
        (path / "file").write_text(str(n), encoding="utf-8")
        run("add", "file")
        run("commit", "-q", "-m", f"commit {n}")
    return path


def test_no_base_skips_unless_required(tmp_path: Path) -> None:
    """A clone without origin/main has no base: None (the check skips) unless required."""
    repo = _repo(tmp_path / "repo")
    assert versions_support.merge_base(repo, {}) is None
    assert versions_support.merge_base(repo, {versions_support.REQUIRE_ENV: "0"}) is None


def test_no_base_fails_when_required(tmp_path: Path) -> None:
    """With SLINKY_REQUIRE_VERSION_BASE=1 a missing base is an error naming the variable, the
    target and how to fetch it."""
    repo = _repo(tmp_path / "repo")
    with pytest.raises(versions_support.MissingBaseError) as caught:
        versions_support.merge_base(repo, {versions_support.REQUIRE_ENV: "1"})
    message = str(caught.value)
    assert "origin/main" in message
    assert f"{versions_support.REQUIRE_ENV}=1" in message
    assert "fetch-depth: 0" in message


def test_base_is_the_merge_base_with_origin_main(tmp_path: Path) -> None:
    """In a clone on a branch ahead of origin/main the base is origin/main's commit, required or
    not; in a fresh clone of main it is HEAD itself."""
    upstream = _repo(tmp_path / "upstream", commits=2)
    tip = _git_out(upstream, "rev-parse", "HEAD")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(upstream), str(clone)], check=True)
    assert versions_support.merge_base(clone, {versions_support.REQUIRE_ENV: "1"}) == tip
    _repo(clone, commits=1)  # one more commit on the clone's main
    assert _git_out(clone, "rev-parse", "HEAD") != tip
    assert versions_support.merge_base(clone, {}) == tip


def test_named_target_replaces_origin_main(tmp_path: Path) -> None:
    """SLINKY_VERSION_BASE names the revision to compare with; a name that is not there fails
    when required."""
    repo = _repo(tmp_path / "repo", commits=2)
    first = _git_out(repo, "rev-parse", "HEAD~1")
    env = {versions_support.TARGET_ENV: "HEAD~1", versions_support.REQUIRE_ENV: "1"}
    assert versions_support.merge_base(repo, env) == first
    with pytest.raises(versions_support.MissingBaseError, match="no-such-branch"):
        versions_support.merge_base(repo, {**env, versions_support.TARGET_ENV: "no-such-branch"})


def test_ci_requires_and_fetches_the_base() -> None:
    """The CI job that runs the lint tier fetches the whole history (origin/main included) and
    sets SLINKY_REQUIRE_VERSION_BASE=1, so the check there never skips."""
    job = yaml.safe_load(CI.read_text(encoding="utf-8"))["jobs"]["tiers"]
    assert "lint" in job["strategy"]["matrix"]["session"]
    checkout = next(
        s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout@")
    )
    assert checkout["with"]["fetch-depth"] == 0, (
        "the tiers job must fetch origin/main (fetch-depth: 0)"
    )
    nox = next(s for s in job["steps"] if "nox -s" in str(s.get("run", "")))
    assert nox.get("env", {}).get(versions_support.REQUIRE_ENV) == "1", (
        f'the tiers job\'s nox step must set {versions_support.REQUIRE_ENV}: "1"'
    )


def _git_out(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
