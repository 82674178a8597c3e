"""``nox -s demo`` (``slinky_harness.apps.demo``): its report is checked against the live cluster.

The demo runs in-process (``main([...])``). With ``--keep`` the cluster stays up after the report,
so the releases, object counts, node annotations and Slurm lines it printed are compared with what
the API server and the fabric say; then the printed stop command must end every process. A failure
injected after the cluster started must leave no process behind and print the error once.

The real Slinky operator (built from its Go module with the control plane) always runs: the report
must say it ran, as the chart's ServiceAccount, and slurmctld must have loaded the slurm.conf of the
operator's ConfigMap (localised); no line may say NOT RUN. ``--no-operator`` takes the harness's
slurm.conf and says so.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import TYPE_CHECKING, Any

from slinky_harness.apps import demo
from slinky_harness.apps.demo import run as demo_run
from slinky_harness.apps.demo.operator import OPERATOR_SKIPPED
from slinky_harness.apps.demo.run import main
from slinky_harness.build import slinky, toolchain
from slinky_harness.build.controlplane import binaries_dir
from slinky_harness.core import processes
from slinky_harness.k8s import operator as slinky_operator
from slinky_topology import hostlist
from slinky_topology.sources import fabric_file

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


FABRIC = fabric_file.load_fabric("default")


def _kubectl_json(env: dict[str, str], *args: str) -> Any:
    proc = subprocess.run(
        [str(binaries_dir() / "kubectl"), *args, "-o", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(proc.stdout)


def _loaded_text(conf: str) -> str:
    """The caller's part of a slurm.conf composed by slinky_harness.slurm.conf (after its keys)."""
    head, sep, text = conf.partition("\n\n")
    assert sep and head.startswith("# slurm.conf composed by slinky_harness.slurm.conf"), conf
    return text


# --- no cluster needed ---------------------------------------------------------------------------


# --- the whole demo ------------------------------------------------------------------------------


def _report_kinds(report: str) -> dict[tuple[str, str], dict[str, int]]:
    """``  <release> (ns <namespace>, 1.2s): Kind n, Kind n`` lines of the report."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    for release, namespace, listing in re.findall(
        r"^  (\S+) \(ns (\S+), [\d.]+s\): (.+)$", report, re.M
    ):
        out[(release, namespace)] = {
            kind: int(n) for kind, n in (item.rsplit(" ", 1) for item in listing.split(", "))
        }
    return out


def _live_kind_count(env: dict[str, str], kind: str, release: str, namespace: str) -> int:
    """Live objects of ``kind`` that Helm made for ``release``. Objects the operator makes from a
    release's Controller copy its Helm annotations, but they carry an owner and Helm's do not."""
    kubectl = str(binaries_dir() / "kubectl")
    proc = subprocess.run(
        [kubectl, "get", kind, "--all-namespaces", "-o", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    items: list[dict[str, Any]] = json.loads(proc.stdout)["items"]
    return sum(
        1
        for i in items
        if (i["metadata"].get("annotations") or {}).get("meta.helm.sh/release-name") == release
        and i["metadata"]["annotations"].get("meta.helm.sh/release-namespace") == namespace
        and not i["metadata"].get("ownerReferences")
    )


def test_demo_report_matches_the_live_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    rc = main(["--keep", "--out", str(work)])
    out, err = capsys.readouterr()
    stop_line = re.search(r"^  stop: (.+)$", out, re.M)
    try:
        assert rc == 0, err + out
        assert stop_line, out
        kubeconfig = re.search(r"export KUBECONFIG=(\S+)", out)
        assert kubeconfig, out
        env = {
            "KUBECONFIG": kubeconfig.group(1),
            "KUBECACHEDIR": str(tmp_path / "kube-cache"),
            "PATH": "/usr/bin:/bin",
        }
        kubectl = [str(binaries_dir() / "kubectl")]

        # Releases and objects by kind, as the API server has them.
        helm = toolchain.ensure("helm")
        listed = subprocess.run(
            [str(helm), "list", "--all-namespaces", "-o", "json"],
            env={**env, "HELM_CONFIG_HOME": str(tmp_path / "helm")},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        releases = {(r["name"], r["namespace"]): r["status"] for r in json.loads(listed.stdout)}
        assert releases == {demo.OPERATOR: "deployed", demo.SLURM: "deployed"}
        kinds = _report_kinds(out)
        assert set(kinds) == set(releases), out
        for (release, namespace), counts in kinds.items():
            for kind, count in counts.items():
                live = _live_kind_count(env, kind, release, namespace)
                assert live == count, f"{release}: report says {kind} {count}, live {live}"
        assert kinds[demo.SLURM].get("NodeSet") == 1 and kinds[demo.SLURM].get("Controller") == 1

        # The nodes: the fabric's, annotated with the fabric's placement (the block topology is
        # called nvl in the fabric file and nvlink when read from labels).
        nodes = json.loads(
            subprocess.run(
                [*kubectl, "get", "nodes", "-o", "json"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            ).stdout
        )["items"]
        fabric_annotations = json.loads((work / "annotations.json").read_text())
        live_annotations = {
            n["metadata"]["name"]: n["metadata"]["annotations"][demo.SPEC_ANNOTATION] for n in nodes
        }
        assert live_annotations == {
            node: spec.replace("nvl:", "nvlink:") for node, spec in fabric_annotations.items()
        }

        # Slurm: every GPU node in both partitions, the fabric's blocks, a job in one rack.
        everything = hostlist.compress(n.name for n in FABRIC.nodes)
        assert re.search(
            rf"^ +gb200\* +up +infinite +{len(nodes)} +idle~ +{re.escape(everything)}$", out, re.M
        ), out
        racks: dict[str, list[str]] = {}
        for node in FABRIC.nodes:
            racks.setdefault(str(node.domain), []).append(node.name)
        for rack, members in racks.items():
            assert f"BlockName={rack} " in out and f"Nodes={hostlist.compress(members)}" in out
        job = re.search(r"partition gb200 \(topology nvlink\): (\S+) \(all in (\S+)\)", out)
        assert job, out
        landed = hostlist.expand(job.group(1))
        assert len(landed) == 18 and set(landed) == set(racks[job.group(2)])

        # Honesty: the operator line says whether it ran, and the slurm.conf is whose it says.
        conf = (work / "slurmctld" / "etc" / "slurm.conf").read_text()
        assert "NOT RUN" not in out, out
        _check_operator_ran(out, conf, env, work)
    finally:
        if stop_line:
            subprocess.run(stop_line.group(1), shell=True, check=False, timeout=120)
    assert sorted(processes.mentioning(work / "cluster", include_zombies=True)) == []
    assert sorted(processes.mentioning(work / "operator", include_zombies=True)) == []
    assert not (work / "cluster" / "kwok" / "clusters" / "slinky-demo").exists()


def _check_operator_ran(out: str, conf: str, env: dict[str, str], work: Path) -> None:
    """The operator line, checked against the live cluster and the operator's own log."""
    assert OPERATOR_SKIPPED not in out, out
    line = re.search(
        rf"^operator: RAN the Slinky slurm-operator {slinky.VERSION} manager, built from "
        r".+, as (\S+) \(the chart's ServiceAccount .*no RBAC denial or schema error.*"
        r"wrote ConfigMap (\S+)/(\S+) \(owner: the Controller\).*"
        r"its slurm.conf is the one slurmctld loads below$",
        out,
        re.M,
    )
    assert line, out
    # The identity is the ServiceAccount of the chart's operator Deployment.
    deployments = _kubectl_json(env, "get", "deployments", "-n", demo.OPERATOR[1])["items"]
    accounts = {
        f"system:serviceaccount:{d['metadata']['namespace']}:"
        f"{d['spec']['template']['spec']['serviceAccountName']}"
        for d in deployments
        if any(
            a.startswith("--controller-workers")
            for a in d["spec"]["template"]["spec"]["containers"][0].get("args", [])
        )
    }
    assert accounts == {line.group(1)}, (accounts, line.group(1))
    # slurmctld loaded exactly the operator's ConfigMap text, localised for the chroot.
    namespace, name = line.group(2), line.group(3)
    config_map = _kubectl_json(env, "get", "configmap", name, "-n", namespace)
    owners = {o["kind"] for o in config_map["metadata"].get("ownerReferences") or []}
    assert owners == {"Controller"}, config_map["metadata"]
    operator_conf = config_map["data"]["slurm.conf"]
    assert _loaded_text(conf) == slinky_operator.localize(operator_conf)
    assert "NOT by the Slinky operator" not in conf
    assert f"NodeSet={demo.NODESET} Feature={demo.NODESET}" in operator_conf.splitlines()
    assert re.search(rf"^PartitionName={demo.NODESET} Nodes={demo.NODESET} ", operator_conf, re.M)
    assert f"on the operator's slurm.conf from ConfigMap {namespace}/{name}" in out, out
    # Its log: no RBAC denial (the chart's RBAC is enough), and the manager has stopped.
    log = (work / "operator" / "manager.log").read_text()
    assert "Finished syncing Controller" in log
    assert "forbidden" not in log.lower()


def test_demo_without_operator_loads_the_harness_slurm_conf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    rc = main(["--no-operator", "--out", str(work)])
    out, err = capsys.readouterr()
    assert rc == 0, err + out
    assert OPERATOR_SKIPPED in out and "operator: RAN" not in out, out
    assert "on the harness's slurm.conf" in out, out
    assert not (work / "operator").exists()
    conf = (work / "slurmctld" / "etc" / "slurm.conf").read_text()
    assert "NOT by the Slinky operator" in conf
    assert f"NodeSet={demo.NODESET} Feature={demo.NODESET}" in conf.splitlines()
    job = re.search(r"partition gb200 \(topology nvlink\): (\S+) \(all in rack\d+\)", out)
    assert job and len(hostlist.expand(job.group(1))) == 18, out
    assert sorted(processes.mentioning(work / "cluster", include_zombies=True)) == []


def test_demo_fails_once_when_the_operator_cannot_be_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> Path:
        raise slinky.OperatorUnavailable("building slurm-operator v1.2.1 failed: injected")

    monkeypatch.setattr(slinky, "ensure_operator", broken)
    work = tmp_path / "work"
    assert main(["--out", str(work)]) == 1
    out, err = capsys.readouterr()
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors == ["error: operator: building slurm-operator v1.2.1 failed: injected"], err
    assert "Slinky suite demo" not in out
    assert not (work / "cluster").exists()


def test_demo_cleans_up_after_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[Path] = []

    def broken(cluster: Any, annotations: dict[str, str]) -> None:
        started.append(cluster.kubeconfig)
        raise demo.DemoError("injected failure after the installs began")

    monkeypatch.setattr(demo_run, "annotate", broken)
    work = tmp_path / "work"
    assert main(["--out", str(work), "--no-slurm"]) == 1
    out, err = capsys.readouterr()
    assert started, "the failure was injected before the cluster ran"
    assert err.count("error: injected failure after the installs began") == 1, err
    assert "Slinky suite demo" not in out
    assert sorted(processes.mentioning(work / "cluster", include_zombies=True)) == []
    assert sorted(processes.mentioning(work / "operator", include_zombies=True)) == []
    assert not (work / "cluster" / "kwok" / "clusters" / "slinky-demo").exists()
