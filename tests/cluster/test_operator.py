"""The real Slinky slurm-operator v1.2.1 reconciles every slurm-cluster ``ci/`` scenario.

A control plane of its own (module scope; the operator watches every namespace, so it must not
see the other cluster-tier tests' releases) gets the slurm-operator chart; the operator's manager
then runs as a local process with the chart's own arguments, as the chart's ServiceAccount (a
TokenRequest token), so the chart's RBAC is what it is allowed. For each scenario:

- the operator writes the slurmctld StatefulSet and its ``slurm.conf`` ConfigMap, and its log
  shows no RBAC denial and no schema error;
- that ``slurm.conf`` plus the chart's config files and key Secrets are loaded by a real
  slurmctld 26.05 (the Debian sid chroot), with one dynamic node per NodeSet replica named and
  featured as the operator's pods register; ``sinfo`` must show exactly the partitions the values
  ask for, each holding the NodeSets it names, and ``scontrol show topology`` the values'
  topology.yaml.

Prolog and epilog scripts: for each ``Prolog=``/``Epilog=``/``PrologSlurmctld=``/
``EpilogSlurmctld=`` file of the operator's slurm.conf, the projected /etc/slurm of its slurmctld
StatefulSet holds the file from one ConfigMap, with the script the values gave for that directive;
values that would share a file are refused by the chart, naming both keys.

NodeSet pods: the operator asks slurmrestd before it creates them, so once slurmctld runs, a real
slurmrestd (same chroot) answers under the RestApi's Service name through
``slinky_harness.k8s.operator.ServiceProxy`` (``HTTP_PROXY`` of the operator process). The pods must
then land only on nodes matching the NodeSet's selector and GPU request (kwok runs them).
The umbrella with its defaults and with every ``values/`` profile goes through the same operator
and slurmctld in ``tests/cluster/test_conformance.py`` (the conformance command's live and slurm
steps); this module keeps the chart's own ``ci/`` scenarios and the checks the command does not
make. The waits and the placement check are the harness's (:mod:`slinky_harness.k8s.objects`,
:mod:`slinky_harness.k8s.placement`), shared with the command and the demo.

Marked ``operator``: ``nox -s cluster`` runs these only where the operator can be built (see
``slinky_harness.k8s.operator``); elsewhere it prints one line saying why.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import secrets as random_text
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.cluster import charts_support as support

from slinky_harness.build import slinky
from slinky_harness.core.polling import wait_for
from slinky_harness.helm import client as helm_client
from slinky_harness.helm.charts import load_yaml
from slinky_harness.helm.client import Helm
from slinky_harness.helm.values import merge
from slinky_harness.k8s import objects as k8s_objects
from slinky_harness.k8s import operator as slinky_operator
from slinky_harness.k8s import placement
from slinky_harness.k8s.cluster import Cluster
from slinky_harness.slurm import ctld as slurm
from slinky_harness.slurm import dbd as slurmdbd
from slinky_harness.slurm.dbd_conf import AccountingSpec
from slinky_harness.slurm.release import (
    create_hosts,
    expected_partition_topology,
    expected_partitions,
    nodeset_hosts,
    partition_topologies,
    partitions_of,
    topology_differences,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from slinky_harness.helm.charts import Scenario

pytestmark = pytest.mark.operator

FLEET = support.REPO / "tests" / "data" / "fleets" / "small-gpu.yaml"
OPERATOR_NS = "slinky"
SCENARIOS = [s for s in support.chart_scenarios() if s.chart == "slurm-cluster"]
CLUSTER_CHART = support.CHARTS["slurm-cluster"]


@pytest.fixture(scope="module")
def op_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    slinky.ensure_operator()  # fails here, with the reason, if it cannot be built
    with Cluster.start(tmp_path_factory.mktemp("operator-cluster"), fleet=FLEET) as running:
        running.apply(support.DATA / "prerequisites.yaml")
        support.install_third_party_crds(running)
        yield running


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[slurmdbd.MariaDB]:
    """One MariaDB for every accounting scenario of the module (each gets its own database)."""
    with slurmdbd.mariadb(workdir=tmp_path_factory.mktemp("mariadb")) as running:
        yield running


@pytest.fixture(scope="module")
def helm(op_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    from slinky_harness.build import toolchain  # noqa: PLC0415 - builds helm on first use

    return Helm(toolchain.ensure("helm"), op_cluster, tmp_path_factory.mktemp("helm"))


@pytest.fixture(scope="module")
def proxy() -> Iterator[slinky_operator.ServiceProxy]:
    with slinky_operator.ServiceProxy() as running:
        yield running


@pytest.fixture(scope="module")
def manager(
    op_cluster: Cluster,
    helm: Helm,
    proxy: slinky_operator.ServiceProxy,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[slinky_operator.Manager]:
    chart = support.CHARTS["slurm-operator"]
    files = support.values_files(
        next(s for s in support.chart_scenarios() if s.id == "slurm-operator:ci/default")
    )
    helm.run(
        "install", "op", str(chart.path), "-n", OPERATOR_NS, "--create-namespace",
        *support.values_args(files), "--wait", "--timeout", "90s",
    )  # fmt: skip
    manifest = support.release_objects(helm, "op", OPERATOR_NS)
    workdir = tmp_path_factory.mktemp("operator")
    webhook_dir = tmp_path_factory.mktemp("webhook")
    with (
        slinky_operator.run_webhook_for_release(op_cluster, manifest, webhook_dir) as webhook,
        slinky_operator.run_for_release(op_cluster, manifest, workdir, proxy=proxy) as running,
    ):
        yield running
    for name, process in (("operator", running), ("webhook", webhook)):
        problems = process.problems(ignore=slinky_operator.EXPECTED_LOG_NOISE)
        assert not problems, f"{name} log after all scenarios:\n" + "\n".join(problems[:20])
    validated = [r for r in webhook.records() if str(r.get("msg")).startswith("validate ")]
    assert validated, "the webhook server validated nothing: its configurations do not reach it"


def slurm_conf_value(text: str, key: str) -> str:
    """The value of ``key`` in a slurm.conf text (the last setting wins, as in Slurm)."""
    found = re.findall(rf"^{key}=(\S+)", text, re.M | re.I)
    assert found, f"no {key} in slurm.conf"
    return str(found[-1])


@contextlib.contextmanager
def accounting_daemon(  # noqa: PLR0917
    cluster: Cluster,
    database: slurmdbd.MariaDB,
    accounting: dict[str, Any],
    controller_spec: dict[str, Any],
    namespace: str,
    tmp_path: Path,
) -> Iterator[slurmdbd.Slurmdbd]:
    """The slurmdbd this controller's slurm.conf points at (:func:`slurmdbd.accounting_daemon`):
    for an operator-run Accounting, on the slurmdbd.conf the real operator wrote (Secret
    ``<accounting>-accounting``), which must carry the chart's storage settings and the password
    of the database Secret; for an external one, a stand-in. Either shares the cluster's slurm.key
    and jwt.key."""
    jwt_ref = controller_spec.get("jwtKeyRef") or controller_spec.get("jwtHs256KeyRef") or {}
    keys = {
        ref: slinky_operator.secret_value(cluster, namespace, sel["name"], sel["key"])
        for ref, sel in (("slurm", controller_spec["slurmKeyRef"]), ("jwt", jwt_ref))
    }
    conf = password = None
    if not accounting["spec"].get("external"):
        spec = AccountingSpec.from_object(accounting)
        secret = k8s_objects.wait_object(cluster, "secret", f"{spec.name}-accounting", namespace)
        conf = base64.b64decode(secret["data"]["slurmdbd.conf"]).decode()
        storage = spec.storage
        password = slinky_operator.secret_value(
            cluster, namespace, storage.password_secret, storage.password_key
        ).decode()
        problems = slurmdbd.conf_problems(conf, spec, password)
        assert not problems, f"the operator's slurmdbd.conf: {problems}"
    with slurmdbd.accounting_daemon(
        accounting, database=database, slurm_key=keys["slurm"], jwt_key=keys["jwt"],
        conf=conf, password=password, workdir=tmp_path / "slurmdbd",
    ) as running:  # fmt: skip
        yield running


def _merged(scenario: Scenario) -> dict[str, Any]:
    """The chart's values.yaml with the scenario's values merged over it (as Helm does)."""
    defaults: dict[str, Any] = load_yaml(CLUSTER_CHART.path / "values.yaml")
    return merge(defaults, scenario.values)


def create_user_references(cluster: Cluster, namespace: str, objects: list[dict[str, Any]]) -> None:
    """Create what the values name but the chart leaves to the user (its README says so):
    key Secrets of ``existingSecret``, the database password Secret, site script ConfigMaps.
    Secrets get 1024 random bytes under each ``*.key`` key and a random text password under any
    other key; ConfigMaps a no-op script."""
    secrets: dict[str, set[str]] = {}
    configmaps: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if (key.endswith("ScriptRefs") or key == "configFileRefs") and isinstance(
                    value, list
                ):
                    configmaps.update(str(ref["name"]) for ref in value)
                elif key.endswith("KeyRef") and key != "jwksKeyRef" and isinstance(value, dict):
                    secrets.setdefault(str(value["name"]), set()).add(str(value["key"]))
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for obj in objects:
        if obj["apiVersion"].startswith(support.SLINKY_GROUP):
            walk(obj.get("spec"))
    for name, keys in secrets.items():
        proc = support.kubectl(cluster, "get", "secret", name, "-n", namespace, "-o", "json")
        have = set(json.loads(proc.stdout).get("data", {})) if proc.returncode == 0 else set()
        missing = keys - have
        if not missing:
            continue
        # Key files are 1 KiB of random bytes; anything else (a database password) is text.
        data = {
            k: base64.b64encode(
                os.urandom(1024) if k.endswith(".key") else random_text.token_urlsafe(24).encode()
            ).decode()
            for k in missing
        }
        cluster.apply([{
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace}, "data": data,
        }])  # fmt: skip
    for name in sorted(configmaps):
        if support.kubectl(cluster, "get", "configmap", name, "-n", namespace).returncode != 0:
            cluster.apply([{
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace},
                "data": {f"{name}.sh": "#!/bin/sh\nexit 0\n"},
            }])  # fmt: skip


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_operator_reconciles_release_and_slurmctld_loads_its_config(  # noqa: PLR0917 - fixtures
    op_cluster: Cluster,
    helm: Helm,
    manager: slinky_operator.Manager,
    proxy: slinky_operator.ServiceProxy,
    database: slurmdbd.MariaDB,
    scenario: Scenario,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    namespace = re.sub(r"[^a-z0-9-]", "-", scenario.name.removeprefix("ci/"))
    files = support.values_files(scenario)

    def uninstall() -> None:
        # The next scenario needs the GPUs back: wait until the pods the operator made for this
        # release's NodeSets are gone too (garbage collection follows the NodeSets' deletion).
        helm.run("uninstall", "sc", "-n", namespace, "--wait", "--timeout", "60s", check=False)
        wait_for(
            lambda: not (op_cluster.kubectl_json("get", "pods", "-n", namespace)["items"]),
            timeout=120,
            what=f"the pods in {namespace} to be deleted",
            every=0.5,
            detail=lambda: op_cluster.kubectl_json("get", "pods", "-n", namespace)["items"],
        )

    request.addfinalizer(uninstall)
    support.install_past_webhook_race(
        helm, "sc", str(CLUSTER_CHART.path), "-n", namespace, "--create-namespace",
        *support.values_args(files),
    )  # fmt: skip
    objects = support.release_objects(helm, "sc", namespace)
    reconcile_and_load(op_cluster, proxy, database, objects, _merged(scenario), namespace, tmp_path)


def reconcile_and_load(  # noqa: PLR0917
    op_cluster: Cluster,
    proxy: slinky_operator.ServiceProxy,
    database: slurmdbd.MariaDB,
    objects: list[dict[str, Any]],
    values: dict[str, Any],
    namespace: str,
    tmp_path: Path,
) -> None:
    """The operator writes the Controller's slurm.conf ConfigMap (and its StatefulSet); slurmctld
    loads it with the chart's files and keys; partitions, their members and topologies are what
    ``values`` (the slurm-cluster values as Helm merged them) ask for; NodeSet pods are placed."""
    controller = next(d for d in objects if d["kind"] == "Controller")
    name = controller["metadata"]["name"]
    spec = controller["spec"]
    create_user_references(op_cluster, namespace, objects)

    if spec.get("external"):
        wanted: dict[str, set[str]] = {}
    else:
        wanted = expected_partitions(values)
    config = k8s_objects.wait_controller_config(
        op_cluster, name, namespace, partitions=wanted, external=bool(spec.get("external"))
    )
    slurm_conf = config["data"]["slurm.conf"]
    owners = {o["kind"] for o in config["metadata"].get("ownerReferences", [])}
    assert "Controller" in owners, config["metadata"]

    conf_files = slinky_operator.slurmctld_files(op_cluster, namespace, spec, slurm_conf)

    accounting = next((d for d in objects if d["kind"] == "Accounting"), None)
    if accounting is not None:
        assert "AccountingStorageType=accounting_storage/slurmdbd" in slurm_conf, slurm_conf
        db_service = f"{accounting['metadata']['name']}-accounting"  # the operator's ServiceKey
        assert f"AccountingStorageHost={db_service}\n" in slurm_conf, slurm_conf
        if accounting["spec"].get("external"):
            # Nothing in the operator creates that name for an external slurmdbd: the chart must.
            service = op_cluster.kubectl_json("get", "service", db_service, "-n", namespace)
            assert service["spec"]["externalName"] == accounting["spec"]["externalConfig"]["host"]
        enforce = (values.get("scheduling") or {}).get("accountingEnforce")
        if enforce and not spec.get("external"):
            assert f"AccountingStorageEnforce={','.join(enforce)}" in slurm_conf, slurm_conf
    if spec.get("external"):
        # slurmd and login pods take this file from an external slurmctld, which owns the
        # partitions: the operator writes no NodeSet or partition lines for it.
        host = spec["externalConfig"]["host"]
        assert re.search(rf"^SlurmctldHost=.*{re.escape(host)}", slurm_conf, re.M), slurm_conf
    # Slurm nodes of an external slurmctld register there, not in this file's controller.
    nodesets = [] if spec.get("external") else [d for d in objects if d["kind"] == "NodeSet"]
    with contextlib.ExitStack() as stack:
        dbd = (
            stack.enter_context(
                accounting_daemon(op_cluster, database, accounting, spec, namespace, tmp_path)
            )
            if accounting is not None
            else None
        )
        ctld = stack.enter_context(
            slurm.slurmctld(conf_files, workdir=tmp_path / "slurmctld", accounting=dbd)
        )
        if dbd is not None:
            # slurmctld registered its cluster with slurmdbd (real accounting, not "none").
            clusters = ctld.registered_clusters()
            assert slurm_conf_value(slurm_conf, "ClusterName") in clusters, clusters
        members = nodeset_hosts(
            (slinky_operator.slurm_nodeset_name(n), int(n["spec"].get("replicas") or 0))
            for n in nodesets
        )
        create_hosts(ctld, members)
        got_parts = partitions_of(ctld)
        assert set(got_parts) == set(wanted), (got_parts, wanted, slurm_conf)
        for part, sets in wanted.items():
            hosts = {h for h, owner in members.items() if owner in sets}
            assert got_parts[part] == hosts, (part, got_parts[part], hosts)
        differences = topology_differences(
            ctld, str(conf_files.get("topology.yaml") or ""), present=set(members)
        )
        assert not differences, differences
        restapi = next((d for d in objects if d["kind"] == "RestApi"), None)
        if restapi is not None and nodesets:
            # slurmrestd of this controller, reachable under the RestApi's Service name: the
            # operator's NodeSet reconcile asks Slurm before it creates pods.
            service = f"{restapi['metadata']['name']}-restapi.{namespace}:6820"
            # ... and that Service is the operator's (tests/cluster/test_doc_commands.py relies
            # on the name when it checks a release's slurmrestd URL).
            name = service.split(".")[0]

            def restapi_service() -> set[int] | None:
                found = op_cluster.kubectl(
                    "get", "service", name, "-n", namespace, "-o", "json", "--ignore-not-found"
                )
                return (
                    {int(p["port"]) for p in json.loads(found)["spec"]["ports"]} if found else None
                )

            ports = wait_for(restapi_service, timeout=60, what=f"the operator's Service {name}")
            assert 6820 in ports, ports
            proxy.route(service, ctld.start_slurmrestd())
            for nodeset in nodesets:
                assert_nodeset_pods_placed(op_cluster, namespace, nodeset)
        shown_topology = partition_topologies(ctld)
        for part, topo_name in expected_partition_topology(values).items():
            assert shown_topology.get(part) == topo_name, (part, shown_topology)


def assert_nodeset_pods_placed(cluster: Cluster, namespace: str, nodeset: dict[str, Any]) -> None:
    """The operator creates the NodeSet's pods, and the scheduler puts each only on a node whose
    labels, affinity and taints admit it and whose GPUs cover its request; where the fleet has
    no such node the pods stay unscheduled (:func:`slinky_harness.k8s.placement.settle_nodeset`
    waits for them, as the conformance command's live phase does)."""
    nodeset = {**nodeset, "metadata": {**nodeset["metadata"], "namespace": namespace}}
    nodes = cluster.kubectl_json("get", "nodes")["items"]
    settled = placement.settle_nodeset(
        cluster, nodeset, nodes, f"NodeSet {nodeset['metadata']['name']}", timeout=180
    )
    if isinstance(settled, str):
        log = cluster.logs_dir / "kube-scheduler.log"
        tail = log.read_text(errors="replace").splitlines()[-15:] if log.exists() else []
        events = cluster.kubectl("get", "events", "-n", namespace, check=False)
        raise AssertionError(
            f"{settled}\nkube-scheduler.log, last lines:\n" + "\n".join(tail)
            + f"\nevents in {namespace}:\n{events[-6000:]}"
        )  # fmt: skip
    needs, placed = settled.needs, settled.placed
    by_name = {n["metadata"]["name"]: n for n in nodes}
    if not any(needs.admits(n) and needs.fits(n) for n in nodes):
        assert not placed.placed, f"placed where no node fits: {placed.placed}"
    for pod, node in placed.placed.items():
        assert needs.admits(by_name[node]) and needs.fits(by_name[node]), (pod, node)


def test_webhook_denies_controller_that_claims_slurm_conf(
    op_cluster: Cluster, manager: slinky_operator.Manager, tmp_path: Path
) -> None:
    """The chart's ValidatingWebhookConfiguration reaches the real webhook server, which refuses a
    Controller whose configFileRefs hold slurm.conf (reserved for the operator)."""
    namespace = "webhook-check"
    op_cluster.kubectl("create", "namespace", namespace)
    try:
        op_cluster.apply([
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "claims-slurm-conf", "namespace": namespace},
             "data": {"slurm.conf": "ClusterName=nope\n"}},
            {"apiVersion": "v1", "kind": "Secret",
             "metadata": {"name": "keys", "namespace": namespace},
             "data": {k: base64.b64encode(os.urandom(64)).decode() for k in ("slurm.key", "jwt.key")}},
        ])  # fmt: skip
        controller = {
            "apiVersion": "slinky.slurm.net/v1beta1", "kind": "Controller",
            "metadata": {"name": "bad", "namespace": namespace},
            "spec": {
                "slurmKeyRef": {"name": "keys", "key": "slurm.key"},
                "jwtKeyRef": {"name": "keys", "key": "jwt.key"},
                "configFileRefs": [{"name": "claims-slurm-conf"}],
            },
        }  # fmt: skip
        proc = support.kubectl(op_cluster, "create", "-f", "-", input=yaml.safe_dump(controller))
        assert proc.returncode != 0, "the API server accepted a Controller claiming slurm.conf"
        assert "reserved for slurm-operator use: slurm.conf" in proc.stderr, proc.stderr
        assert "admission webhook" in proc.stderr, proc.stderr
    finally:
        op_cluster.kubectl("delete", "namespace", namespace, "--wait=false")


SCRIPT_DIRECTIVES = {
    "prologScripts": ("Prolog", "prolog-"),
    "epilogScripts": ("Epilog", "epilog-"),
    "prologSlurmctldScripts": ("PrologSlurmctld", "prolog-slurmctld-"),
    "epilogSlurmctldScripts": ("EpilogSlurmctld", "epilog-slurmctld-"),
}
SCRIPT_CASES = {
    "distinct": {
        "prologScripts": {
            "00-a.sh": "#!/bin/sh\necho prolog a\n",
            "prolog-b.sh": "#!/bin/sh\necho b\n",
        },
        "epilogScripts": {"00-a.sh": "#!/bin/sh\necho epilog\n"},
        "prologSlurmctldScripts": {"00-a.sh": "#!/bin/sh\necho prolog ctld\n"},
        "epilogSlurmctldScripts": {"00-a.sh": "#!/bin/sh\necho epilog ctld\n"},
    },
    "prolog-beside-prologSlurmctld": {
        "prologScripts": {"slurmctld-x.sh": "#!/bin/sh\necho runs on every node\n"},
        "prologSlurmctldScripts": {"x.sh": "#!/bin/sh\necho runs in slurmctld\n"},
    },
}


def _wanted_scripts(values: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Directive -> {file in /etc/slurm: the script the values give for it}."""
    wanted: dict[str, dict[str, str]] = {}
    for key, (directive, prefix) in SCRIPT_DIRECTIVES.items():
        for name, script in (values.get(key) or {}).items():
            wanted.setdefault(directive, {})[prefix + name.removeprefix(prefix)] = script
    return wanted


def _mounted_sources(
    cluster: Cluster, namespace: str, statefulset: dict[str, Any]
) -> dict[str, list[tuple[str, str]]]:
    """File name in slurmctld's /etc/slurm -> [(ConfigMap, its text)], one entry per projected
    ConfigMap source that puts the file there (a file with two sources is a clash)."""
    pod = statefulset["spec"]["template"]["spec"]
    (ctld,) = [c for c in pod["containers"] if c["name"] == "slurmctld"]
    (mount,) = [m for m in ctld.get("volumeMounts", []) if m["mountPath"] == "/etc/slurm"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    files: dict[str, list[tuple[str, str]]] = {}
    for source in volume["projected"]["sources"]:
        ref = source.get("configMap")
        if not ref:
            continue
        data: dict[str, str] = (
            cluster.kubectl_json("get", "configmap", ref["name"], "-n", namespace).get("data") or {}
        )
        items = ref.get("items") or [{"key": k, "path": k} for k in data]
        for item in items:
            files.setdefault(item["path"], []).append((ref["name"], data[item["key"]]))
    return files


@pytest.mark.parametrize("case", list(SCRIPT_CASES))
def test_each_script_directive_mounts_the_script_its_values_gave(  # noqa: PLR0917 - fixtures
    op_cluster: Cluster,
    helm: Helm,
    manager: slinky_operator.Manager,
    case: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """For every Prolog=/Epilog=/PrologSlurmctld=/EpilogSlurmctld= file of the operator's
    slurm.conf, the file the operator mounts in slurmctld's /etc/slurm has one source and holds
    the script the values gave for that directive; or the chart refuses the values, naming both
    keys that would share a file (issue 30, item 1)."""
    values = SCRIPT_CASES[case]
    # short: the operator's ClusterName <namespace>_<release>-slurm must stay within 40 characters
    namespace = f"scripts-{list(SCRIPT_CASES).index(case)}"
    overlay = tmp_path / "scripts.yaml"
    overlay.write_text(yaml.safe_dump(values))
    default = next(s for s in SCENARIOS if s.name == "ci/default")
    args = [*support.values_args([*support.values_files(default), overlay])]
    request.addfinalizer(
        lambda: helm.run(
            "uninstall", "sc", "-n", namespace, "--wait", "--timeout", "60s", check=False
        )
    )
    result = helm_client.install_past_webhook_race(
        helm, "sc", str(CLUSTER_CHART.path), "-n", namespace, "--create-namespace", *args
    )
    wanted = _wanted_scripts(values)
    if not result.ok:
        files = [f for scripts in wanted.values() for f in scripts]
        clashing = {f for f in files if files.count(f) > 1}
        assert clashing, f"refused values without a clash:\n{result.stderr}"
        for key, (_, prefix) in SCRIPT_DIRECTIVES.items():
            for name in values.get(key) or {}:
                if prefix + name.removeprefix(prefix) in clashing:
                    assert f"{key}.{name}" in result.stderr, result.stderr
        return
    controller = next(
        d for d in support.release_objects(helm, "sc", namespace) if d["kind"] == "Controller"
    )
    name = controller["metadata"]["name"]
    directives = "|".join(d for d, _ in SCRIPT_DIRECTIVES.values())
    config = k8s_objects.wait_object(
        op_cluster,
        "configmap",
        f"{name}-config",
        namespace,
        ready=lambda c: bool(
            re.search(rf"^({directives})=", (c.get("data") or {}).get("slurm.conf", ""), re.M)
        ),
        what=" naming the scripts",
    )
    named: dict[str, set[str]] = {}
    for directive, path in re.findall(
        rf"^({directives})=(\S+)$", config["data"]["slurm.conf"], re.M
    ):
        # a relative name is read in the folder of slurm.conf, /etc/slurm
        file = path.removeprefix("/etc/slurm/")
        assert "/" not in file, f"{directive}={path} is not in /etc/slurm"
        named.setdefault(directive, set()).add(file)
    assert named == {d: set(files) for d, files in wanted.items()}, config["data"]["slurm.conf"]
    statefulset = k8s_objects.wait_object(
        op_cluster, "statefulset", f"{name}-controller", namespace
    )
    mounted = _mounted_sources(op_cluster, namespace, statefulset)
    for directive, scripts in wanted.items():
        for file, script in scripts.items():
            sources = mounted.get(file, [])
            assert len(sources) == 1, f"{directive}=/etc/slurm/{file} comes from {sources}"
            assert sources[0][1] == script, (directive, file, sources[0])
