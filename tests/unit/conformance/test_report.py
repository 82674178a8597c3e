"""The conformance command's frame: the report, its JUnit XML read back by a standard JUnit
parser (junitparser, as CI systems read it), the step runner and the target's values paths."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from junitparser import Failure, JUnitXml, Skipped

from slinky_conformance import cli
from slinky_conformance.context import (
    Context,
    Outcome,
    Step,
    StepFailed,
    run_steps,
)
from slinky_conformance.context import (
    Skipped as StepSkipped,
)
from slinky_conformance.report import (
    PHASES,
    Finding,
    Report,
    StepResult,
    render_text,
    write_junit,
)
from slinky_conformance.target import TargetError, format_path, resolve
from slinky_harness.build.controlplane import ControlPlaneError
from slinky_harness.core.paths import REPO_ROOT

if TYPE_CHECKING:
    from collections.abc import Callable

    from slinky_conformance.report import Status

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40)
_finding = st.builds(Finding, path=_text, problem=_text.filter(bool), fix=_text)


@st.composite
def _results(draw: st.DrawFn) -> list[StepResult]:
    out = []
    for index in range(draw(st.integers(0, 8))):
        status: Status = draw(st.sampled_from(["pass", "fail", "skip"]))
        findings = draw(st.lists(_finding, min_size=1, max_size=3)) if status == "fail" else []
        out.append(
            StepResult(
                phase=draw(st.sampled_from(PHASES)),
                name=f"step-{index}",
                status=status,
                reason=draw(_text),
                findings=findings,
                seconds=draw(st.floats(0, 1e4)),
            )
        )
    return out


@given(_results())
def test_junit_reads_back_as_the_report_says(
    tmp_path_factory: pytest.TempPathFactory, results: list[StepResult]
) -> None:
    """Invariant: whatever the results (any text in reasons and findings, any mix of statuses
    and phases), a JUnit parser reads back one test case per step under its phase's suite, with
    the step's status (a failure whose message is the first finding, a skip with its reason) and
    totals that add up."""
    report = Report("values.yaml", results)
    path = tmp_path_factory.mktemp("junit") / "report.xml"
    write_junit(report, path)
    xml = JUnitXml.fromfile(str(path))
    cases = {}
    for suite in xml:
        assert suite.name.startswith("conformance.")
        for case in suite:
            cases[case.name] = (suite.name.removeprefix("conformance."), case)
    assert sorted(cases) == sorted(r.id for r in results)
    for result in results:
        phase, case = cases[result.id]
        assert phase == result.phase
        kinds = [type(r) for r in case.result]
        if result.status == "pass":
            assert case.is_passed and not kinds
        elif result.status == "skip":
            assert kinds == [Skipped] and case.result[0].message == result.reason
        else:
            assert kinds == [Failure]
            assert case.result[0].message == result.findings[0].line()
            assert all(f.line() in case.result[0].text for f in result.findings)
    counts = report.counts()
    assert (xml.tests, xml.failures, xml.skipped) == (len(results), counts["fail"], counts["skip"])


def test_a_skipped_step_is_not_a_pass() -> None:
    ok = StepResult("static", "schema", "pass", "valid")
    assert Report("x", [ok]).passed
    assert not Report("x", [ok, StepResult("live", "fleet", "skip", "left out")]).passed
    assert not Report("x", []).passed, "a run that checked nothing does not pass"


def test_the_text_report_shows_each_finding_with_its_path_and_fix() -> None:
    finding = Finding("slurm-cluster.nodesets.gpu", "no node matches", "set a selector")
    text = render_text(
        Report("v", [StepResult("live", "placement", "fail", "1 NodeSet", [finding])])
    )
    assert "FAIL  placement" in text
    assert "slurm-cluster.nodesets.gpu: no node matches; fix: set a selector" in text
    assert text.rstrip().endswith("0 passed, 1 failed, 0 skipped: v does NOT conform")


def _step(name: str, run: object, *needs: str, after: tuple[str, ...] = ()) -> Step:
    return Step("static", name, run, needs, after)  # type: ignore[arg-type]


def test_a_step_whose_need_failed_is_skipped_naming_it(tmp_path: Path) -> None:
    ran: list[str] = []

    def finds(_: Context) -> Outcome:
        ran.append("a")
        return Outcome("checked", [Finding("x.y", "wrong", "right")])

    def cannot(_: Context) -> Outcome:
        raise StepFailed("the control plane did not start: port in use")

    def skips(_: Context) -> Outcome:
        raise StepSkipped("accounting is off")

    def after(_: Context) -> Outcome:
        ran.append("d")
        return Outcome("fine")

    def gives_up(_: Context) -> Outcome:
        raise ControlPlaneError("kubectl get secret k failed: NotFound")

    target = resolve([], chart="slurm-cluster")
    report = run_steps(
        Context(target, tmp_path, "1.36"),
        [
            _step("a", finds),
            _step("b", cannot),
            _step("c", skips),
            _step("d", after, "static/a"),
            _step("e", after, "static/c"),
            _step("f", after),
            _step("g", gives_up),
            _step("h", after, after=("static/a",)),
            _step("i", after, after=("live/left-out",)),
            _step("j", after, "live/left-out"),
        ],
        "s",
    )
    got = [(r.name, r.status, r.reason) for r in report.results]
    assert got == [
        ("a", "fail", "checked"),
        ("b", "fail", "the control plane did not start: port in use"),
        ("c", "skip", "accounting is off"),
        ("d", "skip", "needs static/a (fail)"),
        ("e", "skip", "needs static/c (skip)"),
        ("f", "pass", "fine"),
        ("g", "fail", "kubectl get secret k failed: NotFound"),
        ("h", "skip", "needs static/a (fail)"),
        ("i", "pass", "fine"),
        ("j", "skip", "needs live/left-out (not run)"),
    ]
    assert ran == ["a", "d", "d"]


@pytest.mark.parametrize(
    ("parts", "text"),
    [
        (("nodesets", "gpu", "podSpec", "nodeSelector", "nvidia.com/gpu.product"),
         'nodesets.gpu.podSpec.nodeSelector["nvidia.com/gpu.product"]'),
        (("slurm-cluster", "partitions", "all", "nodesets", 0),
         "slurm-cluster.partitions.all.nodesets[0]"),
        (("controller", "extraConfMap", "SwitchType"), "controller.extraConfMap.SwitchType"),
    ],
)  # fmt: skip
def test_values_paths_read_as_set_paths(parts: tuple[str | int, ...], text: str) -> None:
    assert format_path(parts) == text


def test_umbrella_values_name_paths_under_their_subchart(tmp_path: Path) -> None:
    profile = REPO_ROOT / "values" / "gb200-nvl72.yaml"
    umbrella = resolve([profile])
    assert umbrella.kind == "umbrella"
    assert umbrella.path_of("slurm-cluster", "nodesets", "gb200") == "slurm-cluster.nodesets.gb200"
    merged = umbrella.chart_values("slurm-cluster")
    assert merged["nodesets"]["gb200"]["gpu"]["count"] == 4, "the profile's block"
    assert merged["topology"]["configMapRef"]["name"] == "slurm-topology", "umbrella + profile"
    assert "nodesetDefaults" in merged, "the chart's defaults underneath"
    assert list(umbrella.where("NVIDIA-GB200")) == [
        'slurm-cluster.nodesets.gb200.podSpec.nodeSelector["nvidia.com/gpu.product"]',
        'gpu-topology-labeler.topology.nodeSelector["nvidia.com/gpu.product"]',
    ]
    chart_values = tmp_path / "v.yaml"
    chart_values.write_text("nodesets:\n  gpu:\n    replicas: 2\n")
    chart = resolve([chart_values], chart="slurm-cluster")
    assert chart.path_of("slurm-cluster", "nodesets", "gpu") == "nodesets.gpu"
    assert chart.charts() == ["slurm-cluster"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"chart": "slurm"}, "--chart slurm: not one of the suite's charts"),
        ({}, "say which chart they are for with --chart NAME"),
        ({"umbrella": Path("/nonexistent")}, "no Chart.yaml there"),
    ],
)
def test_a_target_that_cannot_be_used_says_how_to_fix_it(
    tmp_path: Path, args: dict[str, object], message: str
) -> None:
    values = tmp_path / "v.yaml"
    values.write_text("nodesets: {}\n")
    with pytest.raises(TargetError, match=message):
        resolve([values], **args)  # type: ignore[arg-type]


def test_a_broken_values_file_names_its_position(tmp_path: Path) -> None:
    values = tmp_path / "v.yaml"
    values.write_text("nodesets:\n  gpu: [\n")
    with pytest.raises(TargetError, match=r"v\.yaml:3:1: not valid YAML"):
        resolve([values], chart="slurm-cluster")


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["-f", str(tmp_path / "missing.yaml")])
    assert exited.value.code == 2
    assert "missing.yaml: no such file" in capsys.readouterr().err


def test_leaving_a_phase_out_reports_it_skipped_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "r.xml"
    # the slurm phase alone: its steps need the live phase's, so nothing runs
    code = cli.main(["--chart", "slurm-cluster", "--phases", "slurm", "--junit", str(junit)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "live: not run (left out with --phases)" in out
    assert "SKIP  load (0.0s): needs live/reconcile (not run)" in out
    xml = JUnitXml.fromfile(str(junit))
    assert xml.failures == 0 and xml.skipped == xml.tests >= 2, out


def test_phases_left_out_are_not_run_not_failed(tmp_path: Path) -> None:
    """A run of the static phase alone that passed passes (exit 0), and says the other phases
    were not run: in the text and as skipped cases in JUnit, never as failures."""
    ok = StepResult("static", "schema", "pass", "valid")
    report = Report("v", [ok], not_run={"live": "left out with --phases", "slurm": "left out"})
    assert report.passed
    text = render_text(report)
    assert "live: not run (left out with --phases)" in text
    assert "slurm: not run (left out)" in text
    last = text.rstrip().splitlines()[-1]
    assert last.startswith("1 passed, 0 failed, 0 skipped: v passes the static phase")
    assert "live, slurm not run" in last and "conforms" not in last
    path = tmp_path / "r.xml"
    write_junit(report, path)
    xml = JUnitXml.fromfile(str(path))
    suites = {s.name: s for s in xml}
    assert set(suites) == {"conformance.static", "conformance.live", "conformance.slurm"}
    (case,) = list(suites["conformance.live"])
    assert [type(r) for r in case.result] == [Skipped]
    assert case.result[0].message == "not run: left out with --phases"
    assert (xml.tests, xml.failures, xml.skipped) == (3, 0, 2)
    failed = Report("v", [StepResult("static", "schema", "fail", "x", [Finding("a", "b", "c")])])
    failed.not_run = {"live": "left out"}
    assert not failed.passed and render_text(failed).rstrip().endswith("v does NOT conform")


def _noxfile_function(name: str) -> Callable[..., Any]:
    """A function of noxfile.py, compiled alone (the test venv has no nox to import it with)."""
    tree = ast.parse((REPO_ROOT / "noxfile.py").read_text())
    (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    space: dict[str, Any] = {}
    exec(compile(ast.Module([node], []), "noxfile.py", "exec"), space)
    return cast("Callable[..., Any]", space[name])


@pytest.mark.parametrize(
    ("args", "builds"),
    [
        ([], True),
        (["-f", "v.yaml"], True),
        (["--phases", "static"], False),
        (["--phases=static", "-f", "v.yaml"], False),
        (["--phases", "static,live"], True),
        (["--phases", "slurm"], True),
    ],
)
def test_nox_conformance_builds_nothing_for_the_static_phase(args: list[str], builds: bool) -> None:
    assert _noxfile_function("conformance_builds")(args) is builds


def test_readme_documents_every_option_of_the_command() -> None:
    """README's "Conformance of your own values" names every option the command takes, and says
    what ``--phases static`` does (the quick CI gate: no control plane, not-run phases)."""
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Conformance of your own values", 1)[1].split("\n## ", 1)[0]
    options = [
        max(action.option_strings, key=len)
        for action in cli.build_parser()._actions
        if action.option_strings and action.dest != "help"
    ]
    missing = [o for o in options if o not in section and o != "--values"]
    assert not missing, f"README does not document {missing}"
    assert "`--phases static`" in section
    assert "not run" in section and "no control plane" in section
