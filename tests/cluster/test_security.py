"""What the API server says about the charts' objects: schemas, Pod Security and RBAC.

- Every rendered manifest of every chart and ``ci/`` scenario passes
  ``kubectl apply --dry-run=server`` (structural CRD schemas, CEL rules, defaulting, core
  validation).
- Every pod template of slurm-operator, slurm-bridge and gpu-topology-labeler is admitted in a
  namespace enforcing Pod Security "restricted" without warnings, and the default releases run
  there; slurmd (NodeSet pods, made by the operator) is refused, as the slurm-cluster README says.
- Each ServiceAccount can do what its component needs and nothing on the forbidden list
  (``tests/data/cluster/rbac-expectations.yaml``), asked through SubjectAccessReviews.
"""

from __future__ import annotations

import json
import subprocess
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.cluster import charts_support as support

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from slinky_harness.helm.charts import Scenario
    from slinky_harness.helm.client import Helm
    from slinky_harness.k8s.cluster import Cluster

SCENARIOS = support.chart_scenarios()
WORKLOAD_KINDS = {"Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob", "Pod", "ReplicaSet"}
RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/warn-version": "latest",
}
POD_CHARTS = ["gpu-topology-labeler", "slurm-bridge", "slurm-operator"]


@pytest.fixture
def restricted(cluster: Cluster, namespace: str) -> str:
    labels = [f"{k}={v}" for k, v in RESTRICTED.items()]
    cluster.kubectl("label", "namespace", namespace, "--overwrite", *labels)
    return namespace


def _dry_run(
    cluster: Cluster, namespace: str, docs: list[dict[str, Any]]
) -> subprocess.CompletedProcess[str]:
    """Server-side dry-run of ``docs``; their ServiceAccounts are created for real first.

    A Pod naming a ServiceAccount is refused at admission unless the account exists, and a
    dry-run creates nothing, so the accounts (in the test's namespace, deleted with it) go first.
    """
    accounts = [d for d in docs if d["kind"] == "ServiceAccount"]
    if accounts:
        cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump_all(accounts))
    # kubectl refuses a document whose namespace differs from -n: one call per namespace
    # (objects without one, cluster-scoped ones included, go with the test's namespace).
    groups: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        groups.setdefault(doc["metadata"].get("namespace") or namespace, []).append(doc)
    stdout, stderr, code = "", "", 0
    for ns, group in sorted(groups.items()):
        proc = support.kubectl(
            cluster,
            "apply",
            "--dry-run=server",
            "--server-side",
            # Objects another test's release left (slurm-operator's kept CRDs) belong to Helm's
            # field manager: a dry-run validates, it does not contend for ownership.
            "--force-conflicts",
            "--field-manager=cluster-tier",
            "-n",
            ns,
            "-f",
            "-",
            input=yaml.safe_dump_all(group),
        )
        stdout, stderr, code = stdout + proc.stdout, stderr + proc.stderr, code or proc.returncode
    return subprocess.CompletedProcess(
        ["kubectl", "apply", "--dry-run=server"], code, stdout, stderr
    )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_server_side_dry_run_accepts_every_manifest(
    cluster: Cluster, helm4: Helm, crds: None, namespace: str, scenario: Scenario
) -> None:
    docs = support.render(helm4, scenario.chart, support.values_files(scenario), "dry", namespace)
    assert docs
    support.prerequisites(cluster, scenario, namespace)
    try:
        proc = _dry_run(cluster, namespace, docs)
    finally:
        support.cleanup_prerequisites(cluster, scenario)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("(server dry run)") == len(docs), proc.stdout


POD_SCENARIOS = [s for s in SCENARIOS if s.chart in POD_CHARTS]


@pytest.mark.parametrize("scenario", POD_SCENARIOS, ids=[s.id for s in POD_SCENARIOS])
def test_pod_templates_meet_restricted_without_warnings(
    cluster: Cluster, helm4: Helm, crds: None, restricted: str, scenario: Scenario
) -> None:
    docs = support.render(helm4, scenario.chart, support.values_files(scenario), "pss", restricted)
    workloads = [d for d in docs if d["kind"] in WORKLOAD_KINDS]
    assert workloads
    accounts = [d for d in docs if d["kind"] == "ServiceAccount"]
    proc = _dry_run(cluster, restricted, accounts + workloads)
    assert proc.returncode == 0, proc.stderr
    assert "PodSecurity" not in proc.stderr, proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr


@pytest.mark.usefixtures("crds")
@pytest.mark.parametrize("chart_name", [*POD_CHARTS, "slurm-cluster"])
def test_default_release_pods_are_admitted_in_restricted_namespace(
    cluster: Cluster, helm4: Helm, restricted: str, core: Any, chart_name: str
) -> None:
    """The pods really run there (``--wait``), and so do the ``helm test`` pods."""
    if chart_name == "slurm-operator":
        support.delete_slinky_crds(cluster)
    files = [f for f in [support.OVERRIDES / f"{chart_name}.yaml"] if f.is_file()]
    ns = ["--namespace", restricted]
    chart = str(support.CHARTS[chart_name].path)
    try:
        helm4.run(
            "install",
            "pss",
            chart,
            *ns,
            *support.values_args(files),
            "--wait",
            "--timeout",
            support.HELM_TIMEOUT,
        )
        helm4.run("test", "pss", *ns, "--timeout", support.HELM_TIMEOUT)
        pods = core.list_namespaced_pod(restricted).items
        if chart_name != "slurm-cluster":
            assert [p for p in pods if p.status.phase == "Running"]
        events = core.list_namespaced_event(restricted).items
        refused = [e.message for e in events if "PodSecurity" in (e.message or "")]
        assert refused == []
    finally:
        helm4.run("uninstall", "pss", *ns, "--wait", "--timeout", support.HELM_TIMEOUT, check=False)
        if chart_name == "slurm-operator":
            support.ensure_slinky_crds(cluster)


def _slurmd_pod(nodeset: dict[str, Any]) -> dict[str, Any]:
    """The pod the operator builds from a NodeSet (slurmd container as the README describes)."""
    spec = nodeset["spec"]
    template = spec.get("template") or {}
    pod_spec = dict(template.get("spec") or {})
    pod_spec["hostname"] = "compute-0"
    pod_spec["containers"] = [
        {
            "name": "slurmd",
            "image": spec["slurmd"]["image"],
            "securityContext": {
                "privileged": True,
                "capabilities": {"add": ["BPF", "NET_ADMIN", "SYS_ADMIN", "SYS_NICE"]},
            },
        }
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "slurmd-from-nodeset",
            "labels": (template.get("metadata") or {}).get("labels") or {},
        },
        "spec": pod_spec,
    }


def test_slurmd_pod_of_nodeset_is_rejected_in_restricted_namespace(
    cluster: Cluster, helm4: Helm, crds: None, restricted: str, tmp_path: Path
) -> None:
    """slurm-cluster README, Security: slurmd runs privileged, so not "restricted" (nor baseline).
    The chart's defaults have no NodeSet (as upstream's), so the test names one."""
    readme = (support.CHARTS["slurm-cluster"].path / "README.md").read_text()
    assert "slurmd runs privileged" in readme
    values = tmp_path / "one-nodeset.yaml"
    values.write_text("nodesets:\n  compute: {}\n")
    docs = support.render(helm4, "slurm-cluster", [values], "pss", restricted)
    nodesets = [d for d in docs if d["kind"] == "NodeSet"]
    assert nodesets
    for nodeset in nodesets:
        proc = support.kubectl(
            cluster, "create", "-n", restricted, "-f", "-", input=json.dumps(_slurmd_pod(nodeset))
        )
        assert proc.returncode != 0, proc.stdout
        assert 'violates PodSecurity "restricted:latest"' in proc.stderr, proc.stderr
        assert "privileged" in proc.stderr
    # The same pod is fine where the README says to run it.
    cluster.kubectl(
        "label",
        "namespace",
        restricted,
        "--overwrite",
        "pod-security.kubernetes.io/enforce=privileged",
        "pod-security.kubernetes.io/warn=privileged",
    )
    proc = support.kubectl(
        cluster,
        "create",
        "--dry-run=server",
        "-n",
        restricted,
        "-f",
        "-",
        input=json.dumps(_slurmd_pod(nodesets[0])),
    )
    assert proc.returncode == 0, proc.stderr


# -- RBAC --

EXPECTATIONS = yaml.safe_load((support.DATA / "rbac-expectations.yaml").read_text())
RBAC_CASES = [
    (chart, suffix) for chart, comps in EXPECTATIONS["charts"].items() for suffix in comps
]


@pytest.fixture(scope="module")
def rbac_releases(cluster: Cluster, helm4: Helm, crds: None, core: Any) -> Iterator[str]:
    """Every chart with default values in one namespace, release name ``rbac``."""
    name = "rbac-expectations"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    support.delete_slinky_crds(cluster)
    installed = []
    try:
        for chart in EXPECTATIONS["charts"]:
            files = [f for f in [support.OVERRIDES / f"{chart}.yaml"] if f.is_file()]
            helm4.run(
                "install",
                f"rbac-{chart}"[:40],
                str(support.CHARTS[chart].path),
                "--namespace",
                name,
                *support.values_args(files),
            )
            installed.append(f"rbac-{chart}"[:40])
        yield name
    finally:
        for release in installed:
            helm4.run("uninstall", release, "--namespace", name, "--wait", check=False)
        core.delete_namespace(name)
        support.ensure_slinky_crds(cluster)


def _review(api: Any, user: str, entry: str, namespace: str) -> bool:
    verb, resource, scope = entry.split()
    group = ""
    sub = None
    if "/" in resource:
        resource, sub = resource.split("/", 1)
    if "." in resource:
        resource, group = resource.split(".", 1)
    ns = {"release": namespace, "other": "default", "cluster": None}[scope]
    body = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=user,
            groups=[
                "system:serviceaccounts",
                f"system:serviceaccounts:{namespace}",
                "system:authenticated",
            ],
            resource_attributes=client.V1ResourceAttributes(
                verb=verb, resource=resource, group=group, subresource=sub, namespace=ns
            ),
        )
    )
    try:
        result = api.create_subject_access_review(body)
    except ApiException as exc:  # pragma: no cover - surfaced as a failure
        raise AssertionError(f"SubjectAccessReview for {user} {entry}: {exc}") from exc
    return bool(result.status.allowed)


@pytest.mark.parametrize(
    ("chart", "suffix"), RBAC_CASES, ids=[f"{c}{s or '-main'}" for c, s in RBAC_CASES]
)
def test_service_account_rbac_matches_expectations(
    cluster: Cluster, api_client: Any, rbac_releases: str, chart: str, suffix: str
) -> None:
    namespace = rbac_releases
    spec = EXPECTATIONS["charts"][chart][suffix]
    sa = spec["account"]
    core: Any = client.CoreV1Api(api_client)
    accounts = {str(a.metadata.name) for a in core.list_namespaced_service_account(namespace).items}
    assert sa in accounts, sorted(accounts)
    user = f"system:serviceaccount:{namespace}:{sa}"
    api = client.AuthorizationV1Api(api_client)
    missing = [e for e in spec["allowed"] if not _review(api, user, e, namespace)]
    forbidden = spec.get("forbidden", []) + EXPECTATIONS["forbiddenEverywhere"]
    excess = [e for e in forbidden if _review(api, user, e, namespace)]
    assert missing == [], f"{sa} lacks what its component needs: {missing}"
    assert excess == [], f"{sa} may do what it must not: {excess}"
