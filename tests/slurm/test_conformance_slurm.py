"""The conformance command's slurm phase (``slinky_conformance.steps.slurm``) on a real
slurmctld 26.05, without the live phase: the release's objects come from ``helm template`` of
the umbrella, and ``ctx.slurm_files`` from the harness's operator-shaped slurm.conf for them
(``apps.demo.slurm.harness_slurm_conf``: the NodeSet and partition lines the operator writes,
then the Controller's ``extraConf``) with the Controller's config files and key Secrets as the
render holds them (``k8s.operator.controller_files``, the function the live phase's
``slurmctld_files`` uses). A stand-in ``live/reconcile`` step passes, so the phase's steps run
as in the command.

The broken values files under ``tests/data/conformance/broken`` that say ``# expect-step:
slurm/...`` must fail at that step with a finding at their ``# expect-path:``; the example
umbrella's defaults and a profile with accounting on must pass every step that applies.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.conformance_cases import BROKEN, expectations, prerequisites

from slinky_conformance.context import Context, Outcome, Step, run_steps
from slinky_conformance.steps import slurm as phase
from slinky_conformance.target import load_manifests, resolve
from slinky_harness.apps.demo.slurm import harness_slurm_conf
from slinky_harness.helm import client as helm
from slinky_harness.k8s.operator import controller_files, slurm_nodeset_name
from slinky_harness.slurm.dbd_conf import rendered_secret

if TYPE_CHECKING:
    from slinky_conformance.report import Report

REPO = Path(__file__).resolve().parents[2]
SLURM_DATA = REPO / "tests" / "data" / "conformance" / "slurm"
SLURM_BROKEN = [p for p in BROKEN if any(s.startswith("slurm/") for s in expectations(p).steps)]
DGX = REPO / "values" / "dgx-h100-superpod.yaml"


def dgx_existing() -> list[dict[str, Any]]:
    """What the profile's header asks the cluster to have first (values/prerequisites/)."""
    path = prerequisites(DGX)
    assert path is not None, "values/prerequisites/dgx-h100-superpod.yaml"
    return load_manifests(path)


def _reconciled(_: Context) -> Outcome:
    return Outcome("stand-in: the objects of helm template")


STAND_IN = Step("live", "reconcile", _reconciled)


def rendered_context(
    files: list[Path], work: Path, existing: list[dict[str, Any]], chart: str | None = None
) -> Context:
    """A Context as the live phase leaves it, made from ``helm template`` (see module doc);
    ``chart``: the values are for that suite chart (``--chart``), not the umbrella."""
    target = resolve(files, chart=chart)
    result = helm.template(
        target.chart_dir(work), target.values, release=target.release, namespace=target.namespace
    )
    assert result.ok, result.describe()
    docs = result.docs
    controller = next(d for d in docs if d["kind"] == "Controller")
    nodesets = [d for d in docs if d["kind"] == "NodeSet"]
    conf = harness_slurm_conf({
        "extraConf": controller["spec"].get("extraConf") or "",
        "nodesets": [(slurm_nodeset_name(n), n["spec"].get("partition") or {}, [])
                     for n in nodesets],
    })  # fmt: skip
    configmaps = {
        d["metadata"]["name"]: d.get("data") or {} for d in docs if d["kind"] == "ConfigMap"
    }
    slurm_files = controller_files(
        controller["spec"],
        conf,
        lambda name: dict(configmaps[name]),
        lambda name, key: rendered_secret([*docs, *existing], name, key),
    )
    ctx = Context(
        target=target, work=work, kube_version="", objects=[*docs, *existing], existing=existing
    )
    ctx.slurm_files = dict(slurm_files)
    return ctx


def run_phase(ctx: Context) -> Report:
    with ctx.stack:
        return run_steps(ctx, [STAND_IN, *phase.STEPS], ctx.target.describe())


def statuses(report: Report) -> dict[str, str]:
    return {r.id: r.status for r in report.results}


def explain(report: Report) -> str:
    return "\n".join(
        f"{r.id}: {r.status} {r.reason} {[f.line() for f in r.findings]} {r.details}"
        for r in report.results
    )


def test_umbrella_defaults_pass(slurm_root: Path, tmp_path: Path) -> None:
    """examples/umbrella as it ships: slurmctld loads, the GPU NodeSet's partition and the
    slurm-bridge partition hold its nodes, a job lands in each; accounting is off, which passes
    saying so (a skipped step would fail the command)."""
    ctx = rendered_context([], tmp_path, [])
    report = run_phase(ctx)
    assert set(statuses(report).values()) == {"pass"}, explain(report)
    jobs = next(r for r in report.results if r.id == "slurm/jobs")
    landed = {line.split(":")[0] for line in jobs.details}
    assert landed == {"gpu", "slurm-bridge"}, jobs.details
    accounting = next(r for r in report.results if r.id == "slurm/accounting")
    assert "accounting is off" in accounting.reason, accounting


def test_block_partition_jobs_land_inside_one_block(slurm_root: Path, tmp_path: Path) -> None:
    """A partition on a block topology (tests/data/conformance/slurm/block-partition.yaml: two
    2-node base blocks, four GPU nodes placed in them): its job asks --segment for a whole base
    block and lands inside one; the tree (cluster default) and the blocks show the nodes."""
    ctx = rendered_context([SLURM_DATA / "block-partition.yaml"], tmp_path, [])
    report = run_phase(ctx)
    assert set(statuses(report).values()) == {"pass"}, explain(report)
    jobs = next(r for r in report.results if r.id == "slurm/jobs")
    nvl = next(line for line in jobs.details if line.startswith("nvl:"))
    assert "-N 2 --segment=2" in nvl and "inside block b" in nvl, jobs.details
    assert "1 with --segment" in jobs.reason, jobs.reason


def test_profile_with_accounting_passes(slurm_root: Path, tmp_path: Path) -> None:
    """values/dgx-h100-superpod.yaml (accounting on, its database Service and password Secret
    given as existing objects): every step passes, accounting with a real slurmdbd on the
    operator's slurmdbd.conf that slurmctld registers its cluster with."""
    ctx = rendered_context([DGX], tmp_path, dgx_existing())
    report = run_phase(ctx)
    assert set(statuses(report).values()) == {"pass"}, explain(report)
    accounting = next(r for r in report.results if r.id == "slurm/accounting")
    assert "mariadb.slurm-db.svc is Service slurm-db/mariadb" in accounting.reason, accounting
    assert "registers cluster" in accounting.reason, accounting


def test_accounting_service_that_nobody_creates_is_a_finding(
    slurm_root: Path, tmp_path: Path
) -> None:
    """The same profile without the existing objects: its database host names a Service that
    neither the release nor the cluster has."""
    ctx = rendered_context([DGX], tmp_path, [])
    report = run_phase(ctx)
    accounting = next(r for r in report.results if r.id == "slurm/accounting")
    assert accounting.status == "fail", explain(report)
    assert [f.path for f in accounting.findings] == [
        "slurm-cluster.accounting.storageConfig.host"
    ], accounting.findings


def test_slurmdbd_refusal_names_the_slurmdbd_option(slurm_root: Path, tmp_path: Path) -> None:
    """An option slurmdbd refuses (accounting.extraConfMap): slurmctld still loads (against a
    stand-in slurmdbd), and slurm/accounting fails at that option with slurmdbd's words."""
    files = [
        DGX,
        SLURM_DATA / "slurmdbd-option-refused.yaml",
    ]
    report = run_phase(rendered_context(files, tmp_path, dgx_existing()))
    got = statuses(report)
    assert got["slurm/load"] == "pass" and got["slurm/accounting"] == "fail", explain(report)
    accounting = next(r for r in report.results if r.id == "slurm/accounting")
    [finding] = accounting.findings
    assert finding.path == "slurm-cluster.accounting.extraConfMap.PurgeJobAftr", finding
    assert "slurmdbd says:" in finding.fix and "PurgeJobAftr" in finding.fix, finding


@pytest.mark.parametrize("values", SLURM_BROKEN, ids=[p.stem for p in SLURM_BROKEN])
def test_broken_values_fail_at_their_step(slurm_root: Path, tmp_path: Path, values: Path) -> None:
    """Each broken file fails at the step its header names, with a finding at its values path;
    the steps before it pass. ``# args: --existing FILE`` objects are the cluster's."""
    expected = expectations(values)
    existing = [doc for path in expected.existing for doc in load_manifests(path)]
    ctx = rendered_context([values], tmp_path, existing)
    report = run_phase(ctx)
    got = statuses(report)
    (step,) = expected.steps
    assert got[step] == "fail", explain(report)
    order = list(got)
    before = order[: order.index(step)]
    assert all(got[s] == "pass" for s in before), explain(report)
    failed = next(r for r in report.results if r.id == step)
    for path in expected.paths:
        assert path in [f.path for f in failed.findings], explain(report)
    assert all(f.fix for f in failed.findings), failed.findings


def test_a_job_without_a_partition_must_find_a_default(slurm_root: Path, tmp_path: Path) -> None:
    """A user's first job has no -p: with no partition marked Default=YES, slurmctld refuses
    it, and the jobs step says so at ``partitions`` (every partition's own job still lands)."""
    values = REPO / "tests" / "data" / "conformance" / "broken" / "no-default-partition.yaml"
    ctx = rendered_context([values], tmp_path, [])
    report = run_phase(ctx)
    jobs = next(r for r in report.results if r.id == "slurm/jobs")
    assert jobs.status == "fail", explain(report)
    (finding,) = jobs.findings
    assert finding.path == "slurm-cluster.partitions", finding
    assert finding.problem.startswith("a job without -p is refused (sbatch says: "), finding
    assert "Default=YES" in finding.fix
    landed = {line.split(":")[0] for line in jobs.details}
    assert landed == {"gpu", "slurm-bridge"}, jobs.details


def test_a_nodeset_with_no_pod_placed_joins_no_node(slurm_root: Path, tmp_path: Path) -> None:
    """live/placement placed none of NodeSet gpu's pods: none joins slurmctld (the two counts
    agree), and the jobs step says why its partitions have no node."""
    ctx = rendered_context([], tmp_path, [])
    ctx.extra["placed"] = {"gpu": 0}
    report = run_phase(ctx)
    load = next(r for r in report.results if r.id == "slurm/load")
    assert "0 nodes of 0 NodeSets joined" in load.reason, explain(report)
    jobs = next(r for r in report.results if r.id == "slurm/jobs")
    assert jobs.status == "fail", explain(report)
    assert {f.path for f in jobs.findings} == {"slurm-cluster.nodesets.gpu"}, explain(report)
    assert all(
        "no pod of NodeSet gpu was placed (live/placement)" in f.problem for f in jobs.findings
    ), explain(report)


def test_upstream_gpu_guide_values_pass_and_a_gpu_job_lands(
    slurm_root: Path, tmp_path: Path
) -> None:
    """Upstream's GPU guide values (tests/data/conformance/slurm/upstream-gpu-guide.yaml, for
    --chart slurm-cluster): its gres.conf asks slurmd to detect the GPUs, which a node that
    slurmd registers may do, so every step passes; NodeSet gpu-gb200's nodes count the 4 GPUs
    they declare, and a job asking for them (--gres=gpu:4) lands on one of its nodes."""
    values = SLURM_DATA / "upstream-gpu-guide.yaml"
    ctx = rendered_context([values], tmp_path, [], chart="slurm-cluster")
    report = run_phase(ctx)
    assert set(statuses(report).values()) == {"pass"}, explain(report)
    jobs = next(r for r in report.results if r.id == "slurm/jobs")
    (line,) = [d for d in jobs.details if "--gres=" in d]
    assert "--gres=gpu:4" in line and "-> gpu-gb200-" in line, jobs.details


def test_each_gpu_nodeset_gets_a_job_asking_for_its_gpus(slurm_root: Path, tmp_path: Path) -> None:
    """examples/umbrella as it ships: NodeSet gpu declares 8 GPUs per node (nodesets.gpu.gpu);
    the jobs step asks for all 8 (--gres=gpu:8) and the job lands on a gpu node."""
    report = run_phase(rendered_context([], tmp_path, []))
    jobs = next(r for r in report.results if r.id == "slurm/jobs")
    assert jobs.status == "pass", explain(report)
    (line,) = [d for d in jobs.details if "--gres=" in d]
    assert "--gres=gpu:8" in line and "-> gpu-" in line, jobs.details


@pytest.mark.parametrize("case", ["gres-without-grestypes", "grestypes-wrong-case"])
def test_gpus_slurmctld_does_not_count_are_one_finding(
    slurm_root: Path, tmp_path: Path, case: str
) -> None:
    """tests/data/conformance/broken/<case>.yaml with two pods placed (as live/placement
    places the umbrella's GPU NodeSet on a two-node fleet): the nodes join with their Gres kept,
    slurmctld shows them with Gres=(null), and the load step says so once, at the values that
    declare the GPUs (slurmctld's log line for each node is not a finding of its own)."""
    values = REPO / "tests" / "data" / "conformance" / "broken" / f"{case}.yaml"
    ctx = rendered_context([values], tmp_path, [])
    ctx.extra["placed"] = {"gpu": 2}
    report = run_phase(ctx)
    load = next(r for r in report.results if r.id == "slurm/load")
    assert load.status == "fail", explain(report)
    assert "2 nodes of 1 NodeSet joined" in load.reason, explain(report)
    (finding,) = load.findings
    assert finding.path == "slurm-cluster.nodesets.gpu.extraConfMap", finding
    assert "Gres=(null)" in finding.problem and "8 GPUs" in finding.problem, finding
    assert "GresTypes" in finding.fix, finding


def test_a_gpu_nodeset_in_no_partition_is_a_finding(slurm_root: Path, tmp_path: Path) -> None:
    """The umbrella's GPU NodeSet without its own partition, and the slurm-bridge partition
    (the other one holding it) off, beside a CPU NodeSet with a partition: no job can ask for
    the GPUs, and the jobs step says so at the NodeSet's partition."""
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump({
            "slurm-cluster": {
                "partitions": {"slurm-bridge": {"enabled": False}},
                "nodesets": {
                    "gpu": {"partition": {"enabled": False}},
                    "cpu": {"partition": {"enabled": True, "config": "Default=YES"}},
                },
            }
        })
    )  # fmt: skip
    report = run_phase(rendered_context([values], tmp_path, []))
    jobs = next(r for r in report.results if r.id == "slurm/jobs")
    assert jobs.status == "fail", explain(report)
    assert [f.path for f in jobs.findings] == ["slurm-cluster.nodesets.gpu.partition"], jobs
    assert "8 GPUs each" in jobs.findings[0].problem, jobs.findings
