"""The Pod Security Standards level a pod spec needs, computed from the rendered spec.

Kubernetes' Pod Security admission sorts a pod into ``restricted`` (hardened), ``baseline``
(no known privilege escalation) or ``privileged`` (anything). :func:`level` applies the
standard's checks (https://kubernetes.io/docs/concepts/security/pod-security-standards/, the
``latest`` version) to one pod spec and returns the lowest level that admits it together with the
reasons it is not lower. :func:`workload_pods` finds the pod specs of a render: Kubernetes
workloads' pod templates, and for the Slinky kinds the pod the operator builds (its containers
from the object's container blocks, its pod-level fields from ``spec.template.spec``; a NodeSet's
slurmd is the privileged container the operator hard-codes).

The cluster tier proves the same verdicts with a real API server's admission
(tests/cluster/test_security.py); this module is the offline reading of the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

Doc = dict[str, Any]

LEVELS = ("restricted", "baseline", "privileged")
"""Pod Security levels, most restrictive first."""

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"

BASELINE_CAPABILITIES = frozenset(
    {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
     "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
)  # fmt: skip
SAFE_SYSCTLS = frozenset(
    {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
     "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
     "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
     "net.ipv4.tcp_keepalive_probes"}
)  # fmt: skip
RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
     "projected", "secret"}
)  # fmt: skip
SELINUX_TYPES = frozenset(
    {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)

WORKLOAD_TEMPLATE_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})
SLINKY_GROUP = "slinky.slurm.net"

SLURMD_CONTAINER: Doc = {
    "name": "slurmd",
    "securityContext": {
        "privileged": True,
        "capabilities": {"add": ["BPF", "NET_ADMIN", "SYS_ADMIN", "SYS_NICE"]},
    },
}
"""The slurmd container as the operator builds it (slurm-cluster README, Security): values cannot
change its security context."""


@dataclass(frozen=True)
class Verdict:
    """The lowest level admitting a pod, and why it is not lower (``level: reason`` strings)."""

    level: str
    reasons: list[str] = field(default_factory=list)


def _containers(spec: Doc) -> list[Doc]:
    return [
        c
        for group in ("initContainers", "containers", "ephemeralContainers")
        for c in spec.get(group) or []
        if isinstance(c, dict)
    ]


def _baseline_pod(spec: Doc) -> Iterator[str]:
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            yield f"{key}: true"
    for volume in spec.get("volumes") or []:
        if "hostPath" in volume:
            yield f"hostPath volume {volume.get('name')}"
    ctx = spec.get("securityContext") or {}
    yield from _baseline_context(ctx, "pod")
    for sysctl in ctx.get("sysctls") or []:
        if sysctl.get("name") not in SAFE_SYSCTLS:
            yield f"unsafe sysctl {sysctl.get('name')}"


def _baseline_context(ctx: Doc, who: str) -> Iterator[str]:
    if (ctx.get("windowsOptions") or {}).get("hostProcess"):
        yield f"{who}: windowsOptions.hostProcess"
    if (ctx.get("seccompProfile") or {}).get("type") == "Unconfined":
        yield f"{who}: seccompProfile Unconfined"
    if (ctx.get("appArmorProfile") or {}).get("type") == "Unconfined":
        yield f"{who}: appArmorProfile Unconfined"
    selinux = ctx.get("seLinuxOptions") or {}
    if selinux.get("type", "") not in SELINUX_TYPES or selinux.get("user") or selinux.get("role"):
        yield f"{who}: seLinuxOptions {selinux}"


def _baseline_container(container: Doc) -> Iterator[str]:
    who = str(container.get("name") or "container")
    ctx = container.get("securityContext") or {}
    if ctx.get("privileged"):
        yield f"{who}: privileged container"
    added = set((ctx.get("capabilities") or {}).get("add") or []) - BASELINE_CAPABILITIES
    if added:
        yield f"{who}: capabilities {', '.join(sorted(added))}"
    if ctx.get("procMount", "Default") != "Default":
        yield f"{who}: procMount {ctx.get('procMount')}"
    for port in container.get("ports") or []:
        if port.get("hostPort"):
            yield f"{who}: hostPort {port['hostPort']}"
    yield from _baseline_context(ctx, who)


def _restricted_container(container: Doc, pod_ctx: Doc) -> Iterator[str]:
    who = str(container.get("name") or "container")
    ctx = container.get("securityContext") or {}
    if ctx.get("allowPrivilegeEscalation") is not False:
        yield f"{who}: allowPrivilegeEscalation not false"
    non_root = ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot"))
    if non_root is not True:
        yield f"{who}: runAsNonRoot not true"
    if ctx.get("runAsUser", pod_ctx.get("runAsUser")) == 0:
        yield f"{who}: runAsUser 0"
    seccomp = (ctx.get("seccompProfile") or pod_ctx.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        yield f"{who}: seccompProfile not RuntimeDefault"
    caps = ctx.get("capabilities") or {}
    if "ALL" not in (caps.get("drop") or []):
        yield f"{who}: capabilities not dropped (drop: [ALL])"
    added = set(caps.get("add") or []) - {"NET_BIND_SERVICE"}
    if added:
        yield f"{who}: adds capabilities {', '.join(sorted(added))}"


def level(spec: Doc) -> Verdict:
    """The lowest Pod Security level that admits the pod spec ``spec``."""
    containers = _containers(spec)
    privileged = [*_baseline_pod(spec), *(r for c in containers for r in _baseline_container(c))]
    if privileged:
        return Verdict("privileged", privileged)
    pod_ctx = spec.get("securityContext") or {}
    baseline = [
        f"volume {v.get('name')} is not of a restricted type"
        for v in spec.get("volumes") or []
        if not set(v) - {"name"} <= RESTRICTED_VOLUMES
    ]
    baseline += [r for c in containers for r in _restricted_container(c, pod_ctx)]
    if baseline:
        return Verdict("baseline", baseline)
    return Verdict("restricted")


def _slinky_pod(doc: Doc) -> Doc:
    """The pod the operator builds for a Slinky object, as far as the object says."""
    spec = doc.get("spec") or {}
    pod = dict(((spec.get("template") or {}).get("spec")) or {})
    containers = [
        {"name": key, **value}
        for key, value in spec.items()
        if isinstance(value, dict) and "image" in value
    ]
    if doc.get("kind") == "NodeSet":
        containers = [c for c in containers if c["name"] != "slurmd"] + [SLURMD_CONTAINER]
    pod["containers"] = [*(pod.get("containers") or []), *containers]
    return pod


def workload_pods(docs: list[Doc]) -> Iterator[tuple[Doc, Doc]]:
    """(object, pod spec) of every pod the render makes, directly or through the operator."""
    for doc in docs:
        kind = doc.get("kind")
        spec = doc.get("spec") or {}
        if kind == "Pod":
            yield doc, spec
        elif kind in WORKLOAD_TEMPLATE_KINDS:
            yield doc, (spec.get("template") or {}).get("spec") or {}
        elif kind == "CronJob":
            job = (spec.get("jobTemplate") or {}).get("spec") or {}
            yield doc, (job.get("template") or {}).get("spec") or {}
        elif str(doc.get("apiVersion", "")).startswith(SLINKY_GROUP + "/") and kind in (
            "Controller", "NodeSet", "LoginSet", "RestApi", "Accounting",
        ):  # fmt: skip
            yield doc, _slinky_pod(doc)


def rank(name: str) -> int:
    """0 for restricted, 1 for baseline, 2 for privileged; unknown text counts as privileged."""
    return LEVELS.index(name) if name in LEVELS else len(LEVELS) - 1
