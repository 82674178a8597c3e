"""The example umbrella owns the Slinky CRDs: an empty cluster gets everything from one release,
and a later ``helm upgrade`` updates the live CRDs.

Helm maps every object of an install to a kind before it creates anything, so one ``helm
install`` cannot create the CRDs and the Controller/NodeSet/Token objects of the same release.
The shortest sequence that still gives both, as the umbrella's README says: ``helm install`` with
the subcharts that create Slinky objects switched off (slurm-operator brings the CRDs through its
``slurm-operator-crds`` dependency), then ``helm upgrade`` with everything; every later change is
one ``helm upgrade``. This file runs that sequence, with Helm 4 and with Helm 3, each on a control
plane of its own (other files of a worker's session cluster leave the CRDs behind, so only a fresh
one is empty), then upgrades with a changed CRD (its description) and reads the change back from
the API server.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import pytest
import yaml
from tests.cluster import charts_support as support

from slinky_harness.build import toolchain
from slinky_harness.helm import charts, umbrella
from slinky_harness.helm.client import Helm
from slinky_harness.k8s.cluster import Cluster

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from slinky_harness.k8s.fleet import Fleet

FIRST_INSTALL_OFF = ("slurm-cluster", "slurm-bridge")
"""The subcharts that create slinky.slurm.net objects: off for the first install (README)."""
CHANGED_CRD = "tokens.slinky.slurm.net"
CHANGED_FILE = "slinky.slurm.net_tokens.yaml"
MARK = "(changed by test_umbrella_crds)"


def _build(dest: Path, *, change_crd: bool) -> Path:
    """The umbrella built from a copy of charts/ (the CRDs chart link kept), optionally with the
    Token CRD's description changed the way a regenerated CRD would change."""
    shutil.copytree(charts.CHARTS_DIR, dest / "charts", symlinks=True)
    if change_crd:
        path = dest / "charts" / "slurm-operator-crds" / "files" / "crds" / CHANGED_FILE
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        schema["description"] = f"{schema['description']} {MARK}"
        path.write_text(yaml.safe_dump(crd, sort_keys=False), encoding="utf-8")
    return umbrella.build(dest)


def _description(cluster: Cluster) -> str:
    crd = cluster.kubectl_json("get", "crd", CHANGED_CRD)
    return str(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"])


@pytest.fixture(params=["helm", "helm3"])
def empty(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, fleet: Fleet
) -> Iterator[tuple[Cluster, Helm]]:
    """A control plane of this test's own (no Slinky CRD) and the pinned Helm 4 or Helm 3 on it."""
    binary = str(request.param)
    with Cluster.start(tmp_path_factory.mktemp(f"empty-{binary}"), fleet=fleet) as running:
        yield running, Helm(toolchain.ensure(binary), running, tmp_path_factory.mktemp(binary))


def test_umbrella_installs_on_an_empty_cluster_and_upgrades_the_crds(
    empty: tuple[Cluster, Helm], tmp_path: Path
) -> None:
    cluster, helm = empty
    namespace = "umbrella-crds"
    for crd in support.slinky_crd_names():
        found = cluster.kubectl("get", "crd", crd, "--ignore-not-found", "-o", "name")
        assert not found.strip(), f"{crd} exists before the test: the cluster is not empty"
    support.install_third_party_crds(cluster)
    overrides = tmp_path / "kwok-overrides.yaml"
    overrides.write_text(yaml.safe_dump(support.nested_overrides()), encoding="utf-8")
    first = _build(tmp_path / "v1", change_crd=False)
    ns = ["--namespace", namespace, "--create-namespace"]
    ns_only = ["--namespace", namespace]
    wait = ["--wait", "--timeout", support.HELM_TIMEOUT]
    common = ["-f", str(overrides), *wait]
    off = [f"--set={sub}.enabled=false" for sub in FIRST_INSTALL_OFF]
    try:
        helm.run("install", "umb", str(first), *ns, *common, *off)
        for crd in support.slinky_crd_names():
            meta = cluster.kubectl_json("get", "crd", crd)["metadata"]
            assert meta["annotations"]["meta.helm.sh/release-name"] == "umb", crd
            assert meta["annotations"]["helm.sh/resource-policy"] == "keep", crd
        assert MARK not in _description(cluster)

        helm.run("upgrade", "umb", str(first), *ns, *common)
        controllers = cluster.kubectl_json("get", "controllers", *ns_only)["items"]
        assert controllers, "the upgrade with every subchart created no Controller"

        second = _build(tmp_path / "v2", change_crd=True)
        helm.run("upgrade", "umb", str(second), *ns, *common)
        assert _description(cluster).endswith(MARK), "helm upgrade did not update the live CRD"
        status = helm.run("status", "umb", *ns_only, "-o", "json").stdout
        assert '"status":"deployed"' in status.replace(" ", "")
    finally:
        helm.run(
            "uninstall", "umb", *ns_only, "--wait", "--timeout", support.HELM_TIMEOUT, check=False
        )
    # Kept on uninstall (crds.keep, the default): the CRDs outlive the release.
    for crd in support.slinky_crd_names():
        assert cluster.kubectl("get", "crd", crd, "-o", "name").strip(), f"{crd} was deleted"
