"""Invariants every rendered manifest set must hold, whatever the values.

Each ``check_*`` function takes parsed documents and returns a list of human-readable
violations (empty when the invariant holds), so that tests can report all problems at once.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

Doc = dict[str, Any]

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

CLUSTER_SCOPED_KINDS = frozenset(
    {
        "APIService",
        "CertificateSigningRequest",
        "ClusterIssuer",
        "ClusterRole",
        "ClusterRoleBinding",
        "CSIDriver",
        "CSINode",
        "CustomResourceDefinition",
        "DeviceClass",
        "FlowSchema",
        "IngressClass",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PriorityClass",
        "PriorityLevelConfiguration",
        "RuntimeClass",
        "StorageClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
    }
)

NAME_LIMITS: dict[str, tuple[re.Pattern[str], int]] = {
    # The name becomes a DNS label (Service, Namespace) or the value of a label on the
    # pods the controller creates (Job name; StatefulSet and CronJob names plus a suffix).
    "Service": (DNS1035_LABEL, 63),
    "Namespace": (DNS1123_LABEL, 63),
    "Job": (DNS1123_LABEL, 63),
    "CronJob": (DNS1123_LABEL, 52),
    "StatefulSet": (DNS1123_LABEL, 52),
    "DaemonSet": (DNS1123_LABEL, 63),
    "Deployment": (DNS1123_LABEL, 63),
}

WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})
STANDARD_LABELS = (
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
)


def ident(doc: Doc) -> str:
    meta = doc.get("metadata") or {}
    ns = meta.get("namespace")
    where = f"{ns}/" if ns else ""
    return f"{doc.get('kind')} {where}{meta.get('name')}"


def walk(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every (json-path, value) pair under ``node``, depth first."""
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, f"{path}[{index}]")


def pod_specs(doc: Doc) -> Iterator[tuple[str, Doc]]:
    """Every pod-spec-shaped mapping in ``doc`` (it has a ``containers`` list)."""
    for path, value in walk(doc):
        if isinstance(value, dict) and isinstance(value.get("containers"), list):
            yield path, value


def _duplicates(values: Iterable[Any]) -> list[Any]:
    return sorted((v for v, n in Counter(values).items() if n > 1), key=str)


def check_unique(docs: list[Doc]) -> list[str]:
    """No two objects share apiVersion, kind, namespace and name."""
    keys = [
        (
            d.get("apiVersion"),
            d.get("kind"),
            (d.get("metadata") or {}).get("namespace"),
            (d.get("metadata") or {}).get("name"),
        )
        for d in docs
    ]
    return [
        f"object rendered twice: {k[1]} {k[2] or ''}/{k[3]} ({k[0]})" for k in _duplicates(keys)
    ]


def check_names(docs: list[Doc]) -> list[str]:
    """Names are DNS-1123 (63 characters where Kubernetes needs a label); labels are valid."""
    problems = []
    for doc in docs:
        meta = doc.get("metadata") or {}
        name = meta.get("name")
        kind = str(doc.get("kind"))
        if not isinstance(name, str) or not name:
            problems.append(f"{ident(doc)}: metadata.name is missing")
            continue
        pattern, limit = NAME_LIMITS.get(kind, (DNS1123_SUBDOMAIN, 253))
        if kind in {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}:
            pattern, limit = re.compile(r"^[^/%]+$"), 253  # path segment names
        if not pattern.match(name) or len(name) > limit:
            problems.append(
                f"{ident(doc)}: name {name!r} is not a valid {kind} name (pattern {pattern.pattern}, at most {limit})"
            )
        for where, labels in _label_maps(doc):
            for key, value in (labels or {}).items():
                prefix, _, short = str(key).rpartition("/")
                if (
                    not LABEL_NAME.match(short)
                    or len(short) > 63
                    or (prefix and not DNS1123_SUBDOMAIN.match(prefix))
                ):
                    problems.append(f"{ident(doc)}: {where} key {key!r} is not a valid label key")
                if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
                    problems.append(
                        f"{ident(doc)}: {where} {key}={value!r} is not a valid label value"
                    )
        for path, spec in pod_specs(doc):
            for group in ("containers", "initContainers", "ephemeralContainers"):
                for container in spec.get(group) or []:
                    cname = container.get("name", "")
                    if not DNS1123_LABEL.match(cname) or len(cname) > 63:
                        problems.append(
                            f"{ident(doc)}: {path}.{group} name {cname!r} is not a DNS-1123 label"
                        )
                    for port in container.get("ports") or []:
                        pname = port.get("name")
                        if pname is not None and (not PORT_NAME.match(pname) or len(pname) > 15):
                            problems.append(
                                f"{ident(doc)}: {path} container {cname} port name {pname!r} "
                                "is not an IANA service name"
                            )
    return problems


def _label_maps(doc: Doc) -> Iterator[tuple[str, dict[str, Any]]]:
    yield "metadata.labels", (doc.get("metadata") or {}).get("labels") or {}
    if doc.get("kind") == "CustomResourceDefinition":
        return  # its spec is a schema, not objects
    for path, value in walk(doc.get("spec")):
        if (
            path.endswith(".metadata")
            and isinstance(value, dict)
            and isinstance(value.get("labels"), dict)
        ):
            yield f"spec{path}.labels", value["labels"]
        if path.endswith("matchLabels") and isinstance(value, dict):
            yield f"spec{path}", value


def _matches(selector: dict[str, Any], labels: dict[str, Any]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def check_selectors(docs: list[Doc]) -> list[str]:
    """Workload selectors match their own pod template labels and are not empty."""
    problems = []
    for doc in docs:
        if doc.get("kind") not in WORKLOAD_KINDS:
            continue
        spec = doc.get("spec") or {}
        selector = spec.get("selector")
        if selector is None:
            if doc.get("kind") != "Job":
                problems.append(f"{ident(doc)}: spec.selector is missing")
            continue
        if not (selector.get("matchLabels") or selector.get("matchExpressions")):
            problems.append(f"{ident(doc)}: spec.selector is empty and would select every pod")
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not _matches(selector, labels):
            problems.append(
                f"{ident(doc)}: spec.selector {selector} does not match the pod template labels {labels}"
            )
    return problems


def check_list_keys(docs: list[Doc]) -> list[str]:
    """No duplicate names in containers, volumes, env, ports or volumeMounts (server-side apply rejects them)."""
    problems = []
    for doc in docs:
        for path, spec in pod_specs(doc):
            containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
            for dup in _duplicates(c.get("name") for c in containers):
                problems.append(f"{ident(doc)}: {path} has two containers named {dup!r}")
            for dup in _duplicates(v.get("name") for v in spec.get("volumes") or []):
                problems.append(f"{ident(doc)}: {path}.volumes has two volumes named {dup!r}")
            for container in containers:
                cname = container.get("name")
                for field_name, key in (
                    ("env", "name"),
                    ("volumeMounts", "mountPath"),
                    ("volumeDevices", "devicePath"),
                ):
                    for dup in _duplicates(e.get(key) for e in container.get(field_name) or []):
                        problems.append(
                            f"{ident(doc)}: container {cname} has two {field_name} entries with {key} {dup!r}"
                        )
                ports = container.get("ports") or []
                for dup in _duplicates(
                    (p.get("containerPort"), p.get("protocol", "TCP")) for p in ports
                ):
                    problems.append(f"{ident(doc)}: container {cname} declares port {dup} twice")
                for dup in _duplicates(p.get("name") for p in ports if p.get("name")):
                    problems.append(f"{ident(doc)}: container {cname} has two ports named {dup!r}")
        if doc.get("kind") == "Service":
            ports = (doc.get("spec") or {}).get("ports") or []
            for dup in _duplicates((p.get("port"), p.get("protocol", "TCP")) for p in ports):
                problems.append(f"{ident(doc)}: service port {dup} is declared twice")
            for dup in _duplicates(p.get("name") for p in ports if p.get("name")):
                problems.append(f"{ident(doc)}: two service ports are named {dup!r}")
    return problems


def check_images(docs: list[Doc], registry: str) -> list[str]:
    """Every image reference goes through the values (it carries the registry set in values)."""
    problems = []
    for doc in docs:
        for path, value in walk(doc):
            if (
                path.endswith(".image")
                and isinstance(value, str)
                and not value.startswith(f"{registry}/")
            ):
                problems.append(
                    f"{ident(doc)}: {path} = {value!r} does not use the registry from values ({registry!r})"
                )
    return problems


def value_strings(values: Any) -> set[str]:
    """Every string in a values tree (for telling value-derived text from hard-coded text), and
    each item of a comma-separated one (upstream Slinky's ``operator.namespaces: a,b``)."""
    strings = {v for _, v in walk(values) if isinstance(v, str)}
    return strings | {part.strip() for v in strings if "," in v for part in v.split(",")}


def check_namespaces(
    docs: list[Doc], release_namespace: str, allowed: set[str] | None = None
) -> list[str]:
    """Namespaced objects sit in the release namespace (or one named in values); nothing else names a namespace."""
    allowed = {release_namespace, *(allowed or set())}
    scoped = dict.fromkeys(CLUSTER_SCOPED_KINDS, True)
    for doc in docs:
        if doc.get("kind") == "CustomResourceDefinition":
            names = (doc.get("spec") or {}).get("names") or {}
            scoped[str(names.get("kind"))] = (doc.get("spec") or {}).get("scope") == "Cluster"
    problems = []
    for doc in docs:
        meta = doc.get("metadata") or {}
        cluster_scoped = scoped.get(str(doc.get("kind")), False)
        if cluster_scoped and "namespace" in meta:
            problems.append(
                f"{ident(doc)}: a cluster-scoped object must not set metadata.namespace"
            )
        if not cluster_scoped and meta.get("namespace") is None:
            problems.append(
                f"{ident(doc)}: metadata.namespace is not set (use the chart's namespace helper)"
            )
        for path, value in walk(doc):
            if path.endswith(".namespace") and isinstance(value, str) and value not in allowed:
                problems.append(
                    f"{ident(doc)}: {path} = {value!r} is neither the release namespace nor taken from values"
                )
    return problems


def check_standard_labels(docs: list[Doc]) -> list[str]:
    """Every object carries the app.kubernetes.io name, instance and managed-by labels."""
    problems = []
    for doc in docs:
        labels = (doc.get("metadata") or {}).get("labels") or {}
        missing = [label for label in STANDARD_LABELS if label not in labels]
        if missing:
            problems.append(f"{ident(doc)}: missing standard labels {missing}")
    return problems


def secret_strings(docs: list[Doc], min_length: int = 6) -> set[str]:
    """Decoded Secret values of at least ``min_length`` characters."""
    found: set[str] = set()
    for doc in docs:
        if doc.get("kind") != "Secret":
            continue
        for value in (doc.get("stringData") or {}).values():
            found.add(str(value))
        for value in (doc.get("data") or {}).values():
            found.add(str(value))
            try:
                found.add(base64.b64decode(str(value), validate=True).decode("utf-8", "replace"))
            except (binascii.Error, ValueError):
                continue
    return {s for s in found if len(s) >= min_length}


def check_notes(notes: str, docs: list[Doc]) -> list[str]:
    """NOTES.txt shows no Secret data (neither encoded nor decoded)."""
    problems = []
    for secret in secret_strings(docs):
        for line in secret.splitlines() or [secret]:
            if len(line.strip()) >= 6 and line.strip() in notes:
                problems.append(f"NOTES.txt contains Secret data ({line.strip()[:8]}...)")
                break
    return problems


def all_invariants(
    docs: list[Doc], *, namespace: str, values: Any, registry: str | None
) -> list[str]:
    """Every invariant above, for one render."""
    problems = [
        *check_unique(docs),
        *check_names(docs),
        *check_selectors(docs),
        *check_list_keys(docs),
        *check_namespaces(docs, namespace, value_strings(values)),
        *check_standard_labels(docs),
    ]
    if registry is not None:
        problems += check_images(docs, registry)
    return problems


# Annotations that make a cloud's load balancer internal (no public address).
INTERNAL_LOAD_BALANCER = {
    "service.beta.kubernetes.io/aws-load-balancer-internal": "true",
    "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal",
    "networking.gke.io/load-balancer-type": "internal",
    "cloud.google.com/load-balancer-type": "internal",
    "service.beta.kubernetes.io/azure-load-balancer-internal": "true",
    "service.beta.kubernetes.io/oci-load-balancer-internal": "true",
}
EVERY_ADDRESS = {"0.0.0.0/0", "::/0"}


def _internal(doc: Doc) -> bool:
    """Whether any annotation map in ``doc`` asks its cloud for an internal load balancer."""
    for path, value in walk(doc):
        if path.endswith(".annotations") and isinstance(value, dict):
            for key, wanted in INTERNAL_LOAD_BALANCER.items():
                if str(value.get(key, "")).lower() == wanted:
                    return True
    return False


def open_load_balancers(docs: Iterable[Doc]) -> list[tuple[Doc, str]]:
    """(object, json-path) of every Service spec of type LoadBalancer that any network may reach:
    Services, and the Service specs Slinky objects carry (a LoginSet's sshd, a RestApi's
    slurmrestd), with no ``loadBalancerSourceRanges`` (or a range of every address) and no
    internal-load-balancer annotation in the object."""
    found = []
    for doc in docs:
        for path, value in walk(doc):
            if not isinstance(value, dict) or value.get("type") != "LoadBalancer":
                continue
            ranges = set(value.get("loadBalancerSourceRanges") or [])
            if (not ranges or ranges & EVERY_ADDRESS) and not _internal(doc):
                found.append((doc, path))
    return found
