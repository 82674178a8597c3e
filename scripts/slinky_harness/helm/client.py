"""The one Helm client of the harness: the pinned ``helm`` (or ``helm3``) binary, offline or bound
to a cluster.

:class:`Helm` runs any helm command; bound to a :class:`KubeTarget` (a
:class:`~slinky_harness.k8s.cluster.Cluster`, which this package does not import: ``k8s`` sits above
``helm``) it passes the cluster's kubeconfig and keeps Helm's config, cache and data folders under ``home``,
so that two clients never share repository or plugin state. The offline helpers :func:`template`,
:func:`dry_run_install` and :func:`lint` write values to a temporary file (never ``--set``, so
types survive) and return the parsed documents. YAML is parsed strictly: a duplicate mapping key
is an error, because Helm 4's server-side apply rejects what the API server would silently merge.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from slinky_harness.build import toolchain
from slinky_harness.core.errors import HarnessError

if TYPE_CHECKING:
    from collections.abc import Sequence


class KubeTarget(Protocol):
    """What a bound :class:`Helm` needs of a cluster (``slinky_harness.k8s.cluster.Cluster`` has
    it): its kubeconfig, its environment, a command line run where its API server is reachable
    (inside the real node's network namespace) and a ``kubectl`` that returns stdout."""

    @property
    def kubeconfig(self) -> Path: ...

    def env(self) -> dict[str, str]: ...

    def wrap(self, argv: Sequence[str]) -> list[str]: ...

    def kubectl(self, *args: str, check: bool = True) -> str: ...


DEFAULT_RELEASE = "rel"
DEFAULT_NAMESPACE = "suite-ns"
EXTRA_API_VERSIONS = (
    "monitoring.coreos.com/v1",
    "cert-manager.io/v1",
    "keda.sh/v1alpha1",
    "autoscaling/v2",
    "policy/v1",
)
"""API groups of optional integrations, announced so capability-gated templates render."""


class StrictLoader(yaml.CSafeLoader):
    """A SafeLoader that rejects duplicate keys in a mapping. It parses with libyaml (PyPI's
    PyYAML wheels carry it): several times faster than the pure-Python parser on a rendered chart,
    which is most of a render test's time after Helm's own."""


def _construct_mapping(
    loader: StrictLoader, node: yaml.MappingNode, deep: bool = False
) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_documents(text: str) -> list[dict[str, Any]]:
    """All non-empty YAML documents in ``text``; raises ``yaml.YAMLError`` on bad YAML."""
    docs = []
    for doc in yaml.load_all(text, Loader=StrictLoader):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise yaml.YAMLError(f"a rendered document is a {type(doc).__name__}, not a mapping")
        docs.append(doc)
    return docs


SCHEMA_REFUSAL = "Error: values don't meet the specifications of the schema(s)"
"""How Helm 4 and Helm 3 start the error of values that a chart's values.schema.json refuses."""
_SCHEMA_LINE = re.compile(r"^(?P<indent>\s*)- at '(?P<pointer>[^']*)': (?P<text>.*)$")
_SCHEMA_CHART = re.compile(r"^(?P<chart>[A-Za-z0-9][\w.-]*):$")
_EXECUTION_ERROR = re.compile(r"execution error at \((?P<where>[^()]*)\): (?P<text>.*)", re.S)
_DEBUG_HINT = "\n\nUse --debug flag"
_LIST_HEAD = re.compile(
    r"\A\n\n(?P<chart>[A-Za-z0-9][\w.-]*): invalid values \((?P<count>\d+)\):\n  - "
)


@dataclass(frozen=True)
class SchemaError:
    """One line of Helm's schema refusal: ``- at '<pointer>': <text>`` under a ``<chart>:`` line."""

    chart: str
    """The chart whose values.schema.json refused ("" when Helm named none)."""
    pointer: str
    """The value's JSON pointer (``/nodesets/compute/gpu/count``; ``""`` for the top level)."""
    text: str
    nested: bool = False
    """Indented under another line, which then only groups (``validation failed``)."""

    @property
    def groups(self) -> bool:
        """Whether this line only says that lines nested under it failed."""
        return self.text == "validation failed"

    def steps(self) -> list[str | int]:
        """The pointer decoded: keys and list indices (``~1`` is ``/``, ``~0`` is ``~``)."""
        return [
            int(part) if part.isdigit() else part.replace("~1", "/").replace("~0", "~")
            for part in self.pointer.split("/")[1:]
        ]


@dataclass(frozen=True)
class TemplateFailure:
    """A template's ``fail`` or ``required``: ``execution error at (<where>): <text>``."""

    where: str
    """The template and position, ``<chart>/templates/<file>:<line>:<column>`` (a subchart's
    under its parent's ``charts/``)."""
    text: str
    """The message as the template wrote it (without Helm's ``Use --debug`` hint)."""

    @property
    def chart(self) -> str:
        """The chart whose template failed, the innermost one ("" when ``where`` names none)."""
        head, found, _ = self.where.rpartition("/templates/")
        return head.rpartition("/")[2] if found else ""

    @property
    def listed(self) -> bool:
        """Whether ``text`` is a validate.yaml list (``<chart>: invalid values (N):``, then one
        ``  - <message>`` item per message)."""
        return _LIST_HEAD.match(self.text) is not None

    @property
    def messages(self) -> list[str]:
        """The messages: each item of a validate.yaml list, else the whole text."""
        head = _LIST_HEAD.match(self.text)
        if head is None:
            return [self.text]
        return self.text[head.end() :].removesuffix("\n").split("\n  - ")


@dataclass
class HelmResult:
    """The outcome of one helm command, and what Helm's error text says (the one reader of it)."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    docs: list[dict[str, Any]] = field(default_factory=list)
    notes: str = ""
    retried: str = ""
    """Why the command was run a second time (:func:`install_past_webhook_race`), if it was."""

    @classmethod
    def failed(cls, stderr: str) -> HelmResult:
        """A failed result holding only Helm's error text (text kept elsewhere, read again)."""
        return cls([], 1, "", stderr)

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def describe(self) -> str:
        return f"$ {' '.join(self.args)}\nexit {self.returncode}\n{self.stderr.strip()}"

    @property
    def schema_refused(self) -> bool:
        """Whether a values.schema.json refused the values (before any template ran)."""
        return self.stderr.startswith(SCHEMA_REFUSAL)

    def schema_errors(self, *, groups: bool = False) -> list[SchemaError]:
        """Every ``- at '<pointer>': <text>`` line, in Helm's order (which is not fixed), with the
        chart named above it; without the lines that only group nested ones unless ``groups``."""
        found: list[SchemaError] = []
        chart = ""
        for line in self.stderr.splitlines():
            header = _SCHEMA_CHART.match(line.strip())
            if header:
                chart = header["chart"]
                continue
            error = _SCHEMA_LINE.match(line)
            if error:
                found.append(
                    SchemaError(
                        chart, error["pointer"], error["text"].strip(), bool(error["indent"])
                    )
                )
        return [error for error in found if groups or not error.groups]

    def template_failure(self) -> TemplateFailure | None:
        """The template ``fail``/``required`` that stopped the render, if one did."""
        failure = _EXECUTION_ERROR.search(self.stderr)
        if failure is None:
            return None
        text, hint, _ = failure["text"].partition(_DEBUG_HINT)
        return TemplateFailure(failure["where"], text if hint else text.rstrip("\n"))

    def refusals(self) -> list[str]:
        """Why Helm refused, one line each: for a schema refusal every error (``schema: at
        '<pointer>': <text>``, sorted, as Helm lists them in no fixed order; grouping lines left
        out), else the first line of the error without ``Error: `` (Helm's log lines skipped)."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        lines = [line for line in lines if not line.startswith(("WARNING:", "level="))]
        if not lines:
            return ["no error output"]
        first = lines[0].removeprefix("Error: ")
        if "don't meet the specifications of the schema" in first:
            errors = sorted(f"schema: at '{e.pointer}': {e.text}" for e in self.schema_errors())
            if errors:
                return errors
        return [first]


class HelmError(HarnessError):
    """A helm command failed; the message holds the command, its exit status and its stderr."""


@dataclass(frozen=True)
class Helm:
    """A pinned helm binary, offline (``cluster`` None) or bound to ``cluster`` with Helm's
    config, cache and data folders under ``home``."""

    binary: Path
    cluster: KubeTarget | None = None
    home: Path | None = None

    @classmethod
    def pinned(cls, name: str = "helm", **bound: Any) -> Helm:
        """The pinned tool ``name`` (``helm`` is Helm 4, ``helm3`` Helm 3); ``bound``:
        ``cluster=`` and ``home=``."""
        return cls(toolchain.ensure(name), **bound)

    def env(self) -> dict[str, str] | None:
        """The cluster's environment with Helm's folders under ``home`` (None: this process's)."""
        if self.cluster is None and self.home is None:
            return None
        env = self.cluster.env() if self.cluster is not None else dict(os.environ)
        if self.home is not None:
            for var in ("HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME"):
                env[var] = str(self.home / var.lower())
        return env

    def run(
        self, *args: str, namespace: str | None = None, check: bool = True, timeout: float = 300
    ) -> HelmResult:
        """``helm ARGS`` (with ``-n namespace``); :class:`HelmError` on failure when ``check``."""
        cmd = [str(self.binary)]
        if self.cluster is not None:
            cmd += ["--kubeconfig", str(self.cluster.kubeconfig)]
        if namespace:
            cmd += ["-n", namespace]
        cmd += args
        # a cluster in a network namespace (the real node's) is reached from inside it only
        argv = self.cluster.wrap(cmd) if self.cluster is not None else cmd
        proc = subprocess.run(
            argv, env=self.env(), capture_output=True, text=True, timeout=timeout, check=False
        )
        result = HelmResult(cmd, proc.returncode, proc.stdout, _without_link_notice(proc.stderr))
        if check and not result.ok:
            raise HelmError(f"helm {' '.join(args)} failed: {result.describe()}\n{result.stdout}")
        return result


WEBHOOK_CACHE_RACE = re.compile(r'denied the request: ConfigMap "([^"]+)" not found')
"""Upstream's v1.2.1 webhook refusing a Controller for a ConfigMap the same install made: it
reads ConfigMaps through its informer cache, which can lag the API server by the few
milliseconds between Helm's ConfigMap and Controller writes."""


def install_past_webhook_race(helm: Helm, release: str, chart: str, *args: str) -> HelmResult:
    """``helm install RELEASE CHART ARGS`` (``ARGS`` hold ``-n NAMESPACE``), retried once as
    ``helm upgrade --install`` when the webhook refused for :data:`WEBHOOK_CACHE_RACE` and the
    ConfigMap does exist; a ConfigMap that really is missing fails the retry too. Returns the
    last result (not checked); ``retried`` on it says whether the race was seen."""
    first = helm.run("install", release, chart, *args, check=False)
    race = WEBHOOK_CACHE_RACE.search(first.stderr)
    if first.ok or race is None or helm.cluster is None:
        return first
    flag = "-n" if "-n" in args else "--namespace"
    namespace = args[args.index(flag) + 1] if flag in args else "default"
    found = helm.cluster.kubectl(
        "get", "configmap", race.group(1), "-n", namespace, "--ignore-not-found", "-o", "name",
        check=False,
    )  # fmt: skip
    if not found.strip():
        return first
    again = helm.run(
        "upgrade", "--install", release, chart, *[a for a in args if a != "--create-namespace"],
        check=False,
    )  # fmt: skip
    again.retried = race.group(0)
    return again


_LINK_NOTICE = re.compile(
    r"^(?:level=INFO msg=\"found symbolic link in path\. Contents of linked file included and used\""
    r" path=\S+ resolved=\S+|\S+: found symbolic link in path: \S+ resolves to \S+\."
    r" Contents of linked file included and used)\n",
    re.M,
)
"""The notice Helm 4 (``level=INFO ...``) and Helm 3 (``walk.go:...``) print on stderr for every
chart that holds a linked subchart (slurm-operator's ``charts/slurm-operator-crds``)."""


def _without_link_notice(stderr: str) -> str:
    """``stderr`` without Helm's notices about linked subcharts, so messages start at the error."""
    return _LINK_NOTICE.sub("", stderr)


_NOT_YAML_PRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def values_text(values: dict[str, Any]) -> str:
    """``values`` as JSON that Helm's YAML parser reads exactly as Python wrote it.

    JSON is YAML that every parser reads the same way (PyYAML's YAML 1.1 dump leaves strings such
    as ``y`` bare, which Helm reads as booleans). Characters outside the BMP are written as UTF-8
    (Helm rejects surrogate-pair escapes); characters YAML forbids in a stream, or reads as line
    breaks (NEL, LS, PS), are escaped.
    """
    text = json.dumps(values, sort_keys=True, indent=1, ensure_ascii=False)
    return _NOT_YAML_PRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _values_file(values: dict[str, Any] | None, tmp: Path) -> list[str]:
    if values is None:
        return []
    path = tmp / "values.json"
    path.write_text(values_text(values), encoding="utf-8")
    return ["-f", str(path)]


def run(args: Sequence[str], *, helm: str = "helm", timeout: float = 300) -> HelmResult:
    """Run the offline ``helm`` (or ``helm3``) with ``args``; the result, failed or not."""
    return Helm.pinned(helm).run(*args, check=False, timeout=timeout)


def template(
    chart: Path,
    values: dict[str, Any] | None = None,
    *,
    helm: str = "helm",
    release: str = DEFAULT_RELEASE,
    namespace: str = DEFAULT_NAMESPACE,
    kube_version: str | None = None,
    api_versions: Sequence[str] = EXTRA_API_VERSIONS,
    extra_args: Sequence[str] = (),
) -> HelmResult:
    """``helm template`` of ``chart`` with ``values``; documents parsed when it succeeds."""
    with tempfile.TemporaryDirectory(prefix="helm-values-") as tmp:
        args = ["template", release, str(chart), "--namespace", namespace]
        args += _values_file(values, Path(tmp))
        if kube_version:
            args += ["--kube-version", kube_version]
        for api in api_versions:
            args += ["--api-versions", api]
        args += list(extra_args)
        result = run(args, helm=helm)
    if result.ok:
        result.docs = parse_documents(result.stdout)
    return result


def dry_run_install(
    chart: Path,
    values: dict[str, Any] | None = None,
    *,
    helm: str = "helm",
    release: str = DEFAULT_RELEASE,
    namespace: str = DEFAULT_NAMESPACE,
) -> HelmResult:
    """A client-side dry-run install: the manifests and the rendered NOTES together."""
    with tempfile.TemporaryDirectory(prefix="helm-values-") as tmp:
        args = [
            "install",
            release,
            str(chart),
            "--namespace",
            namespace,
            "--dry-run=client",
            "-o",
            "json",
        ]
        args += _values_file(values, Path(tmp))
        result = run(args, helm=helm)
    if result.ok:
        release_info = json.loads(result.stdout)
        result.notes = release_info.get("info", {}).get("notes", "") or ""
        result.docs = parse_documents(release_info.get("manifest", ""))
        for hook in release_info.get("hooks", []) or []:
            result.docs.extend(parse_documents(hook.get("manifest", "")))
    return result


def lint(
    chart: Path,
    values_file: Path | None = None,
    *,
    helm: str = "helm",
    kube_version: str | None = None,
    strict: bool = True,
) -> HelmResult:
    """``helm lint [--strict]`` of ``chart`` with an optional values file."""
    args = ["lint", str(chart)]
    if strict:
        args.append("--strict")
    if values_file is not None:
        args += ["-f", str(values_file)]
    if kube_version:
        args += ["--kube-version", kube_version]
    return run(args, helm=helm)
