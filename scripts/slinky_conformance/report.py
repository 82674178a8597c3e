"""What a conformance run found: one :class:`StepResult` per step, the terminal report and the
JUnit XML file for CI systems.

A step passes, fails or is skipped, always with a one-line reason. A failing step carries
:class:`Finding` objects: each names the values path to change (``slurm-cluster.nodesets.gpu``
in an umbrella's terms, ``nodesets.gpu`` in a chart's) and what to change it to.

The JUnit file has one ``<testsuite>`` per phase (static, live, slurm, pods) and one ``<testcase>`` per
step, named ``<phase>/<step>``: a failed step has a ``<failure>`` whose message is the first
finding and whose text lists them all, a skipped one a ``<skipped>`` with its reason. It is
written atomically: a CI system never reads half a report. A phase that ran on real pods (the
pods phase on the real node) says where in its header (``pods (on real pods on node ...):``) and in
its suite's ``real-pods`` property; the other phases ran on kwok and in a chroot.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from slinky_topology.writer import write_output

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

Status = Literal["pass", "fail", "skip"]

PHASES = ("static", "live", "slurm", "pods")
"""The phases in the order they run."""


@dataclass(frozen=True)
class Finding:
    """One problem of the user's values: ``path`` (the values path to change; "" when no value
    is at fault, e.g. a machine problem), what is wrong and what to change it to."""

    path: str
    problem: str
    fix: str

    def line(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{where}{self.problem}; fix: {self.fix}"


def unique(findings: list[Finding]) -> list[Finding]:
    """``findings`` without repeats, in their order."""
    return list(dict.fromkeys(findings))


@dataclass
class StepResult:
    """The outcome of one step: ``reason`` is one line (what held, why it was skipped, or what
    failed); ``details`` are further lines for the report (the RBAC summary, say)."""

    phase: str
    name: str
    status: Status
    reason: str
    findings: list[Finding] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def id(self) -> str:
        return f"{self.phase}/{self.name}"


@dataclass
class Report:
    """Every step's result in run order, and what the run was about."""

    subject: str
    results: list[StepResult] = field(default_factory=list)
    epilogue: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the verdict does not cover (a fleet made from the values: the user's cluster was not
    checked), on the summary line and in every JUnit suite's properties."""
    not_run: dict[str, str] = field(default_factory=dict)
    """Phases the run left out (``--phases``), each with why: they are not run, so neither a
    pass nor a failure; the verdict says the run covered only the others."""
    real_pods: dict[str, str] = field(default_factory=dict)
    """Phases that ran on real pods, each with where (the node and its container runtime)."""

    @property
    def passed(self) -> bool:
        """True when every step run passed: a skipped step is not a pass (a phase left out is no
        step of the run)."""
        return bool(self.results) and all(r.status == "pass" for r in self.results)

    def verdict(self) -> str:
        """The last words of the summary line."""
        if not self.passed:
            return "does NOT conform"
        if not self.not_run:
            return "conforms"
        ran = [
            p for p in PHASES if p not in self.not_run and any(r.phase == p for r in self.results)
        ]
        left = ", ".join(p for p in PHASES if p in self.not_run)
        return (
            f"passes the {', '.join(ran) or 'selected'} phase{'s' if len(ran) != 1 else ''} "
            f"({left} not run: not a full conformance check)"
        )

    def counts(self) -> dict[Status, int]:
        out: dict[Status, int] = {"pass": 0, "fail": 0, "skip": 0}
        for result in self.results:
            out[result.status] += 1
        return out

    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]


MARK: dict[Status, str] = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}


def render_text(report: Report) -> str:
    """The terminal report: a line per step, then its findings and details indented."""
    lines = [f"Conformance of {report.subject}"]
    phase = ""
    for result in report.results:
        if result.phase != phase:
            phase = result.phase
            where = report.real_pods.get(phase)
            lines.append(f"{phase} (on {where}):" if where else f"{phase}:")
        lines.append(
            f"  {MARK[result.status]}  {result.name} ({result.seconds:.1f}s): {result.reason}"
        )
        lines.extend(f"        - {finding.line()}" for finding in result.findings)
        lines.extend(f"        {detail}" for detail in result.details)
    lines.extend(f"{phase}: not run ({why})" for phase, why in report.not_run.items())
    lines.extend(f"NOTE: {note}" for note in report.notes)
    counts = report.counts()
    caveat = "".join(f"; {head}" for head in dict.fromkeys(n.split(":")[0] for n in report.notes))
    lines.append(
        f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped: "
        f"{report.subject} {report.verdict()}{caveat}"
    )
    lines.extend(report.epilogue)
    return "\n".join(lines) + "\n"


def _testcase(parent: ET.Element, result: StepResult) -> None:
    case = ET.SubElement(
        parent,
        "testcase",
        {"classname": f"conformance.{result.phase}", "name": result.id,
         "time": f"{result.seconds:.3f}"},
    )  # fmt: skip
    if result.status == "fail":
        first = result.findings[0].line() if result.findings else result.reason
        failure = ET.SubElement(case, "failure", {"message": first, "type": "finding"})
        failure.text = "\n".join([result.reason, *(f.line() for f in result.findings)])
    elif result.status == "skip":
        ET.SubElement(case, "skipped", {"message": result.reason})
    if result.details or result.status == "pass":
        out = ET.SubElement(case, "system-out")
        out.text = "\n".join([result.reason, *result.details])


def junit_xml(report: Report, phases: Sequence[str] = PHASES) -> bytes:
    """The report as JUnit XML (the common Ant/Jenkins/Surefire shape GitLab, GitHub Actions'
    reporters and Jenkins read)."""
    root = ET.Element("testsuites", {"name": f"conformance of {report.subject}"})
    total: dict[Status, int] = {"pass": 0, "fail": 0, "skip": 0}
    seconds = 0.0
    for phase in phases:
        results = [r for r in report.results if r.phase == phase]
        if not results and phase in report.not_run:
            _not_run_suite(root, phase, report.not_run[phase])
            total["skip"] += 1
            continue
        if not results:
            continue
        failed = sum(r.status == "fail" for r in results)
        skipped = sum(r.status == "skip" for r in results)
        took = sum(r.seconds for r in results)
        suite = ET.SubElement(
            root,
            "testsuite",
            {"name": f"conformance.{phase}", "tests": str(len(results)),
             "failures": str(failed), "errors": "0", "skipped": str(skipped),
             "time": f"{took:.3f}"},
        )  # fmt: skip
        _notes(suite, report.notes, report.real_pods.get(phase, ""))
        for result in results:
            _testcase(suite, result)
        total["fail"] += failed
        total["skip"] += skipped
        total["pass"] += len(results) - failed - skipped
        seconds += took
    root.set("tests", str(sum(total.values())))
    root.set("failures", str(total["fail"]))
    root.set("errors", "0")
    root.set("skipped", str(total["skip"]))
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    text: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return text + b"\n"


def _notes(suite: ET.Element, notes: Sequence[str], real_pods: str = "") -> None:
    if notes or real_pods:
        properties = ET.SubElement(suite, "properties")
        if real_pods:
            ET.SubElement(properties, "property", {"name": "real-pods", "value": real_pods})
        for note in notes:
            ET.SubElement(properties, "property", {"name": "note", "value": note})


def _not_run_suite(root: ET.Element, phase: str, why: str) -> None:
    """A phase the run left out: one skipped case, so a CI system shows it as not run (neither
    passed nor failed)."""
    suite = ET.SubElement(
        root,
        "testsuite",
        {"name": f"conformance.{phase}", "tests": "1", "failures": "0", "errors": "0",
         "skipped": "1", "time": "0.000"},
    )  # fmt: skip
    case = ET.SubElement(
        suite, "testcase", {"classname": f"conformance.{phase}", "name": f"{phase}/(not run)",
                            "time": "0.000"},
    )  # fmt: skip
    ET.SubElement(case, "skipped", {"message": f"not run: {why}"})


def write_junit(report: Report, path: Path) -> None:
    """:func:`junit_xml` written to ``path``, atomically, through a symlink to its target (a
    FIFO or device is written as it is), as slinky-topology writes its output."""
    write_output(path, junit_xml(report).decode())
