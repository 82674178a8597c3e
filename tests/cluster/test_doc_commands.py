"""The install commands of every document run in the cluster tier exactly as written.

Each block marked ``<!-- cluster-tier: runs -->`` (``slinky_harness.core.doc_commands``; the lint
tier makes sure every helm/kubectl block is marked) runs with ``bash -euo pipefail`` in a copy of
the checkout's ``charts/``, ``examples/`` and ``values/``, on a control plane of its own: the
fleet's kwok nodes, cert-manager's CRDs (slurm-operator asks cert-manager for its webhook
certificate by default) and the cluster-wide objects a GPU cluster has
(``tests/data/cluster/prerequisites.yaml``), and nothing of the suite. ``helm`` is
the pinned Helm 4, ``kubectl`` the pinned kubectl, ``python`` this test's interpreter.

kwok runs no container, so no webhook server answers: that control plane's kube-apiserver runs
without the admission-webhook plugins, or every Slinky object would wait for the operator's
webhook pod (``tests/cluster/test_operator.py`` runs the real webhook). After a block, every
release it made must be ``deployed``, and what the releases wired together must line up: every
Secret and ConfigMap a workload of theirs mounts or reads (unless marked optional) exists or is
the output of a Slinky ``Token`` or a cert-manager ``Certificate``, so does every key Secret (and
JWKS ConfigMap) a Slinky object names (``slurmKeyRef``, ``jwtKeyRef``, ``jwksKeyRef``, ...), and every
``http://<service>.<namespace>:<port>`` in a ConfigMap names a Service of that port, or the
``RestApi`` whose Service the operator makes under that name (``<name>-restapi``, checked
against the real operator by ``tests/cluster/test_operator.py``), and every slurm-cluster
Controller reads the topology ConfigMap a gpu-topology-labeler in its namespace writes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.cluster import charts_support as support

from slinky_harness.build import toolchain
from slinky_harness.core import doc_commands
from slinky_harness.core.paths import REPO_ROOT
from slinky_harness.helm.client import Helm
from slinky_harness.k8s.cluster import Cluster
from slinky_harness.k8s.references import key_refs

if TYPE_CHECKING:
    from collections.abc import Iterator

    from slinky_harness.k8s.fleet import Fleet

NO_WEBHOOKS = (
    "--extra-args=kube-apiserver=disable-admission-plugins="
    "MutatingAdmissionWebhook,ValidatingAdmissionWebhook"
)
BLOCKS = [block for path in doc_commands.documents() for block in doc_commands.runnable(path)]
URL = re.compile(
    r"https?://(?P<service>[a-z0-9-]+)\.(?P<namespace>[a-z0-9-]+)(?:\.svc[a-z.]*)?:(?P<port>\d+)"
)
SLINKY_KINDS = tuple(
    f"{kind}.slinky.slurm.net"
    for kind in ("controllers", "nodesets", "loginsets", "restapis", "accountings", "tokens")
)
WORKLOADS = ("deployments", "daemonsets", "statefulsets", "jobs")


@pytest.fixture
def own_cluster(tmp_path: Path, fleet: Fleet) -> Iterator[Cluster]:
    """A control plane of this block's own (see the module doc)."""
    with Cluster.start(tmp_path / "cp", fleet=fleet, extra_args=[NO_WEBHOOKS]) as running:
        support.install_third_party_crds(running, groups=("cert-manager.io",))
        yield running


def _helm(cluster: Cluster, home: Path) -> Helm:
    """The pinned Helm 4 on ``cluster``, its config, cache and data under ``home``."""
    return Helm(toolchain.ensure("helm"), cluster, home)


def _env(helm: Helm, cluster: Cluster) -> dict[str, str]:
    """``helm``'s environment (bound to ``cluster``) with the pinned helm, the cluster's kubectl
    and this interpreter first on PATH."""
    env = helm.env()
    assert env is not None and helm.cluster is cluster, "the doc commands need a bound Helm"
    binaries = [helm.binary, cluster.bindir / "kubectl", Path(sys.executable)]
    env["PATH"] = doc_commands.tool_path(binaries, env)
    return env


def _releases(helm: Helm) -> list[dict[str, Any]]:
    listed = helm.run(
        "list", "--all-namespaces", "--deployed", "--failed", "--pending", "-o", "json"
    )
    return list(json.loads(listed.stdout or "[]"))


def _objects(cluster: Cluster, kinds: str) -> list[dict[str, Any]]:
    """Every object of ``kinds`` (none of a custom kind whose CRD is not installed)."""
    wanted = kinds.split(",")
    custom = [kind for kind in wanted if "." in kind]
    if custom:
        names = cluster.kubectl("get", "crds", "-o", "name").split()
        wanted = [
            k
            for k in wanted
            if "." not in k or f"customresourcedefinition.apiextensions.k8s.io/{k}" in names
        ]
    if not wanted:
        return []
    return list(cluster.kubectl_json("get", ",".join(wanted), "--all-namespaces")["items"])


REF_KINDS = {
    "secret": "Secret",  # volume, projected source
    "configMap": "ConfigMap",
    "secretKeyRef": "Secret",  # env valueFrom
    "configMapKeyRef": "ConfigMap",
    "secretRef": "Secret",  # envFrom
    "configMapRef": "ConfigMap",
}


def _pod_refs(pod: dict[str, Any]) -> set[tuple[str, str]]:
    """(kind, name) of every Secret and ConfigMap a pod spec needs (optional ones left out)."""
    holders: list[dict[str, Any]] = list(pod.get("volumes") or [])
    for volume in pod.get("volumes") or []:
        holders += (volume.get("projected") or {}).get("sources") or []
    for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        holders += [env.get("valueFrom") or {} for env in container.get("env") or []]
        holders += container.get("envFrom") or []
    refs: set[tuple[str, str]] = set()
    for holder in holders:
        for key, kind in REF_KINDS.items():
            ref = holder.get(key)
            if ref and not ref.get("optional"):
                refs.add((kind, str(ref.get("secretName") or ref.get("name"))))
    return refs


def _where(obj: dict[str, Any]) -> str:
    return f"{obj['kind']} {obj['metadata']['namespace']}/{obj['metadata']['name']}"


def _secrets_and_configmaps(cluster: Cluster) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of every Secret and ConfigMap, and of every Secret a Slinky Token
    or a cert-manager Certificate makes (their controllers do not run here)."""
    existing = {
        (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
        for obj in _objects(cluster, "secrets,configmaps")
    }
    for obj in _objects(cluster, "tokens.slinky.slurm.net"):
        if (obj.get("spec") or {}).get("secretRef"):
            existing.add(("Secret", obj["metadata"]["namespace"], obj["spec"]["secretRef"]["name"]))
    for obj in _objects(cluster, "certificates.cert-manager.io"):
        existing.add(("Secret", obj["metadata"]["namespace"], obj["spec"]["secretName"]))
    return existing


def _missing_refs(cluster: Cluster) -> list[str]:
    """Secrets and ConfigMaps that workloads and Slinky objects need and nothing provides."""
    known = _secrets_and_configmaps(cluster)
    problems = []
    for workload in _objects(cluster, ",".join(WORKLOADS)):
        namespace = workload["metadata"]["namespace"]
        for kind, ref in sorted(_pod_refs(workload["spec"]["template"]["spec"])):
            if (kind, namespace, ref) not in known:
                problems.append(f"{_where(workload)} needs {kind} {ref}: none")
    for obj in _objects(cluster, ",".join(SLINKY_KINDS)):
        for path, kind, ref in key_refs(obj.get("spec")):
            if (kind, obj["metadata"]["namespace"], ref) not in known:
                problems.append(f"{_where(obj)} {path}: no {kind} {ref}")
    return problems


def _dangling_urls(cluster: Cluster) -> list[str]:
    """``http://<service>.<namespace>:<port>`` in ConfigMaps that no Service (or RestApi) serves."""
    ports = {
        (obj["metadata"]["namespace"], obj["metadata"]["name"]): {
            int(p["port"]) for p in obj["spec"].get("ports") or []
        }
        for obj in _objects(cluster, "services")
    }
    for obj in _objects(cluster, "restapis.slinky.slurm.net"):
        ports[(obj["metadata"]["namespace"], f"{obj['metadata']['name']}-restapi")] = {6820}
    problems = []
    for config in _objects(cluster, "configmaps"):
        for text in (config.get("data") or {}).values():
            for url in URL.finditer(text):
                target = (url["namespace"], url["service"])
                if int(url["port"]) not in ports.get(target, set()):
                    problems.append(
                        f"{_where(config)} points at {url[0]}: no Service {target[1]} with port "
                        f"{url['port']} in namespace {target[0]}"
                    )
    return problems


def _labeler_configmaps(cluster: Cluster) -> dict[str, set[str]]:
    """namespace -> the ConfigMaps gpu-topology-labeler Deployments there write (``--configmap=``)."""
    written: dict[str, set[str]] = {}
    for deployment in _objects(cluster, "deployments"):
        labels = deployment["metadata"].get("labels") or {}
        if labels.get("app.kubernetes.io/name") != "gpu-topology-labeler":
            continue
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            for arg in container.get("args") or []:
                if arg.startswith("--configmap="):
                    namespace = deployment["metadata"]["namespace"]
                    written.setdefault(namespace, set()).add(arg.removeprefix("--configmap="))
    return written


def _unmet_topology(cluster: Cluster) -> list[str]:
    """Controllers that do not read the topology a labeler in their namespace writes: a document
    that installs both must wire them (slurm-cluster's ``topology.configMapRef.name``)."""
    written = _labeler_configmaps(cluster)
    problems = []
    for controller in _objects(cluster, "controllers.slinky.slurm.net"):
        namespace = controller["metadata"]["namespace"]
        refs = {ref["name"] for ref in controller["spec"].get("configFileRefs") or []}
        problems += [
            f"{_where(controller)} does not read ConfigMap {name}, which the labeler in "
            f"{namespace} writes: set slurm-cluster's topology.configMapRef.name={name}"
            for name in sorted(written.get(namespace, set()) - refs)
        ]
    return problems


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_document_commands_run_as_written(
    own_cluster: Cluster, block: doc_commands.Block, tmp_path: Path
) -> None:
    cluster = own_cluster
    helm = _helm(cluster, tmp_path / "helm-home")
    env = _env(helm, cluster)
    workdir = doc_commands.workspace(tmp_path / "checkout", REPO_ROOT)
    ran = doc_commands.run(block, workdir, env)
    releases = _releases(helm)
    made = [f"{r['namespace']}/{r['name']}" for r in releases]
    print(f"{block.where}: ran in {ran.seconds:.1f}s; releases {', '.join(made) or 'none'}")
    assert [r for r in releases if r["status"] != "deployed"] == [], ran.output[-3000:]
    assert _missing_refs(cluster) + _dangling_urls(cluster) + _unmet_topology(cluster) == []
