"""What the labeler benchmark (:mod:`slinky_harness.apps.labeler_bench`) reports: its figures
(:class:`Figures`), the ratios to the baseline of the same writes with their goal (:func:`ratio`,
:func:`goal`), and what makes a run not what it claims (:func:`misses`)."""

from __future__ import annotations

from dataclasses import dataclass

GOAL_RATIO = 1.2
"""The labeler's goal against the baseline of the same writes: at most 1.2 times its time and
CPU (reported as met / not met, never an exit status)."""


def ratio(labeler: float, baseline: float) -> float | None:
    """``labeler / baseline``; ``None`` when the baseline measured nothing."""
    return labeler / baseline if baseline > 0 else None


def goal(value: float | None, target: float = GOAL_RATIO) -> str:
    """``1.10x (goal <= 1.20x: met)``, ``... not met``, or ``n/a`` without a baseline."""
    if value is None:
        return f"n/a (no baseline measured; goal <= {target:.2f}x)"
    verdict = "met" if value <= target else "not met"
    return f"{value:.2f}x (goal <= {target:.2f}x: {verdict})"


@dataclass
class Figures:
    """What the benchmark measured."""

    nodes: int
    create_seconds: float
    first_pass_seconds: float
    first_pass_reported_seconds: float
    writes: dict[str, int]
    node_writes: int
    nodes_written: int
    configmap_writes: int
    reported_writes: int
    second_pass_seconds: float
    second_pass_writes: int
    peak_memory_mib: float
    failed_requests: int
    labeler_cpu_seconds: float
    server_cpu_seconds: float
    baseline_seconds: float = 0.0
    """Wall time of the baseline process (the same writes, minimal client)."""
    baseline_writes_seconds: float = 0.0
    """The baseline's writes alone (its own clock, without the interpreter's start)."""
    baseline_cpu_seconds: float = 0.0
    baseline_server_cpu_seconds: float = 0.0
    baseline_writes: int = 0
    """Successful writes of the baseline in the audit log."""
    baseline_same_state: bool = True
    """The baseline left every node's labels and annotations as the labeler did."""

    @property
    def writes_total(self) -> int:
        return sum(self.writes.values())

    @property
    def time_ratio(self) -> float | None:
        """First pass wall time / baseline wall time."""
        return ratio(self.first_pass_seconds, self.baseline_seconds)

    @property
    def pass_ratio(self) -> float | None:
        """The labeler's own pass time / the baseline's own write time (no process start)."""
        return ratio(self.first_pass_reported_seconds, self.baseline_writes_seconds)

    @property
    def cpu_ratio(self) -> float | None:
        """CPU of the first pass / of the baseline, each with kube-apiserver's and etcd's (what
        the cluster pays for the writes)."""
        return ratio(
            self.labeler_cpu_seconds + self.server_cpu_seconds,
            self.baseline_cpu_seconds + self.baseline_server_cpu_seconds,
        )

    @property
    def client_cpu_ratio(self) -> float | None:
        """CPU of the labeler process / of the baseline process alone."""
        return ratio(self.labeler_cpu_seconds, self.baseline_cpu_seconds)

    @property
    def writes_per_node(self) -> float:
        return self.node_writes / self.nodes if self.nodes else 0.0

    def lines(self) -> list[str]:
        by_kind = ", ".join(f"{k} {v}" for k, v in sorted(self.writes.items()))
        rows = [
            ("nodes", f"{self.nodes}"),
            ("node creation seconds", f"{self.create_seconds:.1f} (set-up, not the labeler)"),
            (
                "first pass seconds",
                f"{self.first_pass_seconds:.1f} (process; its pass alone "
                f"{self.first_pass_reported_seconds:.1f})",
            ),
            (
                "baseline seconds",
                f"{self.baseline_seconds:.1f} (the same {self.baseline_writes} writes, minimal "
                "client)",
            ),
            ("time vs baseline", goal(self.time_ratio)),
            (
                "pass vs baseline writes",
                f"{_times(self.pass_ratio)} (the labeler's pass alone "
                f"{self.first_pass_reported_seconds:.1f} s, the baseline's writes alone "
                f"{self.baseline_writes_seconds:.1f} s: without either process's start)",
            ),
            (
                "CPU vs baseline",
                f"{goal(self.cpu_ratio)} (labeler + kube-apiserver + etcd "
                f"{self.labeler_cpu_seconds + self.server_cpu_seconds:.1f} s, baseline + "
                f"kube-apiserver + etcd "
                f"{self.baseline_cpu_seconds + self.baseline_server_cpu_seconds:.1f} s)",
            ),
            (
                "client CPU vs baseline",
                f"{_times(self.client_cpu_ratio)} (labeler process "
                f"{self.labeler_cpu_seconds:.1f} s, baseline process "
                f"{self.baseline_cpu_seconds:.1f} s)",
            ),
            ("writes", f"{self.writes_total} ({by_kind}; audit log)"),
            ("writes per node", f"{self.writes_per_node:.2f} ({self.nodes_written} nodes written)"),
            ("writes reported by the labeler", f"{self.reported_writes}"),
            ("failed write requests", f"{self.failed_requests}"),
            (
                "first pass CPU seconds",
                f"labeler {self.labeler_cpu_seconds:.1f}, kube-apiserver + etcd "
                f"{self.server_cpu_seconds:.1f} (2 cores shared with the machine's other work)",
            ),
            ("second pass seconds", f"{self.second_pass_seconds:.1f}"),
            ("second pass writes", f"{self.second_pass_writes}"),
            ("peak memory MiB", f"{self.peak_memory_mib:.0f} (labeler process, first pass)"),
        ]
        width = max(len(k) for k, _ in rows)
        return [f"{k:<{width}}  {v}" for k, v in rows]


def _times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def misses(fig: Figures, max_memory_mib: float = 500.0) -> list[str]:
    """What makes the run not what it claims (empty: none). Times are results, never misses: the
    ratios to the baseline are printed with their goal instead."""
    out = []
    if fig.peak_memory_mib > max_memory_mib:
        out.append(f"peak memory {fig.peak_memory_mib:.0f} MiB > {max_memory_mib:.0f} MiB")
    if fig.node_writes != fig.nodes or fig.nodes_written != fig.nodes:
        out.append(
            f"{fig.node_writes} node writes to {fig.nodes_written} nodes; "
            f"expected exactly one write to each of the {fig.nodes} nodes"
        )
    if fig.configmap_writes != 1:
        out.append(f"{fig.configmap_writes} ConfigMap writes, expected 1 (create)")
    if fig.reported_writes != fig.node_writes + fig.configmap_writes:
        out.append(
            f"the labeler reports {fig.reported_writes} writes; the audit log holds "
            f"{fig.node_writes + fig.configmap_writes}"
        )
    if fig.second_pass_writes:
        out.append(f"second pass wrote {fig.second_pass_writes} times, expected 0")
    if fig.failed_requests:
        out.append(f"{fig.failed_requests} write requests failed")
    expected = fig.node_writes + fig.configmap_writes
    if fig.baseline_writes != expected:
        out.append(
            f"the baseline made {fig.baseline_writes} writes, the labeler {expected}: "
            "the ratios compare different work"
        )
    if not fig.baseline_same_state:
        out.append("the baseline left the nodes other than the labeler did")
    return out
