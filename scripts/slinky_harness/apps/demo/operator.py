"""Demo step 4: the real Slinky operator manager as the chart's ServiceAccount, until it has
written the Controller's slurm.conf."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

import yaml

from slinky_harness.apps.demo import (
    OPERATOR,
    DemoError,
)
from slinky_harness.build import slinky
from slinky_harness.k8s import objects
from slinky_harness.k8s import operator as slinky_operator

if TYPE_CHECKING:
    import contextlib
    from collections.abc import Sequence
    from pathlib import Path

    from slinky_harness.apps.demo.install import Installer
    from slinky_harness.k8s.cluster import Cluster


OPERATOR_SKIPPED = (
    "operator: NOT RUN (--no-operator), so nothing reconciles Controller/NodeSet, its pods are "
    "kwok fakes and the slurm.conf below is the harness's, not the operator's"
)


OPERATOR_LOG_NOISE = ("no such host", "connection refused", "context canceled")
"""Operator log lines that are expected under kwok: nothing serves slurmrestd, so the NodeSet
reconcile stops at its first Slurm call."""


OPERATOR_TIMEOUT = 60.0


@dataclass
class OperatorRun:
    """The operator's manager running for the slurm-operator release, and what it wrote."""

    manager: slinky_operator.Manager
    source: str
    identity: str
    account: str
    config_map: str = ""
    statefulset: str = ""
    slurm_conf: str = ""


def whoami(cluster: Cluster, kubeconfig: Path) -> str:
    """The user the API server authenticates for ``kubeconfig`` (``kubectl auth whoami``)."""
    proc = subprocess.run(
        [
            str(cluster.bindir / "kubectl"),
            f"--kubeconfig={kubeconfig}",
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
        capture_output=True,
        text=True,
        env=cluster.env(),
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        raise DemoError(
            f"kubectl auth whoami with the operator's kubeconfig: {proc.stderr.strip()}"
        )
    return proc.stdout.strip()


def start_operator(
    installer: Installer, stack: contextlib.ExitStack, bindir: Path, workdir: Path
) -> OperatorRun:
    """Run the manager for the installed slurm-operator release; it stops when ``stack`` closes."""
    release, namespace = OPERATOR
    text = installer.helm("get", "manifest", release, "--namespace", namespace)
    manifest = [d for d in yaml.safe_load_all(text) if d]
    try:
        manager = stack.enter_context(
            slinky_operator.run_for_release(installer.cluster, manifest, workdir)
        )
    except slinky.OperatorUnavailable as exc:
        raise DemoError(f"operator: {exc}") from exc
    accounts = {
        f"system:serviceaccount:{d['metadata']['namespace']}:{d['metadata']['name']}"
        for d in manifest
        if d.get("kind") == "ServiceAccount"
    }
    identity = whoami(installer.cluster, workdir / "kubeconfig.yaml")
    if identity not in accounts:
        raise DemoError(
            f"operator: runs as {identity!r}, not as one of the chart's ServiceAccounts "
            f"{sorted(accounts)}"
        )
    return OperatorRun(
        manager=manager,
        source=slinky.source(),
        identity=identity,
        account=identity.rsplit(":", 1)[-1],
    )


def wait_for_operator(
    cluster: Cluster, run: OperatorRun, controller: str, nodesets: Sequence[str], namespace: str
) -> None:
    """Wait until the operator has written the Controller's ConfigMap (with a ``NodeSet=`` line per
    Slurm NodeSet) and StatefulSet; keep the ConfigMap's slurm.conf in ``run``."""
    config_map = f"{controller}-config"
    statefulset = f"{controller}-controller"

    def alive() -> None:
        if not run.manager.alive():
            raise DemoError(
                f"operator: the manager exited ({run.manager.proc.returncode}); "
                f"see {run.manager.log_path}"
            )

    config = objects.wait_controller_config(
        cluster, controller, namespace, nodesets=nodesets, alive=alive, timeout=OPERATOR_TIMEOUT
    )
    run.slurm_conf = objects.slurm_conf(config)
    owners = {o["kind"] for o in config["metadata"].get("ownerReferences") or []}
    if "Controller" not in owners:
        raise DemoError(f"ConfigMap {namespace}/{config_map} is not owned by a Controller")
    run.config_map = f"{namespace}/{config_map}"
    run.statefulset = f"{namespace}/{statefulset}"


def operator_line(run: OperatorRun, slurm_loaded: bool) -> str:
    """The report's operator line, after checking its log: no RBAC denial, no schema error."""
    if not run.manager.alive():
        raise DemoError(
            f"operator: the manager exited ({run.manager.proc.returncode}); "
            f"see {run.manager.log_path}"
        )
    problems = run.manager.problems(ignore=OPERATOR_LOG_NOISE)
    if problems:
        raise DemoError(
            f"operator: {len(problems)} RBAC or schema problems in {run.manager.log_path}; "
            f"first: {problems[0]}"
        )
    log = run.manager.log_path.read_text(errors="replace").splitlines()
    noise = sum(1 for line in log if any(n in line for n in OPERATOR_LOG_NOISE))
    loaded = (
        "its slurm.conf is the one slurmctld loads below"
        if slurm_loaded
        else "slurmctld not started (--no-slurm)"
    )
    return (
        f"operator: RAN the Slinky slurm-operator {slinky.VERSION} manager, built from "
        f"{run.source}, as {run.identity} (the chart's ServiceAccount {run.account}: TokenRequest "
        f"token, the chart Deployment's args); {len(log)} log lines, no RBAC denial or schema "
        f"error ({noise} expected slurmrestd-unreachable lines under kwok); it wrote ConfigMap "
        f"{run.config_map} (owner: the Controller) and StatefulSet {run.statefulset}; {loaded}"
    )
