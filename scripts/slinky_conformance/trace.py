"""Trace slurmctld's and slurmdbd's refusals back to the values that produced what they name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slinky_conformance.report import Finding
from slinky_conformance.target import CLUSTER
from slinky_harness.slurm.check import MACHINE_LOAD_NOISE

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from slinky_conformance.context import Context

Parts = tuple[str | int, ...]


SCHEDULING_KEYS: dict[str, Parts] = {
    "schedulertype": ("scheduling", "schedulerType"),
    "schedulerparameters": ("scheduling", "schedulerParameters"),
    "dependencyparameters": ("scheduling", "dependencyParameters"),
    "accountingstorageenforce": ("scheduling", "accountingEnforce"),
    "prioritytype": ("scheduling", "priority", "type"),
    "prioritydecayhalflife": ("scheduling", "priority", "decayHalfLife"),
    "prioritymaxage": ("scheduling", "priority", "maxAge"),
    "prioritycalcperiod": ("scheduling", "priority", "calcPeriod"),
    "priorityfavorsmall": ("scheduling", "priority", "favorSmall"),
    "priorityflags": ("scheduling", "priority", "flags"),
    "priorityweighttres": ("scheduling", "priority", "weightTRES"),
    "priorityweightage": ("scheduling", "priority", "weights", "age"),
    "priorityweightassoc": ("scheduling", "priority", "weights", "assoc"),
    "priorityweightfairshare": ("scheduling", "priority", "weights", "fairshare"),
    "priorityweightjobsize": ("scheduling", "priority", "weights", "jobSize"),
    "priorityweightpartition": ("scheduling", "priority", "weights", "partition"),
    "priorityweightqos": ("scheduling", "priority", "weights", "qos"),
    "preempttype": ("scheduling", "preemption", "type"),
    "preemptmode": ("scheduling", "preemption", "mode"),
    "preemptexempttime": ("scheduling", "preemption", "exemptTime"),
    "topologyparam": ("topology", "params"),
}
"""slurm.conf options slurm-cluster renders from a structured value (not from a conf map or
raw text), and that value's path."""

FALLBACK_SOURCES: tuple[Parts, ...] = (
    ("controller", "extraConf"),
    ("controller", "extraConfMap"),
    ("configFiles",),
)
"""Where a refusal no value explains by name most likely comes from: the raw slurm.conf text
and options the user gave (the first one their values set)."""

_GENERIC = re.compile(
    r"Unable to process configuration file|failed to initialize|cannot create .* context|"
    r"Couldn't load specified plugin",
    re.IGNORECASE,
)
_LOG_PREFIX = re.compile(r"^\[[^\]]*\]\s*(?:(?:fatal|error):\s*)?(?:\w+:\s+)?", re.IGNORECASE)


# -- the values behind a Slurm option -------------------------------------------------------------


def _walk(node: Any, at: Parts = ()) -> Iterator[tuple[Parts, Any]]:
    yield at, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, (*at, str(key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, (*at, index))


def _get(block: Mapping[str, Any], parts: Parts) -> Any:
    node: Any = block
    for part in parts:
        node = node[part]
    return node


def has_path(block: Mapping[str, Any], parts: Parts) -> bool:
    node: Any = block
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return node not in (None, "", [], {})


def option_paths(
    block: Mapping[str, Any],
    option: str,
    *,
    value: str | None = None,
    line: str | None = None,
    within: Sequence[Parts] = (),
    without: Sequence[Parts] = (),
) -> list[Parts]:
    """Paths (in ``block``, the user's values of one chart) of the values that put ``option``
    (a Slurm option, any case) into a config file: a map key equal to it
    (``controller.extraConfMap.MaxJobCount``), text holding ``Option=`` or ``line``
    (``controller.extraConf``, ``partitions.x.config``, ``configFiles["gres.conf"]``), a
    structured value slurm-cluster renders as that option (:data:`SCHEDULING_KEYS`), else a
    string equal to ``value``. ``within``/``without``: subtrees to keep to or leave out."""
    lowered = option.lower()
    token = re.compile(rf"(?<![\w.]){re.escape(option)}\s*=", re.IGNORECASE)
    keyed: list[Parts] = []
    texts: list[Parts] = []
    equal: list[Parts] = []
    for at, node in _walk(dict(block)):
        if not at or (within and not any(at[: len(w)] == w for w in within)):
            continue
        if any(at[: len(w)] == w for w in without):
            continue
        if isinstance(at[-1], str) and at[-1].lower() == lowered:
            keyed.append(at)
        elif isinstance(node, str) and (
            token.search(node) or (line and line.strip() and line.strip() in node)
        ):
            texts.append(at)
        elif value and isinstance(node, (str, int)) and str(node) == value:
            equal.append(at)
    structured = SCHEDULING_KEYS.get(lowered)
    if structured and has_path(block, structured):
        keyed.append(structured)
    if value:  # the text that holds the very value first (MaxTime=forever, not MaxTime=1:00)
        texts.sort(key=lambda at: value not in str(_get(block, at)))
    found = keyed + texts or equal
    return list(dict.fromkeys(found))


def file_paths(block: Mapping[str, Any], file_name: str) -> list[Parts]:
    """Paths of the values that write config file ``file_name``: a map key equal to it
    (``configFiles["gres.conf"]``, ``prologSlurmctldScripts["00-x.sh"]``), or for topology.yaml
    the inline text or the ConfigMap it comes from."""
    if file_name == "topology.yaml":
        for parts in (("topology", "yaml"), ("topology", "configMapRef", "name")):
            if has_path(block, parts):
                return [parts]
        return [("topology",)]
    return [at for at, _ in _walk(dict(block)) if at and at[-1] == file_name]


@dataclass(frozen=True)
class Culprit:
    """What a Slurm log line names: an option (maybe with its value or its whole line) or a
    config file."""

    option: str = ""
    value: str | None = None
    line: str | None = None
    file: str = ""


_PATTERNS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r'Parse error in file \S*/([^/\s]+) line \d+: "(.*)"'), ("file", "line")),
    (re.compile(r"unrecognized key: (\w+)", re.IGNORECASE), ("option",)),
    (re.compile(r"(\w+) value \((.*?)\) is not a valid", re.IGNORECASE), ("option", "value")),
    (re.compile(r'Bad value "(.*?)" for (\w+)'), ("value", "option")),
    (re.compile(r"Invalid (\w+)\b[ (:`]*([^`)\s:]*)"), ("option", "value")),
    (re.compile(r"\b(\w+)=(\S+)"), ("option", "value")),
)


def culprits(message: str, conf_keys: Sequence[str] = ()) -> list[Culprit]:
    """What a slurmctld or slurmdbd error line names: options, values, lines and files (a file
    under the config folder by its name); then any of ``conf_keys`` (the options of the loaded
    files) the message mentions as a word."""
    out: list[Culprit] = []
    for pattern, fields in _PATTERNS:
        for match in pattern.finditer(message):
            found = dict(zip(fields, match.groups(), strict=True))
            line = found.get("line")
            option = found.get("option") or (line.strip().split("=", 1)[0] if line else "")
            out.append(Culprit(option, found.get("value") or None, line, found.get("file", "")))
    for path in re.findall(r"/srv/slinky/etc/([^\s`'\"():,]+)", message):
        out.append(Culprit(file=path))
    words = set(re.findall(r"[A-Za-z]\w+", message))
    out.extend(Culprit(key) for key in conf_keys if key in words)
    return list(dict.fromkeys(c for c in out if c.option or c.file))


def clean_line(line: str) -> str:
    return _LOG_PREFIX.sub("", line.strip()).strip()


def error_lines(log: str) -> list[str]:
    """The error and fatal lines of a Slurm daemon's log, without the machine's own noise."""
    return [
        ln
        for ln in log.splitlines()
        if re.search(r"\b(fatal|error)\b", ln, re.IGNORECASE) and not MACHINE_LOAD_NOISE.search(ln)
    ]


def _conf_keys(text: str) -> list[str]:
    keys = re.findall(r"^\s*([A-Za-z]\w*)\s*=", text, re.MULTILINE)
    return list(dict.fromkeys(keys))


def trace(
    ctx: Context,
    errors: Sequence[str],
    conf_text: str,
    *,
    within: Sequence[Parts] = (),
    without: Sequence[Parts] = (("accounting",),),
    daemon: str = "slurmctld",
) -> list[Finding]:
    """Findings for ``errors`` (a daemon's log lines) at the values that produced what each
    names; the errors no value explains become one finding at the chart (or, with
    ``within``, its first subtree) when nothing else was found."""
    block = ctx.target.user_block(CLUSTER)
    keys = _conf_keys(conf_text)
    findings: dict[str, Finding] = {}
    unexplained: list[str] = []
    for raw in errors:
        message = clean_line(raw)
        if _GENERIC.search(message) and len(errors) > 1:
            continue
        paths: list[tuple[Parts, str]] = []
        for culprit in culprits(message, keys):
            if culprit.option:
                hits = option_paths(
                    block, culprit.option, value=culprit.value, line=culprit.line,
                    within=within, without=without,
                )  # fmt: skip
                paths += [(p, culprit.option) for p in hits]
            if culprit.file and not paths:
                paths += [(p, culprit.file) for p in file_paths(block, culprit.file)]
        for parts, what in paths[:1] or []:
            path = ctx.target.path_of(CLUSTER, *parts)
            findings.setdefault(
                path,
                Finding(
                    path,
                    f"{daemon} refuses {what}",
                    f"remove or correct {what}: {daemon} says: {message}",
                ),
            )
        if not paths:
            unexplained.append(message)
    if not findings and unexplained:
        sources = within or FALLBACK_SOURCES
        parts = next((p for p in sources if has_path(block, p)), sources[0] if within else ())
        path = ctx.target.path_of(CLUSTER, *parts)
        message = next((m for m in unexplained if not _GENERIC.search(m)), unexplained[0])
        findings[path] = Finding(
            path,
            f"{daemon} refuses the configuration the values make",
            f"correct the setting {daemon} names (no value of yours sets it directly): "
            f"{daemon} says: {message}",
        )
    return list(findings.values())
