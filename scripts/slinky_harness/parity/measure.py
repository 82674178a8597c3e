"""Measuring: every case rendered with upstream's chart and ours, and compared.

Each case renders upstream's chart with ``helm template``; a case upstream refuses (its
``failedTemplate`` tests) is not counted. Ours renders the same values with the same release name
and namespace; a schema or template failure means "not accepted". When both render, the renders
are compared (:func:`slinky_harness.parity.compare.compare`), less the intentional differences
(:mod:`slinky_harness.parity.differences`).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from slinky_harness.core.files import write_atomic
from slinky_harness.core.paths import cache_root
from slinky_harness.helm import client
from slinky_harness.parity.compare import compare
from slinky_harness.parity.differences import load_intentional
from slinky_harness.parity.source import CHARTS, UpstreamChart, UpstreamError, upstream_chart
from slinky_harness.parity.suites import TestCase, all_cases

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from slinky_harness.parity.differences import Intentional

Status = Literal["upstream refuses", "not accepted", "equal", "different"]


@dataclass
class Outcome:
    """What one case gave: its status, why it was refused (each schema violation, else the first
    line of Helm's error), its differences, and the :attr:`Intentional.key` of every intentional
    difference that covered one of its differences."""

    case: str
    status: Status
    reasons: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    intentional: list[str] = field(default_factory=list)


@dataclass
class ChartReport:
    """Every case of one upstream chart against ours."""

    chart: str
    ours: str
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, *statuses: Status) -> int:
        return sum(1 for o in self.outcomes if o.status in statuses)

    @property
    def cases(self) -> int:
        return len(self.outcomes)

    @property
    def upstream_renders(self) -> int:
        return self.cases - self.count("upstream refuses")

    @property
    def accepted(self) -> int:
        return self.count("equal", "different")

    @property
    def equal(self) -> int:
        return self.count("equal")

    @property
    def different(self) -> int:
        return self.count("different")

    def counts(self) -> dict[str, int]:
        return {
            "cases": self.cases,
            "upstream_renders": self.upstream_renders,
            "accepted": self.accepted,
            "equal": self.equal,
            "different": self.different,
        }

    @property
    def intentionally_equal(self) -> int:
        """Equal cases that are equal only less some intentional difference."""
        return sum(1 for o in self.outcomes if o.status == "equal" and o.intentional)

    def intentional_uses(self) -> list[tuple[str, int]]:
        """Each intentional difference used, with the number of accepted cases it covered."""
        counter = collections.Counter(key for o in self.outcomes for key in o.intentional)
        return sorted(counter.items())

    def top_reasons(self, n: int = 5) -> list[tuple[str, int]]:
        """The ``n`` commonest reasons ours refuses a case, with how many cases each."""
        counter = collections.Counter(
            reason for o in self.outcomes if o.status == "not accepted" for reason in o.reasons
        )
        return counter.most_common(n)

    def as_json(self) -> dict[str, Any]:
        return {
            "chart": self.chart,
            "ours": self.ours,
            **self.counts(),
            "outcomes": [dataclasses.asdict(o) for o in self.outcomes],
        }


_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse(text: str) -> list[dict[str, Any]]:
    """Rendered documents, parsed with libyaml when PyYAML has it: our operator chart renders its
    CRDs, and the pure-Python parser would spend most of a run reading them."""
    docs = yaml.load_all(text, Loader=_FAST_LOADER)
    return [doc for doc in docs if isinstance(doc, dict)]


def _render(chart: Path, case: TestCase) -> client.HelmResult:
    """``helm template`` of ``chart`` for ``case`` (Helm's built-in API versions and the case's
    own, as helm-unittest has them); documents parsed when it succeeds."""
    with tempfile.TemporaryDirectory(prefix="upstream-values-") as tmp:
        values = Path(tmp) / "values.json"
        values.write_text(client.values_text(case.values), encoding="utf-8")
        args = ["template", case.release, str(chart), *case.helm_args(), "-f", str(values)]
        result = client.run(args)
    if result.ok:
        result.docs = _parse(result.stdout)
    return result


@dataclass(frozen=True)
class _UpstreamRenders:
    """Upstream's renders, cached in the suite cache: upstream's archive never changes, so a
    render is keyed by the archive's digest, the helm binary, the values, the release and the
    ``helm template`` options (namespace, capabilities)."""

    archive: Path
    folder: Path
    salt: str

    @classmethod
    def of(cls, archive: Path) -> _UpstreamRenders:
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        helm = client.Helm.pinned().binary.resolve()
        return cls(archive, cache_root() / "upstream-charts" / "renders", f"{digest}\0{helm}")

    def render(self, case: TestCase) -> client.HelmResult:
        parts = (self.salt, client.values_text(case.values), case.release, *case.helm_args())
        key = "\0".join(parts)
        path = self.folder / f"{hashlib.sha256(key.encode()).hexdigest()}.json"
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            result = client.HelmResult([], int(saved["rc"]), saved["stdout"], saved["stderr"])
        except (OSError, ValueError, KeyError, TypeError):
            result = _render(self.archive, case)
            if result.returncode < 0:  # helm killed by a signal (a run stopped): nothing to keep
                return result
            saved = {"rc": result.returncode, "stdout": result.stdout, "stderr": result.stderr}
            write_atomic(path, json.dumps(saved))
            return result
        if result.ok:
            result.docs = _parse(result.stdout)
        return result


def _documents(result: client.HelmResult) -> tuple[list[dict[str, Any]], list[str]]:
    """The rendered documents (possibly none), or why there are none (a non-empty list)."""
    if not result.ok:
        return [], result.refusals()
    return result.docs, []


def _parsed(
    render: Callable[[], client.HelmResult], who: str
) -> tuple[list[dict[str, Any]], list[str]]:
    try:
        return _documents(render())
    except yaml.YAMLError as exc:
        return [], [f"{who} output is not YAML: {str(exc).splitlines()[0]}"]


def measure_case(
    spec: UpstreamChart,
    upstream_renders: _UpstreamRenders,
    case: TestCase,
    intentional: Sequence[Intentional],
) -> Outcome:
    """Render ``case`` with upstream's chart and ours, and compare."""
    upstream, refused = _parsed(lambda: upstream_renders.render(case), "upstream's")
    if refused:
        return Outcome(case.id, "upstream refuses", refused)
    ours, refused = _parsed(lambda: _render(spec.our_path, case), "our")
    if refused:
        return Outcome(case.id, "not accepted", refused)
    differences: list[str] = []
    meant: set[str] = set()
    applicable = [i for i in intentional if spec.name in i.charts]
    for difference in compare(upstream, ours, deployments=spec.deployments, kept=spec.kept):
        covering = next((i for i in applicable if i.covers(difference)), None)
        if covering is None:
            differences.append(str(difference))
        else:
            meant.add(covering.key)
    return Outcome(
        case.id,
        "different" if differences else "equal",
        differences=differences,
        intentional=sorted(meant),
    )


def measure(
    chart: str,
    *,
    intentional: Sequence[Intentional] | None = None,
    workers: int | None = None,
    on_case: Callable[[Outcome], None] | None = None,
) -> ChartReport:
    """Every case of upstream's ``chart`` (see :func:`all_cases`) against ours, less the
    ``intentional`` differences (default: :func:`load_intentional` of ``differences.yaml``);
    ``workers`` renders at once (default: the number of CPUs, at most 4)."""
    if chart not in CHARTS:
        raise UpstreamError(f"unknown upstream chart {chart!r}; choose from {', '.join(CHARTS)}")
    spec = CHARTS[chart]
    meant = load_intentional() if intentional is None else intentional
    renders = _UpstreamRenders.of(upstream_chart(chart))
    cases = all_cases(chart)
    report = ChartReport(chart, spec.ours)
    pool_size = workers or min(4, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=pool_size) as pool:
        for outcome in pool.map(lambda c: measure_case(spec, renders, c, meant), cases):
            report.outcomes.append(outcome)
            if on_case is not None:
                on_case(outcome)
    return report
