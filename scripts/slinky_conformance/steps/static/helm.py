"""Conformance, static phase: Helm's own verdict on the values (``schema``) and the render
with Helm 4 and Helm 3 (``render-helm4``, ``render-helm3``), each refusal at the values path it
names.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import jsonschema
from jsonschema.exceptions import best_match

from slinky_conformance.context import Context, Outcome
from slinky_conformance.report import Finding, unique
from slinky_conformance.target import format_path
from slinky_harness.helm import charts as chart_index
from slinky_harness.helm import client as helm_client
from slinky_harness.k8s import manifests

if TYPE_CHECKING:
    from collections.abc import Callable

    from slinky_conformance.target import Target


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
        unique(findings),
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
