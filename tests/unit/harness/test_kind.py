"""The kind tier: its plan (pure), the values it installs, its executor, and the no-Docker exit."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from slinky_harness.apps import kind
from slinky_harness.apps.kind_plan import (
    CLUSTER_CONFIG,
    INSTALL_ORDER,
    JOB_FAILED,
    MANAGED_NODE_TAINT,
    NAMESPACES,
    NODE_IMAGE,
    PODS_CONFIG,
    REAL_POD_TESTS,
    KindError,
    PlanInput,
    Poll,
    Run,
    StageChart,
    Step,
    build_plan,
    chart_values,
    scheduler_name,
    workers_of,
)
from slinky_harness.build import images, toolchain
from slinky_harness.core import paths
from slinky_harness.helm import charts
from slinky_harness.helm import client as helm_client
from slinky_harness.helm.charts import image_ref
from slinky_harness.helm.values import merge
from slinky_harness.k8s import realpods

NAME = "t1"
ARCHIVES = (
    Path("/cache/images/slurm-26.05.1-0123.tar"),
    Path("/cache/images/slinky-1.2.1-4567.tar"),
)


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> PlanInput:
    return kind.plan_input(NAME, tmp_path_factory.mktemp("kind"), keep=False, archives=ARCHIVES)


@pytest.fixture(scope="module")
def plan(spec: PlanInput) -> list[Step]:
    steps, _ = build_plan(spec)
    return steps


def _index(plan: list[Step], prefix: tuple[str, ...]) -> int:
    hits = [
        i
        for i, s in enumerate(plan)
        if not isinstance(s, StageChart) and s.argv[: len(prefix)] == prefix
    ]
    assert hits, f"no step runs {' '.join(prefix)}"
    return hits[0]


def _ct_charts(plan: list[Step]) -> list[str]:
    return [
        s.argv[s.argv.index("--charts") + 1].rsplit("/", 1)[-1]
        for s in plan
        if isinstance(s, Run) and s.argv[:2] == ("ct", "install")
    ]


def test_cluster_is_created_first_from_the_config_with_the_pinned_image(
    plan: list[Step], spec: PlanInput
) -> None:
    first = plan[0]
    assert isinstance(first, Run)
    assert first.argv[:3] == ("kind", "create", "cluster")
    argv = first.argv
    assert argv[argv.index("--name") + 1] == NAME
    assert argv[argv.index("--config") + 1] == str(CLUSTER_CONFIG)
    assert argv[argv.index("--kubeconfig") + 1] == str(spec.kubeconfig)
    image = argv[argv.index("--image") + 1]
    assert re.fullmatch(r"kindest/node:v1\.\d+\.\d+@sha256:[0-9a-f]{64}", image), image


def test_kind_and_node_image_are_pinned() -> None:
    assert kind.KIND.version == "v0.33.0"
    assert NODE_IMAGE.startswith("kindest/node:v1.37.0@sha256:")


def test_cluster_config_has_gpu_workers_and_a_tainted_bridge_worker(spec: PlanInput) -> None:
    config = yaml.safe_load(CLUSTER_CONFIG.read_text())
    assert config["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    roles = [n["role"] for n in config["nodes"]]
    assert roles.count("control-plane") == 1 and roles.count("worker") >= 2
    workers = workers_of(config, NAME)
    assert [w.name for w in workers] == [f"{NAME}-worker", f"{NAME}-worker2"]
    assert all(w.gpus == 8 for w in workers)
    assert [w.bridge for w in workers] == [False, True]
    for node in config["nodes"][1:]:
        labels = node["labels"]
        assert labels["nvidia.com/gpu.present"] == "true"
        assert labels["nvidia.com/gpu.product"]
        assert re.fullmatch(r"[0-9a-f-]{36}\.\d+", labels["nvidia.com/gpu.clique"])
    # The bridge worker carries the managed-node taint with the bridge's scheduler name.
    patch = yaml.safe_load(config["nodes"][2]["kubeadmConfigPatches"][0])
    assert patch["kind"] == "JoinConfiguration"
    (taint,) = patch["nodeRegistration"]["taints"]
    bridge_values, _ = chart_values("slurm-bridge", spec.profile, spec.harness_values)
    assert taint == {
        "key": MANAGED_NODE_TAINT,
        "value": scheduler_name(bridge_values),
        "effect": "NoExecute",
    }


def test_gpu_capacity_is_patched_onto_node_status_and_awaited(plan: list[Step]) -> None:
    for worker in (f"{NAME}-worker", f"{NAME}-worker2"):
        at = _index(plan, ("kubectl", "patch", "node", worker))
        step = plan[at]
        assert isinstance(step, Run)
        assert "--subresource=status" in step.argv and "--type=json" in step.argv
        ops = json.loads(step.argv[step.argv.index("-p") + 1])
        assert ops == [{"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": "8"}]
        wait = plan[at + 1]
        assert isinstance(wait, Poll) and wait.until == "^8$"
        assert "allocatable.nvidia" in wait.argv[-1]


def test_labeler_image_is_built_and_loaded_before_any_install(plan: list[Step]) -> None:
    build = _index(plan, ("docker", "build"))
    load = _index(plan, ("kind", "load", "docker-image"))
    first_ct = _index(plan, ("ct", "install"))
    assert build < load < first_ct
    build_step, load_step = plan[build], plan[load]
    assert isinstance(build_step, Run) and isinstance(load_step, Run)
    image = build_step.argv[build_step.argv.index("-t") + 1]
    assert build_step.argv[-1] == str(paths.REPO_ROOT)  # the repository Dockerfile
    assert load_step.argv[3] == image and load_step.argv[-2:] == ("--name", NAME)


def test_suite_goes_through_ct_install_in_dependency_order(
    plan: list[Step], spec: PlanInput
) -> None:
    assert _ct_charts(plan) == list(INSTALL_ORDER)
    for step in plan:
        if isinstance(step, Run) and step.argv[:2] == ("ct", "install"):
            argv = step.argv
            assert argv[argv.index("--config") + 1] == str(paths.REPO_ROOT / "ct.yaml")
            assert "--skip-clean-up" in argv  # the job and the bridge pod need the releases
            chart = argv[argv.index("--charts") + 1].rsplit("/", 1)[-1]
            assert argv[argv.index("--namespace") + 1] == NAMESPACES[chart]
    staged = [s for s in plan if isinstance(s, StageChart)]
    assert [s.dest for s in staged] == [spec.workdir / "charts" / c for c in INSTALL_ORDER]
    namespaces = {
        s.argv[-1] for s in plan if isinstance(s, Run) and s.argv[1:3] == ("create", "namespace")
    }
    assert namespaces == set(NAMESPACES.values())
    assert max(_index(plan, ("kubectl", "create", "namespace", n)) for n in namespaces) < _index(
        plan, ("ct", "install")
    )


def test_a_real_slurm_job_runs_through_the_login_pod(plan: list[Step]) -> None:
    def position(word: str) -> int:
        hits = [i for i, s in enumerate(plan) if not isinstance(s, StageChart) and word in s.argv]
        assert hits, word
        return hits[0]

    cluster_ct = next(
        i
        for i, s in enumerate(plan)
        if isinstance(s, Run)
        and f"{NAMESPACES['slurm-cluster']}" in s.argv
        and s.argv[:2] == ("ct", "install")
    )
    srun, sbatch, scontrol = position("srun"), position("sbatch"), position("scontrol")
    assert cluster_ct < srun < sbatch < scontrol
    submit = plan[sbatch]
    assert isinstance(submit, Run)
    assert submit.argv[:4] == ("kubectl", "exec", "-n", "slurm") and "${login_pod}" in submit.argv
    assert submit.argv[-2:] == ("--wrap", "hostname") and submit.capture == "job_id"
    assert re.search(submit.pattern, "42\n")
    wait = plan[scontrol]
    assert isinstance(wait, Poll)
    assert wait.argv[-4:] == ("scontrol", "show", "job", "${job_id}")
    assert re.search(wait.until, "JobId=42 JobName=wrap\n   JobState=COMPLETED Reason=None")
    assert not re.search(wait.until, "   JobState=RUNNING Reason=None")
    assert wait.fail and re.search(wait.fail, "   JobState=FAILED Reason=NonZeroExitCode")


def test_sinfo_wait_needs_every_node_idle(plan: list[Step]) -> None:
    (wait,) = [s for s in plan if isinstance(s, Poll) and "sinfo" in s.argv]
    assert re.search(wait.until, "idle\nidle\n")
    assert not re.search(wait.until, "idle\ndown*\n")
    assert not re.search(wait.until, "")


def test_bridge_pod_uses_the_bridge_scheduler_and_must_finish_on_the_bridge_worker(
    plan: list[Step],
) -> None:
    apply = _index(plan, ("kubectl", "apply", "-f", "-"))
    assert apply > _ct_charts(plan).index("slurm-bridge")
    step = plan[apply]
    assert isinstance(step, Run) and step.stdin
    pod = json.loads(step.stdin)
    assert pod["spec"]["schedulerName"] == "slurm-bridge-scheduler"
    assert pod["spec"]["restartPolicy"] == "Never"
    wait = plan[apply + 1]
    assert isinstance(wait, Poll)
    assert re.search(wait.until, f"Succeeded {NAME}-worker2")
    assert not re.search(wait.until, f"Succeeded {NAME}-worker")
    assert not re.search(wait.until, "Pending ")
    assert wait.fail and re.search(wait.fail, "Failed t1-worker2")


def test_every_variable_is_captured_before_use(plan: list[Step]) -> None:
    captured: set[str] = set()
    for step in plan:
        if isinstance(step, StageChart):
            continue
        for arg in step.argv:
            used = set(kind.VARIABLE.findall(arg))
            assert used <= captured, f"{step.what} uses {used - captured} before capture"
        if step.capture:
            captured.add(step.capture)
    assert {"cluster_release", "login_pod", "job_id"} <= captured


def test_bridge_is_pointed_at_the_cluster_release_ct_created(plan: list[Step]) -> None:
    (bridge,) = [
        s
        for s in plan
        if isinstance(s, Run)
        and s.argv[:2] == ("ct", "install")
        and s.argv[s.argv.index("--charts") + 1].endswith("slurm-bridge")
    ]
    argv = bridge.argv
    assert argv[-1] == (
        "--helm-extra-set-args=--set=sharedConfig.slurmRestApi="
        "http://${cluster_release}-restapi.slurm:6820"
    )
    (find,) = [s for s in plan if isinstance(s, Run) and s.capture == "cluster_release"]
    match = re.search(find.pattern, "slurm-cluster-ab12cd34ef\n", re.MULTILINE)
    assert match and match[1] == "slurm-cluster-ab12cd34ef"


def _where(plan: list[Step], argv: tuple[str, ...]) -> int:
    hits = [i for i, s in enumerate(plan) if isinstance(s, Run) and s.argv == argv]
    assert len(hits) == 1, (argv, hits)
    return hits[0]


def test_real_pod_tests_run_on_their_own_cluster_after_the_suite(
    plan: list[Step], spec: PlanInput
) -> None:
    """After the bridge pod, the first cluster goes and ``<name>-pods`` is made from pods.yaml
    with the pinned node image; its only worker is the node the real-pod tests select."""
    bridge = _index(plan, ("kubectl", "get", "pod", "-n", "default", "slurm-bridge-probe"))
    gone = _where(plan, ("kind", "delete", "cluster", "--name", NAME))
    created = _index(plan, ("kind", "create", "cluster", "--name", f"{NAME}-pods"))
    assert bridge < gone < created
    argv = plan[created].argv  # type: ignore[union-attr]
    assert argv[argv.index("--config") + 1] == str(PODS_CONFIG)
    assert argv[argv.index("--image") + 1] == NODE_IMAGE
    assert argv[argv.index("--kubeconfig") + 1] == str(spec.pods_kubeconfig)
    assert spec.pods_kubeconfig != spec.kubeconfig
    workers = workers_of(yaml.safe_load(PODS_CONFIG.read_text()), f"{NAME}-pods")
    assert [w.name for w in workers] == [f"{NAME}-pods-worker"]
    assert realpods.kind_worker(f"{NAME}-pods") == workers[0].name


def test_every_image_archive_is_loaded_into_the_pods_cluster_before_the_tests(
    plan: list[Step],
) -> None:
    """``kind load image-archive <archive> --name <name>-pods`` for each archive, in the order
    given, after the cluster exists and before pytest starts."""
    created = _index(plan, ("kind", "create", "cluster", "--name", f"{NAME}-pods"))
    loads = [
        _where(plan, ("kind", "load", "image-archive", str(a), "--name", f"{NAME}-pods"))
        for a in ARCHIVES
    ]
    tests = _index(plan, ("env",))
    assert created < loads[0] < loads[1] < tests
    assert not any(
        isinstance(s, Run) and s.argv[:3] == ("kind", "load", "image-archive") and NAME in s.argv
        for s in plan
    ), "the suite's own cluster keeps pulling the profile's images"


def test_the_labeler_image_is_loaded_into_the_pods_cluster_under_the_charts_reference(
    plan: list[Step], spec: PlanInput
) -> None:
    """The real-pod tests install the labeler chart with its default image reference: the
    docker-built image is loaded into ``<name>-pods`` under that reference before pytest."""
    chart = "gpu-topology-labeler"
    default = image_ref(spec.chart_defaults[chart], {}, spec.app_versions[chart])
    created = _index(plan, ("kind", "create", "cluster", "--name", f"{NAME}-pods"))
    loaded = _where(plan, ("kind", "load", "docker-image", default, "--name", f"{NAME}-pods"))
    built = _index(plan, ("docker", "build"))
    tagged = plan[built].argv[plan[built].argv.index("-t") + 1]  # type: ignore[union-attr]
    if tagged != default:
        assert _where(plan, ("docker", "tag", tagged, default)) < loaded
    assert created < loaded < _index(plan, ("env",))


def test_real_pod_tests_select_the_kind_target_by_environment(
    plan: list[Step], spec: PlanInput
) -> None:
    """pytest runs the real-pod test files with ``SLINKY_REAL_PODS=kind:<name>-pods`` and that
    cluster's kubeconfig, and only counts when pytest's summary says tests passed."""
    step = plan[_index(plan, ("env",))]
    assert isinstance(step, Run)
    assert step is plan[-1]
    argv = step.argv
    assert argv[1:3] == (
        f"{realpods.TARGET_ENV}=kind:{NAME}-pods",
        f"KUBECONFIG={spec.pods_kubeconfig}",
    )
    assert argv[3:6] == ("python", "-m", "pytest")
    # every cluster-tier file written against the target of SLINKY_REAL_PODS runs on kind
    on_target = {
        str(path.relative_to(paths.REPO_ROOT))
        for path in (paths.REPO_ROOT / "tests" / "cluster").glob("test_*.py")
        if "from slinky_harness.k8s import realpods" in path.read_text()
    }
    assert set(REAL_POD_TESTS) == on_target
    assert all((paths.REPO_ROOT / t).is_file() for t in REAL_POD_TESTS)
    assert set(REAL_POD_TESTS) <= set(argv) and "--color=no" in argv
    assert step.capture == "real_pods"
    assert re.search(step.pattern, "==== 12 passed, 1 warning in 30.1s ====", re.M)
    assert not re.search(step.pattern, "==== 12 skipped in 0.3s ====", re.M)
    target = realpods.target({realpods.TARGET_ENV: argv[1].split("=", 1)[1]})
    assert target.node_name == f"{NAME}-pods-worker"


def test_plan_without_image_archives_is_refused(spec: PlanInput) -> None:
    with pytest.raises(KindError, match="no image archives"):
        build_plan(PlanInput(**{**spec.__dict__, "archives": ()}))


def test_cleanup_deletes_both_clusters_unless_kept(spec: PlanInput) -> None:
    _, cleanup = build_plan(spec)
    assert [s.argv for s in cleanup if isinstance(s, Run)] == [
        ("kind", "delete", "cluster", "--name", NAME),
        ("kind", "delete", "cluster", "--name", f"{NAME}-pods"),
    ]
    kept = PlanInput(**{**spec.__dict__, "keep": True})
    steps, cleanup = build_plan(kept)
    assert cleanup == []
    assert not any(isinstance(s, Run) and s.argv[:2] == ("kind", "delete") for s in steps)


def test_plan_is_a_pure_function_of_its_input(spec: PlanInput) -> None:
    assert build_plan(spec) == build_plan(spec)
    other = PlanInput(**{**spec.__dict__, "name": "other"})
    assert build_plan(other)[0][0] != build_plan(spec)[0][0]


# --- values ----------------------------------------------------------------------------------------


def test_profile_block_wins_and_harness_values_merge_over_it() -> None:
    profile: dict[str, Any] = {
        "global": {"imageRegistry": "mirror.example"},
        "slurm-cluster": {"nodesets": {"compute": {"replicas": 1}}, "restapi": {"replicas": 1}},
        "slurm-bridge": {"enabled": False},
    }
    harness: dict[str, dict[str, Any]] = {
        "slurm-cluster": {"nodesets": {"compute": {"podSpec": {"nodeSelector": {"a": "b"}}}}},
        "slurm-bridge": {"schedulerConfig": {"schedulerName": "s"}},
    }
    values, source = chart_values("slurm-cluster", profile, harness)
    assert values == {
        "nodesets": {"compute": {"replicas": 1, "podSpec": {"nodeSelector": {"a": "b"}}}},
        "restapi": {"replicas": 1},
        "global": {"imageRegistry": "mirror.example"},
    }
    assert (
        source
        == "values/kind.yaml + scripts/slinky_harness/apps/kind_cluster/slurm-cluster-values.yaml"
    )
    values, source = chart_values("slurm-bridge", profile, harness)
    assert values == {
        "schedulerConfig": {"schedulerName": "s"},
        "global": {"imageRegistry": "mirror.example"},
    }
    assert source == "scripts/slinky_harness/apps/kind_cluster/slurm-bridge-values.yaml"
    assert profile["slurm-cluster"]["nodesets"]["compute"] == {"replicas": 1}, "inputs untouched"


def _render(chart: str, values: dict[str, Any], tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / f"{chart}.yaml"
    path.write_text(yaml.safe_dump(values))
    proc = subprocess.run(
        [
            str(toolchain.ensure("helm")),
            "template",
            "kindtest-abcdefghij",
            str(charts.CHARTS_DIR / chart),
            "--namespace",
            NAMESPACES[chart],
            "--kube-version",
            "1.37.0",
            "-f",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


@pytest.mark.parametrize("chart", INSTALL_ORDER)
def test_staged_values_render_against_the_chart_schema(
    spec: PlanInput, chart: str, tmp_path: Path
) -> None:
    """What the run installs is schema-valid and renders (the bridge with a ct-style release)."""
    values, _ = chart_values(chart, spec.profile, spec.harness_values)
    if chart == "slurm-bridge":
        url = "http://slurm-cluster-abcdefghij-restapi.slurm:6820"
        values = merge(values, {"sharedConfig": {"slurmRestApi": url}})
    assert _render(chart, values, tmp_path)


def test_slurm_cluster_gets_the_bridge_partition_on_the_bridge_worker(
    spec: PlanInput, tmp_path: Path
) -> None:
    """The profile's cluster plus the harness's bridge NodeSet: its partition is on, its pods tolerate the taint."""
    values, _ = chart_values("slurm-cluster", spec.profile, spec.harness_values)
    text = yaml.safe_dump_all(_render("slurm-cluster", values, tmp_path))
    assert re.search(r"PartitionName=slurm-bridge Nodes=bridge\b", text)
    bridge = values["nodesets"]["bridge"]
    assert bridge["podSpec"]["nodeSelector"] == {
        "scheduler.slinky.slurm.net/slurm-bridge": "worker"
    }
    assert {"key": MANAGED_NODE_TAINT, "operator": "Exists", "effect": "NoExecute"} in bridge[
        "podSpec"
    ]["tolerations"]


def test_labeler_image_is_the_one_the_chart_renders(spec: PlanInput, tmp_path: Path) -> None:
    values, _ = chart_values("gpu-topology-labeler", spec.profile, spec.harness_values)
    docs = _render("gpu-topology-labeler", values, tmp_path)
    images = {
        c["image"]
        for d in docs
        if d["kind"] in ("Deployment", "DaemonSet")
        for c in d["spec"]["template"]["spec"]["containers"]
    }
    built = image_ref(
        spec.chart_defaults["gpu-topology-labeler"],
        values,
        spec.app_versions["gpu-topology-labeler"],
    )
    assert images == {built}


def test_bridge_scheduler_name_reaches_the_rendered_scheduler_config(
    spec: PlanInput, tmp_path: Path
) -> None:
    values, _ = chart_values("slurm-bridge", spec.profile, spec.harness_values)
    docs = _render("slurm-bridge", values, tmp_path)
    text = yaml.safe_dump_all(d for d in docs if d["kind"] == "ConfigMap")
    assert f"schedulerName: {scheduler_name(values)}" in text


def test_stage_chart_replaces_ci_with_the_kind_values(tmp_path: Path) -> None:
    source = charts.CHARTS_DIR / "gpu-topology-labeler"
    step = StageChart("s", source, tmp_path / "labeler", {"topology": {"preset": "gfd"}})
    kind.stage_chart(step)
    assert [p.name for p in (tmp_path / "labeler" / "ci").iterdir()] == ["kind-values.yaml"]
    assert yaml.safe_load((tmp_path / "labeler" / "ci" / "kind-values.yaml").read_text()) == {
        "topology": {"preset": "gfd"}
    }
    assert (tmp_path / "labeler" / "Chart.yaml").read_bytes() == (
        source / "Chart.yaml"
    ).read_bytes()


# --- executor --------------------------------------------------------------------------------------


def _sh(script: str) -> tuple[str, ...]:
    return ("sh", "-c", script)


def test_execute_captures_substitutes_and_polls(tmp_path: Path) -> None:
    counter = tmp_path / "n"
    counter.write_text("0")
    steps: list[Step] = [
        Run("id", _sh("echo 'Submitted 17'"), capture="job", pattern=r"(\d+)"),
        Poll(
            "wait",
            _sh(
                f'n=$(($(cat {counter}) + 1)); echo $n > {counter}; [ $n -ge 3 ] && echo "done node-b"'
            ),
            until=r"done (\S+)",
            capture="where",
        ),
        Run("use", ("sh", "-c", 'test "$0" = 17 && test "$1" = node-b', "${job}", "${where}")),
    ]
    slept: list[float] = []
    found = kind.execute(steps, dict(os.environ), lambda _: None, slept.append)
    assert found["job"] == "17"
    assert counter.read_text().strip() == "3" and len(slept) == 2


def test_execute_stops_at_the_first_failure_with_its_output() -> None:
    steps: list[Step] = [
        Run("breaks", _sh("echo boom >&2; exit 3")),
        Run("never", _sh("exit 0")),
    ]
    with pytest.raises(KindError, match=r"breaks: exit 3: boom"):
        kind.execute(steps, dict(os.environ), lambda _: None)


def test_poll_fail_pattern_and_timeout() -> None:
    failing = Poll("job", _sh("echo JobState=FAILED"), until="COMPLETED", fail=JOB_FAILED)
    with pytest.raises(KindError, match="JobState=FAILED"):
        kind.execute([failing], dict(os.environ), lambda _: None, lambda _: None)
    never = Poll("slow", _sh("echo PENDING"), until="COMPLETED", timeout=0)
    with pytest.raises(KindError, match="not reached in 0s; last output: PENDING"):
        kind.execute([never], dict(os.environ), lambda _: None, lambda _: None)


def test_execute_names_a_missing_command() -> None:
    with pytest.raises(KindError, match="cannot run no-such-command-here"):
        kind.execute([Run("x", ("no-such-command-here",))], dict(os.environ), lambda _: None)


def test_execute_refuses_a_variable_nobody_captured() -> None:
    with pytest.raises(KindError, match=r"\$\{nope\} before a step captured it"):
        kind.execute([Run("x", ("echo", "${nope}"))], dict(os.environ), lambda _: None)


# --- without Docker or kind: one line, exit 0, no pass claimed ------------------------------------


def _run_module(tmp_path: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": path,
        "HOME": str(tmp_path),
        "SLINKY_SUITE_CACHE": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(paths.REPO_ROOT / "scripts"), str(paths.REPO_ROOT)]),
    }
    return subprocess.run(
        [sys.executable, "-m", "slinky_harness.apps.kind", "--name", "nodocker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _assert_one_line_not_run(proc: subprocess.CompletedProcess[str], reason: str) -> None:
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    assert proc.stderr == ""
    (line,) = lines
    assert line.startswith("kind tier not run: ")
    assert reason in line
    assert "nothing was tested" in line
    assert not re.search(r"\b(pass|passed|ok)\b", line, re.IGNORECASE)


def test_without_docker_on_path_one_line_and_exit_0(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    proc = _run_module(tmp_path, str(empty))
    _assert_one_line_not_run(proc, "no docker command on PATH")
    assert "https://docs.docker.com/engine/install/" in proc.stdout


def test_docker_without_an_engine_one_line_and_exit_0(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    docker = bindir / "docker"
    docker.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    docker.chmod(0o755)
    proc = _run_module(tmp_path, f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    _assert_one_line_not_run(proc, "reaches no engine (Cannot connect to the Docker daemon)")


def test_docker_but_no_kind_and_no_go_one_line_and_exit_0(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    docker = bindir / "docker"
    docker.write_text("#!/bin/sh\necho 29.0.0\n")
    docker.chmod(0o755)
    proc = _run_module(tmp_path, str(bindir))
    _assert_one_line_not_run(proc, "kind v0.33.0 is not on PATH and there is no go to build it")
    assert "go install sigs.k8s.io/kind@v0.33.0" in proc.stdout


def test_bad_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        kind.main(["--name", "Not_A_Label"])
    assert info.value.code == 2
    assert "--name must be a lower-case DNS label" in capsys.readouterr().err


# --- main() end to end against stand-in commands -----------------------------------------------------

FAKE = r"""#!/bin/sh
echo "$(basename "$0") $*" >> "$FAKE_LOG"
case "$(basename "$0") $*" in
  "kubectl get node "*allocatable*) echo 8 ;;
  "kubectl get node "*annotations*) echo "fabric:s1,nvlink:d1" ;;
  "kubectl get pods "*component=login*) echo slurm-login-0 ;;
  *" sinfo "*) printf 'idle\nidle\n' ;;
  *" srun "*) echo compute-0 ;;
  *" sbatch "*) echo 42 ;;
  *" scontrol show job 42") echo "JobId=42 JobState=$JOB_STATE Reason=None" ;;
  "kubectl get pod -n default slurm-bridge-probe"*) echo "Succeeded t1-worker2" ;;
  "helm list "*) echo slurm-cluster-ab12cd34ef ;;
  "kubectl apply -f -") cat > /dev/null ;;
  "python -m pytest "*) echo "target $SLINKY_REAL_PODS $KUBECONFIG" >> "$FAKE_LOG"; echo "$PYTEST_OUT" ;;
esac
exit 0
"""


def _fake_tools(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    job_state: str,
    pytest_out: str = "===== 12 passed in 301.5s =====",
) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("kind", "kubectl", "helm", "ct", "docker", "python"):
        (bindir / name).write_text(FAKE)
        (bindir / name).chmod(0o755)
    log = tmp_path / "commands.log"
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("JOB_STATE", job_state)
    monkeypatch.setenv("PYTEST_OUT", pytest_out)
    monkeypatch.setattr(kind, "ensure_images", lambda: images.Archives(*ARCHIVES))
    monkeypatch.setattr(kind, "docker_missing", lambda: None)
    monkeypatch.setattr(kind, "ensure_kind", lambda: bindir / "kind")

    def tool_env(names: Any) -> dict[str, str]:
        return {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}

    monkeypatch.setattr(toolchain, "tool_env", tool_env)
    return log


def test_main_runs_the_plan_in_order_and_deletes_the_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _fake_tools(tmp_path, monkeypatch, "COMPLETED")
    assert kind.main(["--name", NAME]) == 0
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and out.startswith(f"kind: suite installed and tested on {NAME}")
    commands = log.read_text().splitlines()
    assert commands[0].startswith(f"kind create cluster --name {NAME}")
    assert commands[-2:] == [
        f"kind delete cluster --name {NAME}",
        f"kind delete cluster --name {NAME}-pods",
    ]
    assert any("scontrol show job 42" in c for c in commands)
    bridge = next(c for c in commands if c.startswith("ct install") and "slurm-bridge" in c)
    assert bridge.endswith(
        "--set=sharedConfig.slurmRestApi=http://slurm-cluster-ab12cd34ef-restapi.slurm:6820"
    )
    assert "exec -n slurm slurm-login-0 -- sbatch" in "\n".join(commands)
    assert (
        err.count("kind: [")
        == len(build_plan(kind.plan_input(NAME, tmp_path, False, ARCHIVES))[0]) + 2
    )


def test_main_failure_is_one_error_line_and_still_deletes_the_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _fake_tools(tmp_path, monkeypatch, "FAILED")
    assert kind.main(["--name", NAME]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors == [
        "error: the batch job completes (scontrol show job): JobId=42 JobState=FAILED Reason=None"
    ]
    commands = log.read_text().splitlines()
    assert commands[-2:] == [
        f"kind delete cluster --name {NAME}",
        f"kind delete cluster --name {NAME}-pods",
    ]
    assert not any("slurm-bridge-probe" in c for c in commands), "stops at the first failure"


def test_main_keep_leaves_the_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _fake_tools(tmp_path, monkeypatch, "COMPLETED")
    assert kind.main(["--name", NAME, "--keep"]) == 0
    assert "clusters kept, KUBECONFIG=" in capsys.readouterr().out
    assert not any(c.startswith("kind delete") for c in log.read_text().splitlines())


def test_staged_operator_brings_its_crds_chart(tmp_path: Path) -> None:
    """The staged slurm-operator holds its CRDs chart as a real folder and finds the chart its
    ``file://../slurm-operator-crds`` names beside it (ct's ``helm dependency build`` resolves it);
    no ``ci/`` but the kind scenario is staged."""
    source = charts.CHARTS_DIR / "slurm-operator"
    dest = tmp_path / "charts" / "slurm-operator"
    kind.stage_chart(StageChart("stage", source, dest, {"crds": {"keep": False}}))
    inside = dest / "charts" / "slurm-operator-crds"
    assert inside.is_dir() and not inside.is_symlink()
    assert (inside / "files" / "crds").is_dir()
    beside = tmp_path / "charts" / "slurm-operator-crds"
    assert (beside / "Chart.yaml").is_file() and not (beside / "ci").exists()
    assert sorted(p.name for p in (dest / "ci").iterdir()) == ["kind-values.yaml"]
    result = helm_client.run(["dependency", "list", str(dest)])
    assert result.ok, result.describe()
    assert "slurm-operator-crds" in result.stdout and "unpacked" in result.stdout, result.stdout


def test_main_loads_the_archives_and_reports_the_real_pod_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The archives ensure_images returns are loaded into ``<name>-pods``; pytest runs against it
    with the kind target; the last line carries pytest's own summary."""
    log = _fake_tools(tmp_path, monkeypatch, "COMPLETED")
    assert kind.main(["--name", NAME]) == 0
    out, _ = capsys.readouterr()
    assert f"real-pod tests on {NAME}-pods: 12 passed in 301.5s" in out
    commands = log.read_text().splitlines()
    loads = [c for c in commands if c.startswith("kind load image-archive")]
    assert loads == [f"kind load image-archive {a} --name {NAME}-pods" for a in ARCHIVES]
    target = next(c for c in commands if c.startswith("target "))
    assert target.startswith(f"target kind:{NAME}-pods ")
    assert target.endswith("/kubeconfig-pods")
    assert commands.index(loads[-1]) < commands.index(target)


def test_main_fails_when_no_real_pod_test_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pytest exiting 0 with every test skipped is not a pass: one error line, exit 1."""
    _fake_tools(tmp_path, monkeypatch, "COMPLETED", pytest_out="===== 12 skipped in 0.4s =====")
    assert kind.main(["--name", NAME]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "real-pod tests on" in errors[0] and "12 skipped" in errors[0]


def test_main_names_an_image_build_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _fake_tools(tmp_path, monkeypatch, "COMPLETED")

    def fail() -> images.Archives:
        raise images.ImagesError("the sid chroot needs root")

    monkeypatch.setattr(kind, "ensure_images", fail)
    assert kind.main(["--name", NAME]) == 1
    assert "error: the sid chroot needs root" in capsys.readouterr().err
    assert not log.exists() or not any(
        c.startswith("kind create") for c in log.read_text().splitlines()
    )
