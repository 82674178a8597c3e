"""Conformance, static phase: what can be proven from the values and the render alone.

Steps, in order (each finding names the values path in the user's terms):

* ``schema``: Helm's own verdict (``helm lint`` of the chart or the built umbrella with the user's
  files: what Helm refuses is what an install refuses), with the paths and fixes of each
  installed chart's ``values.schema.json`` read in Python (and the umbrella's own schema) where
  Helm refuses; the values are read as Helm reads them (a date stays a string).
* ``pass-through``: the Kubernetes structs slurm-cluster passes through from the values (pod
  specs, containers, Service specs) against the OpenAPI schemas of ``--kube-version``
  (:mod:`.passthrough`): an unknown or misplaced key, at its values path, with "did you mean".
* ``render-helm4`` / ``render-helm3``: ``helm template`` with the pinned Helm 4 and Helm 3; a
  chart's refusal (its ``validate.yaml`` list, a ``fail``, a schema error) is mapped to the values
  path it names. Helm 4's documents are what the later steps read.
* ``openapi``: built-in kinds against the Kubernetes OpenAPI schemas of ``--kube-version``;
  ``crds``: custom resources against the CRDs (Slinky's with their CEL rules, cert-manager,
  Prometheus Operator, KEDA).
* ``api-server``: what the API server refuses at install beyond the schemas: an ExternalName
  that is no lower-case DNS name, ConfigMaps and Secrets over 1 MiB or with bad or doubled keys,
  hostPath ``..`` (and ``/`` or ``/etc``, root on the node), a volumeMount naming no volume, two
  mounts on one path, an object too large for etcd.
* ``slurm-conf``: what slurmctld will be given: at least one partition when there are NodeSets,
  one of them ``Default=YES`` (a job without ``-p`` finds it), every NodeSet's ``Gres`` named
  in ``GresTypes`` (else slurmctld shows ``Gres=(null)``); a GPU vendor hook with no GPU
  NodeSet is a warning.
* ``invariants``: the render invariants every tier checks (:mod:`slinky_harness.k8s.manifests`).
* ``pod-security``: the Pod Security level each namespace needs for its pods, and the label to
  set; it fails only when a namespace the render makes enforces a lower level.
* ``rbac``: what each ServiceAccount may do; a wildcard grant fails.
* ``references``: partitions naming unknown or disabled NodeSets, an inline topology placing a
  node in two blocks (or under two leaf switches), and Secrets the render refers to but never
  makes.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import jsonschema
from jsonschema.exceptions import best_match

from slinky_harness.apps.conformance import passthrough
from slinky_harness.apps.conformance.context import Context, Outcome, Skipped, Step, StepFailed
from slinky_harness.apps.conformance.report import Finding
from slinky_harness.apps.conformance.target import format_path
from slinky_harness.helm import charts as chart_index
from slinky_harness.helm import client as helm_client
from slinky_harness.k8s import manifests, podsecurity, rbac, references
from slinky_harness.k8s import operator as slinky_operator
from slinky_harness.k8s import schemas as kubeschema
from slinky_topology.errors import TopologyError
from slinky_topology.parse import parse_topology_yaml
from slinky_topology.validate import validate_doc

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from slinky_harness.apps.conformance.target import Target

PHASE = "static"
CLUSTER = "slurm-cluster"

# -- schema --------------------------------------------------------------------------------------


def _unknown_key_fix(schema: dict[str, Any], key: str) -> str:
    allowed = sorted(schema.get("properties") or {})
    near = difflib.get_close_matches(key, allowed, n=1) if key else []
    if near:
        return f"did you mean {near[0]}? Remove the key or correct its spelling"
    shown = ", ".join(allowed[:12]) + (", ..." if len(allowed) > 12 else "")
    return f"remove the key or correct its spelling (keys here: {shown or 'none'})"


def _schema_fix(error: jsonschema.ValidationError, key: str = "") -> str:
    """What to change a value to, from the schema keyword that refused it."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    keyword = str(error.validator)
    value: Any = error.validator_value
    fixes: dict[str, Callable[[], str]] = {
        "enum": lambda: f"use one of {', '.join(json.dumps(v) for v in value)}",
        "type": lambda: f"give a value of type {value}",
        "pattern": lambda: f"give a value matching {value}",
        "required": lambda: "add the missing key",
        "additionalProperties": lambda: _unknown_key_fix(schema, key),
    }
    if keyword in fixes:
        return fixes[keyword]()
    return f"change it to meet the chart's values.schema.json ({keyword}: {json.dumps(value)[:80]})"


def _extra_keys(error: jsonschema.ValidationError) -> list[str]:
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return []
    schema = error.schema if isinstance(error.schema, dict) else {}
    known = set(schema.get("properties") or {})
    patterns = [re.compile(p) for p in schema.get("patternProperties") or {}]
    return [k for k in error.instance if k not in known and not any(p.search(k) for p in patterns)]


def schema_findings(
    schema: dict[str, Any], values: dict[str, Any], prefix: tuple[str, ...] = ()
) -> list[Finding]:
    """Every error of ``values`` against ``schema`` (its declared draft), at its values path."""
    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    findings = []
    for error in sorted(validator.iter_errors(values), key=lambda e: list(map(str, e.path))):
        shown = best_match(error.context) if error.context else error
        parts = (*prefix, *shown.absolute_path)
        extra = _extra_keys(shown)
        if extra:
            for key in extra:
                findings.append(
                    Finding(format_path((*parts, key)), "unknown key", _schema_fix(shown, key))
                )
            continue
        findings.append(Finding(format_path(parts), shown.message, _schema_fix(shown)))
    return findings


def _umbrella_schema(target: Target) -> list[Finding]:
    path = target.path / "values.schema.json"
    if target.kind != "umbrella" or not path.is_file():
        return []
    values = {k: v for k, v in target.values.items()}
    return schema_findings(json.loads(path.read_text()), values)


def _helm_schema(ctx: Context) -> tuple[list[Finding], str]:
    """Helm's own verdict on the values against the schemas (``helm lint`` of the chart, or of
    the built umbrella, with the user's files): the schema errors it prints, at their values
    paths. A lint that fails for another reason (a template's ``fail``) is not a schema verdict:
    the render step reports it."""
    chart = ctx.target.chart_dir(ctx.work)
    args = ["lint", str(chart), "--strict", "--kube-version", ctx.kube_version]
    result = helm_client.run([*args, *ctx.target.values_args()])
    if result.ok:
        return [], "Helm's schema check (helm lint) accepts the values"
    found = schema_error_findings(ctx.target, f"{result.stdout}\n{result.stderr}")
    if not found:
        return (
            [],
            "Helm's schema check accepts the values (helm lint fails in a template: see render)",
        )
    return found, "Helm's schema check (helm lint) refuses the values"


def _under(path: str, parent: str) -> bool:
    return not parent or path == parent or path.startswith((f"{parent}.", f"{parent}["))


def check_schema(ctx: Context) -> Outcome:
    """The verdict is Helm's (it is what refuses an install); the schemas read here in Python
    only lend their paths and fixes to what Helm refuses. Where the two disagree (Python's
    regular expressions let a trailing newline through ``$``, say) Helm wins, and the details
    say so."""
    ours = _umbrella_schema(ctx.target)
    checked = []
    for chart in ctx.target.charts():
        schema_path = chart_index.CHARTS_DIR / chart / "values.schema.json"
        if not schema_path.is_file():
            continue
        schema = json.loads(schema_path.read_text())
        prefix = (chart,) if ctx.target.kind == "umbrella" else ()
        ours += schema_findings(schema, ctx.target.chart_values(chart), prefix)
        checked.append(chart)
    helms, said = _helm_schema(ctx)
    details = [said]
    findings: list[Finding] = []
    if helms:
        # Python's finding where Helm refuses (its paths are finer: an unknown key, not the
        # object holding it), Helm's own where Python saw nothing wrong
        findings = [o for o in ours if any(_under(o.path, h.path) for h in helms)]
        findings += [h for h in helms if not any(_under(o.path, h.path) for o in findings)]
    elif ours:
        details.append(
            "Helm accepts what the Python schema check refuses (not a finding, as Helm is what "
            "installs): " + "; ".join(f.line() for f in ours[:3])
        )
    return Outcome(
        f"values of {', '.join(checked) or 'no chart'} checked against their values.schema.json",
        _unique(findings),
        details,
    )


# -- render ---------------------------------------------------------------------------------------

_PATH_TOKEN = re.compile(r"`?([A-Za-z][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+|\[[^\]\s]+\])+)")


def _tail(text: str, lines: int = 6) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:])


def _value_path(target: Target, chart: str | None, message: str) -> str:
    """The first values path ``message`` names (in the user's terms), or ""."""
    if chart is None:
        return ""
    top = set(target.chart_values(chart)) | {"global"}
    for match in _PATH_TOKEN.finditer(message):
        token = match.group(1).rstrip(".")
        head = re.split(r"[.\[]", token, maxsplit=1)[0]
        if head == chart and target.kind == "umbrella":
            return token
        if head in top:
            return f"{chart}.{token}" if target.kind == "umbrella" else token
    return ""


def _split(message: str) -> tuple[str, str]:
    """A chart message as (what is wrong, what to do): the first sentence, then the rest."""
    head, dot, rest = message.partition(". ")
    if dot and rest:
        return head, rest
    return message, "change the value as the message says"


def _pointer_path(target: Target, chart: str, pointer: str) -> str:
    """A schema error's JSON pointer in ``chart``'s values as a values path of the user's."""
    parts: list[str | int] = [
        int(p) if p.isdigit() else p.replace("~1", "/").replace("~0", "~")
        for p in pointer.strip("/").split("/")
        if p
    ]
    return target.path_of(chart, *parts) if chart in target.charts() else format_path(parts)


def schema_error_findings(target: Target, text: str) -> list[Finding]:
    """Helm's schema errors (a ``<chart>:`` line, then ``- at '<pointer>': <text>`` lines, nested
    under a parent that only says the child failed), the innermost of each."""
    found = [
        (error.chart or target.chart_name, error.pointer, error.text)
        for error in helm_client.HelmResult.failed(text).schema_errors(groups=True)
    ]
    innermost = [
        (c, w, t)
        for c, w, t in found
        if not any(c2 == c and w2.startswith(w + "/") for c2, w2, _ in found)
    ]
    return [
        Finding(_pointer_path(target, c, w), t, "change it to meet the chart's values.schema.json")
        for c, w, t in innermost
    ]


def helm_findings(target: Target, text: str) -> list[Finding]:
    """Findings from Helm's error text: validate.yaml lists, schema errors, ``fail`` messages."""
    findings = []
    failed = helm_client.HelmResult.failed(text).template_failure()
    if failed is not None and failed.listed:
        chart = failed.chart if failed.chart in target.charts() else None
        for message in (m.strip() for m in failed.messages):
            problem, fix = _split(message)
            findings.append(Finding(_value_path(target, chart, message), problem, fix))
    findings += schema_error_findings(target, text)
    if not findings and failed is not None and failed.chart:
        chart = failed.chart if failed.chart in target.charts() else None
        message = failed.text.strip()
        problem, fix = _split(message)
        findings.append(Finding(_value_path(target, chart, message), problem, fix))
    return findings


def _render(ctx: Context, binary: str) -> helm_client.HelmResult:
    chart = ctx.target.chart_dir(ctx.work, binary)
    args = [
        "template", ctx.target.release, str(chart), "--namespace", ctx.target.namespace,
        "--kube-version", ctx.kube_version,
    ]  # fmt: skip
    for api in helm_client.EXTRA_API_VERSIONS:
        args += ["--api-versions", api]
    return helm_client.run([*args, *ctx.target.values_args()], helm=binary)


def _render_outcome(ctx: Context, binary: str, label: str) -> tuple[Outcome, list[dict[str, Any]]]:
    result = _render(ctx, binary)
    if not result.ok:
        findings = helm_findings(ctx.target, result.stderr) or [
            Finding(
                "", f"{label} refused the values: {_tail(result.stderr)}", "fix what Helm reports"
            )
        ]
        return Outcome(f"{label} could not render the values", findings), []
    try:
        docs = helm_client.parse_documents(result.stdout)
    except Exception as exc:  # yaml.YAMLError and the strict loader's errors
        finding = Finding("", f"{label} rendered invalid YAML: {exc}", "fix the value it came from")
        return Outcome(f"{label} rendered invalid YAML", [finding]), []
    kinds: dict[str, int] = defaultdict(int)
    for doc in docs:
        kinds[str(doc.get("kind"))] += 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return Outcome(f"{label} renders {len(docs)} objects", [], [summary]), docs


def check_render_helm4(ctx: Context) -> Outcome:
    outcome, docs = _render_outcome(ctx, "helm", "Helm 4")
    ctx.rendered = docs
    return outcome


def check_render_helm3(ctx: Context) -> Outcome:
    outcome, docs = _render_outcome(ctx, "helm3", "Helm 3")
    if docs and ctx.rendered and _keys(docs) != _keys(ctx.rendered):
        only3 = sorted(_keys(docs) - _keys(ctx.rendered))
        only4 = sorted(_keys(ctx.rendered) - _keys(docs))
        problem = f"Helm 3 and Helm 4 render different objects (only Helm 3: {only3}; only Helm 4: {only4})"
        return Outcome(outcome.reason, [Finding("", problem, "report this as a chart bug")])
    return outcome


def _keys(docs: list[dict[str, Any]]) -> set[str]:
    return {manifests.ident(d) for d in docs}


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
        _unique(findings),
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


def _first_path(target: Target, value: str, hint: str = "") -> str:
    """The user's values path that holds ``value`` (preferring one containing ``hint``)."""
    paths = list(target.where(value)) if value else []
    hinted = [p for p in paths if hint and hint in p]
    return (hinted or paths or [""])[0]


def _api(
    target: Target, doc: dict[str, Any], value: str, problem: str, fix: str, *, hint: str = ""
) -> Finding:
    return Finding(_first_path(target, value, hint), f"{manifests.ident(doc)}: {problem}", fix)


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
        _unique(findings),
    )


# -- what slurmctld will be given -----------------------------------------------------------------

_CONF_ITEM = re.compile(r"(?i)(?:^|\s)([A-Za-z]+)=(\S+)")
GPU_HOOKS = (("vendor", "nvidia", "dcgm", "enabled"),)
"""Vendor hooks that only serve GPU nodes: on without a GPU NodeSet, they do nothing."""


def _conf_items(text: str) -> dict[str, str]:
    """``Key=Value`` items of a slurm.conf line (keys lower-cased)."""
    return {k.lower(): v for k, v in _CONF_ITEM.findall(text)}


def _slurm_partitions(controller: dict[str, Any], nodesets: list[dict[str, Any]]) -> dict[str, str]:
    """Partition -> its slurm.conf items, as the operator writes them: the Controller's
    ``PartitionName=`` lines and one partition per NodeSet with ``partition.enabled``."""
    out: dict[str, str] = {}
    for line in str(controller.get("extraConf") or "").splitlines():
        items = _conf_items(line)
        name = items.get("partitionname", "")
        if name and name.upper() != "DEFAULT":
            out[name] = line
    for nodeset in nodesets:
        partition = nodeset["spec"].get("partition") or {}
        if partition.get("enabled"):
            out[slinky_operator.slurm_nodeset_name(nodeset)] = str(partition.get("config") or "")
    return out


def _gres_source(target: Target, nodeset: str) -> str:
    block = target.user_block(CLUSTER)
    entry = ((block.get("nodesets") or {}).get(nodeset)) or {}
    for key in ("extraConfMap", "extraConf", "gpu"):
        if isinstance(entry, dict) and key in entry:
            return target.path_of(CLUSTER, "nodesets", nodeset, key)
    return target.path_of(CLUSTER, "nodesets", nodeset)


def gres_findings(
    target: Target, controller: dict[str, Any], nodesets: list[dict[str, Any]]
) -> list[Finding]:
    """A NodeSet's nodes declare GRES (``Gres=gpu:8``) that slurm.conf's ``GresTypes`` does not
    name: slurmctld gives them no GPUs (``Gres=(null)``), and a ``--gres=gpu`` job never runs."""
    types: set[str] = set()
    for line in str(controller.get("extraConf") or "").splitlines():
        if "grestypes" in _conf_items(line):
            types |= {t.strip().lower() for t in _conf_items(line)["grestypes"].split(",")}
    findings = []
    for nodeset in nodesets:
        name = slinky_operator.slurm_nodeset_name(nodeset)
        gres = _conf_items(str(nodeset["spec"].get("extraConf") or "")).get("gres", "")
        if gres.lower() in ("", "(null)", "none"):
            continue
        missing = sorted({g.split(":")[0].lower() for g in gres.split(",")} - types)
        if missing:
            findings.append(
                Finding(
                    _gres_source(target, name),
                    f"NodeSet {name}'s nodes declare Gres={gres}, but slurm.conf has no "
                    f"GresTypes={','.join(missing)}: slurmctld gives them no GPUs (Gres=(null)) "
                    "and a --gres job is never placed",
                    f"declare the GPUs with {target.path_of(CLUSTER, 'nodesets', name, 'gpu')} "
                    "(the chart then sets GresTypes=gpu), or add GresTypes="
                    f"{','.join(missing)} ({target.path_of(CLUSTER, 'controller', 'extraConfMap', 'GresTypes')})",
                )
            )
    return findings


def partition_default_findings(
    target: Target, partitions: dict[str, str], nodesets: int
) -> list[Finding]:
    """No partition (with NodeSets to run on), or none marked ``Default=YES``: a job without
    ``-p`` is refused ("No partition specified or system default partition")."""
    at = target.path_of(CLUSTER, "partitions")
    if not partitions:
        if not nodesets:
            return []
        return [
            Finding(
                at,
                "slurmctld gets no partition: every job is refused, its nodes idle",
                f"enable {target.path_of(CLUSTER, 'partitions', 'all', 'enabled')} (nodesets: "
                "[ALL]) or a NodeSet's own partition (nodesets.<name>.partition.enabled)",
            )
        ]
    if any(_conf_items(conf).get("default", "").upper() == "YES" for conf in partitions.values()):
        return []
    return [
        Finding(
            at,
            f"no partition is the default (none of {', '.join(sorted(partitions))} has "
            "Default=YES): a job without -p is refused",
            "add Default=YES to one partition's config (partitions.<name>.config, or "
            "nodesets.<name>.partition.config)",
        )
    ]


def check_slurm_conf(ctx: Context) -> Outcome:
    controllers = [d for d in ctx.rendered if d.get("kind") == "Controller"]
    if not controllers or (controllers[0].get("spec") or {}).get("external"):
        return Outcome("the release runs no slurmctld of its own: nothing to check")
    controller = controllers[0]["spec"]
    nodesets = [d for d in ctx.rendered if d.get("kind") == "NodeSet"]
    partitions = _slurm_partitions(controller, nodesets)
    findings = partition_default_findings(ctx.target, partitions, len(nodesets))
    findings += gres_findings(ctx.target, controller, nodesets)
    details = []
    values = _cluster_values(ctx.target) or {}
    gpu_nodesets = [
        n for n in nodesets
        if _conf_items(str(n["spec"].get("extraConf") or "")).get("gres", "").lower().startswith("gpu")
    ]  # fmt: skip
    for hook in GPU_HOOKS:
        node: Any = values
        for part in hook:
            node = node.get(part) if isinstance(node, dict) else None
        if node is True and not gpu_nodesets:
            details.append(
                f"warning: {ctx.target.path_of(CLUSTER, *hook)} is on, but no NodeSet has GPUs "
                "(nodesets.<name>.gpu): the hook serves no node"
            )
    return Outcome(
        f"{len(partitions)} partitions, a default among them; every NodeSet's GRES named in "
        "GresTypes",
        findings,
        details,
    )


# -- invariants -----------------------------------------------------------------------------------


def check_invariants(ctx: Context) -> Outcome:
    values = ctx.target.values
    registry = str((values.get("global") or {}).get("imageRegistry") or "") or None
    problems = manifests.all_invariants(
        ctx.rendered, namespace=ctx.target.namespace, values=values, registry=registry
    )
    if ctx.notes:
        problems += manifests.check_notes(ctx.notes, ctx.rendered)
    findings = [
        Finding("", p, "change the value that renders it, or report a chart bug") for p in problems
    ]
    return Outcome(f"the render invariants hold for {len(ctx.rendered)} objects", findings)


# -- Pod Security ---------------------------------------------------------------------------------


def _namespace_labels(docs: list[dict[str, Any]]) -> dict[str, str]:
    return {
        str(d["metadata"]["name"]): str(labels[podsecurity.ENFORCE_LABEL])
        for d in docs
        if d.get("kind") == "Namespace"
        and podsecurity.ENFORCE_LABEL in (labels := (d.get("metadata") or {}).get("labels") or {})
    }


def check_pod_security(ctx: Context) -> Outcome:
    needed: dict[str, list[tuple[str, podsecurity.Verdict]]] = defaultdict(list)
    for doc, spec in podsecurity.workload_pods(ctx.rendered):
        namespace = str((doc.get("metadata") or {}).get("namespace") or ctx.target.namespace)
        needed[namespace].append((manifests.ident(doc), podsecurity.level(spec)))
    enforced = _namespace_labels(ctx.rendered)
    details, findings = [], []
    for namespace, pods in sorted(needed.items()):
        top = max((v.level for _, v in pods), key=podsecurity.rank)
        why = [f"{who}: {v.reasons[0]}" for who, v in pods if v.level == top and v.reasons]
        details.append(
            f"namespace {namespace}: {top}"
            + (f" ({'; '.join(why[:4])}{', ...' if len(why) > 4 else ''})" if why else "")
            + f" -> label it {podsecurity.ENFORCE_LABEL}={top}"
        )
        label = enforced.get(namespace)
        if label is not None and podsecurity.rank(top) > podsecurity.rank(label):
            paths = [p for p in ctx.target.where(label) if podsecurity.ENFORCE_LABEL in p]
            findings.append(
                Finding(
                    paths[0] if paths else "",
                    f"namespace {namespace} enforces Pod Security {label!r} but its pods need {top!r}",
                    f"set {podsecurity.ENFORCE_LABEL}={top} on namespace {namespace}",
                )
            )
    if not needed:
        return Outcome("the render makes no pods", findings, details)
    return Outcome("Pod Security level per namespace (see details)", findings, details)


# -- RBAC -----------------------------------------------------------------------------------------


_RBAC_KEYS = re.compile(r"rules|verbs|resources|apiGroups")


def exposure_warnings(target: Target, docs: Sequence[dict[str, Any]]) -> list[str]:
    """A warning for each LoadBalancer Service spec any network may reach (see
    :func:`manifests.open_load_balancers`): a login Service opens sshd to the internet. A warning,
    not a finding: some sites mean it; the API server accepts it."""
    warnings = []
    for doc, path in manifests.open_load_balancers(docs):
        hint = "loginsets" if doc.get("kind") == "LoginSet" else ""
        where = _first_path(target, "LoadBalancer", hint) or f"{manifests.ident(doc)}{path}"
        warnings.append(
            f"warning: {where}: {manifests.ident(doc)}{path} is a LoadBalancer that any network "
            "can reach (no loadBalancerSourceRanges, no internal-load-balancer annotation): list "
            "the networks that may connect in its spec.loadBalancerSourceRanges, ask your cloud "
            "for an internal load balancer, or use type ClusterIP"
        )
    return warnings


def check_exposure(ctx: Context) -> Outcome:
    warnings = exposure_warnings(ctx.target, ctx.rendered)
    if warnings:
        return Outcome(f"{len(warnings)} Service(s) open to any network (warning)", [], warnings)
    return Outcome("no LoadBalancer Service is open to any network")


def check_rbac(ctx: Context) -> Outcome:
    grants, notes = rbac.grants(ctx.rendered, ctx.target.namespace)
    by_account: dict[str, list[rbac.Grant]] = defaultdict(list)
    for grant in grants:
        by_account[grant.account].append(grant)
    details, findings = [], []
    for account, mine in sorted(by_account.items()):
        details.append(f"ServiceAccount {account}:")
        for scope in sorted({g.scope for g in mine}, key=lambda s: (s != "cluster", s)):
            what = "; ".join(g.what() for g in mine if g.scope == scope)
            where = "cluster-wide" if scope == "cluster" else f"in namespace {scope}"
            details.append(f"  {where}: {what}")
        secrets = sorted({g.scope for g in mine if rbac.secret_access(g)})
        if secrets:
            details.append(f"  ! Secrets access: {', '.join(secrets)}")
        for grant in mine:
            wild = rbac.wildcards(grant)
            if wild:
                paths = [p for p in ctx.target.where("*") if _RBAC_KEYS.search(p)]
                findings.append(
                    Finding(
                        paths[0] if paths else "",
                        f"{account} is granted wildcard {', '.join(wild)} ({grant.what()}, "
                        f"{grant.scope}) by {grant.binding}",
                        "list the verbs and resources the component needs instead of '*'",
                    )
                )
    details += [f"note: {n}" for n in notes]
    details += [f"unbound (for you to bind): {r}" for r in rbac.unbound_roles(ctx.rendered)]
    return Outcome(
        f"{len(by_account)} ServiceAccounts granted {len(grants)} rules", findings, details
    )


# -- references -----------------------------------------------------------------------------------


def _cluster_values(target: Target) -> dict[str, Any] | None:
    return target.chart_values(CLUSTER) if CLUSTER in target.charts() else None


def _entries(collection: Any) -> list[tuple[str, dict[str, Any]]]:
    """A ``name -> mapping`` collection of the values (partitions, NodeSets), sorted by name; what
    is not a mapping counts as empty (the schema step reports it)."""
    if not isinstance(collection, dict):
        return []
    return sorted((str(k), v if isinstance(v, dict) else {}) for k, v in collection.items())


def enabled_nodesets(values: dict[str, Any]) -> list[str]:
    """NodeSets slurm-cluster renders: ``nodesets`` entries over ``nodesetDefaults``, enabled."""
    default = (values.get("nodesetDefaults") or {}).get("enabled", True)
    return [
        name for name, entry in _entries(values.get("nodesets")) if entry.get("enabled", default)
    ]


def partition_findings(target: Target, values: dict[str, Any]) -> list[Finding]:
    """Partitions naming a NodeSet the values do not define or disable."""
    known = enabled_nodesets(values)
    defined = {name for name, _ in _entries(values.get("nodesets"))}
    default = (values.get("partitionDefaults") or {}).get("enabled", True)
    findings = []
    for name, entry in _entries(values.get("partitions")):
        if not entry.get("enabled", default):
            continue
        for index, nodeset in enumerate(entry.get("nodesets") or []):
            if str(nodeset).upper() == "ALL" or nodeset in known:
                continue
            state = "disabled" if nodeset in defined else "not defined"
            fix = f"name one of: {', '.join([*known, 'ALL'])}" + (
                f"; or enable it ({target.path_of(CLUSTER, 'nodesets', str(nodeset), 'enabled')}: true)"
                if nodeset in defined
                else ""
            )
            findings.append(
                Finding(
                    target.path_of(CLUSTER, "partitions", name, "nodesets", index),
                    f"partition {name} names NodeSet {nodeset!r}, which is {state}",
                    fix,
                )
            )
    return findings


def topology_findings(target: Target, values: dict[str, Any]) -> list[Finding]:
    """An inline topology.yaml that slinky-topology's validator refuses (a node in two blocks,
    under two leaf switches, ...), and partitions naming a topology it does not declare."""
    text = (values.get("topology") or {}).get("yaml") or ""
    if not text.strip():
        return []
    at = target.path_of(CLUSTER, "topology", "yaml")
    try:
        doc = parse_topology_yaml(text, location=at)
    except TopologyError as exc:
        return [
            Finding(at, f"not a valid topology.yaml: {exc}", "fix the YAML as the message says")
        ]
    findings = [
        Finding(at, f"{f.subject}: {f.message}", f.fix or "fix the topology")
        for f in validate_doc(doc, require_default=False)
        if f.severity == "error" or "several leaf switches" in f.message
    ]
    names = {t.name for t in doc.topologies}
    for name, entry in _entries(values.get("partitions")):
        wanted = entry.get("topology")
        if wanted and wanted not in names:
            findings.append(
                Finding(
                    target.path_of(CLUSTER, "partitions", name, "topology"),
                    f"names topology {wanted!r}, which {at} does not declare",
                    f"name one of: {', '.join(sorted(names))}",
                )
            )
    return findings


def _secret_finding(target: Target, ref: references.Reference) -> Finding:
    paths = list(target.where(ref.name))
    path = paths[0] if paths else ""
    empty = (
        f"set {path} to a {ref.kind} the chart makes (e.g. leave it empty)"
        if path
        else ("give the values that make the chart create it")
    )
    return Finding(
        path,
        f"{ref.owner} refers to {ref.kind} {ref.name!r} ({ref.field}), which the values never create",
        f"create {ref.kind} {ref.name} in namespace {ref.namespace} before installing (and give "
        f"it to this check with --existing FILE), or {empty}",
    )


def secret_findings(
    target: Target, docs: list[dict[str, Any]], existing: Sequence[dict[str, Any]] = ()
) -> list[Finding]:
    """Secrets (and key ConfigMaps) the render refers to but neither makes nor finds in
    ``existing`` (the objects the user's cluster already has, ``--existing``)."""
    made = references.made_secrets([*docs, *existing], target.namespace)
    findings: list[Finding] = []
    seen: set[tuple[str, str, str]] = set()
    for ref in references.secret_refs(docs, target.namespace):
        key = (ref.kind, ref.namespace, ref.name)
        if key not in made and key not in seen:
            seen.add(key)
            findings.append(_secret_finding(target, ref))
    return findings


def check_references(ctx: Context) -> Outcome:
    findings: list[Finding] = []
    details: list[str] = []
    checked = []
    values = _cluster_values(ctx.target)
    if values is not None:
        findings += partition_findings(ctx.target, values)
        findings += topology_findings(ctx.target, values)
        checked.append("partitions and topology")
    if ctx.rendered:
        findings += secret_findings(ctx.target, ctx.rendered, ctx.existing)
        checked.append("Secret references")
    else:
        details.append("Secret references not checked: the Helm 4 render did not pass")
    if not checked:
        raise Skipped("nothing to cross-check: no slurm-cluster values and no render")
    what = " and ".join(checked)
    if findings:
        return Outcome(
            f"{len(findings)} references do not resolve ({what} checked)", findings, details
        )
    return Outcome(f"{what} resolve", findings, details)


def _unique(findings: list[Finding]) -> list[Finding]:
    return list(dict.fromkeys(findings))


def _wrap(check: Any) -> Any:
    """``check`` with harness errors of its own tools turned into a step failure."""

    def run(ctx: Context) -> Outcome:
        try:
            outcome: Outcome = check(ctx)
        except (helm_client.HelmError, OSError, ValueError) as exc:
            raise StepFailed(str(exc)) from exc
        return outcome

    return run


def _steps() -> Iterator[Step]:
    render = f"{PHASE}/render-helm4"
    yield Step(PHASE, "schema", _wrap(check_schema))
    yield Step(PHASE, "pass-through", _wrap(check_pass_through))
    yield Step(PHASE, "render-helm4", _wrap(check_render_helm4), (f"{PHASE}/schema",))
    yield Step(PHASE, "render-helm3", _wrap(check_render_helm3), (f"{PHASE}/schema",))
    yield Step(PHASE, "openapi", _wrap(check_openapi), (render,))
    yield Step(PHASE, "crds", _wrap(check_crds), (render,))
    yield Step(PHASE, "api-server", _wrap(check_api_server), (render,))
    yield Step(PHASE, "slurm-conf", _wrap(check_slurm_conf), (render,))
    yield Step(PHASE, "invariants", _wrap(check_invariants), (render,))
    yield Step(PHASE, "pod-security", _wrap(check_pod_security), (render,))
    yield Step(PHASE, "exposure", _wrap(check_exposure), (render,))
    yield Step(PHASE, "rbac", _wrap(check_rbac), (render,))
    yield Step(PHASE, "references", _wrap(check_references))


STEPS: tuple[Step, ...] = tuple(_steps())
