"""Every chart and ``ci/`` scenario goes through a full Helm life cycle on the kwok cluster.

install --wait, test, upgrade --wait (a pod annotation changes), rollback, uninstall --wait,
then nothing of the release may be left in its namespace or cluster-wide, except what the charts
document they keep: the Slinky CRDs of slurm-operator-crds, alone or as slurm-operator's
dependency (``keep``/``crds.keep``, annotated ``helm.sh/resource-policy: keep``). Helm 4
``--wait`` is the watcher (kstatus) strategy, so the slurm-cluster custom resources, which nobody
reconciles here, count as current without a status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from tests.cluster import charts_support as support

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_harness.helm.charts import Scenario
    from slinky_harness.helm.client import Helm
    from slinky_harness.k8s.cluster import Cluster

SCENARIOS = support.chart_scenarios()
MARK = "cluster-tier.slinky.dev/upgraded"
OWNS_CRDS = frozenset({"slurm-operator", "slurm-operator-crds"})
"""Charts whose releases create (and own) the Slinky CRDs; the other charts need them."""


def prepare(cluster: Cluster, chart: str) -> None:
    """A chart of :data:`OWNS_CRDS` finds no Slinky CRD; the other charts find them all."""
    if chart in OWNS_CRDS:
        support.delete_slinky_crds(cluster)
    else:
        support.ensure_slinky_crds(cluster)


def assert_nothing_left(cluster: Cluster, namespace: str, chart: str) -> None:
    kept = support.wait_release_gone(cluster, namespace, chart)
    kinds = {str(k["kind"]) for k in kept}
    # Only the charts that own the CRDs document cluster-scoped objects they keep: the CRDs.
    assert kinds <= ({"CustomResourceDefinition"} if chart in OWNS_CRDS else set()), kept


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_install_test_upgrade_rollback_uninstall(
    cluster: Cluster, helm4: Helm, third_party_crds: None, namespace: str, scenario: Scenario
) -> None:
    prepare(cluster, scenario.chart)
    chart = support.CHARTS[scenario.chart]
    files = support.values_files(scenario)
    release = support.release_name(scenario)
    ns = ["--namespace", namespace]
    wait = ["--wait", "--timeout", support.HELM_TIMEOUT]
    chart_path = str(chart.path)
    support.prerequisites(cluster, scenario, namespace)
    try:
        helm4.run("install", release, chart_path, *ns, *support.values_args(files), *wait)
        tested = helm4.run("test", release, *ns, "--timeout", support.HELM_TIMEOUT)
        assert "Phase:          Failed" not in tested.stdout, tested.stdout
        upgrade = [*files, support.DATA / "upgrade" / f"{scenario.chart}.yaml"]
        helm4.run("upgrade", release, chart_path, *ns, *support.values_args(upgrade), *wait)
        assert MARK in helm4.run("get", "manifest", release, *ns).stdout
        helm4.run("rollback", release, "1", *ns, *wait)
        assert MARK not in helm4.run("get", "manifest", release, *ns).stdout
        history = helm4.run("history", release, *ns, "-o", "json").stdout
        assert '"revision":3' in history.replace(" ", ""), history
        if scenario.chart in OWNS_CRDS and _crds_enabled(scenario):
            kept = support.release_cluster_objects(cluster, namespace)
            assert {
                k["metadata"]["name"] for k in kept if k["kind"] == "CustomResourceDefinition"
            } == set(support.slinky_crd_names())
        deletes_crds = scenario.chart in OWNS_CRDS and not _crds_kept(scenario)
        timeout = support.CRD_UNINSTALL_TIMEOUT if deletes_crds else support.HELM_TIMEOUT
        helm4.run("uninstall", release, *ns, "--wait", "--timeout", timeout)
        assert_nothing_left(cluster, namespace, scenario.chart)
        if scenario.chart in OWNS_CRDS and _crds_enabled(scenario):
            # Documented: crds.keep (default true) leaves the CRDs behind; keep: false removes them.
            names = set(cluster.kubectl("get", "crd", "-o", "name").split())
            for name in support.slinky_crd_names():
                present = f"customresourcedefinition.apiextensions.k8s.io/{name}" in names
                assert present == _crds_kept(scenario), name
    finally:
        helm4.run("uninstall", release, *ns, "--ignore-not-found", check=False)
        support.cleanup_prerequisites(cluster, scenario)


def _crds_values(scenario: Scenario) -> dict[str, Any]:
    """The CRDs chart's values of the scenario: its own, or slurm-operator's ``crds`` block."""
    if scenario.chart == "slurm-operator-crds":
        return scenario.values
    return dict(scenario.values.get("crds") or {})


def _crds_enabled(scenario: Scenario) -> bool:
    return bool(_crds_values(scenario).get("enabled", True))


def _crds_kept(scenario: Scenario) -> bool:
    return bool(_crds_values(scenario).get("keep", True))


CHART_NAMES = sorted(support.CHARTS)


@pytest.mark.parametrize("chart_name", CHART_NAMES)
def test_helm3_install_upgrade_uninstall_defaults(
    cluster: Cluster, helm3: Helm, third_party_crds: None, namespace: str, chart_name: str
) -> None:
    prepare(cluster, chart_name)
    chart = support.CHARTS[chart_name]
    files = [f for f in [support.OVERRIDES / f"{chart_name}.yaml"] if f.is_file()]
    ns = ["--namespace", namespace]
    wait = ["--wait", "--timeout", support.HELM_TIMEOUT]
    try:
        helm3.run("install", "h3", str(chart.path), *ns, *support.values_args(files), *wait)
        upgrade = [*files, support.DATA / "upgrade" / f"{chart_name}.yaml"]
        helm3.run("upgrade", "h3", str(chart.path), *ns, *support.values_args(upgrade), *wait)
        assert MARK in helm3.run("get", "manifest", "h3", *ns).stdout
        helm3.run("uninstall", "h3", *ns, "--wait", "--timeout", support.HELM_TIMEOUT)
        assert_nothing_left(cluster, namespace, chart_name)
        if chart_name in OWNS_CRDS:
            # The default crds.keep: true leaves the CRDs behind, as the chart's README says.
            names = set(cluster.kubectl("get", "crd", "-o", "name").split())
            for name in support.slinky_crd_names():
                assert f"customresourcedefinition.apiextensions.k8s.io/{name}" in names, name
    finally:
        helm3.run("uninstall", "h3", *ns, check=False)


@pytest.mark.parametrize("chart_name", ["slurm-operator"])
def test_two_releases_side_by_side(
    cluster: Cluster, helm4: Helm, third_party_crds: None, namespace: str, chart_name: str
) -> None:
    """Two releases of one chart in one namespace: no name or ownership conflicts. Not for
    slurm-bridge: like upstream's chart it names its objects without the release (fixed ConfigMap
    names), so it runs once per namespace (charts/slurm-bridge/README.md "Names"; the render tier
    checks that nameOverride and schedulerConfig.schedulerName scope every other name)."""
    prepare(cluster, chart_name)
    chart = support.CHARTS[chart_name]
    files: list[Path] = [f for f in [support.OVERRIDES / f"{chart_name}.yaml"] if f.is_file()]
    ns = ["--namespace", namespace]
    wait = ["--wait", "--timeout", support.HELM_TIMEOUT]
    # The CRDs are cluster-scoped and can have one owner: the second operator release leaves them
    # to the first (crds.enabled false), which is how the README says to run two operators. Its
    # objects are named as upstream's (by the chart name, not the release), so the second release
    # takes another name and certificate Secret, as it would with upstream's chart.
    second = (
        [
            "--set", "crds.enabled=false",
            "--set", "nameOverride=slurm-operator-two",
            "--set", "certManager.secretName=slurm-operator-two-webhook-ca",
        ]
        if chart_name == "slurm-operator"
        else []
    )  # fmt: skip
    try:
        helm4.run("install", "one", str(chart.path), *ns, *support.values_args(files), *wait)
        helm4.run(
            "install", "two", str(chart.path), *ns, *support.values_args(files), *second, *wait
        )
        for release in ("one", "two"):
            status = helm4.run("status", release, *ns, "-o", "json").stdout
            assert '"status":"deployed"' in status.replace(" ", "")
        helm4.run("uninstall", "two", *ns, "--wait", "--timeout", support.HELM_TIMEOUT)
        helm4.run("test", "one", *ns, "--timeout", support.HELM_TIMEOUT)
        helm4.run("uninstall", "one", *ns, "--wait", "--timeout", support.HELM_TIMEOUT)
        assert_nothing_left(cluster, namespace, chart_name)
    finally:
        for release in ("two", "one"):
            helm4.run("uninstall", release, *ns, "--ignore-not-found", check=False)


def test_slinky_crds_are_removed_past_a_finalizer_no_operator_clears(cluster: Cluster) -> None:
    """A Token left with an operator's finalizer (the operator that set it has stopped) does not
    hold ``delete_slinky_crds`` up: the CRD deletion would otherwise wait until it times out, as
    it did for test_security.py after another file's operator run in the same worker."""
    support.ensure_slinky_crds(cluster)
    token = {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "Token",
        "metadata": {
            "name": "left-behind",
            "namespace": "default",
            "finalizers": ["slinky.slurm.net/finalizer"],
        },
        "spec": {"jwtHs256KeyRef": {"name": "jwt", "key": "jwt_hs256.key"}, "username": "root"},
    }
    try:
        cluster.apply([token])
        support.delete_slinky_crds(cluster)
        left = cluster.kubectl("get", "crd", "-o", "name")
        assert not [n for n in support.slinky_crd_names() if n in left], left
    finally:
        support.ensure_slinky_crds(cluster)
