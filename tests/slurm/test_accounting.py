"""Accounting with real slurmdbd 26.05 and MariaDB, configured from what slurm-cluster renders.

slurmdbd runs the slurmdbd.conf the Slinky operator writes for the rendered ``Accounting`` object
(:func:`slinky_harness.slurm.dbd_conf.operator_slurmdbd_conf`), with the chart's storage settings and the
database password Secret; slurmctld runs with ``accounting_storage/slurmdbd`` on the chart's
slurm.conf lines. Also: a user's first job with the chart's defaults (no account created first).
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.slurm import scheduling_support as sched

from slinky_harness.core.polling import wait_for
from slinky_harness.helm.values import merge
from slinky_harness.slurm.ctld import SlurmCommandError, slurmctld
from slinky_harness.slurm.dbd import mariadb, release_accounting
from slinky_harness.slurm.dbd_conf import AccountingSpec, operator_slurmdbd_conf

if TYPE_CHECKING:
    from pathlib import Path

    from tests.slurm.conftest import ClusterFactory

    from slinky_harness.slurm.dbd import MariaDB

CI = sched.CHART / "ci"
ACCOUNTING_ON: dict[str, Any] = {"accounting": {"enabled": True}}
"""The chart's defaults plus accounting (storage settings and password Secret name: defaults)."""
ENFORCING = {"associations", "limits", "qos", "safe"}
"""``AccountingStorageEnforce`` flags that need an association before a user's first job
(``limits``, ``qos`` and ``safe`` imply ``associations``)."""


def ci_values(name: str) -> dict[str, Any]:
    data = yaml.safe_load((CI / f"{name}-values.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_mariadb_is_private_and_provisions_the_chart_storage(
    slurm_root: Path, tmp_path: Path
) -> None:
    with mariadb(root=slurm_root, workdir=tmp_path / "db") as db:
        assert db.alive()
        assert db.socket.is_socket()
        assert db.sql("SELECT 1").strip() == "1"
        db.provision("slurm_acct_db", "slurm", "pa'ss\\word")
        db.sql("CREATE TABLE t (x INT); INSERT INTO t VALUES (7);", database="slurm_acct_db")
        db.provision("slurm_acct_db", "slurm", "other")  # again: an empty database
        assert db.sql("SHOW TABLES", database="slurm_acct_db").strip() == ""
        assert "slurm\t%" in db.sql("SELECT user, host FROM mysql.user")
    assert not db.alive()
    assert not (tmp_path / "db" / "mysqld.sock").exists(), "a clean shutdown removes the socket"


def test_slurmdbd_runs_the_operators_conf_for_the_ci_accounting_scenario(
    slurm_root: Path, slurm_db: MariaDB, tmp_path: Path
) -> None:
    values = ci_values("accounting")
    rendered = sched.render(values)
    spec = AccountingSpec.from_manifest(rendered.docs)
    storage = values["accounting"]["storageConfig"]
    password = secrets.token_urlsafe(18)
    # the user's Secret, named by the values (the chart only references it)
    given = {storage["passwordKeyRef"]["name"]: {storage["passwordKeyRef"]["key"]: password}}
    with release_accounting(
        rendered.docs, database=slurm_db, secrets_given=given, workdir=tmp_path / "dbd"
    ) as dbd:
        # what the operator writes for the chart's Accounting, before localisation
        expected = {
            "DbdHost": f"{spec.name}-accounting-0",
            "DbdPort": "6819",
            "StorageType": "accounting_storage/mysql",
            "StorageHost": storage["host"],
            "StoragePort": str(storage["port"]),
            "StorageLoc": storage["database"],
            "StorageUser": storage["username"],
            "StoragePass": password,
            **{k: str(v) for k, v in values["accounting"]["extraConfMap"].items()},
        }
        assert {k: dbd.settings.get(k) for k in expected} == expected
        assert dbd.given_conf == operator_slurmdbd_conf(spec, password)
        assert dbd.alive(), dbd.log()
        assert "slurmdbd version 26.05" in dbd.log()
        files = sched.slurm_files(rendered, sched.node_names(rendered, 1))
        with slurmctld(files, root=slurm_root, workdir=tmp_path / "ctld", accounting=dbd) as ctld:
            config = sched.show_config(ctld)
            assert config["AccountingStorageType"] == "accounting_storage/slurmdbd"
            assert config["AccountingStoragePort"] == str(dbd.port)
            clusters = ctld.sacctmgr("-n", "-P", "show", "cluster", "format=Cluster")
            assert clusters.split() == [config["ClusterName"]]
            # slurmdbd's own settings, as it reports them to sacctmgr: the chart's purge values
            dbd_config = ctld.sacctmgr("show", "configuration")
            assert "PurgeJobAfter" in dbd_config
            assert "12 months" in dbd_config.split("PurgeJobAfter", 1)[1].splitlines()[0]


def test_the_ci_accounting_scenario_runs_and_records_jobs(sched_cluster: ClusterFactory) -> None:
    """The whole scenario's slurm.conf lines (enforcement, weights, TRES weights, purge) run."""
    values = ci_values("accounting")
    with sched_cluster(values, nodes=2) as c:
        assert c.rendered.enforce() == set(values["scheduling"]["accountingEnforce"])
        # root has an association from the start (the cluster's root account)
        job = c.ctld.run_job("-N", "2", "--wrap", "true")
        assert job["JobState"] == "COMPLETED", job
        rows = _sacct_until(c, job["JobId"], ("JobID", "User", "Account", "State", "NodeList"))
        assert rows["User"] == "root"
        assert rows["Account"] == "root"
        assert c.ctld.hostnames(rows["NodeList"]) == c.nodes


def _sacct_until(c: sched.Cluster, job_id: str, fields: tuple[str, ...]) -> dict[str, str]:
    """The job's sacct record once slurmdbd has it in its final state (records arrive async)."""

    def rows() -> list[dict[str, str]]:
        return [r for r in sched.sacct_rows(c.ctld, fields, "-j", job_id) if r["JobID"] == job_id]

    def final() -> dict[str, str] | None:
        found = rows()
        done = found and found[0].get("State", "COMPLETED") not in {"PENDING", "RUNNING"}
        return found[0] if done else None

    return wait_for(
        final, timeout=30, what=f"a final sacct record of job {job_id}", every=0.2, detail=rows
    )


@pytest.mark.parametrize("preset", ["fairshare", "fifo", "none"])
def test_a_users_first_job_runs_with_the_chart_defaults(
    sched_cluster: ClusterFactory, preset: str
) -> None:
    """Item 3: accounting on, nothing else set, and a user with no account runs a first job.

    The presets enforce nothing that needs an association (``scheduling.accountingEnforce`` opts
    in); none is the default preset."""
    values: dict[str, Any] = merge(ACCOUNTING_ON, {"scheduling": {"preset": preset}})
    if preset == "none":
        values = dict(ACCOUNTING_ON)  # the chart's own default
    with sched_cluster(values, nodes=1) as c:
        assert not (c.rendered.enforce() & ENFORCING), c.rendered.extra_conf
        assert c.sacctmgr("-n", "-P", "show", "assoc", "user=alice", "format=Account") == ""
        job = c.ctld.run_job("--wrap", "true", user="alice")
        assert job["JobState"] == "COMPLETED", job
        assert job["UserId"].startswith("alice(")
        record = _sacct_until(c, job["JobId"], ("JobID", "User", "State"))
        assert record["User"] == "alice"
        sched.proof(
            f"first job [{preset}]",
            f"alice without association: {job['JobState']} on {job['NodeList']}; sacct "
            f"{record['User']} {record['State']}",
        )


def test_enforcing_associations_needs_the_readme_accounts_first(
    sched_cluster: ClusterFactory,
) -> None:
    """With ``accountingEnforce`` (here the ci scenario's flags) a user needs an association:
    the README's two ``sacctmgr`` commands are exactly what makes the first job run."""
    values = merge(ACCOUNTING_ON, {"scheduling": {"accountingEnforce": sorted(ENFORCING)}})
    with sched_cluster(values, nodes=1) as c:
        assert c.rendered.enforce() == ENFORCING
        with pytest.raises(SlurmCommandError, match="Invalid account"):
            c.submit("--wrap", "true", user="alice")
        c.sacctmgr("add", "account", "research", "Description=research", "Organization=lab")
        c.sacctmgr("add", "user", "alice", "Account=research")
        job = c.ctld.run_job("--wrap", "true", user="alice")
        assert job["JobState"] == "COMPLETED", job
        assert job["Account"] == "research"
        sched.proof("enforce associations", "alice refused (Invalid account) until the two "
                    "sacctmgr commands; then COMPLETED in account research")  # fmt: skip


def test_sacct_records_every_job(sched_cluster: ClusterFactory) -> None:
    """Every job (completed, failed, cancelled while pending) is in ``sacct`` with its user,
    account, QoS, node list and, for GPU jobs, ``gres/gpu`` in its TRES (the chart sets
    ``AccountingStorageTRES=gres/gpu`` for GPU NodeSets with accounting on)."""
    with sched_cluster(merge(ACCOUNTING_ON, sched.GPU_VALUES)) as c:
        assert c.rendered.settings["AccountingStorageTRES"] == "gres/gpu"
        gpus = c.rendered.gpus_per_node
        for account, user in (("physics", "alice"), ("chemistry", "bob")):
            c.sacctmgr("add", "account", account)
            c.sacctmgr("add", "user", user, f"Account={account}")
        c.sacctmgr("add", "qos", "high")
        n = len(c.nodes)
        # (user, account, qos, nodes, gpus per node, script, final state)
        plan = [
            ("alice", "physics", "normal", 1, 1, "true", "COMPLETED"),
            ("bob", "chemistry", "high", n, gpus, "true", "COMPLETED"),
            ("alice", "physics", "high", 1, 0, "exit 3", "FAILED"),
            ("root", "root", "normal", n, 0, "true", "COMPLETED"),
        ]
        expected: dict[str, dict[str, Any]] = {}
        for user, account, qos, nodes, per_node, script, state in plan:
            args = ["-A", account, f"--qos={qos}", "-N", str(nodes), "--wrap", script]
            if per_node:
                args.insert(0, f"--gres=gpu:{per_node}")
            job_id = c.submit(*args, user=None if user == "root" else user)
            record = c.wait(job_id, state)
            expected[job_id] = {
                "User": user, "Account": account, "QOS": qos, "State": state,
                "nodes": c.ctld.hostnames(record["NodeList"]), "gpus": nodes * per_node,
            }  # fmt: skip
            assert len(expected[job_id]["nodes"]) == nodes
        # one that never runs: cancelled while it waits for a node that is taken
        blocker = c.submit("-N", str(n), "--exclusive", "--wrap", "sleep 600")
        c.wait(blocker, "RUNNING")
        never = c.submit("-A", "physics", "--gres=gpu:1", "--wrap", "true", user="alice")
        c.cancel(never, blocker)
        c.wait(never, "CANCELLED")
        c.wait(blocker, "CANCELLED")
        expected[never] = {"User": "alice", "Account": "physics", "QOS": "normal",
                           "State": "CANCELLED", "nodes": [], "gpus": 0}  # fmt: skip

        fields = ("JobID", "User", "Account", "QOS", "NodeList", "AllocTRES", "State")
        for job_id, want in expected.items():
            row = _sacct_until(c, job_id, fields)
            got = {k: row[k] for k in ("User", "Account", "QOS")}
            assert got == {k: want[k] for k in got}, row
            assert row["State"].split()[0] == want["State"], row
            listed = [] if row["NodeList"] == "None assigned" else c.ctld.hostnames(row["NodeList"])
            assert listed == want["nodes"], row
            tres = dict(kv.split("=", 1) for kv in row["AllocTRES"].split(",") if "=" in kv)
            assert int(tres.get("gres/gpu", "0")) == want["gpus"], row
            sched.proof(f"sacct job {job_id}", "|".join(row.values()))
