"""slurm-cluster's key Secrets (slurm.key, jwt.key) on a live API server.

What charts/slurm-cluster/README.md ("Keys") promises, checked with Helm 4 and Helm 3 (both
evaluate ``lookup`` against the cluster on install and upgrade):

- with ``create: true`` (the default) each key is created once (1024 random bytes, ``immutable: true``)
  and every later ``helm upgrade`` re-emits the same bytes, whatever else changes;
- with ``slurmKey.create: false`` / ``jwtKey.create: false`` (and ``secretRef``) no key Secret is rendered, so
  ``helm template`` output is the same on every run (GitOps), and the user's Secrets are used;
- ``helm uninstall`` leaves nothing of the release in its namespace (the README names only the
  operator-made controller PVC as a survivor, and no operator runs here), unless the Secret was
  annotated ``helm.sh/resource-policy: keep`` (``slurmKey.annotations``), in which case exactly
  that Secret stays and a re-install under the same release name reuses its bytes.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.cluster import charts_support as support

from slinky_harness.build.controlplane import K8S_VERSION
from slinky_harness.core.polling import wait_for

if TYPE_CHECKING:
    from pathlib import Path

    from slinky_harness.helm.client import Helm
    from slinky_harness.k8s.cluster import Cluster

CHART = str(support.CHARTS["slurm-cluster"].path)
README = support.CHARTS["slurm-cluster"].path / "README.md"
RELEASE = "keys"
FULLNAME = f"{RELEASE}-slurm"
SLURM_KEY = f"{FULLNAME}-auth-slurm"
JWT_KEY = f"{FULLNAME}-auth-jwt"
KEEP = "helm.sh/resource-policy"

# slurm-cluster renders Controller/NodeSet/RestApi objects: their CRDs must exist.
pytestmark = pytest.mark.usefixtures("slinky_crds")
WAIT = ["--wait", "--timeout", support.HELM_TIMEOUT]

# Two upgrades that change the release in different places, the key Secrets' own metadata
# included (immutable only freezes data): pod annotations, replicas, Secret annotations.
UPGRADES: list[list[str]] = [
    ["-f", str(support.DATA / "upgrade" / "slurm-cluster.yaml")],
    [
        "--set",
        "nodesets.compute.replicas=2",
        "--set",
        "slurmKey.annotations.demo\\.slinky\\.dev/rotated=never",
        "--set",
        "jwtKey.annotations.demo\\.slinky\\.dev/rotated=never",
    ],
]


@pytest.fixture(params=["helm4", "helm3"])
def any_helm(request: pytest.FixtureRequest) -> Helm:
    helm: Helm = request.getfixturevalue(request.param)
    return helm


def secret(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = cluster.kubectl_json("get", "secret", name, "-n", namespace)
    return found


def key_bytes(item: dict[str, Any], key: str) -> bytes:
    return base64.b64decode(item["data"][key])


def docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def test_keys_are_created_once_and_kept_across_upgrades(
    cluster: Cluster, any_helm: Helm, namespace: str
) -> None:
    ns = ["--namespace", namespace]
    try:
        any_helm.run("install", RELEASE, CHART, *ns, *WAIT)
        first = {name: secret(cluster, namespace, name) for name in (SLURM_KEY, JWT_KEY)}
        for name, key in ((SLURM_KEY, "slurm.key"), (JWT_KEY, "jwt.key")):
            item = first[name]
            assert item.get("immutable") is True, name
            assert set(item["data"]) == {key}, name
            assert len(key_bytes(item, key)) == 1024, name
            assert KEEP not in (item["metadata"].get("annotations") or {}), name
        assert first[SLURM_KEY]["data"] != first[JWT_KEY]["data"]

        for revision, upgrade in enumerate(UPGRADES, start=2):
            any_helm.run("upgrade", RELEASE, CHART, *ns, *upgrade, *WAIT)
            status = any_helm.run("status", RELEASE, *ns, "-o", "json").stdout
            assert f'"version":{revision}' in status.replace(" ", ""), status
            for name, before in first.items():
                now = secret(cluster, namespace, name)
                assert now["data"] == before["data"], f"{name} changed at revision {revision}"
                assert now["metadata"]["uid"] == before["metadata"]["uid"], f"{name} recreated"
                assert now.get("immutable") is True

        # The second upgrade reached the Secrets' metadata, so they were part of the apply.
        annotations = secret(cluster, namespace, SLURM_KEY)["metadata"].get("annotations") or {}
        assert annotations.get("demo.slinky.dev/rotated") == "never", annotations
        # The release record renders the same bytes Kubernetes holds (no drift for the next
        # upgrade's three-way merge or server-side apply).
        manifest = docs(any_helm.run("get", "manifest", RELEASE, *ns).stdout)
        rendered = {d["metadata"]["name"]: d for d in manifest if d.get("kind") == "Secret"}
        for name, before in first.items():
            assert rendered[name]["data"] == before["data"], name
    finally:
        any_helm.run("uninstall", RELEASE, *ns, "--ignore-not-found", check=False)


def test_existing_secrets_give_stable_template_output(
    cluster: Cluster, any_helm: Helm, namespace: str, tmp_path: Path
) -> None:
    """GitOps path: user Secrets referenced, no random bytes in the rendered output."""
    values = tmp_path / "existing.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "slurmKey": {
                    "create": False,
                    "secretRef": {"name": "site-slurm-key", "key": "key"},
                },
                "jwtKey": {"create": False, "secretRef": {"name": "site-jwt-key", "key": "jwt"}},
            }
        )
    )
    ns = ["--namespace", namespace]
    template = ["template", RELEASE, CHART, *ns, "--kube-version", K8S_VERSION]
    runs = [any_helm.run(*template, "-f", str(values)).stdout for _ in "ab"]
    assert runs[0] == runs[1]
    rendered = docs(runs[0])
    assert [d["metadata"]["name"] for d in rendered if d["kind"] == "Secret"] == []
    controller = next(d for d in rendered if d["kind"] == "Controller")
    assert controller["spec"]["slurmKeyRef"] == {"name": "site-slurm-key", "key": "key"}
    assert controller["spec"]["jwtKeyRef"] == {"name": "site-jwt-key", "key": "jwt"}

    # Counter-check: the generated keys are random per render (README: lookup needs a cluster),
    # so the comparison above would catch randomness.
    plain = [any_helm.run(*template).stdout for _ in "ab"]
    assert plain[0] != plain[1]

    # Installed against user Secrets: the release uses and owns neither, uninstall keeps both.
    user = {"site-slurm-key": ("key", b"s" * 1024), "site-jwt-key": ("jwt", b"j" * 32)}
    for name, (key, data) in user.items():
        cluster.apply(
            [
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": name, "namespace": namespace},
                    "data": {key: base64.b64encode(data).decode()},
                }
            ]
        )
    try:
        any_helm.run("install", RELEASE, CHART, *ns, "-f", str(values), *WAIT)
        manifest = any_helm.run("get", "manifest", RELEASE, *ns).stdout
        assert "kind: Secret" not in manifest
        any_helm.run("upgrade", RELEASE, CHART, *ns, "-f", str(values), *UPGRADES[0], *WAIT)
        any_helm.run("uninstall", RELEASE, *ns, "--wait", "--timeout", support.HELM_TIMEOUT)
        assert support.namespaced_leftovers(cluster, namespace) == [
            "Secret/site-jwt-key",
            "Secret/site-slurm-key",
        ]
        for name, (key, data) in user.items():
            assert key_bytes(secret(cluster, namespace, name), key) == data
    finally:
        any_helm.run("uninstall", RELEASE, *ns, "--ignore-not-found", check=False)


def test_readme_names_no_chart_object_that_survives_uninstall() -> None:
    """The uninstall test below relies on this reading of the README; fail if it changes."""
    text = README.read_text()
    # The other survivor, the topology ConfigMap of `topology.configMapRef`, needs that value,
    # which the uninstall test below leaves empty (the chart's default).
    assert (
        "The controller PVC is created by the operator and survives `helm uninstall`, and so does "
        "the\n  topology ConfigMap of `topology.configMapRef`" in text
    )
    assert KEEP not in text.split("## Keys", 1)[1].split("\n## ", 1)[0]


def test_uninstall_leaves_nothing_of_the_release(
    cluster: Cluster, any_helm: Helm, namespace: str
) -> None:
    ns = ["--namespace", namespace]
    try:
        any_helm.run("install", RELEASE, CHART, *ns, *WAIT)
        installed = support.namespaced_leftovers(cluster, namespace)
        assert {f"Secret/{SLURM_KEY}", f"Secret/{JWT_KEY}"} <= set(installed), installed
        any_helm.run("uninstall", RELEASE, *ns, "--wait", "--timeout", support.HELM_TIMEOUT)
        wait_for(
            lambda: not (support.namespaced_leftovers(cluster, namespace)),
            timeout=30,
            what=f"{namespace} to hold nothing after helm uninstall",
            every=0.5,
            detail=lambda: support.namespaced_leftovers(cluster, namespace),
        )
        assert support.cluster_leftovers(cluster, namespace) == []
    finally:
        any_helm.run("uninstall", RELEASE, *ns, "--ignore-not-found", check=False)


def test_resource_policy_keep_keeps_exactly_that_key_for_a_reinstall(
    cluster: Cluster, any_helm: Helm, namespace: str
) -> None:
    """values.yaml's example: ``slurmKey.annotations: {helm.sh/resource-policy: keep}``."""
    ns = ["--namespace", namespace]
    keep = ["--set", "slurmKey.annotations.helm\\.sh/resource-policy=keep"]
    try:
        any_helm.run("install", RELEASE, CHART, *ns, *keep, *WAIT)
        before = secret(cluster, namespace, SLURM_KEY)
        jwt_before = secret(cluster, namespace, JWT_KEY)
        any_helm.run("uninstall", RELEASE, *ns, "--wait", "--timeout", support.HELM_TIMEOUT)
        wait_for(
            lambda: (
                not (
                    [
                        o
                        for o in support.namespaced_leftovers(cluster, namespace)
                        if o != f"Secret/{SLURM_KEY}"
                    ]
                )
            ),
            timeout=30,
            what=f"{namespace} to hold only the kept slurm.key Secret",
            every=0.5,
            detail=lambda: [
                o
                for o in support.namespaced_leftovers(cluster, namespace)
                if o != f"Secret/{SLURM_KEY}"
            ],
        )
        assert support.namespaced_leftovers(cluster, namespace) == [f"Secret/{SLURM_KEY}"]

        any_helm.run("install", RELEASE, CHART, *ns, *keep, *WAIT)
        after = secret(cluster, namespace, SLURM_KEY)
        assert after["data"] == before["data"]
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        # jwt.key was not kept, so the re-install made a new one.
        assert secret(cluster, namespace, JWT_KEY)["data"] != jwt_before["data"]
    finally:
        any_helm.run("uninstall", RELEASE, *ns, "--ignore-not-found", check=False)
        cluster.kubectl(
            "delete", "secret", SLURM_KEY, "-n", namespace, "--ignore-not-found", check=False
        )
