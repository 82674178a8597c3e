"""The conformance static phase's pass-through check: slurm-cluster's pod specs, containers and
Service specs read against the Kubernetes OpenAPI schemas, each finding at its values path,
with the expected answer written out for small hand-made values."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from slinky_conformance.steps.static import passthrough
from slinky_conformance.target import resolve
from slinky_harness.k8s import schemas as kubeschema

if TYPE_CHECKING:
    from pathlib import Path


def _findings(tmp_path: Path, text: str, chart: str | None = "slurm-cluster") -> list[str]:
    path = tmp_path / "values.yaml"
    path.write_text(text)
    target = resolve([path], chart=chart)
    version = kubeschema.newest_version()
    found = passthrough.Checker(target, version).findings()
    return [f.line().replace(f"Kubernetes {version} ", "Kubernetes <version> ") for f in found]


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("nodesets:\n  a:\n    podSpec:\n      toleration: []\n",
         ["nodesets.a.podSpec.toleration: unknown key: a Kubernetes pod spec has no field "
          "'toleration'; fix: did you mean tolerations? correct the spelling or remove the key"]),
        ("nodesets:\n  a:\n    podSpec:\n      volumeMounts: [{name: v, mountPath: /v}]\n"
         "    slurmd:\n      volumes: [{name: v, emptyDir: {}}]\n",
         ["nodesets.a.podSpec.volumeMounts: unknown key: a Kubernetes pod spec has no field "
          "'volumeMounts' (volumeMounts belongs to the container); fix: move it to "
          "nodesets.a.slurmd.volumeMounts",
          "nodesets.a.slurmd.volumes: unknown key: a Kubernetes container has no field "
          "'volumes' (volumes belongs to the pod spec); fix: move it to nodesets.a.podSpec.volumes"]),
        ("controller:\n  podSpec:\n    tolerations: [{keys: a}]\n",
         ["controller.podSpec.tolerations[0].keys: unknown key: Kubernetes has no field 'keys' "
          "here; fix: did you mean key? correct the spelling or remove the key"]),
        ("loginsets:\n  l:\n    login:\n      securityContext: {privileged: 'yes'}\n",
         ["loginsets.l.login.securityContext.privileged: Kubernetes <version> refuses it: 'yes' is "
          "not of type 'boolean', 'null'; fix: give a value of the Kubernetes field's type and "
          "shape"]),
        ("restapi:\n  service:\n    spec:\n      typ: LoadBalancer\n",
         ["restapi.service.spec.typ: unknown key: a Kubernetes Service spec has no field 'typ'; "
          "fix: did you mean type? correct the spelling or remove the key"]),
    ],
    ids=["misspelt", "swapped", "nested", "wrong-type", "service"],
)  # fmt: skip
def test_unknown_misplaced_and_mistyped_keys_are_findings(
    tmp_path: Path, text: str, lines: list[str]
) -> None:
    assert _findings(tmp_path, text) == lines


def test_keys_of_the_charts_own_shape_and_valid_fields_pass(tmp_path: Path) -> None:
    """``image`` is the chart's registry/repository/tag (not Kubernetes' string), a
    ``nodeSelector`` label set to null drops a default (Helm removes it), and every field here
    is a Kubernetes one: no finding."""
    text = (
        "nodesetDefaults:\n  podSpec:\n    nodeSelector: {kubernetes.io/os: null}\n"
        "nodesets:\n  a:\n    slurmd:\n      image: {repository: r, tag: t}\n"
        "      resources: {limits: {cpu: 2, nvidia.com/gpu: 8}}\n"
        "      volumeMounts: [{name: v, mountPath: /v, readOnly: true}]\n"
        "    podSpec:\n      hostNetwork: true\n      volumes: [{name: v, emptyDir: {}}]\n"
        "      tolerations: [{key: k, operator: Exists, effect: NoSchedule}]\n"
        "controller:\n  service:\n    spec: {type: ClusterIP}\n"
    )
    assert _findings(tmp_path, text) == []


def test_umbrella_paths_carry_the_subchart(tmp_path: Path) -> None:
    lines = _findings(
        tmp_path, "slurm-cluster:\n  nodesets:\n    g:\n      podSpec:\n        affinty: {}\n",
        chart=None,
    )  # fmt: skip
    assert lines == [
        "slurm-cluster.nodesets.g.podSpec.affinty: unknown key: a Kubernetes pod spec has no "
        "field 'affinty'; fix: did you mean affinity? correct the spelling or remove the key"
    ]
