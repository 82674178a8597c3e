"""The conformance command's static phase (issue 17) on the suite's own values, through the real
Helm 4 and Helm 3: every ``values/`` profile and the example umbrella's defaults pass every static
step; each broken values file of ``tests/data/conformance/broken`` fails the step its header names
(``# expect-step:``) with a finding at each values path it names (``# expect-path:``), read from
the file, never from this test."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import yaml
from junitparser import JUnitXml
from tests.conformance_cases import BROKEN, PROFILES, expectations, prerequisites

from slinky_conformance import cli
from slinky_conformance.context import Context, run_steps
from slinky_conformance.steps import static
from slinky_conformance.steps.slurm import state as conformance_slurm
from slinky_conformance.target import load_manifests, resolve
from slinky_harness.build import controlplane, slinky, slurm_chroot
from slinky_harness.k8s import cluster as kube_cluster
from slinky_harness.k8s import schemas as kubeschema

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_conformance.report import Report, StepResult


def _run(
    files: list[Path], tmp_path: Path, *, chart: str | None = None, given: list[Path] | None = None
) -> Report:
    """The static steps; ``given``: the --existing files (default: a profile's prerequisites,
    what its header asks to create first)."""
    target = resolve(files, chart=chart)
    if given is None:
        given = [p for p in map(prerequisites, files) if p is not None]
    existing = [doc for path in given for doc in load_manifests(path)]
    ctx = Context(
        target=target, work=tmp_path, kube_version=kubeschema.newest_version(), existing=existing
    )
    return run_steps(ctx, static.STEPS, target.describe())


@pytest.mark.parametrize(
    "files", [[p] for p in PROFILES] + [[]], ids=[p.stem for p in PROFILES] + ["umbrella-defaults"]
)
def test_suite_values_pass_every_static_step(files: list[Path], tmp_path: Path) -> None:
    report = _run(files, tmp_path)
    failed = [
        f"{r.id}: {r.status} {r.reason} {[f.line() for f in r.findings]}"
        for r in report.results
        if r.status != "pass"
    ]
    assert not failed, "\n".join(failed)
    assert [r.name for r in report.results] == [s.name for s in static.STEPS]


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_values_fail_at_their_step_and_path(path: Path, tmp_path: Path) -> None:
    """A file whose mistake the static phase must catch fails there, naming each path; a file
    whose mistake only a later phase can see passes every static step (else it would never
    reach that phase)."""
    expected = expectations(path)
    report = _run([path], tmp_path, chart=expected.chart, given=expected.existing)
    steps = [s for s in expected.steps if s.startswith("static/")]
    if not steps:
        failed = [f"{r.id}: {r.reason}" for r in report.results if r.status != "pass"]
        assert not failed, failed
        return
    for step in steps:
        result = next(r for r in report.results if r.id == step)
        assert result.status == "fail", f"{step}: {result.status} {result.reason}"
        paths = {f.path for f in result.findings}
        for want in expected.paths:
            assert want in paths, f"{step} names {sorted(paths)}, not {want}"
        assert all(f.fix for f in result.findings)


def test_the_static_phase_alone_passes_and_builds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--phases static`` on values whose static steps all pass exits 0; the live, slurm and
    pods phases are reported as not run (JUnit: skipped, not failed), and nothing of theirs is
    built: every builder of the control plane, the operator and the Slurm chroot raises if
    called."""

    def no_build(*_: object, **__: object) -> object:
        raise AssertionError("--phases static built a control plane, the operator or a chroot")

    for module, name in [
        (controlplane, "ensure_binaries"),
        (slinky, "ensure_operator"),
        (slurm_chroot, "ensure_chroot"),
        (conformance_slurm, "ensure_chroot"),
        (kube_cluster, "ensure_binaries"),
    ]:
        monkeypatch.setattr(module, name, no_build)
    junit = tmp_path / "report.xml"
    code = cli.main(["--phases", "static", "--junit", str(junit), "--out", str(tmp_path / "w")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "live: not run (left out with --phases)" in out
    assert "slurm: not run (left out with --phases)" in out
    assert "pods: not run (left out with --phases)" in out
    assert "0 failed, 0 skipped" in out
    xml = JUnitXml.fromfile(str(junit))
    assert xml.failures == 0 and xml.skipped == 3, out
    phases = {"conformance.static", "conformance.live", "conformance.slurm", "conformance.pods"}
    assert {s.name for s in xml} == phases


def _schema_step(tmp_path: Path, text: str) -> StepResult:
    values = tmp_path / "values.yaml"
    values.write_text(text)
    target = resolve([values], chart="slurm-cluster")
    ctx = Context(target=target, work=tmp_path, kube_version=kubeschema.newest_version())
    (result,) = run_steps(ctx, [s for s in static.STEPS if s.name == "schema"], "s").results
    return result


@pytest.mark.parametrize(
    ("text", "verdict", "path"),
    [
        ("clusterName: 2024-01-01\n", "pass", None),
        ('clusterName: "10\\n"\n', "fail", "clusterName"),
        ("clusterName: |\n  slinky\n", "fail", "clusterName"),
        ("clusterName: Slinky\n", "fail", "clusterName"),
    ],
    ids=["date", "trailing-newline", "block-scalar", "upper-case"],
)
def test_the_schema_verdict_is_helms(
    tmp_path: Path, text: str, verdict: str, path: str | None
) -> None:
    """Helm reads ``2024-01-01`` as a string, which the pattern accepts; a trailing newline
    meets Python's ``$`` but not Helm's (Go's), and Helm refuses it: the step says what Helm
    says, at the values path."""
    result = _schema_step(tmp_path, text)
    assert result.status == verdict, (result.reason, result.findings, result.details)
    if path is not None:
        assert [f.path for f in result.findings] == [path], result.findings
        assert all(f.fix for f in result.findings)


@pytest.mark.parametrize(
    ("spec", "warned"),
    [
        pytest.param({"type": "LoadBalancer"}, True, id="open"),
        pytest.param(
            {"type": "LoadBalancer", "loadBalancerSourceRanges": ["0.0.0.0/0"]},
            True,
            id="every-address",
        ),
        pytest.param(
            {"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/8"]}, False, id="ranged"
        ),
        pytest.param({"type": "ClusterIP"}, False, id="cluster-ip"),
    ],
)
def test_a_login_service_open_to_any_network_is_warned_of(
    spec: dict[str, object], warned: bool, tmp_path: Path
) -> None:
    """A LoginSet's sshd on a LoadBalancer with no source range passes with a warning that names
    the values path and the fix; a ranged or ClusterIP Service draws none."""
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump({"loginsets": {"login": {"enabled": True, "service": {"spec": spec}}}})
    )
    report = _run([values], tmp_path, chart="slurm-cluster", given=[])
    result = next(r for r in report.results if r.id == "static/exposure")
    assert result.status == "pass", result.reason
    warnings = [d for d in result.details if d.startswith("warning:")]
    if not warned:
        assert warnings == []
        return
    assert len(warnings) == 1, warnings
    assert "loginsets.login.service.spec.type" in warnings[0]
    assert "loadBalancerSourceRanges" in warnings[0]
