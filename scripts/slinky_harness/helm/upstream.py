"""Upstream conformance: render upstream Slinky's charts (v1.2.1) and ours side by side.

Our charts ``slurm-cluster``, ``slurm-operator`` and ``slurm-bridge`` are meant to be drop-in
successors of upstream's ``slurm``, ``slurm-operator`` and ``slurm-bridge``: they accept upstream's
values layout unchanged and render the same Slinky custom resources. This module measures how far
they are from that, never copying anything of upstream into the repository:

* **upstream's charts** come from a chart reference, the setting ``SLINKY_UPSTREAM_CHARTS``
  (default ``oci://ghcr.io/slinkyproject/charts``, what a user pulls): an ``oci://`` reference is
  pulled with ``helm pull`` into the suite cache (``$SLINKY_SUITE_CACHE/upstream-charts``); any
  other value is a local folder that holds ``<name>-1.2.1.tgz`` (CI's ``shared/upstream-charts``);
* **the cases** are upstream's defaults and one values overlay per test of upstream's
  helm-unittest suites. The packaged charts leave their ``tests/`` out; the Go modules
  ``github.com/SlinkyProject/slurm-operator`` and ``slurm-bridge`` at v1.2.1 hold them, so they are
  read from the Go module cache (``go mod download`` inside ``tools/``, whose ``go.sum`` pins the
  modules' hashes);
* **each case** renders upstream's chart with ``helm template``; a case upstream refuses (its
  ``failedTemplate`` tests) is not counted. Ours renders the same values with the same release
  name and namespace; a schema or template failure means "not accepted". When both render, the
  Slinky custom resources (group ``slinky.slurm.net``) and, for the operator and bridge charts,
  each Deployment's container images, arguments and environment are compared on every field
  upstream sets; and for the kinds :attr:`UpstreamChart.kept` names (``"*"``: all), every object
  upstream renders must exist in ours under the same kind and name, with the same namespace,
  Deployment selector, ServiceAccount and mounted ConfigMaps and Secrets, and Service selector and
  ``clusterIP`` (what ``helm upgrade`` of an upstream release needs to keep). The documented
  intentional differences (:data:`INTENTIONAL_FILE`, read by :func:`load_intentional`) are left
  out.

helm-unittest's ``set`` (see :func:`parse_set_path`) and the way it layers a test's values are
reproduced from its documentation and behaviour: values files first (the test's, then the
suite's), then the suite's ``set``, then the test's ``set``, each layer merged into the previous
one so that maps merge key by key and anything else (a list, a scalar, ``null``) replaces what was
there. Two things of a suite are not reproduced, and do not change what is compared, because both
charts are rendered alike: ``chart:`` (helm-unittest overrides the chart's version and
appVersion; ``helm template`` cannot) and ``kubernetesProvider:`` (mocked lookups; ``helm
template`` has no cluster, so ``lookup`` finds nothing for either chart).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
import re
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from slinky_harness.build import gobuild
from slinky_harness.core.errors import HarnessError
from slinky_harness.core.files import write_atomic
from slinky_harness.core.paths import REPO_ROOT, cache_root
from slinky_harness.core.progress import heartbeat
from slinky_harness.helm import client
from slinky_harness.helm.values import merge

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = [
    "CHARTS",
    "INTENTIONAL_FILE",
    "REFERENCE_ENV",
    "ChartReport",
    "Difference",
    "Intentional",
    "Outcome",
    "SetPathError",
    "TestCase",
    "UpstreamError",
    "build_set_value",
    "compare",
    "load_cases",
    "load_intentional",
    "measure",
    "parse_set_path",
    "suite_files",
    "upstream_chart",
]

VERSION = "1.2.1"
"""The upstream Slinky release our charts succeed (charts and Go modules)."""

REFERENCE_ENV = "SLINKY_UPSTREAM_CHARTS"
DEFAULT_REFERENCE = "oci://ghcr.io/slinkyproject/charts"
SLINKY_GROUP = "slinky.slurm.net"

OPERATOR_MODULE = "github.com/SlinkyProject/slurm-operator"
BRIDGE_MODULE = "github.com/SlinkyProject/slurm-bridge"
TOOLS_MODULE = REPO_ROOT / "tools"
"""The Go module whose ``go.sum`` pins the hashes of both Slinky modules."""
INTENTIONAL_FILE = REPO_ROOT / "tests" / "render" / "upstream_intentional_differences.yaml"
"""The documented intentional differences, per upstream chart (see :func:`load_intentional`)."""


@dataclass(frozen=True)
class UpstreamChart:
    """One upstream chart, where its helm-unittest suites live, and our chart that succeeds it."""

    name: str
    ours: str
    module: str
    tests: str
    """The suites' folder inside ``module``."""
    deployments: bool
    """Whether each Deployment's images, arguments and environment are compared too."""
    kept: tuple[str, ...] = ()
    """Kinds (``"*"``: all) whose objects ``helm upgrade`` from upstream's release must keep:
    every object of these kinds that upstream renders, ours renders under the same name (more is
    fine: our extensions), with the same identity (namespace, selectors, ServiceAccount, mounted
    ConfigMaps and Secrets, Service ``clusterIP``; see :func:`_identity`)."""

    @property
    def our_path(self) -> Path:
        return REPO_ROOT / "charts" / self.ours


CHARTS: dict[str, UpstreamChart] = {
    chart.name: chart
    for chart in (
        UpstreamChart(
            "slurm", "slurm-cluster", OPERATOR_MODULE, "helm/slurm/tests", False, kept=("*",)
        ),
        UpstreamChart(
            "slurm-operator",
            "slurm-operator",
            OPERATOR_MODULE,
            "helm/slurm-operator/tests",
            True,
            kept=(
                "Certificate",
                "ClusterRole",
                "ClusterRoleBinding",
                "Deployment",
                "Issuer",
                "MutatingWebhookConfiguration",
                "PodDisruptionBudget",
                "Secret",
                "Service",
                "ServiceAccount",
                "ValidatingWebhookConfiguration",
            ),
        ),
        UpstreamChart(
            "slurm-bridge",
            "slurm-bridge",
            BRIDGE_MODULE,
            "helm/slurm-bridge/tests",
            True,
            kept=("*",),
        ),
    )
}


class UpstreamError(HarnessError):
    """Upstream's charts or suites could not be had or read; the message names which and how to
    fix it."""


class SetPathError(UpstreamError, ValueError):
    """A helm-unittest ``set`` path that helm-unittest itself would refuse."""


# --- helm-unittest's set paths ---------------------------------------------------------------

_ILLEGAL = frozenset(",{}=")
Step = str | int


def _bracket(path: str, start: int) -> tuple[str, int]:
    """The text between ``path[start]`` (a ``[``) and its ``]``, and the position after it."""
    end = path.find("]", start + 1)
    if end < 0:
        raise SetPathError(f"set path {path!r}: '[' at position {start} is never closed by ']'")
    return path[start + 1 : end], end + 1


def _key(path: str, start: int) -> tuple[str, int]:
    """A map key starting at ``start``: plain up to ``.``/``[``/``]``, or ``[escaped.key]``."""
    if path.startswith("[", start):
        key, after = _bracket(path, start)
        if not key or "[" in key:
            raise SetPathError(
                f"set path {path!r}: the escaped key at position {start} must be a non-empty "
                "name without '[', like a.[kubernetes.io/os]"
            )
        return key, after
    end = start
    while end < len(path) and path[end] not in ".[]":
        end += 1
    if end == start:
        where = "ends with '.'" if start == len(path) else f"has an empty key at position {start}"
        raise SetPathError(f"set path {path!r} {where}; write a key between the dots")
    return path[start:end], end


def parse_set_path(path: str) -> tuple[Step, ...]:
    """The steps of a helm-unittest ``set`` path: map keys (``str``) and list indices (``int``).

    ``a.b`` is key ``a`` then key ``b``; ``a[2]`` is key ``a`` then index 2 (``a[0][1]`` nests
    lists); a key that holds dots is written in brackets where a key is expected, at the start or
    after a dot (``nodeSelector.[kubernetes.io/os]``, ``[a.b]``). ``,``, ``{``, ``}`` and ``=``
    may appear nowhere. helm-unittest takes an empty key (``a..b``) silently; here it is an
    error, because no chart has an empty key and it is always a typo."""
    if not path:
        raise SetPathError("a set path is empty; name the value, like controller.replicas")
    illegal = sorted(_ILLEGAL.intersection(path))
    if illegal:
        raise SetPathError(
            f"set path {path!r} holds {', '.join(repr(c) for c in illegal)}, which helm-unittest "
            "refuses in a path; put the structure in the value instead"
        )
    steps: list[Step] = []
    key, pos = _key(path, 0)
    steps.append(key)
    while pos < len(path):
        char = path[pos]
        if char == ".":
            key, pos = _key(path, pos + 1)
            steps.append(key)
        elif char == "[":
            text, pos = _bracket(path, pos)
            if not (text.isascii() and text.isdigit()):
                raise SetPathError(
                    f"set path {path!r}: list index [{text}] is not a non-negative integer; "
                    "escape a key with dots as .[key] after a dot"
                )
            steps.append(int(text))
        else:
            raise SetPathError(
                f"set path {path!r}: unexpected {char!r} at position {pos}; "
                "a key or index must be followed by '.', '[' or the end"
            )
    return tuple(steps)


def build_set_value(path: str, value: Any) -> dict[str, Any]:
    """The values document that ``set: {path: value}`` stands for: nested maps for keys, and for
    an index ``n`` a list of ``n + 1`` items, ``null`` but the last (helm-unittest's own)."""
    steps = parse_set_path(path)
    built: Any = value
    for step in reversed(steps[1:]):
        built = [None] * step + [built] if isinstance(step, int) else {step: built}
    first = steps[0]
    if isinstance(first, int):  # pragma: no cover - _key always yields a str first
        raise SetPathError(f"set path {path!r} starts with a list index")
    return {first: built}


def apply_set(base: Mapping[str, Any], entries: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with every ``set`` entry merged over it, in the order given (helm-unittest
    iterates a Go map, so two entries that overlap have no defined order there)."""
    out = dict(base)
    for path, value in entries.items():
        out = merge(out, build_set_value(str(path), value))
    return out


# --- reading upstream's suites ---------------------------------------------------------------


class _SuiteLoader(yaml.SafeLoader):
    """A SafeLoader that reads scalars as helm-unittest's YAML 1.2 parser does: only
    ``true``/``false`` are booleans (``yes``, ``on`` stay strings) and dates stay strings."""


_SuiteLoader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_SuiteLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def _load_yaml(path: Path) -> Any:
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_SuiteLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise UpstreamError(f"{path}: cannot read it as YAML: {exc}") from exc


@dataclass(frozen=True)
class TestCase:
    """One case: upstream's defaults, or one helm-unittest test turned into a values document."""

    __test__ = False  # not a pytest test class

    chart: str
    id: str
    """``defaults`` or ``<suite file>#<n> <test name>``."""
    values: dict[str, Any]
    release: str = client.DEFAULT_RELEASE
    namespace: str = client.DEFAULT_NAMESPACE
    kube_version: str | None = None
    """``capabilities.majorVersion``/``minorVersion`` as ``1.30`` (None: Helm's default)."""
    api_versions: tuple[str, ...] = ()
    """``capabilities.apiVersions``, announced beside Helm's built-in ones."""

    def helm_args(self) -> list[str]:
        """The ``helm template`` options this case's release and capabilities stand for."""
        args = ["--namespace", self.namespace]
        if self.kube_version:
            args += ["--kube-version", self.kube_version]
        for api in self.api_versions:
            args += ["--api-versions", api]
        return args


def _capabilities(
    test: dict[str, Any], suite: dict[str, Any]
) -> tuple[str | None, tuple[str, ...]]:
    """helm-unittest's capabilities of a test: its Kubernetes version when it gives both major
    and minor, else the suite's; its API versions followed by the suite's."""
    own = _mapping(test.get("capabilities"), "capabilities")
    shared = _mapping(suite.get("capabilities"), "capabilities")
    kube = None
    for layer in (own, shared):
        if layer.get("majorVersion") and layer.get("minorVersion"):
            kube = f"{layer['majorVersion']}.{layer['minorVersion']}"
            break
    apis = [*(own.get("apiVersions") or []), *(shared.get("apiVersions") or [])]
    return kube, tuple(str(api) for api in apis)


def _mapping(raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise UpstreamError(f"{where}: expected a mapping, found {type(raw).__name__}")
    return raw


def _values_files(names: Any, folder: Path, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names or []:
        path = Path(name) if Path(name).is_absolute() else folder / name
        out = merge(out, _mapping(_load_yaml(path), f"{where}: values file {path}"))
    return out


def _release(test: dict[str, Any], suite: dict[str, Any], key: str, default: str) -> str:
    for layer in (test, suite):
        value = _mapping(layer.get("release"), "release").get(key)
        if value:
            return str(value)
    return default


def load_cases(chart: str, suite: Path) -> list[TestCase]:
    """The cases of one helm-unittest suite file: one per entry of its ``tests:``."""
    raw = _mapping(_load_yaml(suite), str(suite))
    tests = raw.get("tests")
    if not isinstance(tests, list) or not tests:
        raise UpstreamError(f"{suite}: no 'tests:' list; is this a helm-unittest suite?")
    cases = []
    for index, entry in enumerate(tests):
        where = f"{suite}: tests[{index}]"
        test = _mapping(entry, where)
        values = _values_files(
            [*(test.get("values") or []), *(raw.get("values") or [])], suite.parent, where
        )
        values = apply_set(values, _mapping(raw.get("set"), f"{suite}: set"))
        values = apply_set(values, _mapping(test.get("set"), f"{where}.set"))
        kube, apis = _capabilities(test, raw)
        cases.append(
            TestCase(
                chart=chart,
                id=f"{suite.name}#{index} {test.get('it', '')}".strip(),
                values=values,
                release=_release(test, raw, "name", client.DEFAULT_RELEASE),
                namespace=_release(test, raw, "namespace", client.DEFAULT_NAMESPACE),
                kube_version=kube,
                api_versions=apis,
            )
        )
    return cases


def suites_folder(chart: str) -> Path:
    """Upstream's helm-unittest suites of ``chart``, in the Go module cache."""
    spec = CHARTS[chart]
    try:
        root = gobuild.module_dir(spec.module, f"v{VERSION}", within=TOOLS_MODULE)
    except gobuild.BuildError as exc:
        raise UpstreamError(
            f"upstream {chart} suites: {exc}; where the public Go proxy is unreachable, set "
            "GOPROXY=file://<shared>/goproxy,$(go env GOPROXY) as .ci/run does"
        ) from exc
    folder = root / spec.tests
    if not folder.is_dir():
        raise UpstreamError(f"upstream {chart} suites: {folder} is missing from {spec.module}")
    return folder


def suite_files(chart: str) -> list[Path]:
    """Every ``*_test.yaml`` suite of upstream's ``chart``, sorted."""
    files = sorted(suites_folder(chart).glob("*_test.yaml"))
    if not files:
        raise UpstreamError(f"upstream {chart} suites: no *_test.yaml in {suites_folder(chart)}")
    return files


def upstream_values(chart: str) -> dict[str, Any]:
    """Upstream's own ``values.yaml`` of ``chart``, read from its archive (:func:`upstream_chart`):
    the file an upstream user starts theirs from."""
    archive = upstream_chart(chart)
    where = f"{archive}: {chart}/values.yaml"
    try:
        with tarfile.open(archive) as tar:
            member = tar.extractfile(f"{chart}/values.yaml")
            text = member.read().decode("utf-8") if member else ""
        raw = yaml.safe_load(text)
    except (OSError, KeyError, tarfile.TarError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UpstreamError(f"{where}: cannot read it: {exc}") from exc
    return _mapping(raw, where)


def all_cases(chart: str) -> list[TestCase]:
    """Upstream's defaults, then upstream's ``values.yaml`` given as a values file (what a user who
    copied it passes with ``-f``), both with the suites' usual release, then every test of every
    suite."""
    cases: list[TestCase] = []
    for suite in suite_files(chart):
        cases += load_cases(chart, suite)
    release, namespace = cases[0].release, cases[0].namespace
    return [
        TestCase(chart, "defaults", {}, release, namespace),
        TestCase(chart, "values.yaml", upstream_values(chart), release, namespace),
        *cases,
    ]


# --- upstream's charts -----------------------------------------------------------------------


def reference() -> str:
    """Where upstream's charts come from: ``$SLINKY_UPSTREAM_CHARTS`` or the OCI default."""
    return os.environ.get(REFERENCE_ENV, "").strip() or DEFAULT_REFERENCE


def _pull(ref: str, chart: str) -> Path:
    """``helm pull <ref>/<chart> --version VERSION`` into the suite cache (once)."""
    digest = hashlib.sha256(ref.encode()).hexdigest()[:16]
    dest = cache_root() / "upstream-charts" / digest / f"{chart}-{VERSION}.tgz"
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    helm = client.Helm.pinned()
    with (
        tempfile.TemporaryDirectory(dir=dest.parent, prefix=".pull-") as tmp,
        heartbeat(f"helm pull {ref}/{chart} --version {VERSION}", "a few seconds", quiet_for=5),
    ):
        result = helm.run(
            "pull", f"{ref}/{chart}", "--version", VERSION, "--destination", tmp, check=False
        )
        pulled = Path(tmp) / dest.name
        if not result.ok or not pulled.is_file():
            raise UpstreamError(
                f"upstream chart {ref}/{chart} {VERSION}: helm pull failed "
                f"({result.stderr.strip() or 'no archive written'}); where that registry is "
                f"unreachable, set {REFERENCE_ENV} to a folder holding {dest.name}"
            )
        pulled.replace(dest)
    return dest


def upstream_chart(chart: str) -> Path:
    """The archive of upstream's ``chart`` at VERSION, from :func:`reference`."""
    ref = reference()
    if ref.startswith("oci://"):
        return _pull(ref.rstrip("/"), chart)
    path = Path(ref).expanduser() / f"{chart}-{VERSION}.tgz"
    if not path.is_file():
        raise UpstreamError(
            f"{REFERENCE_ENV}={ref}: no {path.name} there; point it at a folder holding "
            f"upstream's packaged charts, or unset it to pull {DEFAULT_REFERENCE}"
        )
    return path


# --- comparing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Intentional:
    """A difference from upstream that is meant: objects of ``kind`` named ``name``, at ``path``
    (patterns in which ``*`` stands for any text; an empty ``path`` is an object only one side
    renders), in the renders of ``charts`` (upstream's names), for ``reason``."""

    kind: str
    path: str
    reason: str
    charts: tuple[str, ...]
    name: str = "*"

    @property
    def key(self) -> str:
        """How an outcome names this entry: ``<kind>/<name> <path>``."""
        return f"{self.kind}/{self.name} {self.path}".rstrip()

    def covers(self, difference: Difference) -> bool:
        return (
            _glob(self.kind, difference.kind)
            and _glob(self.name, difference.name)
            and _glob(self.path, difference.path)
        )


def _glob(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern``, where only ``*`` is special (any text, dots and
    brackets too): paths hold brackets, which ``fnmatch`` would read as character classes."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, text, flags=re.DOTALL) is not None


_ENTRY_KEYS = {"kind": True, "name": False, "path": True, "reason": True}
"""The keys of an intentional-difference entry, and whether each is required."""


def _intentional_entry(raw: Any, chart: str, where: str) -> Intentional:
    if not isinstance(raw, dict):
        raise UpstreamError(f"{where}: expected a mapping with kind, path and reason")
    unknown = sorted(set(map(str, raw)) - set(_ENTRY_KEYS))
    if unknown:
        raise UpstreamError(
            f"{where}: unknown key(s) {', '.join(unknown)}; an entry has {', '.join(_ENTRY_KEYS)}"
        )
    for key, required in _ENTRY_KEYS.items():
        if required and key not in raw:
            raise UpstreamError(f"{where}: '{key}' is missing; every entry names it")
        if key in raw and not isinstance(raw[key], str):
            raise UpstreamError(f"{where}.{key}: expected a string, found {raw[key]!r}")
    if not raw["reason"].strip():
        raise UpstreamError(f"{where}.reason is empty; say why ours differs on purpose")
    if not raw["kind"]:
        raise UpstreamError(f"{where}.kind is empty; write a kind or '*'")
    return Intentional(
        raw["kind"], raw["path"], " ".join(raw["reason"].split()), (chart,), raw.get("name", "*")
    )


def load_intentional(path: Path = INTENTIONAL_FILE) -> tuple[Intentional, ...]:
    """The intentional differences of ``path``: per upstream chart name (``slurm``,
    ``slurm-operator``, ``slurm-bridge``), a list of entries with ``kind``, ``path`` and
    ``reason`` and an optional ``name`` (``*`` when left out). ``kind``, ``name`` and ``path``
    are patterns matched against each :class:`Difference` (only ``*`` is special); a ``path`` of
    ``""`` matches an object that only one side renders. The render tier fails on an entry that
    no case of its chart uses, so the list never hides more than it says."""
    raw = _load_yaml(path)
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise UpstreamError(f"{path}: expected a mapping of upstream chart names to lists")
    entries: list[Intentional] = []
    for chart, items in raw.items():
        if chart not in CHARTS:
            raise UpstreamError(f"{path}: {chart!r} is not an upstream chart ({', '.join(CHARTS)})")
        if not isinstance(items, list):
            raise UpstreamError(f"{path}: {chart} must be a list of entries (or [])")
        for index, item in enumerate(items):
            entries.append(_intentional_entry(item, str(chart), f"{path}: {chart}[{index}]"))
    return tuple(entries)


@dataclass(frozen=True)
class Difference:
    """One field where ours differs from upstream: ``kind/name`` (upstream's name) and a path."""

    kind: str
    name: str
    path: str
    upstream: str
    ours: str

    def __str__(self) -> str:
        where = f"{self.kind}/{self.name}" + (f" {self.path}" if self.path else "")
        return f"{where}: upstream {self.upstream}, ours {self.ours}"


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _pruned(value: Any) -> Any:
    """``value`` without ``null``, ``""``, ``{}`` and ``[]`` anywhere: a custom resource's fields
    decode to Go zero values, so the operator cannot tell them from an absent field."""
    if isinstance(value, dict):
        out = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def _diff_fields(upstream: Any, ours: Any, path: str) -> Iterable[tuple[str, str, str]]:
    """``(path, upstream, ours)`` for every field upstream sets that ours does not equal."""
    if isinstance(upstream, dict) and isinstance(ours, dict):
        for key, value in upstream.items():
            if key in ours:
                yield from _diff_fields(value, ours[key], _join(path, key))
            elif isinstance(value, dict):  # name each field ours lacks, down to the leaves
                yield from _diff_fields(value, {}, _join(path, key))
            else:
                yield _join(path, key), _short(value), "unset"
    elif isinstance(upstream, list) and isinstance(ours, list) and len(upstream) == len(ours):
        for index, (up, our) in enumerate(zip(upstream, ours, strict=True)):
            yield from _diff_fields(up, our, _join(path, index))
    elif upstream != ours:
        yield path, _short(upstream), _short(ours)


def _name(doc: Mapping[str, Any]) -> str:
    return str(_mapping(doc.get("metadata"), "metadata").get("name", ""))


def _same(up: str, ours: str, by_suffix: bool) -> bool:
    """The same name, or (``by_suffix``) one name a prefixed form of the other."""
    if not by_suffix:
        return up == ours
    return up.endswith(f"-{ours}") or ours.endswith(f"-{up}")


def _pair(
    upstream: Sequence[dict[str, Any]], ours: Sequence[dict[str, Any]]
) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Pair objects of one kind: same name; else one name ending with the other (a release
    prefix); else the one left of each side, if so. Returns pairs, upstream's unpaired, ours unpaired."""
    left, right = list(upstream), list(ours)
    pairs = []
    for by_suffix in (False, True):
        for up in list(left):
            found = next((o for o in right if _same(_name(up), _name(o), by_suffix)), None)
            if found is not None:
                pairs.append((up, found))
                left.remove(up)
                right.remove(found)
    if len(left) == 1 and len(right) == 1:
        pairs.append((left.pop(), right.pop()))
    return pairs, left, right


def _flags(args: Any) -> dict[str, list[str]]:
    """Command-line arguments by flag: ``--a b`` and ``--a=b`` are the same flag and value (to
    Go's ``flag`` and ``pflag`` alike) and flags may come in any order; a flag given twice keeps
    both values, in order; a bare word that follows no flag is listed under ``""``."""
    out: dict[str, list[str]] = {}
    words = [str(word) for word in args or []]
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("-"):
            out.setdefault("", []).append(word)
            continue
        flag, equals, value = word.partition("=")
        if not equals and index < len(words) and not words[index].startswith("-"):
            value = words[index]
            index += 1
        out.setdefault(flag, []).append(value)
    return out


def _env(env: Any) -> dict[str, Any]:
    """Environment variables by name (their order does not matter to the process)."""
    return {
        str(item.get("name")): {k: v for k, v in item.items() if k != "name"} for item in env or []
    }


def _containers(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A Deployment's containers: their name, image, arguments by flag and environment by name."""
    return [
        {
            "name": container.get("name"),
            "image": container.get("image"),
            "args": _flags(container.get("args")),
            "env": _env(container.get("env")),
        }
        for container in _pod_spec(doc).get("containers") or []
    ]


def _compared(up: dict[str, Any], our: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """What is compared of a pair: custom resources whole but their name (compared apart); of
    Deployments, the containers' image, args and env, paired by name (else, when one of each is
    left, with each other) and keyed by upstream's container name."""
    if up.get("kind") != "Deployment":
        fields = []
        for doc in (up, our):
            copy = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")}
            copy["metadata"] = {
                k: v for k, v in _mapping(doc.get("metadata"), "metadata").items() if k != "name"
            }
            fields.append(copy)
        return fields[0], fields[1]
    ups, ours = _containers(up), _containers(our)
    up_out: dict[str, Any] = {}
    our_out: dict[str, Any] = {}
    for pairing in ("name", "rest"):
        for container in list(ups):
            if pairing == "name":
                match = next((c for c in ours if c["name"] == container["name"]), None)
            else:
                match = ours[0] if len(ups) == 1 and len(ours) == 1 else None
            if match is not None:
                ups.remove(container)
                ours.remove(match)
                name = str(container.pop("name"))
                match.pop("name")
                up_out[name], our_out[name] = container, match
    for container in ups:
        up_out[str(container.pop("name"))] = container
    return {"containers": up_out}, {"containers": our_out}


def _is_compared(doc: Mapping[str, Any], deployments: bool) -> bool:
    group = str(doc.get("apiVersion", "")).split("/")[0]
    return group == SLINKY_GROUP or (deployments and doc.get("kind") == "Deployment")


def _pod_spec(doc: Mapping[str, Any]) -> dict[str, Any]:
    template = _mapping(_mapping(doc.get("spec"), "spec").get("template"), "spec.template")
    return _mapping(template.get("spec"), "spec.template.spec")


CLUSTER_SCOPED = frozenset(
    {
        "APIService",
        "ClusterIssuer",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "IngressClass",
        "MutatingWebhookConfiguration",
        "Namespace",
        "PersistentVolume",
        "PriorityClass",
        "StorageClass",
        "ValidatingWebhookConfiguration",
    }
)
"""Kinds whose ``metadata.namespace`` the API server ignores (a chart may set one anyway)."""


def _identity(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What of an object an in-place ``helm upgrade`` needs kept: its namespace (unless the kind is
    cluster-scoped); a Deployment's
    (immutable) selector, its ServiceAccount and the ConfigMaps and Secrets its pods mount; a
    Service's selector and (immutable) ``clusterIP``."""
    metadata = _mapping(doc.get("metadata"), "metadata")
    spec = _mapping(doc.get("spec"), "spec")
    out: dict[str, Any] = {}
    if doc.get("kind") not in CLUSTER_SCOPED:
        out["namespace"] = metadata.get("namespace")
    if doc.get("kind") == "Deployment":
        pod = _pod_spec(doc)
        volumes = [_mapping(v, "volume") for v in pod.get("volumes") or []]
        out["selector"] = spec.get("selector")
        out["serviceAccountName"] = pod.get("serviceAccountName")
        out["configMaps"] = sorted(
            str(v["configMap"].get("name")) for v in volumes if isinstance(v.get("configMap"), dict)
        )
        out["secrets"] = sorted(
            str(v["secret"].get("secretName")) for v in volumes if isinstance(v.get("secret"), dict)
        )
    elif doc.get("kind") == "Service":
        out["selector"] = spec.get("selector")
        out["clusterIP"] = spec.get("clusterIP")
    return out


def _kept(
    upstream: Sequence[dict[str, Any]], ours: Sequence[dict[str, Any]], kinds: Sequence[str]
) -> list[Difference]:
    """Every object of ``kinds`` (``"*"``: of any kind) that upstream renders and ours does not
    render under the same kind and name, and where a pair's :func:`_identity` differs
    (``identity.<field>``, a field either side sets). Objects only ours renders (our
    extensions) are no difference."""
    by_key = {(str(d.get("kind")), _name(d)): d for d in ours}
    found: list[Difference] = []
    for up in upstream:
        kind = str(up.get("kind"))
        if "*" not in kinds and kind not in kinds:
            continue
        our = by_key.get((kind, _name(up)))
        if our is None:
            found.append(Difference(kind, _name(up), "", "renders it", "does not"))
            continue
        up_fields, our_fields = _pruned(_identity(up)), _pruned(_identity(our))
        for path, up_value, our_value in _diff_fields(up_fields, our_fields, "identity"):
            found.append(Difference(kind, _name(up), path, up_value, our_value))
        # both ways: a selector label only ours has changes an immutable selector too
        for path, our_value, up_value in _diff_fields(our_fields, up_fields, "identity"):
            if up_value == "unset":
                found.append(Difference(kind, _name(up), path, up_value, our_value))
    return found


def compare(
    upstream: Sequence[dict[str, Any]],
    ours: Sequence[dict[str, Any]],
    *,
    deployments: bool,
    kept: Sequence[str] = (),
) -> list[Difference]:
    """Every difference of ours from upstream on the compared objects (see the module doc), and
    for the ``kept`` kinds each object's name and identity (:func:`_kept`)."""
    by_kind: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for side, docs in enumerate((upstream, ours)):
        for doc in docs:
            if _is_compared(doc, deployments):
                by_kind.setdefault(str(doc.get("kind")), ([], []))[side].append(doc)
    found: list[Difference] = []
    for kind, (ups, ourss) in sorted(by_kind.items()):
        pairs, missing, extra = _pair(ups, ourss)
        found += [Difference(kind, _name(d), "", "renders it", "does not") for d in missing]
        found += [Difference(kind, _name(d), "", "does not render it", "does") for d in extra]
        for up, our in pairs:
            if _name(up) != _name(our):
                found.append(Difference(kind, _name(up), "metadata.name", _name(up), _name(our)))
            up_fields, our_fields = (_pruned(fields) for fields in _compared(up, our))
            for path, up_value, our_value in _diff_fields(up_fields, our_fields, ""):
                found.append(Difference(kind, _name(up), path, up_value, our_value))
    reported = {(d.kind, d.name) for d in found if d.path in ("", "metadata.name")}
    return found + [d for d in _kept(upstream, ours, kept) if (d.kind, d.name) not in reported]


# --- measuring -------------------------------------------------------------------------------

Status = Literal["upstream refuses", "not accepted", "equal", "different"]


@dataclass
class Outcome:
    """What one case gave: its status, why it was refused (each schema violation, else the first
    line of Helm's error), its differences, and the :attr:`Intentional.key` of every intentional
    difference that covered one of its differences."""

    case: str
    status: Status
    reasons: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    intentional: list[str] = field(default_factory=list)


@dataclass
class ChartReport:
    """Every case of one upstream chart against ours."""

    chart: str
    ours: str
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, *statuses: Status) -> int:
        return sum(1 for o in self.outcomes if o.status in statuses)

    @property
    def cases(self) -> int:
        return len(self.outcomes)

    @property
    def upstream_renders(self) -> int:
        return self.cases - self.count("upstream refuses")

    @property
    def accepted(self) -> int:
        return self.count("equal", "different")

    @property
    def equal(self) -> int:
        return self.count("equal")

    @property
    def different(self) -> int:
        return self.count("different")

    def counts(self) -> dict[str, int]:
        return {
            "cases": self.cases,
            "upstream_renders": self.upstream_renders,
            "accepted": self.accepted,
            "equal": self.equal,
            "different": self.different,
        }

    @property
    def intentionally_equal(self) -> int:
        """Equal cases that are equal only less some intentional difference."""
        return sum(1 for o in self.outcomes if o.status == "equal" and o.intentional)

    def intentional_uses(self) -> list[tuple[str, int]]:
        """Each intentional difference used, with the number of accepted cases it covered."""
        counter = collections.Counter(key for o in self.outcomes for key in o.intentional)
        return sorted(counter.items())

    def top_reasons(self, n: int = 5) -> list[tuple[str, int]]:
        """The ``n`` commonest reasons ours refuses a case, with how many cases each."""
        counter = collections.Counter(
            reason for o in self.outcomes if o.status == "not accepted" for reason in o.reasons
        )
        return counter.most_common(n)

    def as_json(self) -> dict[str, Any]:
        return {
            "chart": self.chart,
            "ours": self.ours,
            **self.counts(),
            "outcomes": [dataclasses.asdict(o) for o in self.outcomes],
        }


_SCHEMA_HEADER = "don't meet the specifications of the schema"


def refusals(stderr: str) -> list[str]:
    """Why Helm refused, from its error output: for a schema failure every violation
    (``schema: at '/path': ...``; Helm lists them in no fixed order, so they are sorted, and the
    ``validation failed`` lines that only group others are left out), else the first line,
    without ``Error: ``."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("WARNING:", "level="))]
    if not lines:
        return ["no error output"]
    first = lines[0].removeprefix("Error: ")
    if _SCHEMA_HEADER in first:
        violations = sorted(
            f"schema: {line.removeprefix('- ')}"
            for line in lines[1:]
            if line.startswith("- at ") and not line.endswith(": validation failed")
        )
        if violations:
            return violations
    return [first]


_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse(text: str) -> list[dict[str, Any]]:
    """Rendered documents, parsed with libyaml when PyYAML has it: our operator chart renders its
    CRDs, and the pure-Python parser would spend most of a run reading them."""
    docs = yaml.load_all(text, Loader=_FAST_LOADER)
    return [doc for doc in docs if isinstance(doc, dict)]


def _render(chart: Path, case: TestCase) -> client.HelmResult:
    """``helm template`` of ``chart`` for ``case`` (Helm's built-in API versions and the case's
    own, as helm-unittest has them); documents parsed when it succeeds."""
    with tempfile.TemporaryDirectory(prefix="upstream-values-") as tmp:
        values = Path(tmp) / "values.json"
        values.write_text(client.values_text(case.values), encoding="utf-8")
        args = ["template", case.release, str(chart), *case.helm_args(), "-f", str(values)]
        result = client.run(args)
    if result.ok:
        result.docs = _parse(result.stdout)
    return result


@dataclass(frozen=True)
class _UpstreamRenders:
    """Upstream's renders, cached in the suite cache: upstream's archive never changes, so a
    render is keyed by the archive's digest, the helm binary, the values, the release and the
    ``helm template`` options (namespace, capabilities)."""

    archive: Path
    folder: Path
    salt: str

    @classmethod
    def of(cls, archive: Path) -> _UpstreamRenders:
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        helm = client.Helm.pinned().binary.resolve()
        return cls(archive, cache_root() / "upstream-charts" / "renders", f"{digest}\0{helm}")

    def render(self, case: TestCase) -> client.HelmResult:
        parts = (self.salt, client.values_text(case.values), case.release, *case.helm_args())
        key = "\0".join(parts)
        path = self.folder / f"{hashlib.sha256(key.encode()).hexdigest()}.json"
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            result = client.HelmResult([], int(saved["rc"]), saved["stdout"], saved["stderr"])
        except (OSError, ValueError, KeyError, TypeError):
            result = _render(self.archive, case)
            if result.returncode < 0:  # helm killed by a signal (a run stopped): nothing to keep
                return result
            saved = {"rc": result.returncode, "stdout": result.stdout, "stderr": result.stderr}
            write_atomic(path, json.dumps(saved))
            return result
        if result.ok:
            result.docs = _parse(result.stdout)
        return result


def _documents(result: client.HelmResult) -> tuple[list[dict[str, Any]], list[str]]:
    """The rendered documents (possibly none), or why there are none (a non-empty list)."""
    if not result.ok:
        return [], refusals(result.stderr)
    return result.docs, []


def _parsed(
    render: Callable[[], client.HelmResult], who: str
) -> tuple[list[dict[str, Any]], list[str]]:
    try:
        return _documents(render())
    except yaml.YAMLError as exc:
        return [], [f"{who} output is not YAML: {str(exc).splitlines()[0]}"]


def measure_case(
    spec: UpstreamChart,
    upstream_renders: _UpstreamRenders,
    case: TestCase,
    intentional: Sequence[Intentional],
) -> Outcome:
    """Render ``case`` with upstream's chart and ours, and compare."""
    upstream, refused = _parsed(lambda: upstream_renders.render(case), "upstream's")
    if refused:
        return Outcome(case.id, "upstream refuses", refused)
    ours, refused = _parsed(lambda: _render(spec.our_path, case), "our")
    if refused:
        return Outcome(case.id, "not accepted", refused)
    differences: list[str] = []
    meant: set[str] = set()
    applicable = [i for i in intentional if spec.name in i.charts]
    for difference in compare(upstream, ours, deployments=spec.deployments, kept=spec.kept):
        covering = next((i for i in applicable if i.covers(difference)), None)
        if covering is None:
            differences.append(str(difference))
        else:
            meant.add(covering.key)
    return Outcome(
        case.id,
        "different" if differences else "equal",
        differences=differences,
        intentional=sorted(meant),
    )


def measure(
    chart: str,
    *,
    intentional: Sequence[Intentional] | None = None,
    workers: int | None = None,
    on_case: Callable[[Outcome], None] | None = None,
) -> ChartReport:
    """Every case of upstream's ``chart`` (see :func:`all_cases`) against ours, less the
    ``intentional`` differences (default: :func:`load_intentional` of :data:`INTENTIONAL_FILE`);
    ``workers`` renders at once (default: the number of CPUs, at most 4)."""
    if chart not in CHARTS:
        raise UpstreamError(f"unknown upstream chart {chart!r}; choose from {', '.join(CHARTS)}")
    spec = CHARTS[chart]
    meant = load_intentional() if intentional is None else intentional
    renders = _UpstreamRenders.of(upstream_chart(chart))
    cases = all_cases(chart)
    report = ChartReport(chart, spec.ours)
    pool_size = workers or min(4, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=pool_size) as pool:
        for outcome in pool.map(lambda c: measure_case(spec, renders, c, meant), cases):
            report.outcomes.append(outcome)
            if on_case is not None:
                on_case(outcome)
    return report


# --- the ratchet -----------------------------------------------------------------------------

FLOOR_KEYS = ("accepted", "equal")


def load_floor(path: Path) -> dict[str, dict[str, int]]:
    """The floor file: per upstream chart, the least ``accepted`` and ``equal`` counts."""
    raw = _load_yaml(path)
    if not isinstance(raw, dict):
        raise UpstreamError(f"{path}: expected a mapping of upstream chart names to counts")
    floor: dict[str, dict[str, int]] = {}
    for chart, counts in raw.items():
        if chart not in CHARTS:
            raise UpstreamError(f"{path}: {chart!r} is not an upstream chart ({', '.join(CHARTS)})")
        if not isinstance(counts, dict) or set(counts) != set(FLOOR_KEYS):
            raise UpstreamError(f"{path}: {chart} must give exactly {' and '.join(FLOOR_KEYS)}")
        for key, value in counts.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise UpstreamError(f"{path}: {chart}.{key} must be a non-negative integer")
        floor[str(chart)] = {str(k): int(v) for k, v in counts.items()}
    return floor


def below_floor(report: ChartReport, floor: Mapping[str, Mapping[str, int]]) -> list[str]:
    """What of ``report`` fell below its floor (nothing when the chart has none)."""
    counts = report.counts()
    return [
        f"{report.chart}: {key} {counts[key]} < floor {least}"
        for key, least in floor.get(report.chart, {}).items()
        if counts[key] < least
    ]
