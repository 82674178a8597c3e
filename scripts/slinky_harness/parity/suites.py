"""The cases of the parity measurement: upstream's defaults, upstream's ``values.yaml`` as a
values file, and one values overlay per test of upstream's helm-unittest suites.

The packaged charts leave their ``tests/`` out; the Go modules
``github.com/SlinkyProject/slurm-operator`` and ``slurm-bridge`` at v1.2.1 hold them, so they are
read from the Go module cache (``go mod download`` inside ``tools/``, whose ``go.sum`` pins the
modules' hashes).

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

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slinky_harness.build import gobuild
from slinky_harness.helm import client
from slinky_harness.helm.values import merge
from slinky_harness.parity.source import (
    CHARTS,
    TOOLS_MODULE,
    VERSION,
    UpstreamError,
    load_yaml,
    mapping,
    upstream_values,
)

if TYPE_CHECKING:
    from collections.abc import Mapping


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
    own = mapping(test.get("capabilities"), "capabilities")
    shared = mapping(suite.get("capabilities"), "capabilities")
    kube = None
    for layer in (own, shared):
        if layer.get("majorVersion") and layer.get("minorVersion"):
            kube = f"{layer['majorVersion']}.{layer['minorVersion']}"
            break
    apis = [*(own.get("apiVersions") or []), *(shared.get("apiVersions") or [])]
    return kube, tuple(str(api) for api in apis)


def _values_files(names: Any, folder: Path, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names or []:
        path = Path(name) if Path(name).is_absolute() else folder / name
        out = merge(out, mapping(load_yaml(path), f"{where}: values file {path}"))
    return out


def _release(test: dict[str, Any], suite: dict[str, Any], key: str, default: str) -> str:
    for layer in (test, suite):
        value = mapping(layer.get("release"), "release").get(key)
        if value:
            return str(value)
    return default


def load_cases(chart: str, suite: Path) -> list[TestCase]:
    """The cases of one helm-unittest suite file: one per entry of its ``tests:``."""
    raw = mapping(load_yaml(suite), str(suite))
    tests = raw.get("tests")
    if not isinstance(tests, list) or not tests:
        raise UpstreamError(f"{suite}: no 'tests:' list; is this a helm-unittest suite?")
    cases = []
    for index, entry in enumerate(tests):
        where = f"{suite}: tests[{index}]"
        test = mapping(entry, where)
        values = _values_files(
            [*(test.get("values") or []), *(raw.get("values") or [])], suite.parent, where
        )
        values = apply_set(values, mapping(raw.get("set"), f"{suite}: set"))
        values = apply_set(values, mapping(test.get("set"), f"{where}.set"))
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
