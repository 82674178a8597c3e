"""The state one conformance run shares between its steps, and the step runner.

A step is a function of the :class:`Context` that returns an :class:`Outcome` (a one-line reason
and its findings: any finding fails the step), raises :class:`Skipped` (it cannot apply, with the
reason) or raises :class:`StepFailed` (it could not check: the control plane did not start, say;
the message says why; any other harness error fails the step the same way). Each step names the
steps it needs; a step whose needs did not pass is skipped with the reason, so one broken values
file gives one clear failure, not a cascade. ``after`` names steps that must have passed when
the run includes them (a phase run alone with ``--phases`` does not wait for them).
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slinky_conformance.report import Finding, Report, StepResult
from slinky_harness.core.errors import HarnessError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from slinky_conformance.target import Target
    from slinky_harness.helm.client import Helm
    from slinky_harness.k8s.cluster import Cluster

Doc = dict[str, Any]


class Skipped(HarnessError):
    """The step does not apply; the message is the reason."""


class StepFailed(HarnessError):
    """The step could not check (not a finding about the values); the message says why."""


@dataclass(frozen=True)
class Outcome:
    """What a step found: ``reason`` says what held (or, with findings, what failed)."""

    reason: str
    findings: list[Finding] = field(default_factory=list)
    details: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Step:
    """A named check of ``phase``; ``needs``: ids (``phase/name``) that must have passed;
    ``after``: ids that must have passed if this run includes them."""

    phase: str
    name: str
    run: Callable[[Context], Outcome]
    needs: tuple[str, ...] = ()
    after: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.phase}/{self.name}"


@dataclass
class Context:
    """The run's inputs and what earlier steps left for later ones."""

    target: Target
    work: Path
    kube_version: str
    fabric: Path | None = None
    nodes: Path | None = None
    keep: bool = False
    # objects the user's cluster already has (--existing): Secrets, Services, namespaces
    existing: list[Doc] = field(default_factory=list)
    stack: contextlib.ExitStack[Any] = field(default_factory=contextlib.ExitStack)
    # static: the Helm 4 render of the target (every document), and its NOTES.txt
    rendered: list[Doc] = field(default_factory=list)
    notes: str = ""
    # live: the control plane, a Helm bound to it, the release's objects as installed
    cluster: Cluster | None = None
    helm: Helm | None = None
    objects: list[Doc] = field(default_factory=list)
    # live -> slurm: the files slurmctld reads (name -> text), as the operator wrote them
    slurm_files: dict[str, Any] = field(default_factory=dict)
    # lines printed after the report (--keep: how to reach the control plane and stop it)
    epilogue: list[str] = field(default_factory=list)
    # what the verdict does not cover, said in the summary and the JUnit report
    caveats: list[str] = field(default_factory=list)
    # anything else a phase hands the next one
    extra: dict[str, Any] = field(default_factory=dict)


def say(message: str) -> None:
    """A progress line on standard error (the report itself goes to standard output)."""
    print(f"conformance: {message}", file=sys.stderr, flush=True)


def run_steps(ctx: Context, steps: Sequence[Step], subject: str) -> Report:
    """Run ``steps`` in order; a step whose needs did not all pass is skipped."""
    report = Report(subject)
    status: dict[str, str] = {}
    planned = {step.id for step in steps}
    for step in steps:
        missing = [n for n in step.needs if status.get(n) != "pass"]
        missing += [n for n in step.after if n in planned and status.get(n) != "pass"]
        if missing:
            why = ", ".join(f"{n} ({status.get(n, 'not run')})" for n in missing)
            result = StepResult(step.phase, step.name, "skip", f"needs {why}")
        else:
            say(f"{step.id} ...")
            started = time.monotonic()
            try:
                outcome = step.run(ctx)
            except Skipped as exc:
                result = StepResult(step.phase, step.name, "skip", str(exc))
            except HarnessError as exc:  # StepFailed, or a harness part that gave up
                result = StepResult(step.phase, step.name, "fail", str(exc))
            else:
                result = StepResult(
                    step.phase,
                    step.name,
                    "fail" if outcome.findings else "pass",
                    outcome.reason,
                    list(outcome.findings),
                    list(outcome.details),
                )
            result.seconds = time.monotonic() - started
            say(f"{step.id}: {result.status} ({result.seconds:.1f}s)")
        status[step.id] = result.status
        report.results.append(result)
    return report
