"""The gpu-topology-labeler on 1,010 fake nodes (1,008 GB200 trays in 56 NVL72 racks), under the
chart's ServiceAccount, against a real kube-apiserver; its output loaded into a real slurmctld
26.05; slurm-cluster installed on top of its ConfigMap.

One scenario in order, on one control plane of its own (``labeler_cluster_support``): the first
pass, Slurm's verdict on every annotation, an idle second pass, then two long-running replicas
that see nodes come, go and move, bad input, a leader change, and a slurm-cluster release that
references the labeler's ConfigMap. Writes are read from the API server's audit log, by identity
and by token.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.cluster import charts_support
from tests.cluster import labeler_cluster_support as support
from tests.cluster.labeler_cluster_support import (
    CLIQUE,
    CONFIGMAP,
    CORE,
    LEAF,
    NAMESPACE,
    OWNED_PREFIX,
    SPEC,
    SPINE,
    LabelerLab,
    Replica,
    expected_block,
)

from slinky_harness import labeler_bench as lb
from slinky_harness.controlplane import wait_until as wait_for
from slinky_harness.slurm import ensure_chroot, parse_records, slurmctld
from slinky_harness.slurm_topo import read_blocks, read_tree

if TYPE_CHECKING:
    from collections.abc import Iterator

    from slinky_harness.slurm import SlurmCtld

OWNED_LABEL = {
    LEAF: f"{OWNED_PREFIX}leaf",
    SPINE: f"{OWNED_PREFIX}spine",
    CORE: f"{OWNED_PREFIX}core",
}
DOMAIN = f"{OWNED_PREFIX}nvlink-domain"
PARTITION = f"{OWNED_PREFIX}nvlink-partition"
ERRORS = "slinky_topology_labeler_errors_total"
PASSES = "slinky_topology_labeler_passes_total"
SLURM_CONF = "MaxNodeCount=4096\nPartitionName=all Nodes=ALL Default=YES\n"


@pytest.fixture(scope="module")
def lab(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[LabelerLab]:
    with support.labeler_lab(tmp_path_factory.mktemp("labeler-lab")) as running:
        yield running
        reporter = pytestconfig.pluginmanager.get_plugin("terminalreporter")
        capture = pytestconfig.pluginmanager.get_plugin("capturemanager")
        if reporter is not None and capture is not None:
            with capture.global_and_fixture_disabled():
                reporter.write_line(f"\nlabeler cluster tests: {support.env_summary(running)}")


@pytest.fixture(scope="module")
def gpu(lab: LabelerLab) -> dict[str, dict[str, str]]:
    """Fleet labels of every GPU node, by name."""
    return {
        str(n["metadata"]["name"]): dict(n["metadata"]["labels"])
        for n in support.gpu_nodes(lab.fleet)
    }


@pytest.fixture(scope="module")
def ctld(lab: LabelerLab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCtld]:
    """slurmctld 26.05 on the topology.yaml the labeler published (after the first pass)."""
    text = lab.configmap()["data"]["topology.yaml"]
    files = {"slurm.conf": SLURM_CONF, "topology.yaml": text}
    workdir = tmp_path_factory.mktemp("labeler-slurmctld")
    with slurmctld(files, root=ensure_chroot(), workdir=workdir) as running:
        yield running


def _annotations(lab: LabelerLab) -> dict[str, str]:
    return {
        name: str((node["metadata"].get("annotations") or {}).get(SPEC, ""))
        for name, node in lab.nodes().items()
    }


def _owned(node: dict[str, Any]) -> dict[str, str]:
    meta = node["metadata"]
    keys = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
    return {k: v for k, v in keys.items() if k.startswith(OWNED_PREFIX)}


def _summary(writes: list[lb.AuditWrite]) -> list[tuple[str, str, str]]:
    return sorted((w.resource, w.verb, w.name) for w in writes)


def _apply_in_slurm(ctld: SlurmCtld, specs: dict[str, str]) -> None:
    """``scontrol update NodeName=... Topology=<annotation>`` for each node; all must pass."""
    code, err = support.scontrol_batch(
        ctld, [f"update NodeName={n} Topology={s}" for n, s in sorted(specs.items())]
    )
    assert code == 0 and not err.strip(), f"slurmctld refused an annotation: {err[:2000]}"
    shown = {
        r["NodeName"]: r.get("Topology", "")
        for r in parse_records(ctld.scontrol("show", "node", "-o"))
    }
    assert {n: shown.get(n) for n in specs} == specs


# --- identity -------------------------------------------------------------------------------------


def test_the_token_has_the_charts_rights_and_no_more(lab: LabelerLab) -> None:
    kubeconfig, _ = lab.kubeconfig("probe")
    lease = next(a.split("=", 1)[1] for a in lab.args if a.startswith("--lease-name="))

    def can(*args: str) -> bool:
        proc = charts_support.kubectl(
            lab.cluster, f"--kubeconfig={kubeconfig}", "auth", "can-i", *args
        )
        return proc.stdout.strip() == "yes"

    ns = ("-n", NAMESPACE)
    allowed = [
        ("list", "nodes"),
        ("watch", "nodes"),
        ("patch", "nodes"),
        ("get", f"configmaps/{CONFIGMAP}", *ns),
        ("update", f"configmaps/{CONFIGMAP}", *ns),
        ("create", "configmaps", *ns),
        ("create", "events", *ns),
        ("update", f"leases.coordination.k8s.io/{lease}", *ns),
    ]
    refused = [
        ("delete", "nodes"),
        ("patch", "nodes", "--subresource=status"),
        ("update", "configmaps/someone-elses", *ns),
        ("list", "configmaps", *ns),
        ("get", "secrets", *ns),
        ("create", "configmaps", "-n", "default"),
        ("update", "leases.coordination.k8s.io/another-lease", *ns),
    ]
    assert [a for a in allowed if not can(*a)] == []
    assert [r for r in refused if can(*r)] == []


# --- first pass and Slurm -------------------------------------------------------------------------


def test_first_pass_labels_every_gpu_node_and_publishes_the_configmap(
    lab: LabelerLab, gpu: dict[str, dict[str, str]]
) -> None:
    assert lab.writes() == []
    run = lab.run_once()
    lab.timings["first pass (1,008 writes)"] = run.seconds
    writes = lab.settled_writes()
    assert [w for w in writes if not w.ok] == []
    node_writes = [w for w in writes if w.resource == "nodes"]
    assert sorted(w.name for w in node_writes) == sorted(gpu), "one patch per GPU node, no other"
    assert {(w.verb, w.subresource) for w in node_writes} == {("patch", "")}
    assert _summary([w for w in writes if w.resource != "nodes"]) == [
        ("configmaps", "create", CONFIGMAP)
    ]
    assert run.last("pass done")["writes"] == len(writes)
    lease = next(a.split("=", 1)[1] for a in lab.args if a.startswith("--lease-name="))
    # --once with the chart's --lease-name takes the Lease for the pass and gives it back
    assert _summary(lab.lease_writes()) == [
        ("leases", "create", lease),
        ("leases", "update", lease),
    ]

    nodes = lab.nodes()
    for name, labels in gpu.items():
        owned = _owned(nodes[name])
        assert owned.get(SPEC), name
        for fleet_key, owned_key in OWNED_LABEL.items():
            assert owned[owned_key] == labels[fleet_key], (name, owned_key)
        assert owned[DOMAIN] == expected_block(labels)
        assert owned[PARTITION] == labels[CLIQUE].rpartition(".")[2]
    for name in set(nodes) - set(gpu):
        assert _owned(nodes[name]) == {}, f"{name} is in no fabric and gets no keys"

    cm = lab.configmap()
    assert cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpu-topology-labeler"
    topologies = yaml.safe_load(cm["data"]["topology.yaml"])
    assert [t["topology"] for t in topologies] == ["fabric", "nvlink"]


def test_slurmctld_accepts_every_annotation_and_places_nodes_by_their_labels(
    lab: LabelerLab, gpu: dict[str, dict[str, str]], ctld: SlurmCtld
) -> None:
    assert ctld.info.slurm_version.startswith("26.05"), ctld.info.slurm_version
    specs = {n: s for n, s in _annotations(lab).items() if n in gpu}
    assert len(specs) == len(gpu) == 1008
    started = time.monotonic()
    code, err = support.scontrol_batch(
        ctld, [f"create NodeName={n} CPUs=1 State=CLOUD" for n in sorted(specs)]
    )
    assert code == 0, err[:2000]
    _apply_in_slurm(ctld, specs)
    lab.timings["slurmctld create + update 1,008 nodes"] = time.monotonic() - started

    # Slurm's own view against the fleet's labels (not against the labeler's output)
    switches = read_tree(ctld.show_topology("fabric"))
    blocks, _ = read_blocks(ctld.show_topology("nvlink"))
    racks: dict[str, set[str]] = defaultdict(set)
    for name, labels in gpu.items():
        for key in (LEAF, SPINE, CORE):
            assert name in switches[labels[key]].nodes, (name, key)
        racks[expected_block(labels)].add(name)
    assert len(racks) == 56
    for block, trays in racks.items():
        assert blocks[block] == trays, f"NVL72 rack {block} is one block of its 18 trays"
    leaves = {s for s, v in switches.items() if not v.switches}
    assert {labels[LEAF] for labels in gpu.values()} == leaves


def test_second_pass_writes_nothing(lab: LabelerLab) -> None:
    before = lab.all_writes()
    version = lab.configmap()["metadata"]["resourceVersion"]
    run = lab.run_once()
    lab.timings["second pass"] = run.seconds
    lab.settled_writes(quiet=1.0)
    new = lab.all_writes()[len(before) :]
    # nothing but taking the (released) Lease for the --once pass and giving it back
    assert [(w.resource, w.verb, w.ok) for w in new] == [("leases", "update", True)] * 2
    assert run.last("pass done")["planned"] == 0
    assert lab.configmap()["metadata"]["resourceVersion"] == version


# --- two replicas, watching -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def replicas(lab: LabelerLab) -> tuple[Replica, Replica]:
    """Two long-running replicas; (leader, follower) once the leader has finished a pass."""
    started = [lab.start_replica("replica-a"), lab.start_replica("replica-b")]
    holder = wait_for(lab.lease_holder, 60, "a replica to take the Lease")
    (leader,) = [r for r in started if r.identity == holder]
    (follower,) = [r for r in started if r is not leader]
    wait_for(lambda: leader.sample(PASSES, result="ok") >= 1, 60, "the leader's first pass")
    return leader, follower


def _moved(lab: LabelerLab, node: str, leaf: str) -> bool:
    spec = _annotations(lab)[node]
    return spec.split(",")[0].endswith(f":{leaf}")


def test_added_and_removed_nodes_are_the_only_writes(
    lab: LabelerLab, replicas: tuple[Replica, Replica]
) -> None:
    leader, _ = replicas
    before = lab.settled_writes()
    # rack su4-r14 arrives (a new NVL72 domain under su4's spine), rack su3-r13 is removed,
    # and one tray of su1-r05 loses its fabric labels (it leaves the fabric)
    new_rack = []
    for manifest in lab.fleet.nodes():
        if manifest["metadata"]["name"].startswith("gb-su4-r13-"):
            meta = manifest["metadata"]
            meta["name"] = meta["name"].replace("-r13-", "-r14-")
            meta["labels"]["kubernetes.io/hostname"] = meta["name"]
            meta["labels"][LEAF] = "su4-leaf14"
            meta["labels"][CLIQUE] = meta["labels"][CLIQUE].replace(
                "000000000013.", "000000000014."
            )
            manifest["status"]["addresses"] = [{"type": "Hostname", "address": meta["name"]}]
            new_rack.append(manifest)
    assert len(new_rack) == 18
    added = {str(n["metadata"]["name"]) for n in new_rack}
    removed = [f"gb-su3-r13-t{i:02d}" for i in range(18)]
    leaving = "gb-su1-r05-t00"
    lb.create_nodes(lab.api_client, new_rack)
    for name in removed:
        lab.core.delete_node(name)
    lab.patch_labels(leaving, {LEAF: None, SPINE: None, CORE: None, CLIQUE: None})

    def done() -> bool:
        nodes = lab.nodes()
        return (
            all(_owned(nodes[n]).get(SPEC) for n in added)
            and not _owned(nodes[leaving])
            and not set(removed) & set(nodes)
        )

    wait_for(done, 60, "the new rack annotated and the leaving tray cleared")
    new = lab.settled_writes()[len(before) :]
    assert [w for w in new if not w.ok] == []
    assert sorted(w.name for w in new if w.resource == "nodes") == sorted({*added, leaving})
    # the topology changed (a domain and a leaf came, a domain went): the ConfigMap is replaced,
    # once per pass that saw a change (the changes may reach the watch in more than one batch)
    others = {(w.resource, w.verb, w.name) for w in new if w.resource != "nodes"}
    assert others == {("configmaps", "update", CONFIGMAP)}
    assert {w.credential for w in new} == {leader.credential}
    text = lab.configmap()["data"]["topology.yaml"]
    assert "c0ffee04-0000-4000-8000-000000000014" in text and "su4-leaf14" in text


def test_a_tray_moved_to_another_rack_is_the_only_write(
    lab: LabelerLab, replicas: tuple[Replica, Replica], ctld: SlurmCtld
) -> None:
    """After the previous test su1-r05 holds 17 trays: one tray of su1-r06 moves there (new leaf
    and GFD clique). Exactly that node is patched; the topology file stays as it is."""
    leader, _ = replicas
    node = "gb-su1-r06-t00"
    target = dict(lab.nodes()["gb-su1-r05-t01"]["metadata"]["labels"])
    before = lab.settled_writes()
    version = lab.configmap()["metadata"]["resourceVersion"]
    lab.patch_labels(node, {LEAF: target[LEAF], CLIQUE: target[CLIQUE]})
    wait_for(lambda: _moved(lab, node, "su1-leaf05"), 60, f"{node} to move to su1-leaf05")
    new = lab.settled_writes()[len(before) :]
    assert _summary(new) == [("nodes", "patch", node)]
    assert {w.credential for w in new} == {leader.credential}
    assert lab.configmap()["metadata"]["resourceVersion"] == version

    spec = _annotations(lab)[node]
    _apply_in_slurm(ctld, {node: spec})
    switches = read_tree(ctld.show_topology("fabric"))
    blocks, _ = read_blocks(ctld.show_topology("nvlink"))
    assert node in switches["su1-leaf05"].nodes and node not in switches["su1-leaf06"].nodes
    assert node in blocks[expected_block(target)]
    assert node not in blocks["c0ffee01-0000-4000-8000-000000000006"]


def test_bad_input_keeps_the_last_good_topology(
    lab: LabelerLab, replicas: tuple[Replica, Replica]
) -> None:
    leader, _ = replicas
    node = "gb-su1-r00-t00"
    good = lab.configmap()
    before = lab.settled_writes()
    errors = leader.sample(ERRORS, kind="validation")
    failed = leader.sample(PASSES, result="error")
    annotations = _annotations(lab)
    # a tray wired to the spine's label: its "leaf" would be a switch with child switches
    lab.patch_labels(node, {LEAF: "su1-spine", SPINE: "core", CORE: None})
    wait_for(lambda: leader.sample(ERRORS, kind="validation") > errors, 60, "a validation error")
    new = lab.settled_writes()[len(before) :]
    assert [(w.resource, w.verb, w.ok) for w in new] == [("events", "create", True)]
    assert leader.sample(PASSES, result="error") > failed
    assert lab.configmap()["data"] == good["data"]
    assert lab.configmap()["metadata"]["resourceVersion"] == good["metadata"]["resourceVersion"]
    assert _annotations(lab) == annotations, "no node was touched"
    events = [
        e
        for e in lab.events()
        if e["involvedObject"].get("name") == CONFIGMAP and e.get("reason") == "TopologyInvalid"
    ]
    assert events and events[-1]["type"] == "Warning"
    assert node in events[-1]["message"] and "last good topology is kept" in events[-1]["message"]

    # the fix brings the next pass back to ok, with nothing to write
    ok = leader.sample(PASSES, result="ok")
    mark = len(lab.settled_writes())
    lab.patch_labels(node, {LEAF: "su1-leaf00", SPINE: "su1-spine", CORE: "core"})
    wait_for(lambda: leader.sample(PASSES, result="ok") > ok, 60, "a good pass after the fix")
    assert lab.settled_writes()[mark:] == []


def test_only_the_leader_writes_and_the_follower_takes_over(
    lab: LabelerLab, replicas: tuple[Replica, Replica]
) -> None:
    leader, follower = replicas
    ours = {leader.credential, follower.credential}
    by_replicas = [w for w in lab.settled_writes() if w.credential in ours]
    assert by_replicas and {w.credential for w in by_replicas} == {leader.credential}
    # the Lease: both may race to create it at start (the loser gets 409), only the leader
    # ever changes it
    renewals = [w for w in lab.lease_writes() if w.credential in ours and w.ok]
    assert renewals and {w.credential for w in renewals} == {leader.credential}
    assert follower.sample(PASSES, result="ok") == 0 == follower.sample(PASSES, result="error")
    assert (
        leader.sample("slinky_topology_labeler_leader"),
        follower.sample("slinky_topology_labeler_leader"),
    ) == (1, 0)

    assert leader.stop() == 0
    wait_for(lambda: lab.lease_holder() == follower.identity, 60, "the follower to take the Lease")
    before = lab.settled_writes()
    node, home = "gb-su1-r06-t00", lab.nodes()["gb-su1-r06-t01"]["metadata"]["labels"]
    lab.patch_labels(node, {LEAF: home[LEAF], CLIQUE: home[CLIQUE]})
    wait_for(lambda: _moved(lab, node, "su1-leaf06"), 60, f"{node} to move back to su1-r06")
    new = lab.settled_writes()[len(before) :]
    assert _summary(new) == [("nodes", "patch", node)]
    assert {w.credential for w in new} == {follower.credential}


# --- slurm-cluster on top -------------------------------------------------------------------------

SLURM_CLUSTER_VALUES: dict[str, Any] = {
    "topology": {"configMapRef": {"name": CONFIGMAP}},
    "nodesets": {"gb200": {"replicas": 4, "partition": {"enabled": True, "topology": "nvlink"}}},
    "partitions": {"all": {"nodesets": ["ALL"], "topology": "fabric"}},
    "tests": {"enabled": False},
}


def test_slurm_cluster_references_the_labelers_configmap_and_never_overwrites_it(
    lab: LabelerLab,
) -> None:
    charts_support.ensure_slinky_crds(lab.cluster)
    values = lab.workdir / "slurm-cluster-values.yaml"
    values.write_text(yaml.safe_dump(SLURM_CLUSTER_VALUES))
    chart = str(charts_support.CHARTS["slurm-cluster"].path)
    ours = lab.configmap()

    def refs(manifests: list[dict[str, Any]]) -> list[str]:
        (controller,) = [m for m in manifests if m["kind"] == "Controller"]
        return [r["name"] for r in controller["spec"].get("configFileRefs") or []]

    rendered = charts_support.render(lab.helm, "slurm-cluster", [values], "sc", NAMESPACE)
    assert CONFIGMAP in refs(rendered)
    assert not [
        m for m in rendered if m["kind"] == "ConfigMap" and m["metadata"]["name"] == CONFIGMAP
    ]

    lab.helm.run("install", "sc", chart, "-f", str(values), "--timeout=60s", namespace=NAMESPACE)
    installed = lab.cluster.kubectl_json("get", "controllers.slinky.slurm.net", "-n", NAMESPACE)
    assert refs(installed["items"]) == refs(rendered)
    lab.helm.run(
        "upgrade", "sc", chart, "-f", str(values), "--set", "nodesets.gb200.replicas=6",
        "--timeout=60s", namespace=NAMESPACE,
    )  # fmt: skip
    manifest = yaml.safe_load_all(lab.helm.run("get", "manifest", "sc", namespace=NAMESPACE).stdout)
    kinds = {(d["kind"], d["metadata"]["name"]) for d in manifest if d}
    assert "Controller" in {k for k, _ in kinds}
    assert ("ConfigMap", CONFIGMAP) not in kinds

    after = lab.configmap()
    assert after["metadata"]["resourceVersion"] == ours["metadata"]["resourceVersion"]
    assert after["data"] == ours["data"]
    assert not any(
        k.startswith("meta.helm.sh/") for k in after["metadata"].get("annotations") or {}
    )
    # and the labeler still owns it: a pass finds nothing to change
    lab.stop_replicas()  # the --once pass below needs the Lease
    mark = len(lab.settled_writes())
    assert lab.run_once().last("pass done")["planned"] == 0
    assert lab.settled_writes(quiet=1.0)[mark:] == []
