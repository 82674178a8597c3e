"""The gpu-topology-labeler on 1,010 fake nodes (1,008 GB200 trays in 56 NVL72 racks), under the
chart's ServiceAccount, against a real kube-apiserver; its output loaded into a real slurmctld
26.05; slurm-cluster installed on top of its ConfigMap.

One scenario in order, on one control plane of its own (``labeler_cluster_support``): the first
pass, Slurm's verdict on every annotation, an idle second pass, then two long-running replicas
that see nodes come, go and move, bad input, a leader change, and a slurm-cluster release that
references the labeler's ConfigMap. Then what goes wrong: a stalled API server (a proxy that stops
forwarding) against ``--once`` and ``generate --from-cluster``, a leader stalled mid-pass that
loses its Lease, SIGTERM in the middle of a long pass, the topology ConfigMap deleted by hand.
Writes are read from the API server's audit log, by identity and by token.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.cluster import charts_support
from tests.cluster import labeler_cluster_support as support
from tests.cluster.labeler_cluster_support import (
    CATCH_ALL_SPEC,
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

from slinky_harness.build.slurm_chroot import ensure_chroot
from slinky_harness.core import ports
from slinky_harness.core.polling import wait_for
from slinky_harness.k8s import audit, labeler
from slinky_harness.k8s.fleet import create_nodes
from slinky_harness.slurm.conf import parse_records
from slinky_harness.slurm.ctld import slurmctld
from slinky_harness.slurm.topology import read_blocks, read_tree

if TYPE_CHECKING:
    from collections.abc import Iterator

    from slinky_harness.slurm.ctld import SlurmCtld

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


def _summary(writes: list[audit.AuditWrite]) -> list[tuple[str, str, str]]:
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
        ("list", f"configmaps/{CONFIGMAP}", *ns),  # its own ConfigMap, watched by name
        ("watch", f"configmaps/{CONFIGMAP}", *ns),
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
        ("watch", "configmaps", *ns),
        ("watch", "configmaps/someone-elses", *ns),
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
    leafless = sorted(set(lab.nodes()) - set(gpu))
    assert leafless, "the fleet has nodes without switch labels (its CPU service nodes)"
    assert sorted(w.name for w in node_writes) == sorted([*gpu, *leafless]), (
        "one patch per node: GPU nodes under their switches, the rest under the catch-all"
    )
    assert {(w.verb, w.subresource) for w in node_writes} == {("patch", "")}
    assert _summary([w for w in writes if w.resource != "nodes"]) == [
        ("configmaps", "create", CONFIGMAP)
    ]
    assert run.last("pass done")["writes"] == len(writes)
    lease = next(a.split("=", 1)[1] for a in lab.args if a.startswith("--lease-name="))
    # --once with the chart's --lease-name takes the Lease for the pass, renews it while the
    # pass lasts (every retry period) and gives it back
    first, *updates = _summary(lab.lease_writes())
    assert first == ("leases", "create", lease)
    assert updates and set(updates) == {("leases", "update", lease)}

    nodes = lab.nodes()
    for name, labels in gpu.items():
        owned = _owned(nodes[name])
        assert owned.get(SPEC), name
        for fleet_key, owned_key in OWNED_LABEL.items():
            assert owned[owned_key] == labels[fleet_key], (name, owned_key)
        assert owned[DOMAIN] == expected_block(labels)
        assert owned[PARTITION] == labels[CLIQUE].rpartition(".")[2]
    for name in set(nodes) - set(gpu):
        assert _owned(nodes[name]) == {SPEC: CATCH_ALL_SPEC}, f"{name} has no leaf switch"

    cm = lab.configmap()
    assert cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpu-topology-labeler"
    topologies = yaml.safe_load(cm["data"]["topology.yaml"])
    assert [t["topology"] for t in topologies] == ["fabric", "nvlink"]


def test_slurmctld_accepts_every_annotation_and_places_nodes_by_their_labels(
    lab: LabelerLab, gpu: dict[str, dict[str, str]], ctld: SlurmCtld
) -> None:
    assert ctld.info.slurm_version.startswith("26.05"), ctld.info.slurm_version
    specs = {n: s for n, s in _annotations(lab).items() if s}
    leafless = set(specs) - set(gpu)
    assert set(gpu) <= set(specs) and len(gpu) == 1008 and leafless
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
    assert {labels[LEAF] for labels in gpu.values()} | {"no-topology"} == leaves
    assert leafless <= switches["no-topology"].nodes, "nodes without a leaf stay in the tree"


def test_second_pass_writes_nothing(lab: LabelerLab) -> None:
    before = lab.all_writes()
    version = lab.configmap()["metadata"]["resourceVersion"]
    run = lab.run_once()
    lab.timings["second pass"] = run.seconds
    lab.settled_writes(quiet=1.0)
    new = lab.all_writes()[len(before) :]
    # nothing but taking the (released) Lease for the --once pass (renewing it, if the pass
    # outlasts a retry period) and giving it back
    assert len(new) >= 2
    assert {(w.resource, w.verb, w.ok) for w in new} == {("leases", "update", True)}
    assert run.last("pass done")["planned"] == 0
    assert lab.configmap()["metadata"]["resourceVersion"] == version


# --- two replicas, watching -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def replicas(lab: LabelerLab) -> tuple[Replica, Replica]:
    """Two long-running replicas; (leader, follower) once the leader has finished a pass."""
    started = [lab.start_replica("replica-a"), lab.start_replica("replica-b")]
    holder = wait_for(lab.lease_holder, timeout=60, what="a replica to take the Lease")
    (leader,) = [r for r in started if r.identity == holder]
    (follower,) = [r for r in started if r is not leader]
    wait_for(
        lambda: leader.sample(PASSES, result="ok") >= 1, timeout=60, what="the leader's first pass"
    )
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
    # and one tray of su1-r05 loses its fabric labels (it moves under the catch-all switch)
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
    create_nodes(lab.api_client, new_rack)
    for name in removed:
        lab.core.delete_node(name)
    lab.patch_labels(leaving, {LEAF: None, SPINE: None, CORE: None, CLIQUE: None})

    def done() -> bool:
        nodes = lab.nodes()
        return (
            all(_owned(nodes[n]).get(SPEC) for n in added)
            and _owned(nodes[leaving]) == {SPEC: CATCH_ALL_SPEC}
            and not set(removed) & set(nodes)
        )

    wait_for(
        done, timeout=60, what="the new rack annotated and the leaving tray under the catch-all"
    )
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
    wait_for(
        lambda: _moved(lab, node, "su1-leaf05"), timeout=60, what=f"{node} to move to su1-leaf05"
    )
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
    wait_for(
        lambda: leader.sample(ERRORS, kind="validation") > errors,
        timeout=60,
        what="a validation error",
    )
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
    wait_for(
        lambda: leader.sample(PASSES, result="ok") > ok,
        timeout=60,
        what="a good pass after the fix",
    )
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
    wait_for(
        lambda: lab.lease_holder() == follower.identity,
        timeout=60,
        what="the follower to take the Lease",
    )
    before = lab.settled_writes()
    node, home = "gb-su1-r06-t00", lab.nodes()["gb-su1-r06-t01"]["metadata"]["labels"]
    lab.patch_labels(node, {LEAF: home[LEAF], CLIQUE: home[CLIQUE]})
    wait_for(
        lambda: _moved(lab, node, "su1-leaf06"), timeout=60, what=f"{node} to move back to su1-r06"
    )
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
    # Offline (no cluster to look up) the chart renders its placeholder for the ConfigMap, only
    # ever as a pre-install/pre-upgrade hook; a live install or upgrade skips it while the
    # ConfigMap exists (below: the labeler's object is untouched).
    placeholders = [
        m for m in rendered if m["kind"] == "ConfigMap" and m["metadata"]["name"] == CONFIGMAP
    ]
    for placeholder in placeholders:
        hook = placeholder["metadata"]["annotations"]["helm.sh/hook"]
        assert set(hook.split(",")) == {"pre-install", "pre-upgrade"}, placeholder["metadata"]

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


# --- a stalled API server, a lost Lease, SIGTERM, a deleted ConfigMap ----------------------------

GENERATE = "import sys; from slinky_topology.cli import main; sys.exit(main(sys.argv[1:]))"
SLOW = ("--qps=2", "--burst=1", "--write-workers=1")
"""A long pass: two node patches a second, one at a time (after FAST, so they win)."""


def _annotated(lab: LabelerLab, count: int) -> list[str]:
    """``count`` Nodes that carry the labeler's annotation now (by name)."""
    return [name for name, spec in sorted(_annotations(lab).items()) if spec][:count]


def _by(
    writes: list[audit.AuditWrite], replica: Replica, resource: str = ""
) -> list[audit.AuditWrite]:
    """The writes of ``replica`` (its token), of ``resource`` when given."""
    return [
        w
        for w in writes
        if w.credential == replica.credential and (not resource or w.resource == resource)
    ]


def _lead(lab: LabelerLab, replica: Replica) -> None:
    wait_for(
        lambda: lab.lease_holder() == replica.identity,
        timeout=60,
        what=f"{replica.identity} to lead",
    )
    wait_for(lambda: replica.sample(PASSES, result="ok") >= 1, timeout=60, what="its first pass")


def _grace_period(lab: LabelerLab) -> int:
    deployment = next(d for d in lab.rendered if d["kind"] == "Deployment")
    return int(deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])


def test_once_and_generate_against_a_stalled_api_server_end_within_their_timeouts(
    lab: LabelerLab,
) -> None:
    """Before: both were still blocked after 45 s (no client timeout). The bounds are over what
    the same ``--once`` takes against a port that refuses at once (its start-up and imports, on
    this machine under this run's load): a 3 s timeout ends it within 20 s more."""
    lab.stop_replicas()
    closed = ports.allocate_one()
    try:
        refused_config, _ = lab.kubeconfig("refused", port=closed)
        refused = labeler.run_labeler(
            lab.labeler_args(refused_config, "--once", "--metrics-port=0", "--request-timeout=3"),
            timeout=120,
        )
    finally:
        ports.release(closed)
    assert refused.returncode == 1, refused.describe()
    with lab.proxy() as proxy:
        proxy.stall()
        kubeconfig, _ = lab.kubeconfig("stalled", port=proxy.port)
        once = labeler.run_labeler(
            lab.labeler_args(kubeconfig, "--once", "--metrics-port=0", "--request-timeout=3"),
            timeout=120,
        )
        env = {**labeler.child_env(), "KUBECONFIG": str(kubeconfig)}
        env.pop("KUBERNETES_SERVICE_HOST", None)
        started = time.monotonic()
        generate = subprocess.run(
            [sys.executable, "-c", GENERATE, "generate", "--from-cluster"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        generate_seconds = time.monotonic() - started
        assert proxy.connections >= 2, "both went through the stalled proxy"
    lab.timings["--once, refused at once (start-up)"] = refused.seconds
    lab.timings["--once, stalled API server (3 s timeout)"] = once.seconds
    lab.timings["generate --from-cluster, stalled API server (default timeout)"] = generate_seconds
    assert once.returncode == 1, once.describe()
    assert "error: listing Nodes failed" in once.stderr and "timed out" in once.stderr
    assert once.seconds < refused.seconds + 20, "3 s of timeout over the start-up"
    assert generate.returncode == 1, generate.stderr
    assert "listing Nodes failed" in generate.stderr and "timed out" in generate.stderr
    assert 30 <= generate_seconds < refused.seconds + 60, "the 30 s default timeout"


def test_a_stalled_leader_loses_the_lease_and_never_writes_after_it(lab: LabelerLab) -> None:
    """Leader ``a`` reaches the API server through a proxy and is mid-pass (two patches a
    second) when the proxy stalls: its calls time out, it cannot renew, ``b`` takes the Lease
    once it expires and finishes the pass. Then the proxy forwards again: ``a`` retries
    nothing (before: its retries ignored leadership and wrote after ``b`` took over)."""
    lab.stop_replicas()
    nodes = _annotated(lab, 60)
    with lab.proxy() as proxy:
        a = lab.start_replica("stalled-a", *SLOW, "--request-timeout=3", via=proxy.port)
        _lead(lab, a)
        b = lab.start_replica("direct-b", "--request-timeout=3")
        mark = len(lab.all_writes())
        lab.patch_annotations(nodes, {SPEC: None})
        wait_for(
            lambda: len(_by(lab.all_writes()[mark:], a, "nodes")) >= 4,
            timeout=60,
            what="a in mid-pass",
        )
        proxy.stall()
        stalled = time.monotonic()
        # the Lease expires 15 s after a's last renewal; b's next round takes it
        wait_for(lambda: lab.lease_holder() == b.identity, timeout=180, what="b to take the Lease")
        lab.timings["Lease taken over from a stalled leader"] = time.monotonic() - stalled
        wait_for(
            lambda: all(_annotations(lab)[n] for n in nodes),
            timeout=120,
            what="b to finish the pass",
        )
        proxy.resume()
        # a reaches the API server again: several election rounds and retry periods
        wait_for(
            lambda: a.sample(PASSES, result="interrupted") >= 1, timeout=30, what="a's pass stopped"
        )
        time.sleep(8)
        writes = lab.all_writes()[mark:]
        a_logs = a.logs()
        lab.stop_replicas()
    takeover = next(
        i
        for i, w in enumerate(writes)
        if w.credential == b.credential and w.resource == "leases" and w.ok
    )
    assert _by(writes[takeover:], a) == [], "a wrote after b took the Lease"
    a_nodes = {w.name for w in _by(writes, a, "nodes") if w.ok}
    b_nodes = {w.name for w in _by(writes, b, "nodes") if w.ok}
    assert len(a_nodes) >= 4 and a_nodes | b_nodes == set(nodes)
    assert any(line.get("msg") == "pass stopped: not the leader" for line in a_logs)


def test_sigterm_ends_a_long_pass_within_the_grace_period(lab: LabelerLab) -> None:
    """A pass of 60 patches at two a second (30 s); SIGTERM after a few: the replica stops at
    its next write and releases the Lease well within the chart's grace period (before: the
    pass ran on to its end, whatever its length)."""
    lab.stop_replicas()
    grace = _grace_period(lab)
    nodes = _annotated(lab, 60)
    c = lab.start_replica("sigterm-c", *SLOW)
    _lead(lab, c)
    mark = len(lab.all_writes())
    lab.patch_annotations(nodes, {SPEC: None})
    wait_for(
        lambda: len(_by(lab.all_writes()[mark:], c, "nodes")) >= 3, timeout=60, what="c in mid-pass"
    )
    at_term = len(lab.all_writes())
    started = time.monotonic()
    c.proc.send_signal(signal.SIGTERM)
    code = c.proc.wait(timeout=grace)
    seconds = time.monotonic() - started
    lab.timings["SIGTERM to exit, mid-pass"] = seconds
    after = _by(lab.all_writes()[at_term:], c)
    assert code == 0, c.log.read_text()[-2000:]
    assert seconds < grace, f"{seconds:.1f}s after SIGTERM (grace period {grace}s)"
    assert len([w for w in after if w.resource == "nodes"]) <= 1, "at most the write in flight"
    # the release, after at most one renewal that was already due when the signal came (the
    # renewal loop runs beside the pass; seen once under load)
    lease_writes = [(w.resource, w.verb) for w in after if w.resource == "leases"]
    assert lease_writes in ([("leases", "update")], [("leases", "update")] * 2), lease_writes
    assert lab.lease_holder() == "", "the Lease released"
    assert len(_by(lab.all_writes()[mark:], c, "nodes")) < len(nodes)
    assert any(line.get("msg") == "pass stopped: shutting down" for line in c.logs())
    # the next leader finishes the job
    lab.run_once()
    assert all(_annotations(lab)[n] for n in nodes)


def _configmap_data(lab: LabelerLab) -> dict[str, str] | None:
    from kubernetes import client  # noqa: PLC0415

    try:
        return dict(lab.configmap().get("data") or {})
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def test_a_deleted_configmap_is_restored_within_seconds(lab: LabelerLab) -> None:
    """Before: it came back at the next resync (300 s), or at a pass that Node changes happened
    to run (kube-controller-manager labels the fake Nodes for a while, so the log must show
    that the ConfigMap watch saw the deletion)."""
    lab.stop_replicas()
    d = lab.start_replica("restore-d")
    _lead(lab, d)
    good = _configmap_data(lab)
    assert good
    mark = len(lab.all_writes())
    lab.core.delete_namespaced_config_map(CONFIGMAP, NAMESPACE)
    started = time.monotonic()
    # The bound is the point: the next resync is 300 s away, so only the watch restores it in 60 s.
    wait_for(lambda: _configmap_data(lab) == good, timeout=60, what="the ConfigMap restored")
    seconds = time.monotonic() - started
    lab.timings["deleted ConfigMap restored"] = seconds
    lab.settled_writes(quiet=1.0)
    new = lab.all_writes()[mark:]
    lab.stop_replicas()
    seen = [
        line
        for line in d.logs()
        if line.get("msg") == "configmap changed by someone else; restoring it"
    ]
    assert seen and seen[0]["deleted"] is True, "the ConfigMap watch saw the deletion"
    assert _summary([w for w in _by(new, d) if w.resource != "leases"]) == [
        ("configmaps", "create", CONFIGMAP)
    ], "the restore is its only write (besides renewing its Lease)"
