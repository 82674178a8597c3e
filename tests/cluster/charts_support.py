"""Shared helpers of the chart tests in the cluster tier (helm runs, CRDs, leftovers).

Every chart scenario is installed with its ``ci/<scenario>-values.yaml`` followed by the
chart's kwok overrides in ``tests/data/cluster/overrides/<chart>.yaml`` (see the comments there:
admission webhooks get ``failurePolicy: Ignore`` because no webhook server answers under kwok).
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.core.polling import wait_for
from slinky_harness.helm import charts as chart_index
from slinky_harness.helm import client as helm_client
from slinky_harness.k8s import schemas as kubeschema

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from slinky_harness.helm.client import Helm
    from slinky_harness.k8s.cluster import Cluster

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "cluster"
OVERRIDES = DATA / "overrides"
SLINKY_GROUP = "slinky.slurm.net"
HELM_TIMEOUT = "60s"
CRD_UNINSTALL_TIMEOUT = "180s"
"""``helm uninstall --wait`` of a release that deletes the Slinky CRDs: kube-apiserver's CRD
finalizer deletes every instance and then polls for none left (every 5 s, giving up after a
minute and starting over), and that wait alone was seen at over 60 s on a busy machine."""
# Objects every namespace has, and kinds that are records rather than release contents.
NAMESPACE_BASELINE = {("ServiceAccount", "default"), ("ConfigMap", "kube-root-ca.crt")}
IGNORED_NAMESPACED = {"events", "events.events.k8s.io"}

CHARTS = {c.name: c for c in chart_index.discover_charts()}


def chart_scenarios() -> list[chart_index.Scenario]:
    """Every ``ci/*-values.yaml`` scenario of every chart (profiles are the render tier's)."""
    found: list[chart_index.Scenario] = []
    for chart in CHARTS.values():
        found.extend(s for s in chart_index.scenarios(chart, include_profiles=False) if s.source)
    return found


def values_files(scenario: chart_index.Scenario) -> list[Path]:
    """The scenario's ci file (if any), then the chart's kwok overrides (if any)."""
    files = [scenario.source] if scenario.source else []
    override = OVERRIDES / f"{scenario.chart}.yaml"
    if override.is_file():
        files.append(override)
    return files


def nested_overrides() -> dict[str, Any]:
    """The charts' kwok overrides nested under their umbrella blocks (``slurm-bridge: {...}``)."""
    return {p.stem: yaml.safe_load(p.read_text()) for p in sorted(OVERRIDES.glob("*.yaml"))}


def umbrella_managed_namespaces(profile: dict[str, Any]) -> list[str]:
    """Namespaces the umbrella's bridge manages with ``profile`` (they must exist, as in
    production); none when the profile switches the bridge off."""
    from slinky_harness.helm import umbrella  # noqa: PLC0415 - only the umbrella tests need it

    defaults = chart_index.load_yaml(umbrella.UMBRELLA_DIR / "values.yaml")
    bridge = {**(defaults.get("slurm-bridge") or {}), **(profile.get("slurm-bridge") or {})}
    if bridge.get("enabled") is False:
        return []
    chart = chart_index.load_yaml(CHARTS["slurm-bridge"].path / "values.yaml")
    admission = {**chart["admission"], **(bridge.get("admission") or {})}
    return list(admission["managedNamespaces"])


def values_args(files: list[Path]) -> list[str]:
    args: list[str] = []
    for path in files:
        args += ["-f", str(path)]
    return args


def release_name(scenario: chart_index.Scenario) -> str:
    short = {
        "slurm-operator": "op",
        "slurm-operator-crds": "crds",
        "slurm-cluster": "sc",
        "slurm-bridge": "br",
        "gpu-topology-labeler": "gtl",
    }[scenario.chart]
    return f"{short}-{scenario.name.removeprefix('ci/')}"[:30].strip("-")


def kubectl(
    cluster: Cluster, *args: str, input: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """kubectl against the cluster, returning the process (stderr carries warnings)."""
    return subprocess.run(
        [str(cluster.bindir / "kubectl"), *args],
        env=cluster.env(),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# -- CRDs --


def install_third_party_crds(cluster: Cluster, groups: Sequence[str] = ()) -> None:
    """cert-manager, Prometheus Operator and KEDA CRDs (pinned in kubeschema), or those of
    ``groups`` only, and the cluster-wide prerequisites."""
    crds = kubeschema.third_party_crds()
    if groups:
        crds = tuple(crd for crd in crds if crd["spec"]["group"] in groups)
    cluster.apply_crds(crds)
    cluster.apply(DATA / "prerequisites.yaml")


def slinky_crd_names() -> list[str]:
    return sorted(str(c["metadata"]["name"]) for c in kubeschema.our_crds())


def ensure_slinky_crds(cluster: Cluster) -> None:
    """The Slinky CRDs as slurm-operator ships them, present (applied outside any release)."""
    existing = set(cluster.kubectl("get", "crd", "-o", "name").split())
    if all(
        f"customresourcedefinition.apiextensions.k8s.io/{n}" in existing for n in slinky_crd_names()
    ):
        return
    cluster.apply_crds(kubeschema.our_crds())


def delete_slinky_crds(cluster: Cluster) -> None:
    """Remove the Slinky CRDs, so a slurm-operator release can create (and own) them. The
    session's cluster is shared by the worker's files: a real operator an earlier file ran may
    have left finalizers on its objects (a Token's), which nothing removes once it has stopped,
    and the CRD deletion would wait on them forever; they are cleared first."""
    present = set(cluster.kubectl("get", "crd", "-o", "name").split())
    for crd in slinky_crd_names():
        if f"customresourcedefinition.apiextensions.k8s.io/{crd}" not in present:
            continue
        for item in json.loads(cluster.kubectl("get", crd, "-A", "-o", "json"))["items"]:
            meta = item["metadata"]
            if meta.get("finalizers"):
                cluster.kubectl(
                    "patch", crd, meta["name"], "-n", meta.get("namespace", "default"),
                    "--type=merge", "-p", '{"metadata":{"finalizers":null}}', check=False,
                )  # fmt: skip
    cluster.kubectl(
        "delete", "crd", "--ignore-not-found", "--wait", "--timeout=60s", *slinky_crd_names()
    )


# -- leftovers --


def _resource_names(cluster: Cluster, namespaced: bool) -> list[str]:
    out = cluster.kubectl(
        "api-resources", f"--namespaced={str(namespaced).lower()}", "--verbs=list", "-o", "name"
    )
    return [n for n in out.split() if n not in IGNORED_NAMESPACED]


def _items(cluster: Cluster, kinds: list[str], namespace: str | None) -> list[dict[str, Any]]:
    args = ["get", ",".join(kinds), "-o", "json", "--ignore-not-found"]
    args += ["-n", namespace] if namespace else []
    text = cluster.kubectl(*args)
    if not text.strip():
        return []
    data = json.loads(text)
    return list(data.get("items", []))


def namespaced_leftovers(
    cluster: Cluster, namespace: str, chart: str | None = None, kept: Collection[str] = ()
) -> list[str]:
    """Objects in ``namespace`` other than its baseline and ``kept`` (``Kind/name`` of objects
    documented to stay after uninstall)."""
    found = []
    for item in _items(cluster, _resource_names(cluster, True), namespace):
        key = (str(item["kind"]), str(item["metadata"]["name"]))
        if key in NAMESPACE_BASELINE or f"{key[0]}/{key[1]}" in kept:
            continue
        found.append(f"{key[0]}/{key[1]}")
    return sorted(found)


def release_cluster_objects(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    """Cluster-scoped objects that belong to a release in ``namespace`` (helm annotation)."""
    kinds = [k for k in _resource_names(cluster, False) if k not in {"namespaces", "nodes"}]
    found = []
    for item in _items(cluster, kinds, None):
        annotations = item["metadata"].get("annotations") or {}
        if annotations.get("meta.helm.sh/release-namespace") == namespace:
            found.append(item)
    return found


def cluster_leftovers(cluster: Cluster, namespace: str) -> list[str]:
    """Cluster-scoped objects of ``namespace``'s releases that helm should have deleted."""
    return sorted(
        f"{i['kind']}/{i['metadata']['name']}"
        for i in release_cluster_objects(cluster, namespace)
        if (i["metadata"].get("annotations") or {}).get("helm.sh/resource-policy") != "keep"
    )


def wait_release_gone(
    cluster: Cluster, namespace: str, chart: str | None = None, kept: Collection[str] = ()
) -> list[dict[str, Any]]:
    """After ``helm uninstall``: wait until ``namespace`` holds nothing of the release (but the
    ``kept`` objects, ``Kind/name``) and its cluster-scoped objects are deleted; return the
    cluster-scoped objects it kept on purpose."""
    wait_for(
        lambda: not (namespaced_leftovers(cluster, namespace, chart, kept)),
        timeout=30,
        what=f"{namespace} to hold nothing after helm uninstall",
        every=0.5,
        detail=lambda: namespaced_leftovers(cluster, namespace, chart, kept),
    )
    wait_for(
        lambda: not (cluster_leftovers(cluster, namespace)),
        timeout=30,
        what=f"cluster-scoped objects of {namespace}'s release to be deleted",
        every=0.5,
        detail=lambda: cluster_leftovers(cluster, namespace),
    )
    return release_cluster_objects(cluster, namespace)


def render(
    helm: Helm, chart: str, files: list[Path], release: str, namespace: str
) -> list[dict[str, Any]]:
    """``helm template`` against the live cluster's API versions (no lookups)."""
    proc = helm.run(
        "template",
        release,
        str(CHARTS[chart].path),
        "--namespace",
        namespace,
        *values_args(files),
    )
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


# -- scenario prerequisites --

# Namespaces outside the test's own that a scenario's values name (created before the install,
# deleted after): slurm-operator's namespace-scoped scenario binds Roles in its namespaces,
# slurm-bridge's default scenario manages namespace `slurm-bridge`.
EXTRA_NAMESPACES: dict[str, list[str]] = {
    "slurm-operator:ci/namespace-scoped": ["slurm", "slurm-team-a"],
    "slurm-bridge:ci/default": ["slurm-bridge"],
}


def prerequisites(cluster: Cluster, scenario: chart_index.Scenario, namespace: str) -> None:
    """Create what a scenario refers to but does not create (namespaces)."""
    for name in EXTRA_NAMESPACES.get(scenario.id, []):
        kubectl(cluster, "create", "namespace", name)


def cleanup_prerequisites(cluster: Cluster, scenario: chart_index.Scenario) -> None:
    names = EXTRA_NAMESPACES.get(scenario.id, [])
    if names:
        cluster.kubectl("delete", "namespace", "--ignore-not-found", "--timeout=90s", *names)


# -- objects the operator makes --


def release_objects(helm: Helm, release: str, namespace: str) -> list[dict[str, Any]]:
    """The objects of a release as installed (``helm get manifest``)."""
    text = helm.run("get", "manifest", release, "-n", namespace).stdout
    return [d for d in yaml.safe_load_all(text) if d]


def install_past_webhook_race(helm: Helm, release: str, chart: str, *args: str) -> None:
    """``helm install``, retried once past upstream's webhook cache race
    (:func:`slinky_harness.helm.client.install_past_webhook_race`); a failure fails the test."""
    result = helm_client.install_past_webhook_race(helm, release, chart, *args)
    if not result.ok:
        raise AssertionError(
            f"helm install {release} failed ({result.returncode}):\n{result.stderr}"
        )
    if result.retried:
        logging.getLogger(__name__).warning(
            "retried %s after the webhook cache race: %s", release, result.retried
        )
