"""What a conformance run checks: the user's values files for one of the suite's charts or for
an umbrella chart, and the values paths findings name.

* ``--chart NAME``: the suite's chart ``charts/NAME``; the values are that chart's.
* ``--umbrella PATH``: an umbrella chart whose dependencies are the suite's charts (the example:
  ``examples/umbrella``); the values are shaped like a ``values/`` profile, one block per
  subchart. Without either, values with a block for one of the suite's charts are taken as
  umbrella values for ``examples/umbrella``; other values need ``--chart``.

Values paths are written as Helm's ``--set`` writes them, prefixed with the subchart in an
umbrella (``slurm-cluster.nodesets.gpu.podSpec.nodeSelector``) and bracketed where a key holds a
dot (``nodeSelector["nvidia.com/gpu.product"]``), so a finding can be pasted into a values file
or a ``--set``.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.core.errors import HarnessError
from slinky_harness.helm import charts as chart_index
from slinky_harness.helm import client as helm_client
from slinky_harness.helm import umbrella as example_umbrella
from slinky_harness.helm.values import merge

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from pathlib import Path

CLUSTER = "slurm-cluster"
"""The chart whose values the slurm.conf, Slurm and reference steps read."""
SUITE_CHARTS = ("slurm-operator", "slurm-cluster", "slurm-bridge", "gpu-topology-labeler")
"""The suite's charts a deployment is made of (slurm-operator-crds comes with slurm-operator)."""

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class TargetError(HarnessError, ValueError):
    """The command line or a values file cannot be used; the message says how to fix it."""


def format_path(parts: Sequence[str | int]) -> str:
    """``("nodesets", "gpu", "podSpec", "nodeSelector", "nvidia.com/gpu.product")`` ->
    ``nodesets.gpu.podSpec.nodeSelector["nvidia.com/gpu.product"]``; list indexes as ``[0]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out


MAX_INPUT_BYTES = 8 * 1024 * 1024
"""The largest values or manifest file read (8 MiB): a real one is a few kilobytes, and the API
server refuses any one object over about 1.5 MiB, so a larger file is a mistake (a log, a
binary) and is refused before it is parsed."""

MAX_DEPTH = 100
"""The deepest nesting of mappings and lists a values or manifest file may have (a Kubernetes
object nests about twenty levels): deeper input is refused, not walked into a RecursionError."""


class HelmValuesLoader(yaml.CSafeLoader):
    """YAML read as Helm reads a values file: Helm's YAML library keeps a plain scalar that looks
    like a date or a time (``2024-01-01``) a string when the target is untyped, as values are, so
    it is a string here too (PyYAML's safe loader would make it a ``datetime.date``)."""


HelmValuesLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


def _not_yaml(path: Path, exc: yaml.YAMLError) -> TargetError:
    mark = getattr(exc, "problem_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
    if isinstance(exc, yaml.reader.ReaderError):
        char = chr(exc.character) if isinstance(exc.character, int) else exc.character
        what = f"character {char!r} at offset {exc.position} is not allowed in YAML"
    else:
        what = str(getattr(exc, "problem", None) or exc)
    return TargetError(f"{where}: not valid YAML ({' '.join(what.split())})")


def read_input(path: Path, what: str) -> str:
    """The text of an input file: at most :data:`MAX_INPUT_BYTES`, UTF-8 (as Helm and kubectl
    read it); a larger, binary or unreadable file is a :class:`TargetError` naming the file."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise TargetError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if len(raw) > MAX_INPUT_BYTES:
        raise TargetError(
            f"{path}: larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB, too large for a {what}; "
            "give the values file itself (not a log, an archive or a binary)"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TargetError(
            f"{path}: not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start}); "
            f"a {what} is YAML text: save it as UTF-8"
        ) from None


def check_tree(path: Path, data: Any) -> None:
    """Refuse what Helm cannot take as values: a key that is not a string (YAML allows ``1:``
    and ``true:``; a values path names string keys) and nesting deeper than :data:`MAX_DEPTH`.
    Walks with its own stack, so hostile depth is an error, never a RecursionError."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        node, at = stack.pop()
        if len(at) > MAX_DEPTH:
            raise TargetError(
                f"{path}: nested deeper than {MAX_DEPTH} levels (at {format_path(at[:8])}...); "
                "values this deep are a mistake: flatten them"
            )
        if isinstance(node, dict):
            for key, value in node.items():
                if not isinstance(key, str):
                    where = f" under {format_path(at)}" if at else ""
                    raise TargetError(
                        f"{path}: key {key!r}{where} is a {type(key).__name__}, not a string; "
                        f'quote it ("{key}: ...")'
                    )
                stack.append((value, (*at, key)))
        elif isinstance(node, list):
            stack.extend((value, (*at, index)) for index, value in enumerate(node))


def load_values(path: Path) -> dict[str, Any]:
    """One values file, a mapping (empty file: no values), read as Helm reads it."""
    text = read_input(path, "values file")
    try:
        data = yaml.load(text, Loader=HelmValuesLoader)
    except yaml.YAMLError as exc:
        raise _not_yaml(path, exc) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TargetError(f"{path}: a values file is a mapping, not a {type(data).__name__}")
    check_tree(path, data)
    return data


def load_manifests(path: Path) -> list[dict[str, Any]]:
    """The objects of a YAML manifest file (``--existing``): every document a Kubernetes object
    with ``kind`` and ``metadata.name`` (a ``List``'s items count one by one)."""
    text = read_input(path, "manifest file")
    try:
        docs = [d for d in yaml.load_all(text, Loader=HelmValuesLoader) if d is not None]
    except yaml.YAMLError as exc:
        raise _not_yaml(path, exc) from None
    out: list[dict[str, Any]] = []
    for index, doc in enumerate(docs):
        check_tree(path, doc)
        items = doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
        items = [] if items is None else items
        if not isinstance(items, list):
            raise TargetError(
                f"{path}: document {index + 1} is a List whose items is a "
                f"{type(items).__name__}, not a list of objects"
            )
        for item in items:
            meta = item.get("metadata") if isinstance(item, dict) else None
            if not (isinstance(item, dict) and isinstance(item.get("kind"), str)
                    and isinstance(meta, dict) and isinstance(meta.get("name"), str)
                    and meta["name"]):  # fmt: skip
                raise TargetError(
                    f"{path}: document {index + 1} is not a Kubernetes object (it needs kind and "
                    "metadata.name)"
                )
            out.append(item)
    return out


@dataclass(frozen=True)
class Target:
    """The chart (or umbrella) under test and the user's values, merged as ``helm -f`` merges
    them. ``release`` and ``namespace`` are where the live step installs it."""

    kind: str  # "chart" or "umbrella"
    path: Path
    values_files: tuple[Path, ...]
    values: dict[str, Any] = field(compare=False, hash=False)
    release: str = "slurm"
    namespace: str = "slurm"

    @property
    def name(self) -> str:
        return self.chart_name

    @property
    def chart_name(self) -> str:
        return str(chart_index.load_yaml(self.path / "Chart.yaml")["name"])

    def describe(self) -> str:
        files = ", ".join(str(p) for p in self.values_files) or "no values files"
        return f"{self.kind} {self.name} ({self.path}) with {files}"

    # -- values -------------------------------------------------------------------------------

    def charts(self) -> list[str]:
        """The suite's charts this deployment installs (an umbrella's enabled subcharts)."""
        if self.kind == "chart":
            return [self.chart_name]
        return [c for c in SUITE_CHARTS if self.enabled(c)]

    def umbrella_defaults(self) -> dict[str, Any]:
        return load_values(self.path / "values.yaml") if self.kind == "umbrella" else {}

    def enabled(self, chart: str) -> bool:
        if self.kind == "chart":
            return chart == self.chart_name
        names = {str(d.get("name")) for d in example_umbrella.dependencies(self.path)}
        if chart not in names:
            return False
        block = merge(self.umbrella_defaults().get(chart), self.values.get(chart))
        return block.get("enabled", True) is not False

    def chart_values(self, chart: str) -> dict[str, Any]:
        """The values ``chart`` renders with: its defaults under the user's values (in an
        umbrella: the umbrella's block and the user's block, with ``global``)."""
        defaults = load_values(chart_index.CHARTS_DIR / chart / "values.yaml")
        if self.kind == "chart":
            return merge(defaults, self.values)
        layered = merge(self.umbrella_defaults(), self.values)
        block = example_umbrella.subchart_values(layered, chart)
        return merge(defaults, block)

    def user_block(self, chart: str) -> dict[str, Any]:
        """What the user's files set for ``chart`` (their block in an umbrella)."""
        if self.kind == "chart":
            return dict(self.values)
        return dict(self.values.get(chart) or {})

    def path_of(self, chart: str, *parts: str | int) -> str:
        """The values path of ``parts`` of ``chart`` in the user's terms."""
        prefix: tuple[str | int, ...] = (chart,) if self.kind == "umbrella" else ()
        return format_path((*prefix, *parts))

    def where(self, text: str) -> Iterator[str]:
        """Values paths (user's terms) of the user's string values equal to ``text``."""
        yield from (format_path(p) for p in _string_paths(self.values, (), text))

    # -- rendering ----------------------------------------------------------------------------

    def chart_dir(self, work: Path, helm_binary: str = "helm") -> Path:
        """A chart folder Helm can install: the chart itself, or a copy of the umbrella with
        its dependencies built (relative ``file://`` repositories made absolute first, so that
        the copy finds them; the user's folder is never written)."""
        if self.kind == "chart":
            return self.path
        dest = work / "umbrella" / self.path.name
        if dest.exists():
            return dest
        shutil.copytree(self.path, dest, ignore=shutil.ignore_patterns("charts", "Chart.lock"))
        meta = chart_index.load_yaml(dest / "Chart.yaml")
        for dep in meta.get("dependencies") or []:
            repo = str(dep.get("repository") or "")
            if repo.startswith("file://") and not repo.startswith("file:///"):
                dep["repository"] = "file://" + str((self.path / repo[7:]).resolve())
        (dest / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
        result = helm_client.run(["dependency", "build", str(dest)], helm=helm_binary)
        if not result.ok:
            raise TargetError(f"helm dependency build {self.path} failed: {result.describe()}")
        return dest

    def values_args(self) -> list[str]:
        return [arg for path in self.values_files for arg in ("-f", str(path))]


def _string_paths(
    node: Any, at: tuple[str | int, ...], text: str
) -> Iterator[tuple[str | int, ...]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _string_paths(value, (*at, str(key)), text)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _string_paths(value, (*at, index), text)
    elif isinstance(node, str) and node == text:
        yield at


def resolve(
    files: Sequence[Path],
    *,
    chart: str | None = None,
    umbrella: Path | None = None,
    release: str = "slurm",
    namespace: str = "slurm",
) -> Target:
    """The :class:`Target` of a command line (see the module doc for the rules)."""
    if chart and umbrella:
        raise TargetError("give --chart or --umbrella, not both")
    values: dict[str, Any] = {}
    for path in files:
        values = merge(values, load_values(path))
    if chart:
        folder = chart_index.CHARTS_DIR / chart
        if chart not in SUITE_CHARTS or not (folder / "Chart.yaml").is_file():
            raise TargetError(
                f"--chart {chart}: not one of the suite's charts; use one of "
                f"{', '.join(SUITE_CHARTS)}, or --umbrella PATH for an umbrella chart"
            )
        return Target("chart", folder, tuple(files), values, release, namespace)
    if umbrella is None:
        blocks = [key for key in values if key in SUITE_CHARTS]
        if values and not blocks:
            raise TargetError(
                "these values have no block for a suite chart (slurm-cluster: ..., as a values/ "
                "profile has): say which chart they are for with --chart NAME, or give the "
                "umbrella they are for with --umbrella PATH"
            )
        umbrella = example_umbrella.UMBRELLA_DIR
    if not (umbrella / "Chart.yaml").is_file():
        raise TargetError(
            f"--umbrella {umbrella}: no Chart.yaml there; give an umbrella chart's folder"
        )
    return Target("umbrella", umbrella.resolve(), tuple(files), values, release, namespace)
