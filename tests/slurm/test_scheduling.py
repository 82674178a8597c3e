"""slurm-cluster's scheduling presets and policy values, proven with real jobs (issue 18, item 2).

Every test renders charts/slurm-cluster with accounting on (real slurmdbd and MariaDB, see
``scheduling_support``), runs slurmctld on the rendered slurm.conf lines with emulated slurmd nodes
named like the NodeSet's pods, submits jobs as the chroot's ordinary users and compares what Slurm
does with what the rendered settings and the submitted jobs say it must do. Nothing expected is read
from Slurm's output first.

Nodes: two (unless a test says otherwise), ``NODE_CPUS`` CPUs and two GPUs each (``Gres=gpu:2``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from tests.slurm import scheduling_support as sched

from slinky_harness.core.polling import wait_for
from slinky_harness.core.progress import heartbeat
from slinky_harness.helm.values import merge
from slinky_harness.slurm.ctld import SlurmCommandError

if TYPE_CHECKING:
    from tests.slurm.conftest import ClusterFactory

BASE: dict[str, Any] = merge(
    {"accounting": {"enabled": True}, "scheduling": {"preset": "fairshare"}}, sched.GPU_VALUES
)
"""The ``fairshare`` preset (opt-in: the chart's default is ``none``) with accounting on and two
GPUs per node."""
SLEEP = "sleep 600"
"""A job that runs until the test cancels it (or preemption ends it)."""


def when(stamp: str) -> datetime:
    """A ``scontrol show job`` time (``2026-12-01T10:03:10``)."""
    return datetime.fromisoformat(stamp)


# --- dependencies ---------------------------------------------------------------------------------

DEPENDENCY_CASES = [
    # (dependency type, parent exits 0?, satisfiable?)
    ("afterok", True, True),
    ("afterok", False, False),
    ("afternotok", False, True),
    ("afternotok", True, False),
    ("afterany", True, True),
    ("afterany", False, True),
]


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({}, id="fairshare-preset"),
        pytest.param({"scheduling": {"preset": "fifo"}}, id="fifo-preset"),
        pytest.param(
            {"scheduling": {"dependencyParameters": {"kill_invalid_depend": False}}},
            id="kill_invalid_depend-off",
        ),
        pytest.param({"scheduling": {"preset": "none"}}, id="none-preset"),
    ],
)
def test_dependencies(sched_cluster: ClusterFactory, overrides: dict[str, Any]) -> None:
    """afterok / afternotok / afterany start exactly when their parent's outcome satisfies them;
    an unsatisfiable one is cancelled when ``DependencyParameters`` has ``kill_invalid_depend``,
    else it stays pending (DependencyNeverSatisfied); ``singleton`` waits for the same user's
    job of the same name only."""
    with sched_cluster(merge(BASE, overrides)) as c:
        kill = "kill_invalid_depend" in sched.param_list(
            c.rendered.settings.get("DependencyParameters", "")
        )
        parents = {
            ok: c.submit("--wrap", "sleep 2" if ok else "sleep 2; exit 3", user="alice")
            for ok in (True, False)
        }
        children = {
            (kind, ok): c.submit(
                f"--dependency={kind}:{parents[ok]}", "--wrap", "true", user="alice"
            )
            for kind, ok, _ in DEPENDENCY_CASES
        }
        assert c.wait(parents[True], "COMPLETED")["ExitCode"] == "0:0"
        assert c.wait(parents[False], "FAILED")["ExitCode"] == "3:0"
        for kind, ok, satisfiable in DEPENDENCY_CASES:
            job_id = children[(kind, ok)]
            if satisfiable:
                assert c.wait(job_id, "COMPLETED")["JobState"] == "COMPLETED"
            elif kill:
                record = c.wait(job_id, "CANCELLED")
                assert record["Reason"] == "DependencyNeverSatisfied", record
            else:

                def refused(j: str = job_id) -> dict[str, str] | None:
                    record = c.job(j)
                    return record if record["Reason"] == "DependencyNeverSatisfied" else None

                record = wait_for(
                    refused,
                    timeout=60.0,
                    what=f"{kind} on a parent that ended {'ok' if ok else 'failed'} to be refused",
                    every=0.2,
                )
                assert record["JobState"] == "PENDING", record
        if not kill:
            for kind, ok, satisfiable in DEPENDENCY_CASES:
                if not satisfiable:
                    c.hold_state(children[(kind, ok)], "PENDING", 3)

        # singleton: per user and job name
        first = c.submit("--job-name=solo", "--wrap", SLEEP, user="alice")
        c.wait(first, "RUNNING")
        second = c.submit("--job-name=solo", "--dependency=singleton", "--wrap", "true",
                          user="alice")  # fmt: skip
        other = c.submit("--job-name=solo", "--dependency=singleton", "--wrap", "true",
                         user="bob")  # fmt: skip
        c.wait(other, "COMPLETED")  # bob's: alice's job of that name does not hold it
        assert c.state(first) == "RUNNING"
        c.hold_state(second, "PENDING", 2)
        assert c.job(second)["Reason"] == "Dependency"
        c.cancel(first)
        first_rec = c.wait(first, "CANCELLED")
        second_rec = c.wait(second, "COMPLETED")
        assert when(second_rec["StartTime"]) >= when(first_rec["EndTime"])
        outcome = ", ".join(
            f"{kind}:{'ok' if ok else 'failed'}->{c.state(children[(kind, ok)])}"
            for kind, ok, _ in DEPENDENCY_CASES
        )
        sched.proof(
            f"dependencies {overrides or 'fairshare preset'} "
            f"(kill_invalid_depend={'on' if kill else 'off'})",
            f"{outcome}; singleton: bob's ran beside alice's, alice's second started "
            f"{second_rec['StartTime']} >= first ended {first_rec['EndTime']}",
        )


# --- limits and enforcement --------------------------------------------------------------------------

LIMIT_ACCOUNTS = {
    # account: (association limits, users)
    "vision": ("GrpTRES=gres/gpu=2", ("alice", "bob")),
    "batch": ("MaxJobs=1", ("carol",)),
    "tiny": ("GrpTRESMins=cpu=1", ("dave",)),
}


@pytest.mark.parametrize(
    "enforce",
    [
        pytest.param(["associations", "limits", "qos", "safe"], id="ci-accounting-flags"),
        pytest.param(["associations", "limits"], id="associations-limits"),
    ],
)
def test_limits(sched_cluster: ClusterFactory, enforce: list[str]) -> None:
    """Per-account ``GrpTRES`` (GPUs) and ``MaxJobs`` hold while other GPUs and CPUs are free;
    with ``safe`` a job that could exceed ``GrpTRESMins`` never starts; with ``qos`` a QoS the
    association does not list is refused at submission."""
    with sched_cluster(merge(BASE, {"scheduling": {"accountingEnforce": enforce}})) as c:
        flags = c.rendered.enforce()
        assert flags == set(enforce)
        c.sacctmgr("add", "qos", "high")
        limits: dict[str, dict[str, int]] = {}
        for account, (limit, users) in LIMIT_ACCOUNTS.items():
            c.sacctmgr("add", "account", account, limit)
            for user in users:
                c.sacctmgr("add", "user", user, f"Account={account}")
            key, _, value = limit.partition("=")
            limits[account] = {key: int(value.rsplit("=", 1)[-1])}
        gpus_total = c.rendered.gpus_per_node * len(c.nodes)

        # GrpTRES=gres/gpu: alice takes the account's GPUs; bob's one more GPU waits (free ones exist)
        grp_gpus = limits["vision"]["GrpTRES"]
        first = c.submit("-A", "vision", f"--gres=gpu:{grp_gpus}", "--wrap", SLEEP, user="alice")
        assert c.wait(first, "RUNNING")["JobState"] == "RUNNING"
        over = c.submit("-A", "vision", "--gres=gpu:1", "--wrap", SLEEP, user="bob")
        assert grp_gpus + 1 > grp_gpus and gpus_total - grp_gpus >= 1  # limit, not resources
        wait_for(
            lambda: c.job(over)["Reason"] == "AssocGrpGRES",
            timeout=60.0,
            what="AssocGrpGRES",
            every=0.2,
        )
        c.hold_state(over, "PENDING", 2)

        # MaxJobs=1: carol's second job waits while a CPU is free
        max_jobs = limits["batch"]["MaxJobs"]
        running = [c.submit("-A", "batch", "--wrap", SLEEP, user="carol") for _ in range(max_jobs)]
        for job_id in running:
            c.wait(job_id, "RUNNING")
        extra = c.submit("-A", "batch", "--wrap", SLEEP, user="carol")
        wait_for(
            lambda: c.job(extra)["Reason"] == "AssocMaxJobsLimit",
            timeout=60.0,
            what="AssocMaxJobsLimit",
            every=0.2,
        )
        c.hold_state(extra, "PENDING", 2)

        # GrpTRESMins=cpu=1: a 2 CPU-minute job could exceed it; "safe" never starts it
        cpu_minutes = limits["tiny"]["GrpTRESMins"]
        big = c.submit("-A", "tiny", "-n", "1", "-t", str(cpu_minutes + 1), "--wrap", "true",
                       user="dave")  # fmt: skip
        if "safe" in flags:
            wait_for(
                lambda: c.job(big)["Reason"] == "AssocGrpCPUMinutesLimit",
                timeout=60.0,
                what="AssocGrpCPUMinutesLimit",
                every=0.2,
            )
            c.hold_state(big, "PENDING", 2)
            c.cancel(big)
        else:
            assert c.wait(big, "COMPLETED")["JobState"] == "COMPLETED"
        fits = c.submit("-A", "tiny", "-n", "1", "-t", str(cpu_minutes), "--wrap", "true",
                        user="dave")  # fmt: skip
        assert c.wait(fits, "COMPLETED")["JobState"] == "COMPLETED"

        # a QoS that alice's association does not list
        if "qos" in flags:
            with pytest.raises(SlurmCommandError, match="Invalid qos specification"):
                c.submit("-A", "vision", "--qos=high", "--wrap", "true", user="alice")
            c.sacctmgr("modify", "user", "alice", "set", "QOS+=high")  # the README's command
            job_id = c.submit("-A", "vision", "--qos=high", "--wrap", "true", user="alice")
            assert c.wait(job_id, "COMPLETED")["QOS"] == "high"
        else:
            job_id = c.submit("-A", "vision", "--qos=high", "--wrap", "true", user="alice")
            assert c.wait(job_id, "COMPLETED")["QOS"] == "high"

        sched.proof(
            f"limits {sorted(flags)}",
            f"GrpTRES gres/gpu={grp_gpus}: bob's +1 GPU PENDING ({c.job(over)['Reason']}) with "
            f"{gpus_total - grp_gpus} GPUs free; MaxJobs={max_jobs}: carol's next PENDING "
            f"({c.job(extra)['Reason']}); GrpTRESMins cpu={cpu_minutes}: a "
            f"{cpu_minutes + 1} CPU-min job {'held (safe)' if 'safe' in flags else 'ran'}",
        )
        # the limits free up with the jobs that held them
        c.cancel(first, *running)
        assert c.wait(over, "RUNNING")["JobState"] == "RUNNING"
        assert c.wait(extra, "RUNNING")["JobState"] == "RUNNING"
        c.cancel(over, extra)


# --- QoS preemption ------------------------------------------------------------------------------

PREEMPT_STATES = {"REQUEUE": "PENDING", "CANCEL": "PREEMPTED", "SUSPEND": "SUSPENDED"}
"""``PreemptMode`` (first word) -> the preempted job's state."""


def exempt_seconds(value: str) -> int:
    """``PreemptExemptTime`` (``HH:MM:SS``, ``MM:SS``; empty or -1: none) in seconds."""
    if value in {"", "-1"}:
        return 0
    total = 0
    for part in value.split(":"):
        total = total * 60 + int(part)
    return total


@pytest.mark.parametrize(
    ("scheduling", "low_memory"),
    [
        pytest.param({}, sched.JOB_MEMORY, id="preset-REQUEUE"),
        pytest.param(
            {"preemption": {"mode": "CANCEL", "exemptTime": "00:00:15"}},
            sched.JOB_MEMORY,
            id="CANCEL-exempt-15s",
        ),
        pytest.param({"preemption": {"mode": "SUSPEND,GANG"}}, sched.JOB_MEMORY, id="SUSPEND-GANG"),
        pytest.param(
            {"preemption": {"mode": "SUSPEND,GANG"}}, None, id="SUSPEND-GANG-whole-node-memory"
        ),
        pytest.param({"preset": "fifo"}, sched.JOB_MEMORY, id="fifo-preset"),
        pytest.param({"preset": "none"}, sched.JOB_MEMORY, id="none-preset"),
    ],
)
def test_qos_preemption(
    sched_cluster: ClusterFactory, scheduling: dict[str, Any], low_memory: str | None
) -> None:
    """With ``preempt/qos``, a job of a QoS whose ``Preempt`` lists ``low`` preempts a running
    ``low`` job in the rendered ``PreemptMode`` (not before ``PreemptExemptTime``); a job of a QoS
    without that right waits, and so does every job under a preset without ``preempt/qos``.

    SUSPEND with ``preempt/qos`` in one partition (the chart's NodeSet partition): the preemptor
    is allocated beside the suspended job and the gang scheduler time-slices the two every
    ``SchedulerTimeSlice``. A suspended job keeps its memory, so a low job that holds its nodes'
    whole memory (no ``--mem``: neither chart nor operator sets ``DefMemPerCPU``) is never
    suspended. ``controller.extraConfMap.SchedulerTimeSlice: 5`` (Slurm's minimum) keeps those tests short.
    """
    values = merge(BASE, {"scheduling": scheduling})
    if "SUSPEND" in (scheduling.get("preemption") or {}).get("mode", ""):
        values = merge(values, {"controller": {"extraConfMap": {"SchedulerTimeSlice": 5}}})
    with sched_cluster(values) as c:
        settings = c.rendered.settings
        config = sched.show_config(c.ctld)
        mode = settings.get("PreemptMode", "OFF").split(",")[0]
        exempt = exempt_seconds(settings.get("PreemptExemptTime", ""))
        backfill = config["SchedulerType"] == "sched/backfill"
        params = sched.param_list(config["SchedulerParameters"].replace("(null)", ""))
        bf_interval = int(params.get("bf_interval", "30")) if backfill else 0
        time_slice = int(config["SchedulerTimeSlice"].split()[0])
        preempts = settings.get("PreemptType") == "preempt/qos" and not (
            mode == "SUSPEND" and low_memory is None
        )
        c.sacctmgr("add", "qos", "low")
        c.sacctmgr("add", "qos", "high", "Preempt=low")

        # low fills every CPU of every node
        low = c.submit("--qos=low", "-N", str(len(c.nodes)), f"--ntasks-per-node={sched.NODE_CPUS}",
                       "--wrap", SLEEP, user="alice", mem=low_memory)  # fmt: skip
        low_start = when(c.wait(low, "RUNNING")["StartTime"])
        plain = c.submit("--qos=normal", "-n", "1", "--wrap", SLEEP, user="bob")
        c.hold_state(plain, "PENDING", 5)  # normal has no Preempt: it waits for resources
        assert c.state(low) == "RUNNING"
        c.cancel(plain)

        high = c.submit("--qos=high", "-n", "1", "--wrap", SLEEP, user="bob")
        # preemption happens at once or at the next backfill pass (+ one time slice to suspend)
        window = exempt + bf_interval + (time_slice if mode == "SUSPEND" else 0)
        if not preempts:
            with heartbeat("no preemption", f"{window + 10} s of watching"):
                c.hold_state(low, "RUNNING", window + 10)
            assert c.state(high) == "PENDING"
            sched.proof(
                f"preemption {settings.get('PreemptType', '(none)')} mode {mode} "
                f"low mem {low_memory or 'whole node'}",
                f"high-QoS job PENDING, low job RUNNING for {window + 10} s",
            )
            c.cancel(high, low)
            return
        if exempt:  # exempt from preemption until low has run that long
            c.hold_state(low, "RUNNING", exempt - 3 - (time_now() - low_start).total_seconds())
        with heartbeat(f"preemption ({mode})", f"up to {window + 30} s on a 2-core machine"):
            preempted = wait_for(
                lambda: (
                    r
                    if (r := c.job(low))["JobState"] == PREEMPT_STATES[mode]
                    and c.state(high) == "RUNNING"
                    else None
                ),
                timeout=window + 30,
                what=f"the low job to be preempted ({mode}) while the high one runs",
                every=0.2,
            )
        high_start = when(c.job(high)["StartTime"])
        assert high_start >= low_start + timedelta(seconds=exempt)
        sched.proof(
            f"preemption preempt/qos mode {settings['PreemptMode']} exempt {exempt} s",
            f"normal-QoS job waited; low job {preempted['JobState']} and high RUNNING, high "
            f"started {(high_start - low_start).total_seconds():.0f} s after low started",
        )
        if mode == "REQUEUE":
            assert int(preempted["Restarts"]) >= 1, preempted
        if mode == "CANCEL":
            assert when(preempted["EndTime"]) >= low_start + timedelta(seconds=exempt)
        if mode == "SUSPEND":
            c.cancel(high)
            c.wait(low, "RUNNING")  # resumed once the preemptor is gone
        c.cancel(high, low)


def time_now() -> datetime:
    return datetime.now().replace(microsecond=0)


# --- backfill ------------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", ["fairshare", "fifo", "none"])
def test_backfill(sched_cluster: ClusterFactory, preset: str) -> None:
    """With ``sched/backfill`` a short job starts on a free node ahead of a blocked wide job of
    higher priority, within ``bf_interval``, and the wide job's planned start stays the running
    job's end; ``sched/builtin`` (fifo) keeps strict priority order and starts nothing past it.
    ``none`` renders nothing: Slurm's default scheduler applies."""
    with sched_cluster(merge(BASE, {"scheduling": {"preset": preset}})) as c:
        config = sched.show_config(c.ctld)
        scheduler = c.rendered.settings.get("SchedulerType", config["SchedulerType"])
        assert config["SchedulerType"] == scheduler
        params = sched.param_list(config["SchedulerParameters"].replace("(null)", ""))
        rendered = c.rendered.scheduler_params()
        assert {k: params.get(k) for k in rendered} == rendered
        if not c.rendered.settings:  # preset none: Slurm's defaults
            assert config["PriorityType"] == "priority/multifactor"
            assert config["PreemptType"] == "(null)" and config["PreemptMode"] == "OFF"
        bf_interval = int(params.get("bf_interval", "30"))  # Slurm's default without it
        resolution = int(params.get("bf_resolution", "60"))
        limit_min = 10
        assert limit_min <= int(params.get("bf_window", "1440")), "the plan must see the end"

        running = c.submit("-N", "1", "--exclusive", "-t", str(limit_min), "--wrap", SLEEP,
                           user="alice")  # fmt: skip
        run_rec = c.wait(running, "RUNNING")
        wide = c.submit("-N", str(len(c.nodes)), "--exclusive", "-t", str(limit_min),
                        "--wrap", SLEEP, user="alice")  # fmt: skip
        c.wait(wide, "PENDING")
        short = c.submit("-N", "1", "-t", "1", "--wrap", "sleep 5", user="alice")
        assert int(c.job(wide)["Priority"]) >= int(c.job(short)["Priority"])
        if scheduler != "sched/backfill":
            c.hold_state(short, "PENDING", 10)
            assert c.state(wide) == "PENDING"
            sched.proof(f"backfill [{preset}] {scheduler}", "short job PENDING behind the wide")
            c.cancel(running, wide, short)
            return
        with heartbeat("backfill", f"up to bf_interval={bf_interval} s"):
            short_rec = c.wait(short, "RUNNING", "COMPLETED", timeout=bf_interval + 30)
        assert short_rec["Scheduler"] == "Backfill", short_rec
        started = when(short_rec["StartTime"]) - when(short_rec["SubmitTime"])
        assert started <= timedelta(seconds=bf_interval + 10)  # one pass (+ its own run time)
        wide_rec = c.job(wide)
        assert wide_rec["JobState"] == "PENDING"
        planned = when(wide_rec["StartTime"])
        running_end = when(run_rec["StartTime"]) + timedelta(minutes=limit_min)
        assert planned <= running_end + timedelta(seconds=resolution), (wide_rec, run_rec)
        assert when(short_rec["StartTime"]) + timedelta(minutes=1) <= planned, "short ends first"
        sched.proof(
            f"backfill [{preset}] {scheduler} bf_interval={bf_interval}",
            f"short job started by {short_rec['Scheduler']} {started.total_seconds():.0f} s after "
            f"submission; wide job planned {wide_rec['StartTime']}, running job ends "
            f"{running_end.isoformat()}",
        )
        c.cancel(running, wide, short)


# --- fair share ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "enforce",
    [
        pytest.param([], id="preset-no-enforcement"),
        pytest.param(["associations", "limits", "qos", "safe"], id="ci-accounting-flags"),
    ],
)
def test_fair_share(sched_cluster: ClusterFactory, enforce: list[str]) -> None:
    """Two accounts with equal shares and different recorded usage: at slurmctld's next priority
    pass (``PriorityCalcPeriod``) the under-served account's job, submitted later, gets the higher
    priority and starts first; ``sprio`` shows the rendered weights and each job's fair-share term
    is the fair-share weight times the ``sshare`` factor of its association.

    Slurm 26.05 adds a finished job's usage at its end only when ``AccountingStorageEnforce`` has
    ``limits`` (acct_policy.c); otherwise usage is taken from running jobs at each priority pass and
    a job's time since the last pass is never counted: a short job leaves no usage at all."""
    values = merge(
        BASE,
        {"scheduling": {"priority": {"calcPeriod": "1"}, "accountingEnforce": enforce}},
    )
    with sched_cluster(values) as c:
        r = c.rendered
        assert r.settings["PriorityType"] == "priority/multifactor"
        counts_job_end = "limits" in r.enforce()
        calc_s = 60 * int(r.settings["PriorityCalcPeriod"])
        weights = {k: r.weight(k) for k in ("Age", "Fairshare", "JobSize", "Partition", "QOS")}
        assert weights["Fairshare"] > 0
        for account, user in (("physics", "alice"), ("chemistry", "bob")):
            c.sacctmgr("add", "account", account, "Fairshare=1")
            c.sacctmgr("add", "user", user, f"Account={account}")
        n = str(len(c.nodes))
        every_cpu = ("-N", n, f"--ntasks-per-node={sched.NODE_CPUS}")

        def shares() -> dict[str, dict[str, str]]:
            rows = sched.sshare_rows(c.ctld)
            return {row["User"]: row for row in rows if row.get("User") in {"alice", "bob"}}

        # a short chemistry job: its usage counts at its end only with "limits"
        c.wait(c.submit("-A", "chemistry", "-n", "1", "--wrap", "sleep 2", user="bob"),
               "COMPLETED")  # fmt: skip
        short_usage = float(shares()["bob"]["RawUsage"])
        assert (short_usage > 0) == counts_job_end, shares()["bob"]

        # physics runs on every CPU across the next priority pass; two jobs wait behind it
        usage = c.submit("-A", "physics", *every_cpu, "--wrap", SLEEP, user="alice")
        c.wait(usage, "RUNNING")
        physics = c.submit("-A", "physics", *every_cpu, "--wrap", "sleep 2", user="alice")
        chemistry = c.submit("-A", "chemistry", *every_cpu, "--wrap", "sleep 2", user="bob")

        def flipped() -> bool:
            f = shares()
            return len(f) == 2 and float(f["alice"]["FairShare"]) < float(f["bob"]["FairShare"])

        with heartbeat("fair share: waiting for slurmctld's priority pass",
                       f"up to PriorityCalcPeriod={calc_s} s"):  # fmt: skip
            wait_for(
                flipped,
                timeout=calc_s + 30,
                what="the fair-share factors to reflect physics' usage",
                every=1,
            )
            wait_for(
                lambda: int(c.job(chemistry)["Priority"]) > int(c.job(physics)["Priority"]),
                timeout=calc_s + 30,
                what="the pending jobs' priorities to be recomputed",
                every=1,
            )
        f = shares()
        assert float(f["alice"]["RawUsage"]) > float(f["bob"]["RawUsage"]) >= short_usage
        if not counts_job_end:
            assert float(f["bob"]["RawUsage"]) == 0, "the short job's usage was never counted"
        assert f["alice"]["RawShares"] == f["bob"]["RawShares"]

        shown = c.ctld.sprio("-w", "-h", "-o", "%A|%F|%J|%P|%Q").split("|")
        assert [int(float(v)) for v in shown] == list(weights.values()), shown
        rows = sched.sprio_rows(c.ctld, physics, chemistry)
        for job_id, user in ((physics, "alice"), (chemistry, "bob")):
            row = rows[job_id]
            fair = weights["Fairshare"] * float(f[user]["FairShare"])
            assert abs(row["FAIRSHARE"] - fair) <= 1, (row, f[user])
            assert row["PARTITION"] == weights["Partition"]  # one partition: factor 1
            assert row["QOS"] == 0  # normal QoS, priority 0
            assert 0 <= row["JOBSIZE"] <= weights["JobSize"]
            assert 0 <= row["AGE"] <= weights["Age"]
            terms = row["AGE"] + row["FAIRSHARE"] + row["JOBSIZE"] + row["PARTITION"] + row["QOS"]
            assert abs(row["PRIORITY"] - terms) <= 5, row
        assert rows[physics]["JOBSIZE"] == rows[chemistry]["JOBSIZE"]
        assert rows[chemistry]["PRIORITY"] > rows[physics]["PRIORITY"]

        c.cancel(usage)
        chem = c.wait(chemistry, "COMPLETED")
        phys = c.wait(physics, "COMPLETED")
        assert when(chem["StartTime"]) < when(phys["StartTime"]), (chem, phys)
        assert when(phys["StartTime"]) >= when(chem["EndTime"])
        sched.proof(
            f"fair share enforce={sorted(r.enforce())}",
            f"short job usage {short_usage:g}; RawUsage alice {f['alice']['RawUsage']} bob "
            f"{f['bob']['RawUsage']}; FairShare alice {f['alice']['FairShare']} bob "
            f"{f['bob']['FairShare']}; sprio physics {rows[physics]} chemistry "
            f"{rows[chemistry]}; chemistry started {chem['StartTime']}, physics {phys['StartTime']}",
        )


# --- priority factors ----------------------------------------------------------------------------


def job_size_factor(
    nodes: int, cpus: int, node_count: int, cluster_cpus: int, small: bool
) -> float:
    """Slurm's job-size factor (priority/multifactor, no SIZE_RELATIVE flag): the mean of the
    node and CPU fractions of the cluster, or of the unused fractions with PriorityFavorSmall."""
    if small:
        node_part = (node_count - nodes) / node_count if node_count > nodes else 0.0
        return (node_part + (cluster_cpus - cpus) / cluster_cpus) / 2
    return (nodes / node_count + cpus / cluster_cpus) / 2


@pytest.mark.parametrize(
    "priority",
    [
        pytest.param({"favorSmall": "NO", "weightTRES": "CPU=1000,Mem=2000"}, id="favor-large"),
        pytest.param(
            {
                "favorSmall": "YES",
                "weightTRES": "CPU=1000,Mem=2000",
                "flags": ["NO_NORMAL_QOS"],
                "decayHalfLife": "1-0",
                "maxAge": "2-0",
            },
            id="favor-small-NO_NORMAL_QOS",
        ),
    ],
)
def test_priority_factors(sched_cluster: ClusterFactory, priority: dict[str, Any]) -> None:
    """Each job's priority terms, as ``sprio`` shows them at submission, are the rendered weights
    times the factors the jobs ask for: job size (``PriorityFavorSmall``), TRES
    (``PriorityWeightTRES``: share of the partition's CPUs and memory), QoS (normalised by the
    highest QoS priority unless ``PriorityFlags=NO_NORMAL_QOS``); the other priority values are
    what slurmctld runs with."""
    values = merge(BASE, {"scheduling": {"priority": priority}})
    with sched_cluster(values) as c:
        r = c.rendered
        config = sched.show_config(c.ctld)
        assert config["PriorityFavorSmall"].lower() == r.settings["PriorityFavorSmall"].lower()
        for key in ("PriorityDecayHalfLife", "PriorityMaxAge"):
            days, _, hours = r.settings[key].partition("-")
            assert config[key] == f"{int(days)}-{int(hours or 0):02d}:00:00", config[key]
        flags = set(filter(None, r.settings.get("PriorityFlags", "").split(",")))
        assert flags <= set(config["PriorityFlags"].split(","))
        small_first = r.settings["PriorityFavorSmall"] == "YES"
        no_normal_qos = "NO_NORMAL_QOS" in flags
        tres_weights = dict(kv.split("=") for kv in r.settings["PriorityWeightTRES"].split(","))
        c.sacctmgr("add", "qos", "mid", "Priority=1")
        c.sacctmgr("add", "qos", "top", "Priority=2")
        qos_prio = {"mid": 1, "top": 2}
        node_count, cluster_cpus = len(c.nodes), len(c.nodes) * sched.NODE_CPUS
        total_mem = len(c.nodes) * sched.NODE_MEMORY_MB
        mem_mb = int(sched.JOB_MEMORY.removesuffix("M"))

        blocker = c.submit("-N", str(node_count), "--exclusive", "--wrap", SLEEP)
        c.wait(blocker, "RUNNING")
        jobs = {  # name: (nodes, cpus, qos, job id)
            "small": (1, 1, "mid", c.submit("-n", "1", "--qos=mid", "--wrap", "true",
                                            user="alice")),
            "big": (node_count, cluster_cpus, "top",
                    c.submit("-N", str(node_count), f"--ntasks-per-node={sched.NODE_CPUS}",
                             "--qos=top", "--wrap", "true", user="alice")),
        }  # fmt: skip
        out = c.ctld.sprio("-h", "-o", "%i|%J|%Q|%T", "-j", ",".join(j[3] for j in jobs.values()))
        shown = {line.split("|")[0]: line.split("|")[1:] for line in out.split()}
        weight_qos = r.weight("QOS")
        for nodes, cpus, qos, job_id in jobs.values():
            jobsize, qos_term, tres = shown[job_id]
            factor = job_size_factor(nodes, cpus, node_count, cluster_cpus, small_first)
            assert abs(float(jobsize) - r.weight("JobSize") * factor) <= 1, (job_id, jobsize)
            qos_factor = qos_prio[qos] if no_normal_qos else qos_prio[qos] / max(qos_prio.values())
            assert abs(float(qos_term) - weight_qos * qos_factor) <= 1, (job_id, qos_term)
            terms = dict(kv.split("=") for kv in tres.split(","))
            expected_tres = {
                "cpu": int(tres_weights["CPU"]) * cpus / cluster_cpus,
                "mem": int(tres_weights["Mem"]) * mem_mb * nodes / total_mem,
            }
            assert {k: round(float(terms[k])) for k in expected_tres} == {
                k: round(v) for k, v in expected_tres.items()
            }, (job_id, tres)
        sched.proof(f"priority factors {priority}", f"sprio JOBSIZE|QOS|TRES {shown}")
        c.cancel(blocker, *(j[3] for j in jobs.values()))
