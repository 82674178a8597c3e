"""Conformance, slurm phase, ``accounting``: the host the ``Accounting`` object names resolves;
the release's slurmdbd accepts the operator's slurmdbd.conf.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import socket
from typing import TYPE_CHECKING, Any

from slinky_conformance.context import Outcome, StepFailed
from slinky_conformance.report import Finding
from slinky_conformance.steps.slurm.state import (
    SlurmdbdRun,
    known_objects,
    not_here,
    objects_of,
    secret_of,
    state_of,
)
from slinky_conformance.target import CLUSTER
from slinky_conformance.trace import error_lines, trace
from slinky_harness.core.errors import HarnessError, WaitTimeout
from slinky_harness.core.polling import wait_for
from slinky_harness.slurm import dbd as slurmdbd
from slinky_harness.slurm.conf import DEFAULT_KEYS, read_files
from slinky_harness.slurm.dbd_conf import AccountingSpec

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from slinky_conformance.context import Context

Doc = dict[str, Any]


# -- accounting -------------------------------------------------------------------------------


def _cluster_service(ctx: Context, host: str, namespace: str) -> tuple[str, str] | None:
    """``(service, namespace)`` when ``host`` is a Kubernetes Service name (``db``,
    ``db.ns``, ``db.ns.svc``, ``db.ns.svc.cluster.local``), else None."""
    labels = host.rstrip(".").split(".")
    if len(labels) == 1:
        return labels[0], namespace
    if len(labels) >= 3 and labels[2] == "svc":
        return labels[0], labels[1]
    if len(labels) == 2:
        known = {s[1] for s in _services(ctx)}
        if labels[1] in known:
            return labels[0], labels[1]
    return None


def _services(ctx: Context) -> set[tuple[str, str]]:
    """``(name, namespace)`` of the control plane's Services (without one: of the objects)."""
    if ctx.cluster is not None:
        items = ctx.cluster.kubectl_json("get", "services", "-A")["items"]
    else:
        items = [d for d in known_objects(ctx) if d.get("kind") == "Service"]
    return {
        (str(s["metadata"]["name"]), str(s["metadata"].get("namespace") or ctx.target.namespace))
        for s in items
    }


def _resolves(host: str, port: int) -> bool:
    try:
        return bool(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
    except (OSError, UnicodeError):
        return False


def check_host(ctx: Context, host: str, port: int, namespace: str, path: str) -> tuple[
    list[Finding], str
]:  # fmt: skip
    """Does ``host`` resolve? A cluster name is looked up among the Services instead."""
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(host)
        return [], f"{host} is an address"
    service = _cluster_service(ctx, host, namespace)
    if service is not None:
        name, where = service
        if service in _services(ctx):
            return [], f"{host} is Service {where}/{name} of the cluster"
        if "." not in host and _resolves(host, port):  # localhost, or a name of the search path
            return [], f"{host} resolves (not a Service of the cluster)"
        return [
            Finding(
                path,
                f"{host} names Service {name} in namespace {where}, which neither the release "
                "nor the cluster's existing objects have",
                f"create Service {name} in namespace {where} before installing (give it to "
                "this command with --existing FILE), or name the host that serves it",
            )
        ], f"{host}: no Service {where}/{name}"
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return [
            Finding(
                path,
                f"{host} does not resolve ({reason})",
                "give a host name that resolves from the cluster (or its address); a Service "
                "of the cluster is written <service>.<namespace>.svc",
            )
        ], f"{host} does not resolve"
    first = addresses[0][4][0] if addresses else "?"
    return [], f"{host} resolves ({first})"


def accounting(ctx: Context) -> Outcome:
    """Accounting hosts resolve; an in-cluster slurmdbd accepts the operator's slurmdbd.conf and
    slurmctld registers its cluster with it."""
    found = objects_of(ctx, "Accounting")
    if not found:
        # A pass, not a skip: nothing is wrong, and a skipped step fails the run.
        return Outcome(
            f"accounting is off ({ctx.target.path_of(CLUSTER, 'accounting', 'enabled')} is not "
            "true): nothing to check"
        )
    obj = found[0]
    spec = obj.get("spec") or {}
    namespace = str((obj.get("metadata") or {}).get("namespace") or ctx.target.namespace)
    if spec.get("external"):
        external = spec.get("externalConfig") or {}
        host, port = str(external.get("host", "")), int(external.get("port") or 6819)
        path = ctx.target.path_of(CLUSTER, "accounting", "externalConfig", "host")
        findings, said = check_host(ctx, host, port, namespace, path)
        return Outcome(f"external slurmdbd: {said}", findings)
    if why := not_here(ctx):
        return Outcome(why)
    state = state_of(ctx)
    storage = AccountingSpec.from_object(obj).storage
    path = ctx.target.path_of(CLUSTER, "accounting", "storageConfig", "host")
    findings, said = check_host(ctx, storage.host, storage.port, namespace, path)
    run = state.accounting
    if run is None:
        raise StepFailed("slurm/load started no slurmdbd")
    if run.refused is not None:
        within = [("accounting", "extraConf"), ("accounting", "extraConfMap"),
                  ("accounting", "storageConfig")]  # fmt: skip
        findings += trace(
            ctx, error_lines(run.refused.log), run.refused.log, within=within, without=(),
            daemon="slurmdbd",
        )  # fmt: skip
        return Outcome(f"database host: {said}; slurmdbd refuses its configuration", findings)
    spec_ = AccountingSpec.from_object(obj)
    if run.conf is not None and run.password is not None:
        findings += [
            Finding(
                ctx.target.path_of(CLUSTER, "accounting", "storageConfig"),
                f"the operator's slurmdbd.conf: {problem}",
                "correct accounting.storageConfig and the database Secret",
            )
            for problem in slurmdbd.conf_problems(run.conf, spec_, run.password)
        ]
    conf_text = read_files(ctx.slurm_files).get("slurm.conf", b"").decode("utf-8", "replace")
    cluster = _cluster_name(conf_text)
    ctld = state.ctld
    listed = ctld.registered_clusters()
    if cluster not in listed:
        findings.append(
            Finding(
                ctx.target.path_of(CLUSTER, "accounting"),
                f"slurmctld did not register cluster {cluster} with slurmdbd "
                f"(sacctmgr lists {listed or 'none'})",
                "check accounting.extraConf and controller.extraConf for options that keep "
                "slurmctld from slurmdbd",
            )
        )
    whose = "the harness's copy of the operator's" if ctx.cluster is None else "the operator's"
    return Outcome(
        f"database host: {said}; slurmdbd {state.version} accepts {whose} slurmdbd.conf "
        f"(against a MariaDB here) and slurmctld registers cluster {cluster}",
        findings,
    )


def _operator_conf(ctx: Context, name: str, namespace: str) -> str | None:
    """The slurmdbd.conf the operator wrote (Secret ``<name>-accounting``); None without a
    control plane (then the harness writes the operator's)."""
    if ctx.cluster is None:
        return None

    def written() -> bytes | None:
        return secret_of(ctx, namespace, f"{name}-accounting", "slurmdbd.conf")

    try:
        return wait_for(written, timeout=60, what=f"Secret {name}-accounting", every=0.5).decode()
    except WaitTimeout:
        raise StepFailed(
            f"the operator wrote no slurmdbd.conf (Secret {name}-accounting) within 60 s"
        ) from None


def start_slurmdbd(ctx: Context, obj: Doc, files: Mapping[str, bytes], root: Path) -> SlurmdbdRun:
    """MariaDB and the slurmdbd of the release's Accounting (a stand-in for an external one,
    or when the release's refuses its configuration), left running in ``ctx.stack``."""
    work = ctx.work / "slurm" / "accounting"
    # the cluster's keys (a fresh one where the files have none: slurmctld then takes it too)
    slurm_key = files.get("slurm.key") or os.urandom(1024)
    jwt_key = files.get("jwt.key") or os.urandom(1024)
    try:
        database = ctx.stack.enter_context(slurmdbd.mariadb(root=root, workdir=work / "mariadb"))
    except HarnessError as exc:
        raise StepFailed(f"MariaDB did not start: {exc}") from None
    spec = obj.get("spec") or {}
    stand_in = {**obj, "spec": {**spec, "external": True}}

    def stand_in_daemon() -> slurmdbd.Slurmdbd:
        return ctx.stack.enter_context(
            slurmdbd.accounting_daemon(
                stand_in,
                database=database,
                workdir=work / "stand-in",
                root=root,
                slurm_key=slurm_key,
                jwt_key=jwt_key,
            )
        )

    if spec.get("external"):
        dbd = stand_in_daemon()
        return SlurmdbdRun(dbd, stand_in=True, conf=None, password=None)
    namespace = str((obj.get("metadata") or {}).get("namespace") or ctx.target.namespace)
    storage = AccountingSpec.from_object(obj).storage
    raw = secret_of(ctx, namespace, storage.password_secret, storage.password_key)
    password = raw.decode("utf-8") if raw is not None else None
    conf = _operator_conf(ctx, str(obj["metadata"]["name"]), namespace)
    try:
        dbd = ctx.stack.enter_context(
            slurmdbd.accounting_daemon(
                obj,
                database=database,
                conf=conf,
                password=password,
                workdir=work / "slurmdbd",
                root=root,
                slurm_key=slurm_key,
                jwt_key=jwt_key,
            )
        )
    except slurmdbd.SlurmdbdStartError as exc:
        dbd = stand_in_daemon()
        return SlurmdbdRun(dbd, stand_in=True, conf=conf, password=password, refused=exc)
    return SlurmdbdRun(dbd, stand_in=False, conf=conf, password=password)


def _cluster_name(conf_text: str) -> str:
    """``ClusterName`` of a slurm.conf (the last one wins; the harness's default without)."""
    found = re.findall(r"^\s*ClusterName\s*=\s*(\S+)", conf_text, re.MULTILINE | re.IGNORECASE)
    return str(found[-1]) if found else DEFAULT_KEYS["ClusterName"]
