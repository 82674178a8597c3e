"""Strict validation of rendered objects: Kubernetes kinds and custom resources.

- Built-in kinds are checked against the strict OpenAPI-derived JSON Schemas that the
  ``kubernetes-validate`` package ships for each Kubernetes minor (unknown fields fail).
- ``slinky.slurm.net`` resources are checked against the CRDs that ``charts/slurm-operator``
  ships (schema and CEL rules).
- cert-manager, Prometheus Operator and KEDA resources are checked against those projects'
  published CRDs, taken at pinned versions from the Go module proxy into the tool cache
  (see :data:`THIRD_PARTY_CRDS`); nothing of theirs is stored in this repository.

A document whose kind has no schema is an error: every document must be validated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema
import yaml
from referencing import Registry, Resource

from slinky_crdgen import cel
from slinky_crdgen.jsonschema import FORMAT_CHECKER, crd_validator
from slinky_crdgen.loader import load_crds
from slinky_harness.build import gobuild
from slinky_harness.core import paths

if TYPE_CHECKING:
    from collections.abc import Iterable

OUR_CRDS_DIR = paths.REPO_ROOT / "charts" / "slurm-operator-crds" / "files" / "crds"
VERDICTS_KEPT = 4096
"""Documents whose validation verdict a SchemaSet remembers before it starts afresh."""


@dataclass(frozen=True)
class ThirdPartyCrds:
    """CRD files inside a Go module, at a pinned version."""

    module: str
    version: str
    files: tuple[str, ...]


THIRD_PARTY_CRDS = (
    ThirdPartyCrds(
        "github.com/cert-manager/cert-manager",
        "v1.21.2",
        (
            "deploy/crds/cert-manager.io_certificates.yaml",
            "deploy/crds/cert-manager.io_issuers.yaml",
            "deploy/crds/cert-manager.io_clusterissuers.yaml",
        ),
    ),
    ThirdPartyCrds(
        "github.com/prometheus-operator/prometheus-operator",
        "v0.85.0",
        (
            "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml",
            "example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml",
        ),
    ),
    ThirdPartyCrds(
        "github.com/kedacore/keda/v2",
        "v2.21.0",
        ("config/crd/bases/keda.sh_scaledobjects.yaml",),
    ),
)


@cache
def third_party_crds() -> tuple[dict[str, Any], ...]:
    """The pinned third-party CRDs, downloaded once into the Go module cache."""
    crds: list[dict[str, Any]] = []
    for source in THIRD_PARTY_CRDS:
        root = gobuild.module_dir(source.module, source.version)
        for name in source.files:
            with (root / name).open() as handle:
                crds.extend(doc for doc in yaml.safe_load_all(handle) if doc)
    return tuple(crds)


def our_crds(folder: Path = OUR_CRDS_DIR) -> tuple[dict[str, Any], ...]:
    """The slinky.slurm.net CRDs that charts/slurm-operator ships."""
    if not folder.is_dir():
        return ()
    return tuple(load_crds(folder).values())


def _schema_root() -> Path:
    return Path(str(resources.files("kubernetes_validate") / "kubernetes-json-schema"))


def known_versions() -> list[str]:
    """Kubernetes minors with shipped schemas, oldest first, as ``MAJOR.MINOR.0``."""
    found = []
    for entry in _schema_root().iterdir():
        match = re.fullmatch(r"v(\d+)\.(\d+)\.0-local-strict", entry.name)
        if match:
            found.append((int(match[1]), int(match[2])))
    return [f"{major}.{minor}.0" for major, minor in sorted(found)]


def newest_version() -> str:
    return known_versions()[-1]


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.removeprefix("v").split(".")[:2]
    return int(major), int(minor)


@cache
def _core_registry(schema_dir: Path) -> Registry[Any]:
    definitions = json.loads((schema_dir / "_definitions.json").read_text())
    resource: Resource[Any] = Resource.from_contents(definitions)
    registry: Registry[Any] = Registry().with_resource(
        "https://kubernetes.io/api/_definitions.json", resource
    )
    return registry


@cache
def _core_validator(
    schema_dir: Path, api_version: str, kind: str
) -> jsonschema.Draft202012Validator | None:
    suffix = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    path = schema_dir / f"{kind.lower()}-{suffix}.json"
    if not path.is_file():
        return None
    schema = json.loads(path.read_text())
    return jsonschema.Draft202012Validator(
        schema, registry=_core_registry(schema_dir), format_checker=FORMAT_CHECKER
    )


def _location(error: jsonschema.ValidationError) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path) or "."


class SchemaSet:
    """Validators for one Kubernetes version plus a set of CRDs."""

    def __init__(self, kube_version: str, crds: Iterable[dict[str, Any]] = ()) -> None:
        wanted = _minor(kube_version)
        usable = [v for v in known_versions() if _minor(v) <= wanted]
        if not usable or _minor(newest_version()) < wanted:
            raise ValueError(
                f"no Kubernetes {kube_version} schemas; known: {known_versions()[0]} to {newest_version()}"
            )
        self.kube_version = usable[-1]
        self.schema_dir = _schema_root() / f"v{self.kube_version}-local-strict"
        self.crds: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}
        for crd in crds:
            spec = crd["spec"]
            for version in spec["versions"]:
                if version.get("served", True):
                    self.crds[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = (
                        crd,
                        version["name"],
                    )
        self._crd_validators: dict[tuple[str, str], jsonschema.Draft202012Validator] = {}
        # Verdicts by document text: a chart renders many documents that its values leave alone
        # (a CRD, a ClusterRole) in every example of a property test, and validation is pure.
        self._verdicts: dict[str, list[str]] = {}

    def validate(self, doc: dict[str, Any]) -> list[str]:
        """Every schema violation of ``doc``, each naming the object and the field path."""
        text = json.dumps(doc, sort_keys=True, default=str)
        verdict = self._verdicts.get(text)
        if verdict is None:
            if len(self._verdicts) >= VERDICTS_KEPT:
                self._verdicts.clear()
            verdict = self._verdicts[text] = self._validate(doc)
        return list(verdict)

    def _validate(self, doc: dict[str, Any]) -> list[str]:
        api_version, kind = str(doc.get("apiVersion")), str(doc.get("kind"))
        name = (doc.get("metadata") or {}).get("name")
        label = f"{kind} {name} ({api_version}, Kubernetes {self.kube_version})"
        key = (api_version, kind)
        if key in self.crds:
            crd, version = self.crds[key]
            validator = self._crd_validators.get(key)
            if validator is None:
                validator = self._crd_validators[key] = crd_validator(crd, version)
            problems = [f"{label}: {_location(e)}: {e.message}" for e in validator.iter_errors(doc)]
            if not problems and crd["spec"]["group"] == "slinky.slurm.net":
                problems += [
                    f"{label}: CEL: {msg}" for msg in cel.evaluate_rules(crd, version, doc)
                ]
            return problems
        core = _core_validator(self.schema_dir, api_version, kind)
        if core is None:
            return [f"{label}: no schema is known for this kind; add its CRD to the harness"]
        return [f"{label}: {_location(e)}: {e.message}" for e in core.iter_errors(doc)]

    def validate_all(self, docs: Iterable[dict[str, Any]]) -> list[str]:
        problems: list[str] = []
        for doc in docs:
            problems.extend(self.validate(doc))
        return problems


@cache
def schema_set(kube_version: str) -> SchemaSet:
    """The suite's schema set: our CRDs plus the pinned third-party CRDs."""
    return SchemaSet(kube_version, (*our_crds(), *third_party_crds()))
