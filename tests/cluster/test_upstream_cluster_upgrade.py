"""An upstream Slinky cluster moves to our charts in place, with the real operator (issue 15,
item 5).

On a control plane of its own (the operator watches every namespace), upstream's v1.2.1 charts
(``SLINKY_UPSTREAM_CHARTS``) are installed as upstream's installation guide does:
``slurm-operator-crds``, then ``slurm-operator`` in ``slinky`` with its defaults, then ``slurm`` in
``slurm`` with the guide's flags (:data:`GUIDE`: the NodeSet ``slinky`` and the partition ``all``
of upstream's defaults). The real operator and its webhook (v1.2.1, built with the control plane)
run for that operator release as ``tests/cluster/test_operator.py`` runs them, and a real
slurmctld 26.05 loads the slurm.conf the operator wrote, with the cluster's key Secrets; it then
holds state: a dynamic node and a held job submitted without ``-p``.

Then both releases are upgraded to ours as MIGRATING.md says, with the same values and nothing
else (the operator's defaults: its CRDs stay with upstream's ``slurm-operator-crds`` release; the
cluster's :data:`GUIDE` flags), and the operator and webhook restart with our operator release's
arguments and ServiceAccount. What must hold:

- the Controller, the RestApi, the key Secrets and the operator's slurmctld StatefulSet keep their
  UIDs (patched, never deleted and recreated), and the key Secrets their data;
- the operator rewrites slurm.conf with the same ``ClusterName`` and logs no RBAC or schema error;
- the operator's slurm.conf holds the same partition line (upstream's ``partitions.all``);
- slurmctld restarted on the new slurm.conf with its saved state still has the node and the job,
  and a new job without ``-p`` goes to the default partition and is placed on the node
  (``sbatch --test-only``: the node has no slurmd here).
"""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING, Any

import pytest
from tests.cluster import charts_support as support

from slinky_harness import parity
from slinky_harness.build import slinky, toolchain
from slinky_harness.helm.client import Helm
from slinky_harness.k8s import operator as slinky_operator
from slinky_harness.k8s.cluster import Cluster
from slinky_harness.k8s.objects import wait_object
from slinky_harness.k8s.references import key_refs
from slinky_harness.slurm import ctld as slurm
from slinky_harness.slurm.conf import parse_records

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from slinky_harness.k8s.fleet import Fleet

pytestmark = pytest.mark.operator

OPERATOR_NS = "slinky"
CLUSTER_NS = "slurm"
# Before slurmrestd answers (never, here: no NodeSet needs it), the operator's Slurm calls fail.
EXPECTED_NOISE = ("Bad Gateway", "no such host", "connection refused", "context canceled")
NODESET = "slinky"
GUIDE = ("--set", f"nodesets.{NODESET}.enabled=true", "--set", "partitions.all.enabled=true")
"""The ``helm install`` flags of upstream's installation guide for its ``slurm`` chart, the same
for both charts: upstream's defaults hold no NodeSet, so no partition; the guide turns on the
NodeSet ``slinky`` and the partition ``all`` (every NodeSet, ``Default=YES``)."""
PARTITION_LINE = "PartitionName=all Nodes=ALL Default=YES MaxTime=UNLIMITED"


@pytest.fixture
def own_cluster(tmp_path_factory: pytest.TempPathFactory, fleet: Fleet) -> Iterator[Cluster]:
    slinky.ensure_operator()  # fails here, with the reason, if it cannot be built
    with Cluster.start(tmp_path_factory.mktemp("move"), fleet=fleet) as running:
        support.install_third_party_crds(running)
        yield running


@contextlib.contextmanager
def operator_for(
    cluster: Cluster, helm: Helm, release: str, workdir: Path
) -> Iterator[slinky_operator.Manager]:
    """The real operator and webhook, run as ``release`` (in :data:`OPERATOR_NS`) deploys them;
    on exit, fail on any RBAC or schema error either logged."""
    manifest = support.release_objects(helm, release, OPERATOR_NS)
    with (
        slinky_operator.run_webhook_for_release(cluster, manifest, workdir / "webhook") as hook,
        slinky_operator.run_for_release(cluster, manifest, workdir / "manager") as manager,
    ):
        yield manager
    for name, process in (("operator", manager), ("webhook", hook)):
        problems = process.problems(ignore=EXPECTED_NOISE)
        assert not problems, f"{name} ({release}) logged:\n" + "\n".join(problems[:20])


def _uids(cluster: Cluster, names: dict[str, list[str]]) -> dict[tuple[str, str], str]:
    found = {}
    for kind, objects in names.items():
        for name in objects:
            obj = cluster.kubectl_json("get", kind.lower(), name, "-n", CLUSTER_NS)
            found[(kind, name)] = str(obj["metadata"]["uid"])
    return found


def _cluster_name(slurm_conf: str) -> str:
    found = re.findall(r"^ClusterName=(\S+)", slurm_conf, re.M | re.I)
    assert found, "no ClusterName in the operator's slurm.conf"
    return str(found[-1])


def test_upstream_operator_and_cluster_upgrade_in_place_and_slurmctld_keeps_its_state(
    own_cluster: Cluster, tmp_path: Path
) -> None:
    cluster = own_cluster
    helm = Helm(toolchain.ensure("helm"), cluster, tmp_path / "helm")
    wait = ("--wait", "--timeout", "90s")
    helm.run("install", "slurm-operator-crds", str(parity.upstream_chart("slurm-operator-crds")))
    helm.run(
        "install", "slurm-operator", str(parity.upstream_chart("slurm-operator")),
        "-n", OPERATOR_NS, "--create-namespace", *wait,
    )  # fmt: skip
    with contextlib.ExitStack() as daemons:
        operators = daemons.enter_context(contextlib.ExitStack())
        operators.enter_context(operator_for(cluster, helm, "slurm-operator", tmp_path / "up"))
        support.install_past_webhook_race(
            helm, "slurm", str(parity.upstream_chart("slurm")),
            "-n", CLUSTER_NS, "--create-namespace", *GUIDE,
        )  # fmt: skip
        objects = support.release_objects(helm, "slurm", CLUSTER_NS)
        controller = next(d for d in objects if d["kind"] == "Controller")
        name, spec = controller["metadata"]["name"], controller["spec"]
        # The operator rewrites slurm.conf as its cache learns the NodeSet (test_operator.py).
        config = wait_object(
            cluster, "configmap", f"{name}-config", CLUSTER_NS, _has_partition,
            what=" with a partition",
        )  # fmt: skip
        wait_object(cluster, "statefulset", f"{name}-controller", CLUSTER_NS)
        before_conf = config["data"]["slurm.conf"]
        assert PARTITION_LINE in before_conf.splitlines(), before_conf
        secrets = sorted({name for _, kind, name in key_refs(spec) if kind == "Secret"})
        kept = {
            "Controller": [name],
            "RestApi": [d["metadata"]["name"] for d in objects if d["kind"] == "RestApi"],
            "Secret": secrets,
            "StatefulSet": [f"{name}-controller"],
        }
        before = _uids(cluster, kept)
        keys = {s: _secret_data(cluster, s) for s in secrets}
        files = slinky_operator.slurmctld_files(cluster, CLUSTER_NS, spec, before_conf)
        ctld = daemons.enter_context(slurm.slurmctld(files, workdir=tmp_path / "slurmctld"))
        ctld.create_node("moved-0", Features=NODESET)
        shown = ctld.scontrol("show", "partition", "-o")
        assert [p.get("PartitionName") for p in parse_records(shown)] == ["all"], shown
        job = ctld.submit("--hold", "--wrap", "true")  # no -p: the default partition
        assert ctld.job(job).get("Partition") == "all", ctld.job(job)

        # The move, as MIGRATING.md gives it: the operator first, then the cluster.
        operators.close()
        ours = support.CHARTS
        helm.run(
            "upgrade", "slurm-operator", str(ours["slurm-operator"].path), "-n", OPERATOR_NS,
            *wait,
        )  # fmt: skip
        operators.enter_context(operator_for(cluster, helm, "slurm-operator", tmp_path / "ours"))
        helm.run(
            "upgrade", "slurm", str(ours["slurm-cluster"].path), "-n", CLUSTER_NS, *GUIDE,
        )  # fmt: skip
        moved = support.release_objects(helm, "slurm", CLUSTER_NS)
        assert [d["metadata"]["name"] for d in moved if d["kind"] == "Controller"] == [name]
        assert _uids(cluster, kept) == before, "an object was deleted and recreated"
        assert {s: _secret_data(cluster, s) for s in secrets} == keys, "a key changed"
        new_spec = cluster.kubectl_json("get", "controller", name, "-n", CLUSTER_NS)["spec"]
        config = wait_object(
            cluster, "configmap", f"{name}-config", CLUSTER_NS, _has_partition,
            what=" with a partition",
        )  # fmt: skip
        after_conf = config["data"]["slurm.conf"]
        assert _cluster_name(after_conf) == _cluster_name(before_conf)
        assert PARTITION_LINE in after_conf.splitlines(), after_conf

        # The slurmctld pod restarts on the new slurm.conf and its volume's saved state.
        ctld.restart(slinky_operator.slurmctld_files(cluster, CLUSTER_NS, new_spec, after_conf))
        assert ctld.job(job).get("JobState") == "PENDING", "slurmctld forgot the held job"
        assert "moved-0" in ctld.sinfo("-h", "-N", "-o", "%N"), "slurmctld forgot the node"
        # A job without -p after the move: slurmctld finds the default partition and places it.
        placed = ctld.test_only()
        assert placed.ok, placed.text
        assert "in partition all" in placed.text, placed.text
        assert "moved-0" in placed.nodes, placed.text


def _has_partition(config: dict[str, Any]) -> bool:
    return "\nPartitionName=" in str((config.get("data") or {}).get("slurm.conf"))


def _secret_data(cluster: Cluster, name: str) -> dict[str, str]:
    return dict(cluster.kubectl_json("get", "secret", name, "-n", CLUSTER_NS)["data"])
