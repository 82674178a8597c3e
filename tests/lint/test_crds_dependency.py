"""slurm-operator brings the Slinky CRDs through its slurm-operator-crds dependency.

The dependency is materialised as a link, ``charts/slurm-operator/charts/slurm-operator-crds`` ->
``../../slurm-operator-crds``: Helm 4 and Helm 3 follow it for ``install``, ``template``, ``lint``
and ``package`` of a clone without ``helm dependency build``, and ``file://`` vendoring into an
umbrella packages the linked chart inside slurm-operator's archive. The alias ``crds`` makes the
subchart's values slurm-operator's ``crds.*``, so slurm-operator's schema carries the subchart's
properties (the generator takes them from the subchart: ``# @schema {subchart: ...}``) and must say
exactly what the subchart's own schema says.
"""

from __future__ import annotations

import copy
import json
import shutil
from typing import TYPE_CHECKING, Any

import pytest

from slinky_harness.helm import charts
from slinky_harness.helm import client as helm

if TYPE_CHECKING:
    from pathlib import Path

CHARTS = {c.name: c for c in charts.discover_charts()}
OPERATOR = CHARTS["slurm-operator"]
CRDS = CHARTS["slurm-operator-crds"]
LINK = OPERATOR.path / "charts" / CRDS.name


def test_dependency_is_declared_as_upstream_does_with_the_alias() -> None:
    deps = OPERATOR.meta.get("dependencies") or []
    assert deps == [
        {
            "name": "slurm-operator-crds",
            "alias": "crds",
            "version": ">=0.1.0-0 <1.0.0-0",
            "repository": "file://../slurm-operator-crds",
            "condition": "crds.enabled",
        }
    ], deps


def test_the_link_points_at_the_chart() -> None:
    assert LINK.is_symlink(), f"{LINK} must be a link (a copy would drift)"
    assert str(LINK.readlink()) == "../../slurm-operator-crds"
    assert LINK.resolve() == CRDS.path.resolve()


@pytest.mark.parametrize("binary", ["helm", "helm3"])
def test_helm_finds_the_dependency_at_an_admitted_version(binary: str, tmp_path: Path) -> None:
    """``helm dependency list`` in a clean copy (no archive or lock a ``helm dependency build``
    may have left) reports the linked chart ``unpacked``: a folder with the right name and a
    version in the range (``wrong version`` or ``misnamed`` otherwise)."""
    ignore = shutil.ignore_patterns("*.tgz", "Chart.lock")
    for chart in (OPERATOR, CRDS):
        shutil.copytree(chart.path, tmp_path / chart.name, symlinks=True, ignore=ignore)
    result = helm.run(["dependency", "list", str(tmp_path / OPERATOR.name)], helm=binary)
    assert result.ok, result.describe()
    rows = [line.split() for line in result.stdout.splitlines()[1:] if line.strip()]
    assert [(row[0], row[-1]) for row in rows] == [(CRDS.name, "unpacked")], result.stdout


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    """``node`` with every ``$ref: #/definitions/<name>`` replaced by that definition."""
    if isinstance(node, dict):
        if "$ref" in node:
            name = str(node["$ref"]).rsplit("/", 1)[1]
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return {
                **_inline(copy.deepcopy(definitions[name]), definitions),
                **_inline(rest, definitions),
            }
        return {k: _inline(v, definitions) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, definitions) for v in node]
    return node


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_without_descriptions(v) for v in node]
    return node


def test_operator_schema_says_what_the_crds_schema_says() -> None:
    """slurm-operator's ``crds`` object closes over exactly the subchart's keys with the same
    rules ($refs inlined on both sides; descriptions are each chart's own README text)."""
    sub = json.loads((CRDS.path / "values.schema.json").read_text(encoding="utf-8"))
    expected = _inline(sub["properties"], sub.get("definitions") or {})
    ours = json.loads((OPERATOR.path / "values.schema.json").read_text(encoding="utf-8"))
    block = ours["properties"]["crds"]
    assert block["additionalProperties"] is False
    mine = _inline(block["properties"], ours.get("definitions") or {})
    assert _without_descriptions(mine) == _without_descriptions(expected), (
        "charts/slurm-operator/values.schema.json properties.crds differs from the "
        "slurm-operator-crds schema: regenerate both with `python -m slinky_schemagen`"
    )
    assert block["properties"]["enabled"]["type"] == "boolean"


def test_packages_leave_out_what_dependency_build_leaves() -> None:
    lines = (OPERATOR.path / ".helmignore").read_text(encoding="utf-8").splitlines()
    for pattern in ("/charts/*.tgz", "/Chart.lock", "/charts/*/ci/"):
        assert pattern in lines, f"charts/slurm-operator/.helmignore must list {pattern}"
