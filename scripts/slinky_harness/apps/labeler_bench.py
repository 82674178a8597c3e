"""The gpu-topology-labeler at scale against a real API server: benchmark and shared helpers.

``python -m slinky_harness.apps.labeler_bench`` (``nox -s bench``) starts a kwok control plane
(:mod:`slinky_harness.k8s.cluster`) whose kube-apiserver writes an audit log of every write made
by the labeler's ServiceAccount, creates 20,000 fake GB200 nodes in NVL72 racks (GFD
``nvidia.com/gpu.clique`` labels plus leaf/spine/core fabric labels), gives the labeler a
ServiceAccount with the rights the chart grants and a token from the TokenRequest API, and runs
``python -m slinky_topology.labeler --once`` twice as a separate process. Then it measures, in
the same run, a baseline that makes the same writes: the nodes are put back as they were before the
labeler (untimed), and :mod:`slinky_harness.apps.patch_baseline` (the standard library's HTTPS
client, no Kubernetes client, no listing or planning) sends the labeler's exact merge patches
(recorded as the change of every node's labels and annotations) and its ConfigMap create, as the
same ServiceAccount and with the same number of writes in flight. It prints::

    nodes                      20000 (--nodes; default 20000)
    first pass seconds         ...   (process wall time: start, list, plan, write, exit)
    baseline seconds           ...   (the same writes, minimal client)
    time vs baseline           1.10x (goal <= 1.20x: met)
    pass vs baseline writes    ...   (each without its process start; for reading, no goal)
    CPU vs baseline            1.15x (goal <= 1.20x: met)   labeler + kube-apiserver + etcd
    writes per node            1.00
    second pass writes         0
    peak memory MiB            ...   (peak RSS of the labeler process in the first pass)

The ratios are the result (reported, never a pass mark: the wall time on a shared machine says
more about the machine than about the labeler, and a ratio measured in the same run cancels most
of that). Writes are counted from the API server's audit log (successful
``create``/``update``/``patch`` requests by the labeler's identity), not from the controller's own
counter; the controller's ``pass done`` log line is read too and must agree. The exit status is 1
when the run is not what it claims to be: a node is written more or less than once, the ConfigMap
is not written exactly once, the second pass writes anything, the baseline's writes differ from
the labeler's (in number or in the state they leave), or the labeler's peak memory exceeds
``--max-memory-mib`` (default 500).

The labeler runs with ``--qps 0`` (no client-side write limit; the chart default is 20 writes per
second, which alone would make 20,000 first-time patches take over sixteen minutes) and
``--write-workers 8`` (eight node patches in flight; one at a time, the round trips of 20,000
patches alone take several minutes on a busy 2-core machine). The control plane is the API
server and etcd alone: the fake nodes are not kwok-managed (their heartbeats would only load the
two cores, and the labeler never looks at node status), nothing is scheduled, and no
kube-controller-manager runs. With one, its node-lifecycle controller marks every kubelet-less
node NotReady and taints it 40 s after creation, that is during the labeler's pass: measured on a
quiet machine, that doubled node creation (62 s against 32 s) and took the first pass from 48 s to
65 s. A real fleet's kubelets keep their nodes Ready. Besides wall time the benchmark
reports the CPU time of the labeler and of kube-apiserver plus etcd during the first pass: on a
shared machine the wall time depends on what else runs, the CPU time much less.

It is a program, not a library: what it shares with the cluster tier's labeler tests (the audit
policy and reader, fast node creation, TokenRequest and token kubeconfig, running the labeler as a
measured process) lives in :mod:`slinky_harness.k8s`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slinky_harness.apps import patch_baseline
from slinky_harness.apps.labeler_figures import GOAL_RATIO, Figures, goal, misses, ratio
from slinky_harness.core import processes
from slinky_harness.core.errors import HarnessError
from slinky_harness.k8s.accounts import mint_token, service_account_user, token_kubeconfig
from slinky_harness.k8s.audit import audit_policy, read_audit_writes
from slinky_harness.k8s.cluster import Cluster
from slinky_harness.k8s.fleet import Fleet, create_nodes, parse_fleet
from slinky_harness.k8s.labeler import child_env, run_labeler

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


__all__ = [
    "GOAL_RATIO",
    "LABEL_MAP",
    "Figures",
    "bench_fleet",
    "build_parser",
    "goal",
    "main",
    "misses",
    "node_writes",
    "ratio",
]


LABEL_MAP = (
    "accelerator=nvidia.com/gpu.clique,leaf=fabric.slinky.dev/leaf,"
    "spine=fabric.slinky.dev/spine,core=fabric.slinky.dev/core"
)
"""``--label-map`` for the fleets of this module and ``tests/data/fleets/labeler-*.yaml``."""

TRAYS_PER_RACK = 18
RACKS_PER_UNIT = 16


# --- audit log -----------------------------------------------------------------------------------


# --- cluster set-up ------------------------------------------------------------------------------


def bench_fleet(nodes: int) -> Fleet:
    """``nodes`` GB200 trays: NVL72 racks of 18 (one GFD clique each) on a leaf switch per rack,
    16 racks per spine, one core; the last rack may be partial."""
    groups: list[dict[str, Any]] = []
    per_unit = TRAYS_PER_RACK * RACKS_PER_UNIT
    for unit, start in enumerate(range(0, nodes, per_unit), start=1):
        groups.append(
            {
                "name": f"su{unit:02d}",
                "count": min(per_unit, nodes - start),
                "namePattern": f"gb-su{unit:02d}-r{{block:02d}}-t{{slot:02d}}",
                "blockSize": TRAYS_PER_RACK,
                "resources": {"cpu": "144", "memory": "960Gi", "pods": "110"},
                "gpu": {
                    "count": 4,
                    "product": "NVIDIA-GB200",
                    "memoryMiB": 189471,
                    "family": "blackwell",
                    "clique": f"c0ffee00-0000-4000-8000-0000{unit:04d}{{block:04d}}.32766",
                },
                "labels": {
                    "fabric.slinky.dev/leaf": f"su{unit:02d}-leaf{{block:02d}}",
                    "fabric.slinky.dev/spine": f"su{unit:02d}-spine",
                    "fabric.slinky.dev/core": "core",
                },
            }
        )
    return parse_fleet({"kind": "Fleet", "name": f"labeler-bench-{nodes}", "nodeGroups": groups})


def labeler_rbac(namespace: str, account: str, configmap: str) -> list[dict[str, Any]]:
    """ServiceAccount and the rights the chart's controller RBAC grants (bench only: the
    cluster tests apply the chart's own rendered RBAC)."""
    meta = {"name": account, "namespace": namespace}
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
    group = "rbac.authorization.k8s.io"
    rbac = f"{group}/v1"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": {"name": account},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["nodes"],
                    "verbs": ["get", "list", "watch", "patch"],
                }
            ],
        },
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": account},
            "roleRef": {"apiGroup": group, "kind": "ClusterRole", "name": account},
            "subjects": subject,
        },
        {
            "apiVersion": rbac,
            "kind": "Role",
            "metadata": meta,
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "resourceNames": [configmap],
                    "verbs": ["get", "update", "patch"],
                },
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
                {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
            ],
        },
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": group, "kind": "Role", "name": account},
            "subjects": subject,
        },
    ]


# --- running the labeler -------------------------------------------------------------------------


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU time a running process has used so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def component_pids(cluster: Cluster) -> dict[str, int]:
    """Pids of the cluster's components by name, from kwokctl's pid files."""
    out: dict[str, int] = {}
    for pidfile in (cluster.cluster_dir / "pids").glob("*.pid"):
        try:
            out[pidfile.stem] = int(pidfile.read_text().strip())
        except (OSError, ValueError):
            continue
    return out


# --- the baseline --------------------------------------------------------------------------------

Meta = dict[str, tuple[dict[str, str], dict[str, str]]]
"""Node name -> (labels, annotations)."""


def _changes(old: dict[str, str], new: dict[str, str]) -> dict[str, str | None]:
    """The JSON merge patch of one string map: changed and added keys, removed ones as null."""
    out: dict[str, str | None] = {k: v for k, v in new.items() if old.get(k) != v}
    out.update({k: None for k in old if k not in new})
    return out


def node_writes(before: Meta, after: Meta) -> dict[str, dict[str, Any]]:
    """The merge patch that turns each node's metadata ``before`` into ``after`` (nodes whose
    labels and annotations did not change are left out): what the labeler wrote, to replay."""
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(after):
        old_labels, old_annotations = before.get(name, ({}, {}))
        labels, annotations = after[name]
        meta: dict[str, Any] = {}
        for key, change in (
            ("labels", _changes(old_labels, labels)),
            ("annotations", _changes(old_annotations, annotations)),
        ):
            if change:
                meta[key] = change
        if meta:
            out[name] = {"metadata": meta}
    return out


def list_node_meta(api_client: Any) -> Meta:
    """Labels and annotations of every Node (one list, raw JSON)."""
    from kubernetes import client  # noqa: PLC0415 - the cluster tier's client, not the parser's

    core: Any = client.CoreV1Api(api_client)
    response = core.list_node(_preload_content=False)
    items = json.loads(response.data)["items"]
    response.release_conn()
    return {
        i["metadata"]["name"]: (
            dict(i["metadata"].get("labels") or {}),
            dict(i["metadata"].get("annotations") or {}),
        )
        for i in items
    }


def _patch_nodes(api_client: Any, patches: dict[str, dict[str, Any]], workers: int) -> None:
    from kubernetes import client  # noqa: PLC0415

    core: Any = client.CoreV1Api(api_client)

    def patch(item: tuple[str, dict[str, Any]]) -> None:
        response = core.patch_node(
            item[0], item[1], _content_type=patch_baseline.MERGE_PATCH, _preload_content=False
        )
        _ = response.data
        response.release_conn()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(patch, patches.items()))


def _configmap_body(api_client: Any, namespace: str, name: str) -> dict[str, Any]:
    """The ConfigMap the labeler created, as a create body (no server-set fields)."""
    from kubernetes import client  # noqa: PLC0415

    core: Any = client.CoreV1Api(api_client)
    response = core.read_namespaced_config_map(name, namespace, _preload_content=False)
    live = json.loads(response.data)
    response.release_conn()
    meta = live["metadata"]
    kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": kept, "data": live.get("data")}


def _delete_configmap(api_client: Any, namespace: str, name: str) -> None:
    from kubernetes import client  # noqa: PLC0415

    client.CoreV1Api(api_client).delete_namespaced_config_map(name, namespace)


SERVER_COMPONENTS = frozenset({"kube-apiserver", "etcd"})
NAMESPACE = "labeler-bench"
ACCOUNT = "gpu-topology-labeler"
CONFIGMAP = "slurm-topology"


def run_bench(args: argparse.Namespace, workdir: Path) -> Figures:
    user = service_account_user(NAMESPACE, ACCOUNT)
    policy = workdir / "audit-policy.yaml"
    policy.write_text(audit_policy([user]))
    fleet = bench_fleet(args.nodes)
    # The API server and etcd alone (see the module docstring).
    components = "kwok-controller,kube-scheduler,kube-controller-manager"
    extra = [f"--kube-audit-policy={policy}", f"--disable={components}"]
    with Cluster.start(workdir / "cluster", stages=None, extra_args=extra) as cluster:
        print(f"control plane up in {cluster.start_seconds:.1f}s", file=sys.stderr)
        api = cluster.api_client()
        try:
            cluster.apply(labeler_rbac(NAMESPACE, ACCOUNT, CONFIGMAP))
            created = create_nodes(api, fleet.nodes(), workers=args.workers)
            print(f"{args.nodes} nodes created in {created:.1f}s", file=sys.stderr)
        finally:
            api.close()
        token = mint_token(cluster, NAMESPACE, ACCOUNT)
        kubeconfig = token_kubeconfig(
            cluster,
            token,
            workdir / "labeler.kubeconfig",
            user=service_account_user(NAMESPACE, ACCOUNT),
        )
        audit = cluster.logs_dir / "audit.log"
        common = [
            f"--kubeconfig={kubeconfig}",
            f"--namespace={NAMESPACE}",
            f"--configmap={CONFIGMAP}",
            f"--label-map={LABEL_MAP}",
            f"--qps={args.qps}",
            f"--write-workers={args.write_workers}",
            "--metrics-port=0",
            "--once",
        ]
        servers = [
            pid for name, pid in component_pids(cluster).items() if name in SERVER_COMPONENTS
        ]

        def server_cpu_now() -> float:
            return sum(process_cpu_seconds(pid) for pid in servers)

        api = cluster.api_client()
        try:
            before = list_node_meta(api)
            server_cpu = server_cpu_now()
            first = run_labeler(common)
            server_cpu = server_cpu_now() - server_cpu
            if first.returncode != 0:
                raise BenchError("first pass failed: " + first.describe())
            after_first = read_audit_writes(audit, user=user)
            second = run_labeler(common)
            if second.returncode != 0:
                raise BenchError("second pass failed: " + second.describe())
            after_second = read_audit_writes(audit, user=user)
            base = _baseline(
                args,
                api,
                workdir=workdir,
                kubeconfig=kubeconfig,
                before=before,
                server_cpu_now=server_cpu_now,
            )
            after_baseline = read_audit_writes(audit, user=user)
        finally:
            api.close()
    baseline_ok = [w for w in after_baseline[len(after_second) :] if w.ok]
    ok = [w for w in after_first if w.ok]
    node_writes = [w for w in ok if w.resource == "nodes"]
    writes: dict[str, int] = {}
    for w in ok:
        key = f"{w.resource}/{w.subresource}" if w.subresource else w.resource
        writes[f"{key} {w.verb}"] = writes.get(f"{key} {w.verb}", 0) + 1
    return Figures(
        nodes=args.nodes,
        create_seconds=created,
        first_pass_seconds=first.seconds,
        first_pass_reported_seconds=float(first.last("pass done").get("seconds", 0.0)),
        writes=writes,
        node_writes=len(node_writes),
        nodes_written=len({w.name for w in node_writes}),
        configmap_writes=sum(1 for w in ok if w.resource == "configmaps"),
        reported_writes=int(first.last("pass done").get("writes", -1)),
        second_pass_seconds=second.seconds,
        second_pass_writes=len(after_second) - len(after_first),
        peak_memory_mib=first.peak_rss_mib,
        failed_requests=sum(1 for w in after_second if not w.ok),
        labeler_cpu_seconds=first.cpu_seconds,
        server_cpu_seconds=server_cpu,
        baseline_seconds=base.seconds,
        baseline_writes_seconds=base.writes_seconds,
        baseline_cpu_seconds=base.cpu_seconds,
        baseline_server_cpu_seconds=base.server_cpu_seconds,
        baseline_writes=len(baseline_ok),
        baseline_same_state=base.same_state,
    )


def _last_json(output: str) -> dict[str, Any]:
    """The last line of ``output`` that is a JSON object (``{}`` when none)."""
    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(found, dict):
                return found
    return {}


@dataclass
class Baseline:
    """One measured baseline run."""

    seconds: float
    writes_seconds: float
    cpu_seconds: float
    server_cpu_seconds: float
    same_state: bool


def _baseline(
    args: argparse.Namespace,
    api: Any,
    *,
    workdir: Path,
    kubeconfig: Path,
    before: Meta,
    server_cpu_now: Callable[[], float],
) -> Baseline:
    """Record the labeler's writes, undo them (untimed), replay them with the minimal client
    (timed, same identity and concurrency) and check that the nodes end as the labeler left
    them."""
    after = list_node_meta(api)
    writes = {
        "configmap": {
            "namespace": NAMESPACE,
            "body": _configmap_body(api, NAMESPACE, CONFIGMAP),
        },
        "nodes": node_writes(before, after),
    }
    _patch_nodes(api, node_writes(after, before), args.workers)
    _delete_configmap(api, NAMESPACE, CONFIGMAP)
    if list_node_meta(api) != before:
        raise BenchError("could not put the nodes back as they were before the labeler")
    path = patch_baseline.write_file(writes, workdir)
    argv = [
        sys.executable,
        "-m",
        "slinky_harness.apps.patch_baseline",
        f"--kubeconfig={kubeconfig}",
        f"--writes={path}",
        f"--workers={args.write_workers}",
    ]
    server_cpu = server_cpu_now()
    with tempfile.TemporaryFile() as log:
        run = processes.run_measured(argv, log=log, timeout=1800.0, env=child_env())
        log.seek(0)
        output = log.read().decode("utf-8", "replace")
    server_cpu = server_cpu_now() - server_cpu
    if run.returncode != 0:
        raise BenchError(f"baseline failed (exit {run.returncode}): {output[-2000:]}")
    return Baseline(
        seconds=run.seconds,
        writes_seconds=float(_last_json(output).get("seconds", 0.0)),
        cpu_seconds=run.cpu_seconds,
        server_cpu_seconds=server_cpu,
        same_state=list_node_meta(api) == after,
    )


class BenchError(HarnessError):
    """The benchmark could not run to the end."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m slinky_harness.apps.labeler_bench",
        description="First full pass of the gpu-topology-labeler on N fake nodes, against a "
        "baseline making the same writes with a minimal client: time and CPU ratios, API "
        "writes (from the API server's audit log), second-pass writes, peak memory.",
    )
    p.add_argument("--nodes", type=int, default=20000, help="fake GPU nodes (default: 20000)")
    p.add_argument(
        "--qps", type=float, default=0.0, help="labeler --qps (default: 0, no write limit)"
    )
    p.add_argument(
        "--write-workers",
        type=int,
        default=8,
        help="labeler --write-workers: node patches in flight (default: 8)",
    )
    p.add_argument(
        "--max-memory-mib",
        type=float,
        default=500.0,
        help="target for the labeler's peak memory in the first pass (default: 500)",
    )
    p.add_argument("--workers", type=int, default=8, help="parallel node creations (set-up)")
    p.add_argument("--workdir", type=Path, help="keep the cluster folder and logs here")
    p.add_argument("--json", action="store_true", help="also print the figures as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.nodes < 1:
        print("error: --nodes must be at least 1", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="labeler-bench-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            figures = run_bench(args, workdir)
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    print("gpu-topology-labeler benchmark")
    for line in figures.lines():
        print(f"  {line}")
    if args.json:
        body = {k: v for k, v in vars(figures).items()}
        body["writes_per_node"] = figures.writes_per_node
        print(json.dumps(body, indent=2, sort_keys=True))
    missed = misses(figures, args.max_memory_mib)
    for miss in missed:
        print(f"target missed: {miss}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    from slinky_harness.core.processes import run_main

    raise SystemExit(run_main(main))
