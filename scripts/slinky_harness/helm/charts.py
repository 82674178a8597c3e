"""Find the suite's charts, their ``ci/`` scenarios and the ``values/`` profiles that apply.

A profile in ``values/<profile>.yaml`` is shaped like an umbrella chart's values: an optional
``global`` block and one block per chart it configures, keyed by chart name::

    # Use this profile when ...
    global:
      imageRegistry: ""
    slurm-cluster:
      nodesets: {...}

A profile applies to every chart it has a block for, unless the block says ``enabled: false``
(how a profile switches a subchart of ``examples/umbrella`` off); that chart is rendered with its
block plus the profile's ``global``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.core.paths import REPO_ROOT
from slinky_harness.helm.values import merge

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

CHARTS_DIR = REPO_ROOT / "charts"
PROFILES_DIR = REPO_ROOT / "values"


@dataclass(frozen=True)
class Scenario:
    """One values input for a chart: a ``ci/`` file, a profile block, or the defaults."""

    chart: str
    name: str
    values: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    source: Path | None = None

    @property
    def id(self) -> str:
        return f"{self.chart}:{self.name}"


@dataclass(frozen=True)
class Chart:
    name: str
    path: Path
    meta: dict[str, Any] = field(compare=False, hash=False)

    @property
    def version(self) -> str:
        return str(self.meta["version"])

    @property
    def ci_files(self) -> list[Path]:
        return sorted((self.path / "ci").glob("*-values.yaml"))

    @property
    def min_kube_version(self) -> str:
        """The lower bound of ``kubeVersion`` in Chart.yaml, as ``MAJOR.MINOR.PATCH``."""
        constraint = str(self.meta.get("kubeVersion", ""))
        match = re.search(r">=?\s*v?(\d+)\.(\d+)(?:\.(\d+))?", constraint)
        if not match:
            raise ValueError(
                f"{self.path}/Chart.yaml: kubeVersion {constraint!r} has no lower bound"
            )
        major, minor, patch = match.groups()
        return f"{major}.{minor}.{patch or 0}"


def load_yaml(path: Path) -> Any:
    """A YAML file, parsed safely by libyaml (the tiers read the charts' values often)."""
    with path.open() as handle:
        return yaml.load(handle, Loader=yaml.CSafeLoader)


def discover_charts(root: Path = CHARTS_DIR) -> list[Chart]:
    """Every chart directly under ``charts/``, sorted by name."""
    charts = []
    for chart_yaml in sorted(root.glob("*/Chart.yaml")):
        meta = load_yaml(chart_yaml) or {}
        charts.append(
            Chart(
                name=str(meta.get("name", chart_yaml.parent.name)),
                path=chart_yaml.parent,
                meta=meta,
            )
        )
    return charts


def dependents(found: list[Chart]) -> dict[str, str]:
    """Charts of ``found`` that another chart of ``found`` depends on by path, with that chart.

    ``slurm-operator-crds`` -> ``slurm-operator``: such a chart comes with its dependent (linked
    under the dependent's ``charts/``), so an umbrella reaches it through the dependent.
    """
    names = {c.name for c in found}
    result: dict[str, str] = {}
    for chart in found:
        for dep in chart.meta.get("dependencies") or []:
            name = str(dep.get("name", ""))
            if name in names and str(dep.get("repository", "")) == f"file://../{name}":
                result[name] = chart.name
    return result


def profiles(root: Path = PROFILES_DIR) -> dict[str, dict[str, Any]]:
    """Every profile in ``values/``, by file stem."""
    found = {}
    for path in sorted(root.glob("*.yaml")):
        data = load_yaml(path) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a profile must be a mapping of chart name to values")
        found[path.stem] = data
    return found


def profile_block(profile: dict[str, Any], chart: str) -> dict[str, Any] | None:
    """``chart``'s block of ``profile``; None when it has none or switches the chart off."""
    block = profile.get(chart)
    if block is None:
        return None
    if not isinstance(block, dict):
        raise ValueError(f"profile block {chart!r} must be a mapping, not {type(block).__name__}")
    if block.get("enabled") is False:
        return None
    return block


def scenarios(chart: Chart, *, include_profiles: bool = True) -> list[Scenario]:
    """The defaults, every ``ci/*-values.yaml`` and every profile that applies to ``chart``."""
    result = [Scenario(chart.name, "defaults")]
    for path in chart.ci_files:
        name = "ci/" + path.name.removesuffix("-values.yaml")
        result.append(Scenario(chart.name, name, load_yaml(path) or {}, path))
    if include_profiles:
        for stem, data in profiles().items():
            block = profile_block(data, chart.name)
            if block is None:
                continue
            values = dict(block)
            if "global" in data:
                values["global"] = data["global"]
            result.append(
                Scenario(chart.name, f"profile/{stem}", values, PROFILES_DIR / f"{stem}.yaml")
            )
    return result


def image_ref(defaults: Mapping[str, Any], values: Mapping[str, Any], app_version: str) -> str:
    """The image reference the labeler chart renders (the charts' shared ``<chart>.image``
    helper): the registry host is the repository's first path element when that names a host
    (it holds a "." or a ":", or is "localhost"), else ``registry``; ``global.imageRegistry``
    replaces it."""
    image = merge(defaults.get("image") or {}, values.get("image") or {})
    repository = str(image["repository"])
    host = str(image.get("registry") or "")
    first, slash, rest = repository.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        host, repository = first, rest
    host = str((values.get("global") or {}).get("imageRegistry") or host)
    ref = f"{host.rstrip('/')}/{repository}" if host else repository
    if image.get("digest"):
        return f"{ref}@{image['digest']}"
    return f"{ref}:{image.get('tag') or app_version}"


def published_ref(chart: Path = CHARTS_DIR / "gpu-topology-labeler") -> str:
    """The image reference the labeler chart's default values give (its ``appVersion`` as the
    tag), which the release workflow publishes."""
    meta = load_yaml(chart / "Chart.yaml")
    return image_ref(load_yaml(chart / "values.yaml"), {}, str(meta["appVersion"]))
