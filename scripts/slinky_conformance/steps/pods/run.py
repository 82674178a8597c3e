"""Conformance, pods phase: the user's cluster as real pods on the real node.

``node`` starts the real node (or attaches the kind worker, :mod:`slinky_harness.k8s.realpods`)
with the images of :mod:`slinky_harness.build.images` imported; ``install`` installs
slurm-operator and slurm-cluster with the user's values and the overrides of
:mod:`.overrides`; ``register`` waits until every NodeSet's slurmd is idle in Slurm; ``jobs``
runs one job (``srun``) on a node of each NodeSet, in a partition that holds it, with one GPU
(``--gres``) on a NodeSet with emulated GPUs.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from slinky_conformance.context import Outcome, StepFailed, say
from slinky_conformance.report import Finding
from slinky_conformance.steps.pods import overrides
from slinky_harness.build.images import ensure_images
from slinky_harness.core.errors import HarnessError
from slinky_harness.helm.charts import CHARTS_DIR
from slinky_harness.helm.client import Helm, install_past_webhook_race, values_text
from slinky_harness.k8s import realpods

if TYPE_CHECKING:
    from slinky_conformance.context import Context
    from slinky_harness.k8s.cluster import Cluster

OPERATOR_NAMESPACE = "slinky"
WAIT_FOR_NODE = 1800
"""Seconds to wait for another run's real node (one per machine) to end."""
REGISTER_TIMEOUT = 300
"""Seconds every slurmd has to register idle (about a minute on a quiet machine)."""
JOB_TIMEOUT = 120
"""Seconds one job may take (``srun hostname``: about a second)."""
APP = "app.kubernetes.io/name"


def where(node: str) -> str:
    """How the report names the machine of the phase: the real node and its runtime."""
    chosen = realpods.target()
    if chosen.kind is not None:
        return f"real pods on kind node {node} (containerd)"
    return f"real pods on node {node} (kubelet, containerd, runc)"


def _pods(ctx: Context) -> realpods.RealPods:
    pods: realpods.RealPods = ctx.extra["realpods"]
    return pods


def node_step(ctx: Context) -> Outcome:
    started = time.monotonic()
    try:
        archives = ensure_images()
    except HarnessError as exc:
        raise StepFailed(f"the images could not be built: {exc}") from None
    built = time.monotonic() - started
    say(f"pods/node: images ready in {built:.0f}s; starting the real node")
    try:
        running = ctx.stack.enter_context(
            realpods.start(ctx.work / "realnode", None, wait=WAIT_FOR_NODE)
        )
        running.import_images(archives)
    except HarnessError as exc:
        raise StepFailed(f"the real node did not start: {exc}") from None
    ctx.extra["realpods"] = running
    ctx.extra["real_pods_where"] = where(running.node_name)
    plan = overrides.cluster_plan(
        ctx.target, running.node_name, cgroup_v2=realpods.cgroup_v2_only()
    )
    ctx.extra["pods_plan"] = plan
    ctx.caveats.extend(f"real pods override: {line}" for line in plan.overrides)
    return Outcome(
        f"{where(running.node_name)} Ready, {len(archives.references)} images imported "
        f"(images {built:.0f}s, node {time.monotonic() - started - built:.0f}s)"
    )


def _write(ctx: Context, name: str, values: dict[str, Any]) -> str:
    path = ctx.work / "pods" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(values_text(values))
    return str(path)


def install_step(ctx: Context) -> Outcome:
    running = _pods(ctx)
    plan: overrides.Plan = ctx.extra["pods_plan"]
    cluster = running.cluster
    helm = Helm.pinned(cluster=cluster, home=ctx.work / "pods" / "helm")
    ctx.extra["pods_helm"] = helm
    charts = CHARTS_DIR
    started = time.monotonic()
    operator = helm.run(
        "install", "slurm-operator", str(charts / "slurm-operator"), "-n", OPERATOR_NAMESPACE,
        "--create-namespace", "-f", _write(ctx, "operator", plan.operator_values),
        "--wait", "--timeout", "240s", timeout=300, check=False,
    )  # fmt: skip
    if not operator.ok:
        raise StepFailed(
            f"slurm-operator did not become ready on the real node: {operator.describe()}\n"
            f"{_describe(cluster, OPERATOR_NAMESPACE)}"
        )
    namespace = ctx.target.namespace
    spaces = {str(d["metadata"].get("namespace") or namespace) for d in ctx.existing}
    for name in sorted({namespace, *spaces}):
        cluster.kubectl("create", "namespace", name, check=False)
    if ctx.existing:
        cluster.apply(ctx.existing)
    result = install_past_webhook_race(
        helm, ctx.target.release, str(charts / "slurm-cluster"), "-n", namespace,
        "-f", _write(ctx, "cluster", plan.cluster_values),
    )  # fmt: skip
    if not result.ok:
        return Outcome(
            "helm install slurm-cluster on the real node failed",
            [
                Finding(
                    ctx.target.path_of(overrides.CLUSTER), result.describe(), "see Helm's message"
                )
            ],
        )
    return Outcome(
        f"slurm-operator (operator and webhook pods Ready) and slurm-cluster installed in "
        f"{time.monotonic() - started:.0f}s, {len(plan.overrides)} overrides (see the notes)"
    )


def _describe(cluster: Cluster, namespace: str) -> str:
    return cluster.kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False)


def _slurmctld(ctx: Context, *command: str, timeout: float = 30) -> tuple[bool, str]:
    cluster = _pods(ctx).cluster
    namespace = ctx.target.namespace
    names = cluster.kubectl(
        "get", "pods", "-n", namespace, "-l", f"{APP}=slurmctld", "-o", "name", check=False
    ).split()
    if not names:
        return False, "no slurmctld pod"
    try:
        out = cluster.kubectl(
            "exec", "-n", namespace, names[0], "-c", "slurmctld", "--", *command, timeout=timeout
        )
    except HarnessError as exc:
        return False, str(exc)
    return True, out


def node_states(text: str) -> dict[str, tuple[str, list[str]]]:
    """``sinfo -h -N -o "%N %t %P"`` -> node -> (state, partitions; the default one first,
    ``*`` removed)."""
    out: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 3:
            continue
        name, state, partition = fields
        old = out.get(name, (state, []))[1]
        plain = partition.rstrip("*")
        parts = [plain, *old] if partition.endswith("*") else [*old, plain]
        out[name] = (state, parts)
    return out


def _sinfo(ctx: Context) -> dict[str, tuple[str, list[str]]]:
    ok, out = _slurmctld(ctx, "sinfo", "-h", "-N", "-o", "%N %t %P")
    return node_states(out) if ok else {}


def register_step(ctx: Context) -> Outcome:
    plan: overrides.Plan = ctx.extra["pods_plan"]
    wanted = [(n, node) for n in plan.nodesets for node in n.nodes]
    deadline = time.monotonic() + REGISTER_TIMEOUT
    states: dict[str, tuple[str, list[str]]] = {}
    while time.monotonic() < deadline:
        states = _sinfo(ctx)
        if all(states.get(node, ("",))[0] == "idle" for _, node in wanted):
            break
        time.sleep(3)
    ctx.extra["pods_states"] = states
    findings = []
    for nodeset, node in wanted:
        state = states.get(node, ("not registered", []))[0]
        if state != "idle":
            findings.append(
                Finding(
                    nodeset.path,
                    f"the slurmd of {node} on real pods is {state} after {REGISTER_TIMEOUT}s "
                    f"({_slurmd_log(ctx, node)})",
                    "see the slurmd log; values that run on kwok may still fail in a container",
                )
            )
    details = [f"{n.name}: not run on real pods: {n.not_run}" for n in plan.nodesets if n.not_run]
    if findings:
        details.append(_describe(_pods(ctx).cluster, ctx.target.namespace))
        return Outcome("a slurmd did not register idle on real pods", findings, details)
    names = ", ".join(node for _, node in wanted) or "none"
    return Outcome(
        f"{len(wanted)} slurmd registered idle through the Service: {names}", [], details
    )


def _slurmd_log(ctx: Context, node: str) -> str:
    cluster = _pods(ctx).cluster
    pods = json.loads(
        cluster.kubectl(
            "get", "pods", "-n", ctx.target.namespace, "-l", f"{APP}=slurmd", "-o", "json",
            check=False,
        ) or "{}"
    ).get("items", [])  # fmt: skip
    for pod in pods:
        if pod["spec"].get("hostname") == node:
            phase = pod["status"].get("phase", "?")
            log = cluster.kubectl(
                "logs", "-n", ctx.target.namespace, pod["metadata"]["name"], "-c", "slurmd",
                "--tail=3", check=False,
            )  # fmt: skip
            return f"pod {phase}; slurmd: {' | '.join(log.strip().splitlines()) or 'no log'}"
    return "no slurmd pod"


def _job(ctx: Context, partition: str, node: str, gres: str) -> str | tuple[str, str]:
    """One job on ``node`` (with one GPU of ``gres`` when set): the line the report keeps when
    it ran there (and was handed a GPU), the finding's message and fix otherwise."""
    command = ["srun", "-p", partition, "-w", node, "-N1"]
    if gres:
        # the gpu plugin hands the job its GPU's index in CUDA_VISIBLE_DEVICES (any vendor)
        command += [f"--gres={gres}", "sh", "-c", 'echo "$(hostname) ${CUDA_VISIBLE_DEVICES:-}"']
    else:
        command.append("hostname")
    shown = f"srun -p {partition} -w {node} " + (
        f"--gres={gres} (echo $CUDA_VISIBLE_DEVICES)" if gres else "hostname"
    )
    ok, out = _slurmctld(ctx, *command, timeout=JOB_TIMEOUT)
    words = out.split()
    if ok and words[:1] == [node] and (not gres or (len(words) == 2 and words[1].isdigit())):
        return f"{shown}: {node}" + (f", GPU {words[1]}" if gres else "")
    return (
        f"the job on {node} ({shown}) failed on real pods: {' '.join(words)[-400:]}",
        "see the job's error; prolog scripts, mounts, the slurmd image and the emulated GPUs' "
        "gres.conf run only on real pods",
    )


def jobs_step(ctx: Context) -> Outcome:
    plan: overrides.Plan = ctx.extra["pods_plan"]
    states: dict[str, tuple[str, list[str]]] = ctx.extra.get("pods_states") or _sinfo(ctx)
    findings: list[Finding] = []
    details: list[str] = []
    ran = 0
    for nodeset in plan.nodesets:
        if nodeset.not_run:
            details.append(f"{nodeset.name}: job not run on real pods: {nodeset.not_run}")
            continue
        node = nodeset.nodes[0]
        partitions = states.get(node, ("", []))[1]
        if not partitions:
            findings.append(
                Finding(
                    nodeset.path,
                    f"{node} is in no partition, so no job can run on it",
                    f"enable {nodeset.path}.partition or name the NodeSet in a partition",
                )
            )
            continue
        job = _job(ctx, partitions[0], node, nodeset.gres)
        if isinstance(job, str):
            ran += 1
            details.append(f"{nodeset.name}: {job}")
        else:
            findings.append(Finding(nodeset.path, *job))
    if findings:
        return Outcome("a NodeSet's job failed on real pods", findings, details)
    left = sum(1 for n in plan.nodesets if n.not_run)
    tail = f"; {left} NodeSet{'s' if left != 1 else ''} not run on real pods" if left else ""
    return Outcome(f"one job ran on each of {ran} NodeSets{tail}", [], details)
