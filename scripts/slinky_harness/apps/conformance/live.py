"""Conformance, live phase: the deployment on a kwok control plane with the real Slinky operator.

Steps, in order (each needs the one before):

* ``fleet``: the fake Nodes: a copy of ``--nodes`` (``kubectl get nodes -o json``), one node
  per node of ``--fabric`` (labelled as topograph labels them; a fabric says nothing about GPUs,
  so each is a 4-GPU GB200 tray, as in the demo), or, without either, the nodes the values ask
  for (:mod:`.fleet`).
* ``control-plane``: kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok as
  local processes with that fleet (:class:`~slinky_harness.k8s.cluster.Cluster`). With
  ``--keep`` it outlives the run and the report says how to reach and stop it.
* ``install``: what the deployment needs first (the user's ``--existing`` objects, the
  namespaces the bridge manages, the third-party CRDs its objects use; the Slinky CRDs and an
  operator release when the deployment does not bring its own), then the deployment with Helm 4,
  past the real admission webhook of that operator. An umbrella that brings the operator is
  installed as its README says: first without the subcharts that make Slinky objects, then
  everything. A refusal is a finding at the values path Helm's message names.
* ``reconcile``: the real operator manager (v1.2.1, as the release's ServiceAccount) writes the
  Controller's slurm.conf ConfigMap naming every partition the values ask for; what slurmctld
  reads is left in ``ctx.slurm_files`` for the slurm phase.
* ``placement``: every NodeSet's pods, made by the operator and placed by kube-scheduler, and
  the operator release's own Deployment pods; an unplaced pod is a finding at the node selector,
  the GPU (or other extended resource) request or the tolerations (:mod:`.placement`). The
  operator makes NodeSet pods only once slurmrestd answers, and deletes a healthy pod whose Slurm
  node never registers: a real slurmctld and slurmrestd run for it on the operator's files
  (without the accounting keys, which need a slurmdbd: proving accounting is the slurm phase's),
  with each StatefulSet-mode pod's Slurm node registered as its slurmd would register it.

What the slurm phase may use, in ``ctx.extra``: ``proxy`` (the
:class:`~slinky_harness.k8s.operator.ServiceProxy` the operator reaches slurmrestd through),
``manager`` and ``webhook`` (the running processes), ``operator_objects``, ``controller``,
``namespace``, ``nodesets`` (the release's NodeSet objects), ``slurm_conf`` (the operator's, as
written) and ``slurmctld`` (the one placement started, still running). Everything started is on
``ctx.stack``, closed at the end of the run.
"""

from __future__ import annotations

import http.client
import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.apps.conformance import fleet as values_fleet
from slinky_harness.apps.conformance import placement
from slinky_harness.apps.conformance.context import Outcome, Skipped, Step, StepFailed, say
from slinky_harness.apps.conformance.report import Finding
from slinky_harness.apps.conformance.target import SUITE_CHARTS, TargetError, format_path
from slinky_harness.build import slinky, toolchain
from slinky_harness.build.controlplane import ControlPlaneError
from slinky_harness.core.errors import HarnessError
from slinky_harness.core.polling import wait_for
from slinky_harness.helm import charts as chart_index
from slinky_harness.helm import client as helm_client
from slinky_harness.helm import webhook_postrender
from slinky_harness.helm.client import Helm
from slinky_harness.k8s import fleet as k8s_fleet
from slinky_harness.k8s import operator as slinky_operator
from slinky_harness.k8s import schemas as kubeschema
from slinky_harness.k8s.cluster import Cluster
from slinky_harness.slurm import release as slurm_release
from slinky_topology.errors import TopologyError
from slinky_topology.sources import fabric_file

if TYPE_CHECKING:
    from slinky_harness.apps.conformance.context import Context, Doc
    from slinky_harness.apps.conformance.target import Target

CONTROL_PLANE = "slinky-conformance"
OPERATOR_RELEASE = ("slurm-operator", "slinky")
"""(release, namespace) of the operator installed for a deployment that does not bring one."""
OPERATOR_VALUES: dict[str, Any] = {"certManager": {"enabled": False}}
"""That operator's values: no cert-manager runs on the control plane; the chart makes the
webhook certificate (the local webhook server serves its own)."""
FABRIC_GPU = k8s_fleet.GpuSpec(
    count=4, product="NVIDIA-GB200", memory_mib=189471, family="blackwell"
)
FABRIC_RESOURCES = {"cpu": "144", "memory": "960Gi", "pods": "110"}
RECONCILE_TIMEOUT = 90.0
ROUTED = "conformance.slinky.slurm.net/slurmrestd"
"""Annotation placement puts on each NodeSet once slurmrestd answers (it wakes the operator)."""
ACCOUNTING_KEYS = ("accountingstorage", "accountingstore", "jobacctgather", "priorityweighttres")
"""slurm.conf keys (lower case prefixes) left out of placement's slurmctld, which has no slurmdbd."""
OPERATOR_LOG_NOISE = (
    "Bad Gateway",
    "no such host",
    "connection refused",
    "context canceled",
    "provided port is already allocated",
)
"""Operator log lines expected here: slurmrestd answers only once placement starts it, and
NodeSet pods are kwok fakes (the tier's tests/cluster/test_operator.py ignores the same)."""


# -- fleet ------------------------------------------------------------------------------------


NOT_CHECKED = "your cluster was not checked"
"""Said in the fleet step, the summary and the JUnit report when no Nodes or fabric came."""


def fleet_step(ctx: Context) -> Outcome:
    try:
        if ctx.nodes is not None:
            fleet = k8s_fleet.load_nodes(ctx.nodes)
            reason = f"{len(fleet.node_names())} nodes copied from {ctx.nodes}: {_summary(fleet)}"
        elif ctx.fabric is not None:
            fabric = fabric_file.load_fabric(str(ctx.fabric))
            fleet = k8s_fleet.fleet_from_fabric(
                fabric, group="fabric", resources=FABRIC_RESOURCES, gpu=FABRIC_GPU,
                name=f"fabric-{fabric.name}", labels={"kubernetes.io/arch": "arm64"},
                domain_labels=(k8s_fleet.TOPOGRAPH_DOMAIN_LABEL, "nvidia.com/gpu.clique"),
            )  # fmt: skip
            reason = (
                f"{len(fleet.node_names())} nodes from fabric {ctx.fabric}, each a GB200 tray "
                f"(arm64, {FABRIC_GPU.count} {FABRIC_GPU.product} GPUs: a fabric has no node "
                "data), labelled with its switches and NVLink domain as topograph and GFD do"
            )
        else:
            fleet = values_fleet.fleet_from_values(ctx.target)
            reason = (
                f"{len(fleet.node_names())} nodes made from the values ({NOT_CHECKED}): "
                f"{values_fleet.describe(fleet)}"
            )
            ctx.caveats.append(
                f"{NOT_CHECKED}: the pods were placed on a fleet made from the values "
                "themselves; give --nodes (kubectl get nodes -o json) or --fabric to place them "
                "on your cluster's nodes"
            )
    except (k8s_fleet.FleetError, TopologyError) as exc:
        raise StepFailed(f"cannot make the fleet: {exc}") from None
    ctx.extra["fleet"] = fleet
    return Outcome(reason)


def _summary(fleet: k8s_fleet.Fleet) -> str:
    """Nodes by GPU product (or "no GPU") of a copied fleet."""
    counts: dict[str, int] = {}
    for node in fleet.nodes():
        labels = node["metadata"]["labels"]
        gpus = {k: v for k, v in node["status"]["allocatable"].items() if "gpu" in k}
        kind = labels.get("nvidia.com/gpu.product") or labels.get("amd.com/gpu.product") or ""
        key = f"{kind or 'GPU'} x{next(iter(gpus.values()))}" if gpus else "no GPU"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))


# -- control plane --------------------------------------------------------------------------


def control_plane(ctx: Context) -> Outcome:
    try:
        slinky.ensure_operator()
    except slinky.OperatorUnavailable as exc:
        raise StepFailed(f"the Slinky operator {slinky.VERSION} is not available: {exc}") from None
    fleet = ctx.extra["fleet"]
    try:
        cluster = ctx.stack.enter_context(
            Cluster.start(ctx.work / "cluster", fleet=fleet, name=CONTROL_PLANE)
        )
    except ControlPlaneError as exc:
        raise StepFailed(f"the kwok control plane did not start: {exc}") from None
    ctx.cluster = cluster
    ctx.helm = Helm(toolchain.ensure("helm"), cluster, ctx.work / "helm")
    if ctx.keep:
        stop = cluster.leave_running()
        ctx.epilogue += [
            "Control plane kept running (--keep):",
            f"  export KUBECONFIG={cluster.kubeconfig}",
            f"  stop it: {stop} && rm -rf {ctx.work}",
            "  (the operator, its webhook and slurmctld ran in this process and have stopped)",
        ]
    return Outcome(
        f"kwok control plane with {len(fleet.node_names())} Ready nodes in "
        f"{cluster.start_seconds:.1f}s (kube-apiserver {cluster.server})"
    )


def _bound(ctx: Context) -> tuple[Cluster, Helm]:
    if ctx.cluster is None or ctx.helm is None:
        raise StepFailed("no control plane (the control-plane step did not run)")
    return ctx.cluster, ctx.helm


# -- install --------------------------------------------------------------------------------


def _create_namespace(cluster: Cluster, name: str) -> None:
    if not cluster.kubectl("get", "namespace", name, "--ignore-not-found", "-o", "name").strip():
        cluster.kubectl("create", "namespace", name)


def managed_namespaces(target: Target) -> list[str]:
    """Namespaces the bridge's admission manages by name: they exist in a real cluster."""
    if not target.enabled("slurm-bridge"):
        return []
    admission = target.chart_values("slurm-bridge").get("admission") or {}
    if admission.get("manageAllNamespaces") or admission.get("managedNamespaceSelector"):
        return []
    return [str(n) for n in admission.get("managedNamespaces") or []]


def _prerequisites(ctx: Context, cluster: Cluster, docs: list[Doc]) -> list[str]:
    """The user's existing objects, managed namespaces and third-party CRDs; what was done."""
    done = []
    existing: list[Doc] = list(ctx.existing)
    if existing:
        for name in sorted({str(d["metadata"]["namespace"]) for d in existing
                            if d.get("metadata", {}).get("namespace")}):  # fmt: skip
            _create_namespace(cluster, name)
        cluster.apply(existing)
        done.append(f"{len(existing)} existing objects")
    namespaces = managed_namespaces(ctx.target)
    for name in namespaces:
        _create_namespace(cluster, name)
    if namespaces:
        done.append(f"namespaces {', '.join(namespaces)} (managed by the bridge)")
    used = {
        str(d.get("apiVersion", "")).split("/")[0]
        for d in docs
        if "/" in str(d.get("apiVersion", ""))
    }
    crds = [c for c in kubeschema.third_party_crds() if c["spec"]["group"] in used]
    cluster.apply_crds(crds)
    if crds:
        done.append(f"the {', '.join(sorted({c['spec']['group'] for c in crds}))} CRDs")
    return done


def _render(ctx: Context, helm: Helm, chart: str) -> list[Doc]:
    """The static phase's render, or one of our own when it did not run."""
    if ctx.rendered:
        return ctx.rendered
    target = ctx.target
    result = helm.run(
        "template", target.release, chart, "-n", target.namespace, *target.values_args(),
        check=False,
    )  # fmt: skip
    if not result.ok:
        return []
    return [d for d in yaml.safe_load_all(result.stdout) if isinstance(d, dict)]


def _objects(helm: Helm, release: str, namespace: str) -> list[Doc]:
    text = helm.run("get", "manifest", release, "-n", namespace).stdout
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def _operator_part(objects: list[Doc]) -> list[Doc]:
    """The objects of an umbrella's slurm-operator subchart (its ``helm.sh/chart`` label)."""

    def chart(d: Doc) -> str:
        return str(((d.get("metadata") or {}).get("labels") or {}).get("helm.sh/chart", ""))

    return [d for d in objects if chart(d).startswith("slurm-operator-")
            and not chart(d).startswith("slurm-operator-crds-")]  # fmt: skip


def _start_webhook(ctx: Context, cluster: Cluster, objects: list[Doc]) -> None:
    try:
        ctx.extra["webhook"] = ctx.stack.enter_context(
            slinky_operator.run_webhook_for_release(cluster, objects, ctx.work / "webhook")
        )
    except slinky.OperatorUnavailable as exc:
        raise StepFailed(f"the operator's webhook server did not start: {exc}") from None


def _helm(helm: Helm, verb: str, release: str, chart: str, *args: str) -> helm_client.HelmResult:
    if verb == "install":
        return helm_client.install_past_webhook_race(helm, release, chart, *args)
    result = helm.run(verb, release, chart, *args, check=False)
    if not result.ok and helm_client.WEBHOOK_CACHE_RACE.search(result.stderr):
        result = helm.run(verb, release, chart, *args, check=False)  # the cache caught up
    return result


def brings_operator(target: Target) -> bool:
    """Whether the deployment installs the operator itself."""
    if target.kind == "umbrella":
        return target.enabled("slurm-operator")
    return target.chart_name == "slurm-operator"


def _operator_first(
    ctx: Context, helm: Helm, chart: str, args: list[str], done: list[str]
) -> helm_client.HelmResult | None:
    """The operator before the rest: the deployment's own (an umbrella without the subcharts
    that make Slinky objects) or, for a Slurm cluster without one, the suite's; its objects in
    ``ctx.extra["operator_objects"]``. Returns Helm's refusal of the deployment's, if any."""
    target = ctx.target
    objects: list[Doc] = []
    if brings_operator(target):
        first = args
        if target.kind == "umbrella":
            first = [*args, "--set", "slurm-cluster.enabled=false",
                     "--set", "slurm-bridge.enabled=false"]  # fmt: skip
        result = _helm(helm, "install", target.release, chart, *first)
        if not result.ok:
            return result
        objects = _objects(helm, target.release, target.namespace)
        if target.kind == "umbrella":
            objects = _operator_part(objects)
            done.append(
                "the operator part (slurm-cluster and slurm-bridge off, as its README says)"
            )
        ctx.extra["operator_release"] = (target.release, target.namespace)
    elif target.enabled("slurm-cluster"):
        objects = _install_operator(ctx, helm)
        done.append(f"the Slinky CRDs and operator release {'/'.join(OPERATOR_RELEASE[::-1])}")
        ctx.extra["operator_release"] = OPERATOR_RELEASE
    ctx.extra["operator_objects"] = objects
    return None


def _served_webhooks(ctx: Context, cluster: Cluster, helm: Helm, objects: list[Doc]) -> str:
    """The post-renderer plugin (in ``helm``'s home) that keeps the live webhook settings."""
    live = [
        cluster.kubectl_json("get", d["kind"].lower(), d["metadata"]["name"])
        for d in objects
        if d.get("kind") in webhook_postrender.KINDS
    ]
    params = ctx.work / "served-webhooks.json"
    params.write_text(json.dumps(webhook_postrender.live_settings(live)))
    env = helm.env() or {}
    return webhook_postrender.install_plugin(Path(env["HELM_DATA_HOME"]), params)


def install(ctx: Context) -> Outcome:
    cluster, helm = _bound(ctx)
    target = ctx.target
    try:
        chart = str(target.chart_dir(ctx.work))
    except TargetError as exc:
        raise StepFailed(str(exc)) from None
    docs = _render(ctx, helm, chart)
    done = _prerequisites(ctx, cluster, docs)
    release, namespace = target.release, target.namespace
    args = ["-n", namespace, "--create-namespace", *target.values_args(), "--timeout", "120s"]
    refused = _operator_first(ctx, helm, chart, args, done)
    if refused is not None:
        return _refused(target, refused, docs, "the operator part of the deployment")
    operator_objects = ctx.extra["operator_objects"]
    if operator_objects:
        _start_webhook(ctx, cluster, operator_objects)
    if target.kind == "umbrella" and brings_operator(target):
        # The upgrade applies the webhook configurations again: rendered through the
        # post-renderer they keep pointing at the local webhook server.
        upgrade = [a for a in args if a != "--create-namespace"] + ["--reset-values"]
        upgrade += ["--post-renderer", _served_webhooks(ctx, cluster, helm, operator_objects)]
        result = _helm(helm, "upgrade", release, chart, *upgrade)
        if not result.ok:
            return _refused(target, result, docs, "the deployment")
    elif not brings_operator(target):
        result = _helm(helm, "install", release, chart, *args)
        if not result.ok:
            return _refused(target, result, docs, "the deployment")
    ctx.objects = _objects(helm, release, namespace)
    kinds: dict[str, int] = {}
    for obj in ctx.objects:
        kinds[str(obj.get("kind"))] = kinds.get(str(obj.get("kind")), 0) + 1
    listing = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    first = f"; first {', '.join(done)}" if done else ""
    webhook = " past the operator's real webhook" if operator_objects else ""
    return Outcome(f"Helm 4 installed release {namespace}/{release}{webhook} ({listing}){first}")


def _install_operator(ctx: Context, helm: Helm) -> list[Doc]:
    """The suite's slurm-operator chart as :data:`OPERATOR_RELEASE` (it brings the CRDs)."""
    release, namespace = OPERATOR_RELEASE
    values = ctx.work / "operator-values.yaml"
    values.write_text(yaml.safe_dump(OPERATOR_VALUES))
    result = helm.run(
        "install", release, str(chart_index.CHARTS_DIR / "slurm-operator"), "-n", namespace,
        "--create-namespace", "-f", str(values), check=False,
    )  # fmt: skip
    if not result.ok:
        raise StepFailed(
            f"the suite's slurm-operator chart did not install: {result.stderr.strip()}"
        )
    return _objects(helm, release, namespace)


# -- what a refusal says ----------------------------------------------------------------------

_WEBHOOK = re.compile(r'admission webhook "([^"]+)" denied the request: (.+)')
_INVALID = re.compile(r'(\w+)\.[\w.]+ "([^"]+)" is invalid: (.+)')
_SOURCES = {
    "Controller": ("controller",),
    "LoginSet": ("loginsets",),
    "RestApi": ("restapi",),
    "Accounting": ("accounting",),
    "Token": ("token",),
    "NodeSet": ("nodesets",),
}
"""Values block of slurm-cluster each Slinky kind comes from."""


def schema_findings(target: Target, stderr: str) -> list[Finding]:
    """Helm's "values don't meet the specifications of the schema" lines, at their paths."""
    found = []
    for error in helm_client.HelmResult.failed(stderr).schema_errors():
        parts = error.steps()
        chart = error.chart
        path = target.path_of(chart, *parts) if chart in SUITE_CHARTS else format_path(parts)
        found.append(Finding(path, error.text, "change the value as the chart's schema says"))
    return found


def _source(target: Target, kind: str, name: str, docs: list[Doc]) -> str:
    """Values path a Slinky object of ``kind`` named ``name`` comes from: a NodeSet's or a
    LoginSet's entry (``nodesets.<key>``: the NodeSet's hostname prefix; a LoginSet's key is
    the end of its name), else the block of its kind."""
    block = _SOURCES.get(kind)
    if block is None:
        return ""
    for doc in docs:
        if kind == "NodeSet" and doc.get("kind") == kind and doc["metadata"].get("name") == name:
            key = slinky_operator.slurm_nodeset_name(doc)
            return target.path_of("slurm-cluster", "nodesets", key)
    entries = target.chart_values("slurm-cluster").get(block[0]) if kind == "LoginSet" else None
    keys = [str(k) for k in entries or {} if name.endswith(f"-{k}")]
    if keys:
        return target.path_of("slurm-cluster", block[0], max(keys, key=len))
    return target.path_of("slurm-cluster", *block)


def _refused(target: Target, result: helm_client.HelmResult, docs: list[Doc], what: str) -> Outcome:
    stderr = result.stderr.strip()
    findings = schema_findings(target, stderr)
    webhook = _WEBHOOK.search(stderr)
    invalid = _INVALID.search(stderr)
    if not findings and webhook:
        hook, why = webhook.groups()
        kind = next((k for k in _SOURCES if k.lower() in hook.lower()), "")
        name = next((d["metadata"]["name"] for d in docs if d.get("kind") == kind
                     and d["metadata"].get("name", "") in why), "")  # fmt: skip
        findings.append(Finding(
            _source(target, kind, name, docs),
            f"the operator's admission webhook ({hook}) refused {kind or 'an object'}: {why.strip()}",
            "change the values so that the webhook accepts the object (see its reason)",
        ))  # fmt: skip
    elif not findings and invalid:
        kind, name, why = invalid.groups()
        findings.append(Finding(
            _source(target, kind, name, docs),
            f"the API server refused {kind} {name}: {why.strip()}",
            "change the values so that the object is valid (see the reason)",
        ))  # fmt: skip
    elif not findings:
        last = stderr.splitlines()[-1] if stderr else f"exit {result.returncode}"
        findings.append(Finding("", f"helm refused {what}: {last}", "see Helm's message"))
    return Outcome(f"Helm 4 refused {what}", findings, stderr.splitlines()[-8:])


# -- reconcile ------------------------------------------------------------------------------


def _conf_partitions(config: Doc) -> set[str]:
    conf = str((config.get("data") or {}).get("slurm.conf", ""))
    return set(re.findall(r"^PartitionName=(\S+)", conf, re.M))


def reconcile(ctx: Context) -> Outcome:
    cluster, _ = _bound(ctx)
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
    config = _wait_config(cluster, manager, name, namespace, wanted)
    slurm_conf = str(config["data"]["slurm.conf"])
    if not external:
        _wait_object(cluster, manager, "statefulset", f"{name}-controller", namespace)
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
        problems = process.problems(ignore=OPERATOR_LOG_NOISE)
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


def _wait_config(
    cluster: Cluster, manager: slinky_operator.Manager, name: str, namespace: str, wanted: set[str]
) -> Doc:
    last: list[Doc] = []

    def ready() -> Doc | None:
        _alive(manager)
        text = cluster.kubectl(
            "get",
            "configmap",
            f"{name}-config",
            "-n",
            namespace,
            "-o",
            "json",
            "--ignore-not-found",
        )
        if not text.strip():
            return None
        config: Doc = json.loads(text)
        last[:] = [config]
        return config if wanted <= _conf_partitions(config) else None

    try:
        found: Doc = wait_for(ready, timeout=RECONCILE_TIMEOUT, what="slurm.conf", every=0.5)
    except HarnessError:
        have = sorted(_conf_partitions(last[0])) if last else []
        problems = manager.problems(ignore=OPERATOR_LOG_NOISE)
        raise StepFailed(
            f"the operator did not write ConfigMap {namespace}/{name}-config naming partitions "
            f"{sorted(wanted)} in {RECONCILE_TIMEOUT:.0f}s ("
            + (f"it names {have}" if last else "not written")
            + f"); operator log {manager.log_path}"
            + (f": {problems[0][:300]}" if problems else "")
        ) from None
    return found


def _wait_object(
    cluster: Cluster, manager: slinky_operator.Manager, kind: str, name: str, namespace: str
) -> None:
    def made() -> bool:
        _alive(manager)
        return bool(
            cluster.kubectl(
                "get", kind, name, "-n", namespace, "--ignore-not-found", "-o", "name"
            ).strip()
        )

    try:
        wait_for(made, timeout=RECONCILE_TIMEOUT, what=f"{kind} {name}", every=0.5)
    except HarnessError:
        raise StepFailed(
            f"the operator did not make {kind} {namespace}/{name} in {RECONCILE_TIMEOUT:.0f}s; log {manager.log_path}"
        ) from None


# -- placement ------------------------------------------------------------------------------


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


def _start_slurmrestd(ctx: Context) -> None:
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
    cluster, _ = _bound(ctx)
    for nodeset in ctx.extra.get("nodesets") or []:
        cluster.kubectl(
            "annotate", "--overwrite", "nodesets.slinky.slurm.net", nodeset["metadata"]["name"],
            "-n", nodeset["metadata"].get("namespace") or namespace, f"{ROUTED}={port}",
        )  # fmt: skip


def placement_step(ctx: Context) -> Outcome:
    cluster, _ = _bound(ctx)
    nodesets: list[Doc] = ctx.extra.get("nodesets") or []
    findings: list[Finding] = []
    lines: list[str] = []
    if nodesets:
        say(
            f"placement: a slurmctld and slurmrestd for the operator, then {len(nodesets)} NodeSets' pods"
        )
        _start_slurmrestd(ctx)
    nodes = cluster.kubectl_json("get", "nodes")["items"]
    for nodeset in nodesets:
        findings += _place_nodeset(ctx, cluster, nodeset, nodes, lines)
    findings += _place_deployments(ctx, cluster, lines)
    if not lines:
        raise Skipped("no NodeSet and no operator Deployment to place")
    return Outcome("; ".join(lines), findings)


def _place_nodeset(
    ctx: Context, cluster: Cluster, nodeset: Doc, nodes: list[Doc], lines: list[str]
) -> list[Finding]:
    key = slinky_operator.slurm_nodeset_name(nodeset)
    name, namespace = (
        nodeset["metadata"]["name"],
        nodeset["metadata"].get("namespace") or ctx.extra["namespace"],
    )
    needs = placement.PodNeeds.of_nodeset(nodeset)
    daemonset = nodeset["spec"].get("scalingMode") == "DaemonSet"
    expected = (
        sum(1 for n in nodes if needs.admits(n))
        if daemonset
        else int(nodeset["spec"].get("replicas") or 0)
    )
    started = time.monotonic()
    placed = placement.settle(
        cluster, namespace, lambda p: _owned(p, "NodeSet", name), expected, f"NodeSet {key}"
    )
    if isinstance(placed, str):
        manager = ctx.extra.get("manager")
        log = f"; operator log {manager.log_path}" if manager else ""
        raise StepFailed(f"{placed} in {time.monotonic() - started:.0f}s{log}")
    lines.append(f"NodeSet {key}: {len(placed.placed)}/{placed.pods} pods placed")
    ctx.extra.setdefault("placed", {})[key] = len(placed.placed)  # the slurm phase's node count
    return placement.nodeset_findings(ctx.target, key, needs, nodes, placed)


def _owned(pod: Doc, kind: str, name: str) -> bool:
    return any(
        o.get("kind") == kind and o.get("name") == name
        for o in pod["metadata"].get("ownerReferences") or []
    )


def _place_deployments(ctx: Context, cluster: Cluster, lines: list[str]) -> list[Finding]:
    """The operator release's Deployments (operator, webhook): their pods placed."""
    findings = []
    users = ctx.extra.get("operator_release") == (ctx.target.release, ctx.target.namespace)
    for deployment in (
        d for d in ctx.extra.get("operator_objects") or [] if d.get("kind") == "Deployment"
    ):
        name = deployment["metadata"]["name"]
        namespace = deployment["metadata"].get("namespace") or ctx.target.namespace
        selector = deployment["spec"]["selector"].get("matchLabels") or {}

        def mine(pod: Doc, selector: dict[str, str] = selector) -> bool:
            labels = pod["metadata"].get("labels") or {}
            return all(labels.get(k) == v for k, v in selector.items())

        replicas = int(deployment["spec"].get("replicas", 1))
        placed = placement.settle(cluster, namespace, mine, replicas, f"Deployment {name}")
        if isinstance(placed, str):
            raise StepFailed(placed)
        lines.append(f"Deployment {name}: {len(placed.placed)}/{placed.pods} pods placed")
        if placed.refused:
            component = "webhook" if name.endswith("-webhook") else "operator"
            path = ctx.target.path_of("slurm-operator", component, "nodeSelector") if users else ""
            findings.append(Finding(
                path,
                f"Deployment {namespace}/{name}: {len(placed.refused)} of {placed.pods} pods not "
                f"placed (kube-scheduler: {next(iter(placed.refused.values()))})",
                "select labels the nodes carry and tolerate their taints",
            ))  # fmt: skip
    return findings


STATIC_NEEDS = ("static/schema", "static/render-helm4", "static/crds", "static/references")
"""The static steps whose failure makes an install pointless: values the schema refuses, a render
that fails, custom resources their CRDs refuse, references nothing creates."""

STEPS: tuple[Step, ...] = (
    # Nothing is installed from values the static phase refused (one clear failure, not a cascade).
    Step("live", "fleet", fleet_step, after=STATIC_NEEDS),
    Step("live", "control-plane", control_plane, needs=("live/fleet",)),
    Step("live", "install", install, needs=("live/control-plane",)),
    Step("live", "reconcile", reconcile, needs=("live/install",)),
    Step("live", "placement", placement_step, needs=("live/reconcile",)),
)
