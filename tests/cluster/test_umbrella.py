"""The example umbrella chart installs on the kwok cluster with its defaults and with every profile.

Each case: ``helm install --wait`` (Helm 4, kstatus watcher) of ``examples/umbrella`` with the
profile, ``helm test``, ``helm uninstall --wait``, then nothing of the release may be left, in its
namespace or cluster-wide. The Slinky CRDs are applied before the umbrella, outside any release,
and the umbrella runs with ``slurm-operator.crds.enabled: false``: the README's way for a cluster
whose CRDs a platform team owns, which lets every profile install in one command (Helm cannot map
the Controller/NodeSet/Token objects of one install to CRDs that the same install creates). The
umbrella owning the CRDs itself (install, then upgrade) is tests/cluster/test_umbrella_crds.py.
The chart tests' kwok overrides (admission webhooks ``failurePolicy: Ignore``) go under the
subcharts' blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.cluster import charts_support as support

from slinky_harness.helm import charts, umbrella

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_harness.helm.client import Helm
    from slinky_harness.k8s.cluster import Cluster

PROFILES = charts.profiles()
CASES: dict[str, dict[str, Any]] = {
    "defaults": {},
    **{f"profile/{stem}": data for stem, data in PROFILES.items()},
}
UMBRELLA_DEFAULTS: dict[str, Any] = charts.load_yaml(umbrella.UMBRELLA_DIR / "values.yaml")


@dataclass(frozen=True)
class Setup:
    """The built umbrella, the nested kwok overrides and one values file per case."""

    chart: Path
    overrides: Path
    values_dir: Path


TEST_NAMES = {"slurm-bridge": "slurm-bridge-test", "slurm-cluster": "umb-slurm-test"}
"""helm test objects named from upstream's names: the bridge's without the release (its README,
"Names"), slurm-cluster's ``<fullname>-test`` (``<release>-slurm``); the other subcharts' are
``<release>-<chart>-test``."""


@pytest.fixture(scope="module")
def setup(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Setup:
    """Third-party CRDs and prerequisites, the Slinky CRDs applied outside any release (as the
    umbrella's README says), the umbrella built, and its values files written."""
    support.install_third_party_crds(cluster)
    support.ensure_slinky_crds(cluster)
    work = tmp_path_factory.mktemp("umbrella")
    overrides = work / "kwok-overrides.yaml"
    nested = support.nested_overrides()
    nested["slurm-operator"] = {**(nested.get("slurm-operator") or {}), "crds": {"enabled": False}}
    overrides.write_text(yaml.safe_dump(nested))
    for case, values in CASES.items():
        (work / f"{case.replace('/', '-')}.yaml").write_text(yaml.safe_dump(values))
    return Setup(umbrella.build(work), overrides, work)


def enabled_subcharts(profile: dict[str, Any]) -> list[str]:
    names = [str(d["name"]) for d in umbrella.dependencies()]
    return [
        sub
        for sub in names
        if {**(UMBRELLA_DEFAULTS.get(sub) or {}), **(profile.get(sub) or {})}.get("enabled", True)
    ]


def topology_configmap(profile: dict[str, Any]) -> str:
    """The ConfigMap slurm-cluster reads topology.yaml from in this profile ("" for none)."""
    block = {
        **(UMBRELLA_DEFAULTS.get("slurm-cluster") or {}),
        **(profile.get("slurm-cluster") or {}),
    }
    if block.get("enabled") is False:
        return ""
    return str(((block.get("topology") or {}).get("configMapRef") or {}).get("name") or "")


@pytest.mark.parametrize("case", list(CASES))
def test_umbrella_install_test_uninstall(
    cluster: Cluster, helm4: Helm, setup: Setup, namespace: str, case: str
) -> None:
    profile = CASES[case]
    values = setup.values_dir / f"{case.replace('/', '-')}.yaml"
    ns = ["--namespace", namespace]
    wait = ["--wait", "--timeout", support.HELM_TIMEOUT]
    extra = [n for n in support.umbrella_managed_namespaces(profile) if n != namespace]
    for other in extra:
        support.kubectl(cluster, "create", "namespace", other)
    try:
        helm4.run(
            "install",
            "umb",
            str(setup.chart),
            *ns,
            "-f",
            str(values),
            "-f",
            str(setup.overrides),
            *wait,
        )
        status = helm4.run("status", "umb", *ns, "-o", "json").stdout
        assert '"status":"deployed"' in status.replace(" ", "")
        tested = helm4.run("test", "umb", *ns, "--timeout", support.HELM_TIMEOUT)
        assert "Phase:          Failed" not in tested.stdout, tested.stdout
        for sub in enabled_subcharts(profile):
            name = TEST_NAMES.get(sub, f"umb-{sub}-test")
            assert name in tested.stdout, f"no helm test of {sub} ({name}):\n{tested.stdout}"
        helm4.run("uninstall", "umb", *ns, "--wait", "--timeout", support.HELM_TIMEOUT)
        # slurm-cluster's README: the topology ConfigMap that another component keeps (created
        # as a placeholder hook when absent) stays after uninstall; it is the labeler's data.
        topology = topology_configmap(profile)
        documented = [f"ConfigMap/{topology}"] if topology else []
        kept = support.wait_release_gone(cluster, namespace, kept=documented)
        assert not kept, f"kept cluster-scoped objects: {[k['metadata']['name'] for k in kept]}"
        assert support.namespaced_leftovers(cluster, namespace) == documented
    finally:
        helm4.run("uninstall", "umb", *ns, "--ignore-not-found", check=False)
        if extra:
            cluster.kubectl("delete", "namespace", "--ignore-not-found", "--timeout=90s", *extra)


def test_crds_stay_outside_the_release(cluster: Cluster, setup: Setup) -> None:
    """The documented order holds: the Slinky CRDs exist beside the umbrella, which never owns
    them (other tests of this session may leave them annotated by a slurm-operator release that
    kept them on uninstall, as that chart documents)."""
    for crd in support.slinky_crd_names():
        meta = cluster.kubectl_json("get", "crd", crd, "-o", "json")["metadata"]
        owner = (meta.get("annotations") or {}).get("meta.helm.sh/release-name")
        assert owner != "umb", f"{crd} belongs to the umbrella release"
