"""``nox -s conformance`` end to end, as a user runs it: the command passes for every ``values/``
profile and the example umbrella's defaults, and fails, naming the right step and values path,
for each broken values file of ``tests/data/conformance/broken/`` whose mistake a live or slurm
step catches, and for one that the static phase catches (the render tier runs every broken file's
static phase: tests/render/test_conformance_static.py).

Each broken file says in its header what must be caught (``tests/conformance_cases.py``). Every
run writes JUnit XML, read back here with junitparser, as a CI system reads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from junitparser import Failure
from tests.cluster import conformance_support as support
from tests.conformance_cases import BROKEN, PROFILES, expectations, prerequisites

from slinky_harness.core.paths import REPO_ROOT

if TYPE_CHECKING:
    from pathlib import Path

    from tests.cluster.conformance_support import Run

RUN_TIMEOUT = 900
"""Seconds one run may take on a busy machine (warm: about a minute and a half)."""


def conformance(tmp_path: Path, *args: str) -> Run:
    # the pods phase (a real node, minutes per run) has its own test file,
    # test_conformance_real_pods.py: these runs are kwok's and the chroot's
    return support.conformance(tmp_path, *args, "--real-pods", "never", timeout=RUN_TIMEOUT)


@pytest.mark.parametrize(
    "profile", [None, *PROFILES], ids=["umbrella-defaults", *(p.stem for p in PROFILES)]
)
def test_every_profile_conforms(profile: Path | None, tmp_path: Path) -> None:
    """A profile whose header asks for objects made before the install (a database password
    Secret) names them in ``values/prerequisites/<profile>.yaml``, passed with ``--existing``."""
    args = ["-f", str(profile)] if profile else []
    existing = prerequisites(profile) if profile else None
    if existing is not None:
        args += ["--existing", str(existing)]
    run = conformance(tmp_path, *args)
    bad = {
        name: [f"{type(r).__name__}: {r.message}" for r in case.result]  # type: ignore[attr-defined]
        for name, case in run.cases().items()
        # the pods phase left out (--real-pods never) is one skipped case: not run, not a step
        if case.result and name != "pods/(not run)"  # type: ignore[attr-defined]
    }
    assert run.returncode == 0 and not bad, f"{bad}\n{run.output}"
    phases = {suite.name for suite in run.junit}
    assert phases == {
        "conformance.static",
        "conformance.live",
        "conformance.slurm",
        "conformance.pods",
    }, phases
    assert "pods: not run (left out with --real-pods never)" in run.output, run.output


def test_every_broken_case_of_the_issue_has_a_file() -> None:
    """Issue 17, item 3: one broken values file per way of being wrong."""
    assert {p.stem for p in BROKEN} >= {
        "nodeset-selector-matches-no-node",
        "gpu-count-above-every-node",
        "partition-unknown-nodeset",
        "topology-node-in-two-blocks",
        "option-slurmctld-refuses",
        "accounting-host-does-not-resolve",
        "secret-never-created",
    }


def _needs_the_command(path: Path) -> bool:
    """Whether a broken file's mistake shows only past the static phase (live, slurm), or it is
    :data:`STATIC_THROUGH_THE_COMMAND`: the render tier runs every file's static phase
    (tests/render/test_conformance_static.py), so a static mistake is proved there once and here
    once more through the command, its exit status, JUnit XML and terminal report."""
    steps = expectations(path).steps
    return path.stem == STATIC_THROUGH_THE_COMMAND or any(
        not step.startswith("static/") for step in steps
    )


STATIC_THROUGH_THE_COMMAND = "no-default-partition"
"""The broken file whose static mistake this tier also runs through the whole command."""
BY_THE_COMMAND = [p for p in BROKEN if _needs_the_command(p)]


def test_the_command_runs_a_static_and_every_later_broken_case() -> None:
    """The selection above keeps the one static case and every case a later phase catches."""
    assert any(p.stem == STATIC_THROUGH_THE_COMMAND for p in BY_THE_COMMAND)
    later = [p for p in BROKEN if any(not s.startswith("static/") for s in expectations(p).steps)]
    assert later and set(later) < set(BY_THE_COMMAND)


@pytest.mark.parametrize("broken", BY_THE_COMMAND, ids=[p.stem for p in BY_THE_COMMAND])
def test_a_broken_values_file_fails_naming_the_values_path(broken: Path, tmp_path: Path) -> None:
    expected = expectations(broken)
    run = conformance(tmp_path, "-f", str(broken), *expected.args)
    assert run.returncode == 1, run.output
    cases = run.cases()
    for step in expected.steps:
        assert step in cases, f"{step} not in the report: {sorted(cases)}\n{run.output}"
        results = cases[step].result  # type: ignore[attr-defined]
        failures = [r for r in results if isinstance(r, Failure)]
        assert failures, f"{step} did not fail: {results}\n{run.output}"
        text = "\n".join(f"{f.message}\n{f.text}" for f in failures)
        for path in expected.paths:
            assert f"{path}: " in text, f"{step} does not name {path}:\n{text}"
    # ... and the terminal report says the same
    for path in expected.paths:
        assert f"- {path}: " in run.output, run.output


EXAMPLE = REPO_ROOT / "examples" / "conformance"
EXAMPLE_ARGS = (
    "-f", str(EXAMPLE / "values.yaml"),
    "--nodes", str(EXAMPLE / "nodes.json"),
    "--existing", str(EXAMPLE / "existing.yaml"),
)  # fmt: skip


def test_the_worked_example_conforms_and_refuses_its_change(tmp_path: Path) -> None:
    """examples/conformance/README.md's two commands: the team's values conform on their Nodes;
    with more-gpus.yaml on top, live/placement fails at the GPU count, as the README shows."""
    ok = conformance(tmp_path / "ok", *EXAMPLE_ARGS)
    assert ok.returncode == 0, ok.output
    changed = conformance(
        tmp_path / "changed", *EXAMPLE_ARGS, "-f", str(EXAMPLE / "more-gpus.yaml")
    )
    assert changed.returncode == 1, changed.output
    [failure] = [
        r
        for r in changed.cases()["live/placement"].result  # type: ignore[attr-defined]
        if isinstance(r, Failure)
    ]
    assert failure.message.startswith("slurm-cluster.nodesets.h100.gpu.count: "), failure.message
