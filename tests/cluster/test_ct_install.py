"""``ct install`` (chart-testing, driven by ``ct.yaml``) of every chart against the kwok cluster.

ct installs each ``ci/*-values.yaml`` scenario into its own namespace with ``helm install
--wait``, runs ``helm test`` and deletes the release and namespace. It uses the ci files as they
are (no kwok overrides; slurm-operator's CRDs are applied beforehand, see CRDS_OUTSIDE), so the
operator's validating webhook keeps ``failurePolicy: Fail``; ct installs one release at a time,
so no Slinky object is created while it is registered.
"""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

import pytest
from tests.cluster import charts_support as support

from slinky_harness.build import toolchain
from slinky_harness.k8s.cluster import Cluster

if TYPE_CHECKING:
    from slinky_harness.k8s.fleet import Fleet

CHART_NAMES = sorted(support.CHARTS)
# slurm-operator's scenarios install without their CRDs here (applied beforehand, outside any
# release): each scenario would otherwise create the CRDs and drop them seconds later on uninstall,
# and kube-apiserver's CRD finalizer answers "storage is (re)initializing" to such a quick delete
# and backs off for about five minutes. Installing and removing the CRDs with the chart is covered
# by test_charts (every scenario's life cycle, and the Helm 3 round with crds.keep).
CRDS_OUTSIDE = {
    "slurm-operator": ["--helm-extra-set-args=--set=crds.enabled=false"],
}
# Charts that create the Slinky CRDs themselves: installed by ct on a control plane of their own,
# where no CRD exists yet (on the session cluster the CRDs applied for the other charts would
# belong to no release, and Helm refuses to take such objects over without --take-ownership,
# which ct would also hand to `helm test` and `helm uninstall`).
OWN_CONTROL_PLANE = frozenset({"slurm-operator-crds"})


@pytest.mark.parametrize("chart_name", CHART_NAMES)
def test_ct_install(
    cluster: Cluster,
    namespace: str,
    chart_name: str,
    fleet: Fleet,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    if chart_name not in OWN_CONTROL_PLANE:
        support.install_third_party_crds(cluster)
        support.ensure_slinky_crds(cluster)
        _ct_install(cluster, namespace, chart_name)
        return
    with Cluster.start(tmp_path_factory.mktemp(f"ct-{chart_name}"), fleet=fleet) as own:
        own.kubectl("create", "namespace", namespace)
        _ct_install(own, namespace, chart_name)


def _ct_install(cluster: Cluster, namespace: str, chart_name: str) -> None:
    """``ct install`` of ``chart_name`` into ``namespace`` of ``cluster``; every scenario ran."""
    toolchain.ensure("ct")
    toolchain.ensure("helm")
    env = toolchain.tool_env(["ct", "helm", "kubectl"], base=cluster.env())
    # Namespaces outside the release's that some scenarios name (see charts_support).
    extra = sorted(
        {
            n
            for sid, names in support.EXTRA_NAMESPACES.items()
            if sid.startswith(f"{chart_name}:")
            for n in names
        }
    )
    for name in extra:
        support.kubectl(cluster, "create", "namespace", name)
    # `ct install` (v3.14) has no --chart-yaml-schema/--lint-conf (those are `ct lint` flags).
    # --namespace: every scenario goes into the test's namespace and ct only uninstalls the
    # release afterwards; without it ct creates and deletes (waiting) one namespace per scenario,
    # which costs ~20s each under kwok and would blow the tier's time budget.
    try:
        proc = subprocess.run(
            [
                "ct",
                "install",
                "--config",
                str(support.REPO / "ct.yaml"),
                "--charts",
                f"charts/{chart_name}",
                "--namespace",
                namespace,
                *CRDS_OUTSIDE.get(chart_name, []),
            ],
            cwd=support.REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=480,
            check=False,
        )
    finally:
        if extra:
            cluster.kubectl("delete", "namespace", "--ignore-not-found", "--timeout=90s", *extra)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    for path in support.CHARTS[chart_name].ci_files:
        assert f'Installing chart with values file "{path.relative_to(support.REPO)}"' in output
    assert "All charts installed successfully" in output
    # ct uninstalled every scenario's release.
    helm = subprocess.run(
        ["helm", "list", "-q", "-n", namespace],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert helm.stdout.strip() == ""
