"""``nox -s conformance`` on real pods (issue 28, item 6): the command's pods phase starts the
real node (slinky_harness.k8s.realnode), installs the user's values as real pods, waits until
every NodeSet's slurmd registers idle and runs one job per NodeSet; its report says the phase ran
on real pods. A prolog that fails, which only real pods run, fails the phase at ``pods/jobs``.

Each run starts its own real node (one per machine: the runs take turns on its lock with the
other real-node files); the command runs as a user runs it, in a subprocess, with JUnit XML read
back with junitparser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from junitparser import Failure
from tests.cluster import conformance_support as support

from slinky_harness.core.paths import REPO_ROOT
from slinky_harness.k8s import realpods

if TYPE_CHECKING:
    from pathlib import Path

    from junitparser import JUnitXml
KIND = REPO_ROOT / "values" / "kind.yaml"
DATA = REPO_ROOT / "tests" / "data" / "conformance" / "real-pods"
NODE = realpods.node_name()
RUN_TIMEOUT = 2700
"""Seconds one run may take: waiting for another file's real node (up to 30 min) included."""


def conformance(tmp_path: Path, *args: str) -> tuple[int, str, JUnitXml]:
    run = support.conformance(
        tmp_path, *args, timeout=RUN_TIMEOUT, label="conformance on real pods"
    )
    return run.returncode, run.output, run.junit


def test_the_users_values_run_as_real_pods_one_job_per_nodeset(tmp_path: Path) -> None:
    """values/kind.yaml with a second CPU NodeSet, the umbrella's GPU NodeSet (a DaemonSet, 8
    GPUs) and a DRA NodeSet: exit 0; the pods phase ran on the real node (its header and the
    suite's ``real-pods`` property say so); one job ran on each CPU NodeSet's node and one with
    ``--gres=gpu:1`` on the GPU NodeSet's node (named after the real node), handed a GPU index;
    the DRA NodeSet's job is said not to have run on real pods; every override is in the notes."""
    code, out, xml = conformance(
        tmp_path, "-f", str(KIND), "-f", str(DATA / "two-nodesets.yaml"),
        "--phases", "static,pods", "--real-pods", "always",
    )  # fmt: skip
    assert code == 0, out
    assert f"pods (on real pods on node {NODE} (kubelet, containerd, runc)):" in out, out
    suites = {suite.name: suite for suite in xml}
    properties = {p.name: p.value for p in suites["conformance.pods"].properties()}  # type: ignore[no-untyped-call]
    assert NODE in properties.get("real-pods", ""), properties
    cases = {case.name: case for case in suites["conformance.pods"]}
    assert sorted(cases) == ["pods/install", "pods/jobs", "pods/node", "pods/register"]
    jobs = cases["pods/jobs"].system_out or ""
    assert "compute: srun -p compute -w compute-0 hostname: compute-0" in jobs, jobs
    assert "small: srun -p small -w small-0 hostname: small-0" in jobs, jobs
    gpu_job = f"gpu: srun -p gpu -w {NODE} --gres=gpu:1 (echo $CUDA_VISIBLE_DEVICES): {NODE}, GPU "
    assert gpu_job in jobs, jobs
    index = jobs.split(gpu_job, 1)[1].split()[0]
    assert 0 <= int(index) < 8, jobs
    assert (
        "claimed: job not run on real pods: declares GRES (slurm-cluster.nodesets.claimed.gpu.dra)"
        in jobs
    ), jobs
    assert "one job ran on each of 3 NodeSets; 1 NodeSet not run on real pods" in out, out
    for said in (
        "slurm-cluster.nodesets.small.replicas: 2 -> 1",
        "slurm-cluster.nodesetDefaults.oversubscribeNode: true",
        "slurm-cluster.nodesets.claimed.replicas: 1 -> 0",
        "slurm-cluster.nodesets.gpu: 8 emulated GPU device files",
        'slurm-cluster.configFiles["gres.conf"]: the emulated GPUs\' File= lines in place of the '
        "generated AutoDetect",
    ):
        assert f"NOTE: real pods override: {said}" in out, out


def test_a_job_that_fails_on_real_pods_fails_the_phase_naming_the_nodeset(
    tmp_path: Path,
) -> None:
    """A prolog script that exits 1 (kwok and the chroot never run it): the slurmd registers, its
    job fails; exit 1, ``pods/jobs`` fails naming ``slurm-cluster.nodesets.compute``."""
    code, out, xml = conformance(
        tmp_path, "-f", str(KIND), "-f", str(DATA / "prolog-fails.yaml"),
        "--phases", "pods", "--real-pods", "always",
    )  # fmt: skip
    assert code == 1, out
    cases = {case.name: case for suite in xml for case in suite}
    failures = [r for r in cases["pods/jobs"].result if isinstance(r, Failure)]
    assert failures, out
    assert failures[0].message.startswith("slurm-cluster.nodesets.compute: the job on compute-0"), (
        failures[0].message
    )
    assert "FAIL  jobs" in out, out
