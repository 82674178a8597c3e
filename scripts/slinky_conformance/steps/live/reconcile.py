"""Conformance, live phase: the real operator reconciles the release (``reconcile``), and a
real slurmctld and slurmrestd answer it so that it makes NodeSet pods.
"""

from __future__ import annotations

import http.client
import time
from typing import TYPE_CHECKING

from slinky_conformance.context import Outcome, Skipped, StepFailed, say
from slinky_conformance.report import Finding
from slinky_conformance.steps.live.install import bound
from slinky_harness.build import slinky
from slinky_harness.core.errors import HarnessError, WaitTimeout
from slinky_harness.core.polling import wait_for
from slinky_harness.k8s import objects
from slinky_harness.k8s import operator as slinky_operator
from slinky_harness.slurm import release as slurm_release

if TYPE_CHECKING:
    from slinky_conformance.context import Context, Doc


RECONCILE_TIMEOUT = 90.0
ROUTED = "conformance.slinky.slurm.net/slurmrestd"
"""Annotation placement puts on each NodeSet once slurmrestd answers (it wakes the operator)."""
ACCOUNTING_KEYS = ("accountingstorage", "accountingstore", "jobacctgather", "priorityweighttres")
"""slurm.conf keys (lower case prefixes) left out of placement's slurmctld, which has no slurmdbd."""


def reconcile(ctx: Context) -> Outcome:
    cluster, _ = bound(ctx)
    operator_objects: list[Doc] = ctx.extra.get("operator_objects") or []
    if not operator_objects:
        raise Skipped(
            "the deployment has no Slurm cluster: there is nothing for the operator to reconcile"
        )
    proxy = ctx.stack.enter_context(slinky_operator.ServiceProxy())
    ctx.extra["proxy"] = proxy
    try:
        manager = ctx.stack.enter_context(
            slinky_operator.run_for_release(
                cluster, operator_objects, ctx.work / "operator", proxy=proxy
            )
        )
    except slinky.OperatorUnavailable as exc:
        raise StepFailed(f"the operator manager did not start: {exc}") from None
    ctx.extra["manager"] = manager
    controller = next((d for d in ctx.objects if d.get("kind") == "Controller"), None)
    if controller is None:
        return Outcome(
            "the operator runs as its chart's ServiceAccount; the release has no Controller",
            _log_findings(ctx),
        )
    name, namespace = (
        controller["metadata"]["name"],
        controller["metadata"].get("namespace") or ctx.target.namespace,
    )
    external = bool(controller["spec"].get("external"))
    wanted: set[str] = set()
    if not external:  # the partitions slurm.conf must hold, read as the slurm phase reads them
        values = ctx.target.chart_values("slurm-cluster")
        wanted = {str(p) for p in slurm_release.expected_partitions(values)}
    try:
        config = objects.wait_controller_config(
            cluster,
            name,
            namespace,
            partitions=wanted,
            external=external,
            alive=lambda: _alive(manager),
            timeout=RECONCILE_TIMEOUT,
        )
    except WaitTimeout as exc:
        problems = manager.problems(ignore=slinky_operator.EXPECTED_LOG_NOISE)
        raise StepFailed(
            f"the operator did not write what Controller {namespace}/{name} needs in "
            f"{RECONCILE_TIMEOUT:.0f}s ({exc}); operator log {manager.log_path}"
            + (f": {problems[0][:300]}" if problems else "")
        ) from None
    slurm_conf = objects.slurm_conf(config)
    ctx.slurm_files = slinky_operator.slurmctld_files(
        cluster, namespace, controller["spec"], slurm_conf
    )
    ctx.extra.update(
        controller=controller,
        namespace=namespace,
        slurm_conf=slurm_conf,
        nodesets=[] if external else [d for d in ctx.objects if d.get("kind") == "NodeSet"],
    )
    parts = (
        f"partitions {', '.join(sorted(wanted))}"
        if wanted
        else "no partitions (external slurmctld)"
        if external
        else "no partitions"
    )
    return Outcome(
        f"the operator {slinky.VERSION} (as its chart's ServiceAccount, past its webhook) wrote "
        f"ConfigMap {namespace}/{name}-config with {parts}",
        _log_findings(ctx),
    )


def _log_findings(ctx: Context) -> list[Finding]:
    """RBAC denials and schema errors in the operator's and webhook's logs."""
    findings = []
    for what in ("manager", "webhook"):
        process = ctx.extra.get(what)
        if process is None:
            continue
        problems = process.problems(ignore=slinky_operator.EXPECTED_LOG_NOISE)
        if problems:
            findings.append(Finding(
                "", f"the operator's {what} logged {len(problems)} RBAC or schema problems "
                f"({process.log_path}); first: {problems[0][:300]}",
                "give the operator the RBAC and namespaces it needs (slurm-operator's rbac and watch values)",
            ))  # fmt: skip
    return findings


def _alive(manager: slinky_operator.Manager) -> None:
    if not manager.alive():
        raise StepFailed(
            f"the operator manager exited ({manager.proc.returncode}): {manager.tail(600)}"
        )


def _wait_http(port: int, timeout: float = 60.0) -> None:
    """Wait until slurmrestd on ``port`` answers an HTTP request (any status): it accepts
    connections before it serves them, and a request sent then waits out the operator's
    client time-out (30 s)."""

    def answers() -> bool:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            conn.request("GET", "/slurm/v0.0.44/ping")
            return conn.getresponse().status > 0
        except OSError:
            return False
        finally:
            conn.close()

    try:
        wait_for(answers, timeout=timeout, what="slurmrestd to answer", every=0.2)
    except HarnessError as exc:
        raise StepFailed(f"slurmrestd did not answer HTTP on 127.0.0.1:{port}: {exc}") from None


def start_slurmrestd(ctx: Context) -> None:
    """A real slurmctld and slurmrestd on the operator's files, reachable under the RestApi's
    Service name: the operator asks slurmrestd before it makes NodeSet pods."""
    from slinky_harness.slurm import ctld as slurm  # noqa: PLC0415 - the chroot, only here

    restapi = next((d for d in ctx.objects if d.get("kind") == "RestApi"), None)
    if restapi is None:
        return
    namespace = ctx.extra["namespace"]
    files = dict(ctx.slurm_files)
    # Only the operator talks to this slurmctld (accounting is the slurm phase's to prove, with
    # a slurmdbd): without one, slurmctld refuses AccountingStorageTRES=gres/gpu and the like.
    files["slurm.conf"] = "".join(
        line for line in str(files["slurm.conf"]).splitlines(keepends=True)
        if not line.lower().startswith(ACCOUNTING_KEYS)
    )  # fmt: skip
    started = time.monotonic()
    try:
        running = ctx.stack.enter_context(
            slurm.slurmctld(files, workdir=ctx.work / "placement-slurmctld")
        )
        say(f"placement: slurmctld up in {time.monotonic() - started:.1f}s")
        port = running.start_slurmrestd()
        _wait_http(port)
        say(f"placement: slurmrestd answers, {time.monotonic() - started:.1f}s")
    except HarnessError as exc:
        raise Skipped(
            "the operator makes NodeSet pods only once slurmrestd answers, and slurmctld did not "
            f"start on the operator's slurm.conf (the slurm phase says why): {str(exc).splitlines()[0]}"
        ) from None
    ctx.extra["slurmctld"] = running
    proxy: slinky_operator.ServiceProxy = ctx.extra["proxy"]
    service = f"{restapi['metadata']['name']}-restapi.{namespace}:6820"
    proxy.route(service, port)
    # Unrouted before slurmctld stops: the operator's calls then get "no route", not a
    # connection the proxy cannot make.
    ctx.stack.callback(proxy.routes.pop, service, None)
    # The operator deletes a healthy pod whose Slurm node is not registered (kwok runs no
    # slurmd): register each StatefulSet-mode pod's node first, as its slurmd would.
    for nodeset in ctx.extra.get("nodesets") or []:
        replicas = int(nodeset["spec"].get("replicas") or 0)
        if nodeset["spec"].get("scalingMode") != "DaemonSet" and replicas:
            short = slinky_operator.slurm_nodeset_name(nodeset)
            running.create_node(f"{short}-[0-{replicas - 1}]", Features=short)
    say(f"placement: Slurm nodes registered, {time.monotonic() - started:.1f}s")
    # The operator has been retrying each NodeSet with a growing back-off since it started; an
    # update of the NodeSet queues it at once.
    cluster, _ = bound(ctx)
    for nodeset in ctx.extra.get("nodesets") or []:
        cluster.kubectl(
            "annotate", "--overwrite", "nodesets.slinky.slurm.net", nodeset["metadata"]["name"],
            "-n", nodeset["metadata"].get("namespace") or namespace, f"{ROUTED}={port}",
        )  # fmt: skip
