"""Upstream's side of the parity measurement: which upstream charts there are, our chart that
succeeds each, and where upstream's packaged charts come from.

Upstream's charts come from a chart reference, the setting ``SLINKY_UPSTREAM_CHARTS`` (default
``oci://ghcr.io/slinkyproject/charts``, what a user pulls): an ``oci://`` reference is pulled with
``helm pull`` into the suite cache (``$SLINKY_SUITE_CACHE/upstream-charts``); any other value is a
local folder that holds ``<name>-1.2.1.tgz`` (CI's ``shared/upstream-charts``). Nothing of
upstream is copied into the repository.
"""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from slinky_harness.core.errors import HarnessError
from slinky_harness.core.paths import REPO_ROOT, cache_root
from slinky_harness.core.progress import heartbeat
from slinky_harness.helm import client

VERSION = "1.2.1"
"""The upstream Slinky release our charts succeed (charts and Go modules)."""

REFERENCE_ENV = "SLINKY_UPSTREAM_CHARTS"
DEFAULT_REFERENCE = "oci://ghcr.io/slinkyproject/charts"

OPERATOR_MODULE = "github.com/SlinkyProject/slurm-operator"
BRIDGE_MODULE = "github.com/SlinkyProject/slurm-bridge"
TOOLS_MODULE = REPO_ROOT / "tools"
"""The Go module whose ``go.sum`` pins the hashes of both Slinky modules."""


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
    ConfigMaps and Secrets, Service ``clusterIP``; see :mod:`slinky_harness.parity.compare`)."""

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


# --- reading YAML as helm-unittest does -----------------------------------------------------


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


def load_yaml(path: Path) -> Any:
    """``path`` read as helm-unittest reads YAML (see :class:`_SuiteLoader`)."""
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_SuiteLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise UpstreamError(f"{path}: cannot read it as YAML: {exc}") from exc


def mapping(raw: Any, where: str) -> dict[str, Any]:
    """``raw`` when it is a mapping, ``{}`` for ``None``; else an error naming ``where``."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise UpstreamError(f"{where}: expected a mapping, found {type(raw).__name__}")
    return raw


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
    return mapping(raw, where)


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
