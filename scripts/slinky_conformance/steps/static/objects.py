"""Conformance, static phase: the rendered objects against the Kubernetes OpenAPI and the
CRD schemas (``openapi``, ``crds``), the pass-through settings (``pass-through``) and what the
API server refuses beyond the schemas (``api-server``).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from slinky_conformance.context import Context, Outcome, Skipped
from slinky_conformance.report import Finding, unique
from slinky_conformance.steps.static import passthrough
from slinky_harness.k8s import manifests
from slinky_harness.k8s import schemas as kubeschema

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from slinky_conformance.target import Target


# -- OpenAPI and CRD schemas ----------------------------------------------------------------------

_PROBLEM = re.compile(r"^(?P<label>.*?\)): (?P<where>\.[^:]*|CEL): (?P<text>.*)$", re.S)


def _doc_value(doc: dict[str, Any], where: str) -> Any:
    node: Any = doc
    for key in re.findall(r"\.([^.\[]+)|\[(\d+)\]", where):
        name, index = key
        try:
            node = node[int(index)] if index else node[name]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _object_findings(ctx: Context, custom: bool) -> tuple[list[Finding], int]:
    schemas = kubeschema.schema_set(ctx.kube_version)
    findings = []
    count = 0
    for doc in ctx.rendered:
        is_custom = (str(doc.get("apiVersion")), str(doc.get("kind"))) in schemas.crds
        if is_custom != custom:
            continue
        count += 1
        for problem in schemas.validate(doc):
            match = _PROBLEM.match(problem)
            value = _doc_value(doc, match["where"]) if match and match["where"] != "CEL" else None
            paths = list(ctx.target.where(value)) if isinstance(value, str) and value else []
            if len(paths) == 1:
                fix = f"change {paths[0]} to a value this field accepts"
            elif paths:
                fix = f"change the value that renders this field (one of {', '.join(paths)})"
            else:
                fix = "change the value that renders this field, or report it as a chart bug"
            findings.append(Finding(paths[0] if len(paths) == 1 else "", problem, fix))
    return findings, count


def check_openapi(ctx: Context) -> Outcome:
    findings, count = _object_findings(ctx, custom=False)
    return Outcome(
        f"{count} built-in objects valid for Kubernetes {ctx.kube_version} (strict OpenAPI)",
        findings,
    )


def check_crds(ctx: Context) -> Outcome:
    findings, count = _object_findings(ctx, custom=True)
    if not count:
        raise Skipped("the render holds no custom resources")
    return Outcome(f"{count} custom resources valid against their CRDs", findings)


# -- Kubernetes structs passed through ----------------------------------------------------------


def check_pass_through(ctx: Context) -> Outcome:
    if passthrough.CHART not in ctx.target.charts():
        raise Skipped("no slurm-cluster values: nothing is passed through")
    findings = passthrough.Checker(ctx.target, ctx.kube_version).findings()
    return Outcome(
        f"the pod, container and Service fields the values pass through are Kubernetes "
        f"{ctx.kube_version}'s",
        unique(findings),
    )


# -- what the API server refuses at install -------------------------------------------------------

MAX_CONFIG_BYTES = 1024 * 1024
"""The API server refuses a ConfigMap or Secret whose data add up to more than 1 MiB."""
MAX_OBJECT_BYTES = 3 * 512 * 1024
"""etcd takes no request over 1.5 MiB: a larger object cannot be stored."""
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
NODE_FOLDERS = {"/": "the node's whole filesystem", "/etc": "the node's /etc"}
"""hostPath folders no Slurm pod should mount: write access there is root on the node."""
OPERATOR_VOLUMES = frozenset(
    {"slurm-etc", "slurm-config", "run", "slurm-logfile", "statesave", "slurm-authsocket",
     "sackd-dir", "ssh-config", "ssh-host-keys", "sssd-conf", "authorized-keys"}
)  # fmt: skip
"""Volumes the Slinky operator (v1.2.1's builders) adds to the pods it makes from a Controller,
NodeSet, LoginSet, RestApi or Accounting: a container there may mount them by name."""
_CR_CONTAINERS = (
    "slurmctld",
    "slurmd",
    "login",
    "slurmrestd",
    "slurmdbd",
    "reconfigure",
    "logfile",
)


def first_path(target: Target, value: str, hint: str = "") -> str:
    """The user's values path that holds ``value`` (preferring one containing ``hint``)."""
    paths = list(target.where(value)) if value else []
    hinted = [p for p in paths if hint and hint in p]
    return (hinted or paths or [""])[0]


def _api(
    target: Target, doc: dict[str, Any], value: str, problem: str, fix: str, *, hint: str = ""
) -> Finding:
    return Finding(first_path(target, value, hint), f"{manifests.ident(doc)}: {problem}", fix)


def external_name_findings(target: Target, docs: Sequence[dict[str, Any]]) -> list[Finding]:
    """An ExternalName Service's host must be a lower-case DNS name (RFC 1123, a final dot
    allowed): the API server refuses upper case, an IP address (IPv6's colons) and a name with
    ``_``. Also in the Service specs the operator makes Services from."""
    findings = []
    for doc in docs:
        for _, node in manifests.walk(doc):
            if not isinstance(node, dict) or node.get("type") != "ExternalName":
                continue
            host = node.get("externalName")
            text = str(host or "").removesuffix(".")
            if text and len(text) <= 253 and _DNS_SUBDOMAIN.match(text):
                continue
            findings.append(
                _api(
                    target,
                    doc,
                    str(host or ""),
                    f"ExternalName {host!r} is not a lower-case DNS name, so the API server "
                    "refuses the Service",
                    "give the host's DNS name in lower case (an IP address cannot be an "
                    "ExternalName: give a name that resolves to it)",
                )
            )
    return findings


def _data_size(doc: dict[str, Any]) -> tuple[int, str]:
    """The bytes of a ConfigMap's or Secret's data as the API server counts them, and the
    largest value (to find where it came from)."""
    sizes: list[tuple[int, str]] = []
    for field_name in ("data", "binaryData", "stringData"):
        for value in (doc.get(field_name) or {}).values():
            text = str(value or "")
            binary = field_name == "binaryData" or (
                doc["kind"] == "Secret" and field_name == "data"
            )
            sizes.append((len(text) * 3 // 4 if binary else len(text.encode()), text))
    return sum(n for n, _ in sizes), max(sizes, default=(0, ""))[1]


def config_findings(target: Target, docs: Sequence[dict[str, Any]]) -> list[Finding]:
    """ConfigMaps and Secrets the API server refuses: over 1 MiB of data, a key that is not a
    file name (``[-._a-zA-Z0-9]+``), a ConfigMap key in both ``data`` and ``binaryData``; and a
    Secret key in both ``data`` and ``stringData`` (accepted, but the ``data`` value is lost)."""
    findings = []
    for doc in docs:
        if doc.get("kind") not in ("ConfigMap", "Secret"):
            continue
        size, largest = _data_size(doc)
        if size > MAX_CONFIG_BYTES:
            findings.append(
                _api(
                    target,
                    doc,
                    largest,
                    f"holds {size} bytes of data; the API server refuses over 1 MiB ({MAX_CONFIG_BYTES})",
                    "make the file smaller, or split it across ConfigMaps",
                )
            )
        fields = {f: set(doc.get(f) or {}) for f in ("data", "binaryData", "stringData")}
        for key in sorted(set().union(*fields.values()), key=str):
            text = str(key)
            if not (_CONFIG_KEY.match(text) and len(text) <= 253 and text not in (".", "..")):
                findings.append(
                    _api(
                        target,
                        doc,
                        text,
                        f"key {text!r} is not a valid file name, so the API server refuses it",
                        "use letters, digits, '-', '_' and '.' only",
                    )
                )
        other = "binaryData" if doc["kind"] == "ConfigMap" else "stringData"
        for key in sorted(fields["data"] & fields[other], key=str):
            what = (
                "the API server refuses it" if other == "binaryData"
                else "stringData silently replaces the data value"
            )  # fmt: skip
            findings.append(
                _api(
                    target,
                    doc,
                    str(key),
                    f"key {key!r} is in both data and {other}: {what}",
                    "give the key once",
                )
            )
    return findings


def _host_path_problem(path: str) -> str:
    parts = path.split("/")
    if ".." in parts:
        return "contains '..', which the API server refuses"
    normal = "/" + "/".join(p for p in parts if p)
    if normal in NODE_FOLDERS:
        return f"mounts {NODE_FOLDERS[normal]}: a pod with it can take over the node"
    return ""


def host_path_findings(target: Target, docs: Sequence[dict[str, Any]]) -> list[Finding]:
    """hostPath volumes: ``..`` in the path (refused), or ``/`` or ``/etc`` (root on the node)."""
    findings = []
    for doc in docs:
        for _, node in manifests.walk(doc):
            host = node.get("hostPath") if isinstance(node, dict) else None
            path = host.get("path") if isinstance(host, dict) else None
            problem = _host_path_problem(str(path)) if isinstance(path, str) else ""
            if problem:
                findings.append(
                    _api(
                        target,
                        doc,
                        str(path),
                        f"hostPath volume {node.get('name')!r} ({path}) {problem}",
                        "mount the one file or folder the pod needs "
                        "(a normalised path without '..'), or a ConfigMap, Secret or emptyDir",
                        hint="hostPath",
                    )
                )
    return findings


def _mount_sets(doc: dict[str, Any]) -> Iterator[tuple[set[str], list[dict[str, Any]]]]:
    """(volume names, containers) of each pod ``doc`` makes: its pod specs, and for a Slinky
    resource the template's volumes with the operator's and the containers it names."""
    spec: dict[str, Any] = doc["spec"] if isinstance(doc.get("spec"), dict) else {}
    if str(doc.get("apiVersion", "")).startswith("slinky.slurm.net/"):
        pod = ((spec.get("template") or {}).get("spec")) or {}
        names = {str(v.get("name")) for v in pod.get("volumes") or [] if isinstance(v, dict)}
        containers = [spec[k] for k in _CR_CONTAINERS if isinstance(spec.get(k), dict)]
        containers += [c for k in ("initContainers", "containers") for c in pod.get(k) or []]
        yield names | OPERATOR_VOLUMES, [c for c in containers if isinstance(c, dict)]
        return
    for _, pod in manifests.pod_specs(doc):
        names = {str(v.get("name")) for v in pod.get("volumes") or [] if isinstance(v, dict)}
        containers = [c for k in ("initContainers", "containers") for c in pod.get(k) or []]
        yield names, [c for c in containers if isinstance(c, dict)]


def mount_findings(target: Target, docs: Sequence[dict[str, Any]]) -> list[Finding]:
    """A volumeMount naming a volume the pod does not have, and two mounts on one path in one
    container: the API server refuses the pod (for a Slinky resource, the operator's pod)."""
    findings = []
    for doc in docs:
        for volumes, containers in _mount_sets(doc):
            for container in containers:
                mounts = [m for m in container.get("volumeMounts") or [] if isinstance(m, dict)]
                who = f"container {container.get('name') or '(the chart names it)'}"
                for mount in mounts:
                    name = str(mount.get("name"))
                    if name not in volumes:
                        findings.append(
                            _api(
                                target,
                                doc,
                                name,
                                f"{who} mounts volume {name!r} at "
                                f"{mount.get('mountPath')}, which the pod does not have",
                                f"add a volume named {name} to the pod's volumes (podSpec.volumes)"
                                ", or name one it has",
                                hint="volumeMounts",
                            )
                        )
                paths = [str(m.get("mountPath", "")).rstrip("/") or "/" for m in mounts]
                for dup in sorted({p for p in paths if paths.count(p) > 1}):
                    findings.append(
                        _api(
                            target,
                            doc,
                            dup,
                            f"{who} has two volumeMounts on {dup}, which the API server refuses",
                            "mount one volume per path (subPath mounts one file of a volume)",
                            hint="volumeMounts",
                        )
                    )
    return findings


def size_findings(target: Target, docs: Sequence[dict[str, Any]]) -> list[Finding]:
    return [
        _api(
            target,
            doc,
            "",
            f"is {size} bytes; etcd stores no object over {MAX_OBJECT_BYTES}",
            "move large files out of the values (a ConfigMap made beforehand)",
        )
        for doc in docs
        if (size := len(json.dumps(doc, default=str))) > MAX_OBJECT_BYTES
    ]


def check_api_server(ctx: Context) -> Outcome:
    docs = ctx.rendered
    findings = [
        *external_name_findings(ctx.target, docs),
        *config_findings(ctx.target, docs),
        *host_path_findings(ctx.target, docs),
        *mount_findings(ctx.target, docs),
        *size_findings(ctx.target, docs),
    ]
    return Outcome(
        f"{len(docs)} objects pass what the API server checks beyond the schemas (names, "
        "sizes, keys, mounts)",
        unique(findings),
    )
