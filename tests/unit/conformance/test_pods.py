"""The pods phase's pure parts: the values cut to fit one real node (every override said), the
NodeSets whose GPUs keep them off real pods, whether a real node can run here, ``--real-pods``,
and the report naming the phase that ran on real pods."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, cast

import pytest
import yaml
from junitparser import JUnitXml, Skipped

from slinky_conformance import cli
from slinky_conformance.report import Report, StepResult, render_text, write_junit
from slinky_conformance.steps.pods import overrides
from slinky_conformance.steps.pods.run import node_states
from slinky_conformance.target import resolve
from slinky_harness.core.paths import REPO_ROOT
from slinky_harness.k8s import realpods

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

KIND = REPO_ROOT / "values" / "kind.yaml"
NODE = "realnode"
ON_NODE = {"kubernetes.io/hostname": NODE}


def _chart_target(tmp_path: Path, values: dict[str, Any]) -> Any:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    return resolve([path], chart="slurm-cluster")


def test_a_profile_is_cut_to_one_node_and_every_cut_is_said() -> None:
    """values/kind.yaml on a cgroup v1 host: every Slurm pod selects the real node only, one
    slurmd of the compute NodeSet, no persistence, cgroup plugins off; each change is a line
    naming the umbrella's values path."""
    plan = overrides.cluster_plan(resolve([KIND]), NODE, cgroup_v2=False)
    values = plan.cluster_values
    assert [(n.name, n.nodes, n.not_run) for n in plan.nodesets] == [
        ("compute", ("compute-0",), "")
    ]
    for spec in (
        values["controller"]["podSpec"],
        values["restapi"]["podSpec"],
        values["loginsetDefaults"]["podSpec"],
        values["loginsets"]["login"]["podSpec"],
        values["nodesetDefaults"]["podSpec"],
        values["nodesets"]["compute"]["podSpec"],
    ):
        assert spec["nodeSelector"] == ON_NODE, spec
    assert values["nodesetDefaults"]["oversubscribeNode"] is True
    assert values["controller"]["persistence"]["enabled"] is False
    assert values["configFiles"]["cgroup.conf"] == "CgroupPlugin=disabled\n"
    assert values["controller"]["extraConfMap"]["TaskPlugin"] == "task/none"
    assert values["nodesets"]["compute"]["slurmd"]["resources"] == {
        "requests": {"cpu": "50m", "memory": "64Mi"}
    }
    said = "\n".join(plan.overrides)
    for path in (
        "slurm-cluster.nodesetDefaults.oversubscribeNode",
        "slurm-cluster.controller.persistence.enabled",
        'slurm-cluster.configFiles["cgroup.conf"]',
        "kubernetes.io/hostname=realnode",
    ):
        assert path in said, said
    assert plan.operator_values["operator"]["nodeSelector"] == ON_NODE
    assert plan.operator_values["webhook"]["nodeSelector"] == ON_NODE
    assert plan.operator_values["certManager"]["enabled"] is False


def test_a_pure_cgroup_v2_host_keeps_slurms_cgroup_plugin() -> None:
    plan = overrides.cluster_plan(resolve([KIND]), NODE, cgroup_v2=True)
    assert "cgroup.conf" not in (plan.cluster_values.get("configFiles") or {})
    assert "TaskPlugin" not in (plan.cluster_values["controller"].get("extraConfMap") or {})
    assert not any("cgroup" in line for line in plan.overrides), plan.overrides


def test_nodesets_with_gres_run_no_pod_and_say_why(tmp_path: Path) -> None:
    """A NodeSet declaring GPUs (gpu.count) or other GRES (extraConfMap.Gres) gets no slurmd on
    the real node and its reason names the values path; a CPU NodeSet with three replicas is cut
    to one, said; a disabled NodeSet is not planned at all."""
    target = _chart_target(
        tmp_path,
        {
            "nodesets": {
                "h100": {"replicas": 4, "gpu": {"count": 8, "type": "h100"}},
                "emu": {"extraConfMap": {"Gres": "gpu:emu:2"}},
                "cpu": {"replicas": 3},
                "off": {"enabled": False},
            }
        },
    )
    plan = overrides.cluster_plan(target, NODE, cgroup_v2=True)
    by_name = {n.name: n for n in plan.nodesets}
    assert sorted(by_name) == ["cpu", "emu", "h100"]
    assert by_name["cpu"].nodes == ("cpu-0",) and not by_name["cpu"].not_run
    assert by_name["h100"].nodes == () and "nodesets.h100.gpu.count" in by_name["h100"].not_run
    assert by_name["emu"].nodes == () and "nodesets.emu.extraConfMap.Gres" in by_name["emu"].not_run
    nodesets = plan.cluster_values["nodesets"]
    assert (nodesets["h100"]["replicas"], nodesets["emu"]["replicas"]) == (0, 0)
    assert nodesets["cpu"]["replicas"] == 1
    assert plan.slurmd_count() == 1
    assert nodesets["h100"]["podSpec"]["nodeSelector"] == {overrides.NO_NODE_LABEL: "true"}
    assert "nodesets.cpu.replicas: 3 -> 1" in plan.overrides
    assert any(line.startswith("nodesets.h100.replicas: 4 -> 0, no pod") for line in plan.overrides)


@pytest.mark.parametrize(
    ("nodeset", "key"),
    [
        ({}, ""),
        ({"gpu": {"count": 0}}, ""),
        ({"gpu": {"count": 2}}, "gpu.count"),
        ({"gpu": {"gres": "gpu:a100:4"}}, "gpu.gres"),
        ({"gpu": {"dra": "gpus"}}, "gpu.dra"),
        ({"extraConfMap": {"gres": "nic:1"}}, "extraConfMap.Gres"),
        ({"extraConf": "Features=ib Gres=gpu:1"}, "extraConf"),
        ({"extraConf": "Features=gres"}, ""),
    ],
)
def test_gpu_declared_names_the_key(nodeset: dict[str, Any], key: str) -> None:
    assert overrides.gpu_declared(nodeset) == key


def test_extra_conf_gets_the_cgroup_lines_when_the_values_use_it(tmp_path: Path) -> None:
    """``controller.extraConf`` wins over ``extraConfMap`` in the chart: the settings go there,
    a line setting the same option replaced."""
    target = _chart_target(
        tmp_path, {"controller": {"extraConf": "TaskPlugin=task/affinity\nMaxJobCount=100"}}
    )
    plan = overrides.cluster_plan(target, NODE, cgroup_v2=False)
    lines = plan.cluster_values["controller"]["extraConf"].splitlines()
    assert lines == ["MaxJobCount=100", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none"]


def test_a_real_node_needs_linux_root_and_its_tools() -> None:
    def has(tool: str) -> str | None:
        return f"/usr/bin/{tool}"

    assert realpods.unavailable({}, platform="linux", euid=0, which=has) is None
    darwin = realpods.unavailable({}, platform="darwin", euid=0, which=has)
    assert darwin is not None and "Linux" in darwin
    user = realpods.unavailable({}, platform="linux", euid=1000, which=has)
    assert user is not None and "root" in user
    no_ip = realpods.unavailable(
        {}, platform="linux", euid=0, which=lambda t: None if t == "ip" else has(t)
    )
    assert no_ip is not None and "ip" in no_ip.split("needs ", 1)[1]
    # a kind worker needs none of it; a misnamed target is the reason itself
    kind = {realpods.TARGET_ENV: "kind:ci"}
    assert realpods.unavailable(kind, platform="darwin", euid=1000, which=has) is None
    bad = realpods.unavailable({realpods.TARGET_ENV: "docker"}, platform="linux", euid=0)
    assert bad is not None and "kind:<cluster name>" in bad


@pytest.mark.parametrize(
    ("mounts", "v2"),
    [
        ("cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n", True),
        (
            "tmpfs /sys/fs/cgroup tmpfs rw 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
            "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n",
            False,
        ),
        ("proc /proc proc rw 0 0\n", False),
    ],
    ids=["pure-v2", "hybrid", "none"],
)
def test_cgroup_v2_only_reads_the_mount_table(mounts: str, v2: bool) -> None:
    assert realpods.cgroup_v2_only(mounts) is v2


def test_sinfo_lines_give_each_nodes_state_and_partitions_default_first() -> None:
    text = "compute-0 idle debug\ncompute-0 idle all*\ngpu-0 down* gpu\nbad line\n"
    assert node_states(text) == {
        "compute-0": ("idle", ["all", "debug"]),
        "gpu-0": ("down*", ["gpu"]),
    }


PHASES = ["static", "live", "slurm", "pods"]


def test_real_pods_flag_decides_the_pods_phase() -> None:
    assert cli.pods_not_run("auto", PHASES, None) is None
    assert cli.pods_not_run("auto", PHASES, "needs root") == "no real node here: needs root"
    assert cli.pods_not_run("never", PHASES, None) == "left out with --real-pods never"
    assert cli.pods_not_run("auto", PHASES[:3], None) == "left out with --phases"
    with pytest.raises(cli.UsageError, match="--real-pods always: no real node here: needs root"):
        cli.pods_not_run("always", PHASES, "needs root")
    with pytest.raises(cli.UsageError, match="leaves out the pods phase"):
        cli.pods_not_run("always", PHASES[:3], None)


def test_real_pods_flag_takes_three_words(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.build_parser().parse_args(["--real-pods", "never"]).real_pods == "never"
    assert cli.build_parser().parse_args([]).real_pods == "auto"
    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args(["--real-pods", "sometimes"])
    assert exc.value.code == 2
    assert "--real-pods" in capsys.readouterr().err


def test_always_without_a_real_node_is_refused_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(realpods, "unavailable", lambda: "the real node needs root")
    code = cli.main(["-f", str(KIND), "--phases", "pods", "--real-pods", "always"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--real-pods always: no real node here: the real node needs root" in err


def test_auto_without_a_real_node_reports_the_phase_not_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing of the pods phase runs, and the report says so with the reason: never a pass."""
    monkeypatch.setattr(realpods, "unavailable", lambda: "the real node needs root")
    code = cli.main(["-f", str(KIND), "--phases", "pods"])
    out = capsys.readouterr().out
    assert "pods: not run (no real node here: the real node needs root)" in out, out
    assert "PASS" not in out and code == 1, out


def _pods_report() -> Report:
    report = Report("v")
    report.results = [
        StepResult("slurm", "load", "pass", "ok"),
        StepResult("pods", "node", "pass", "up"),
        StepResult("pods", "jobs", "pass", "one job ran on each of 1 NodeSets"),
    ]
    report.real_pods = {"pods": "real pods on node realnode (kubelet, containerd, runc)"}
    return report


def test_report_names_the_phase_that_ran_on_real_pods(tmp_path: Path) -> None:
    """The text report's pods header and the pods suite's ``real-pods`` property name the node
    and the runtime; the slurm phase (a chroot) carries neither."""
    text = render_text(_pods_report())
    assert "\npods (on real pods on node realnode (kubelet, containerd, runc)):\n" in text, text
    assert "\nslurm:\n" in text, text
    path = tmp_path / "r.xml"
    write_junit(_pods_report(), path)
    suites = {suite.name: suite for suite in JUnitXml.fromfile(str(path))}
    pods = {p.name: p.value for p in suites["conformance.pods"].properties()}  # type: ignore[no-untyped-call]
    assert pods == {"real-pods": "real pods on node realnode (kubelet, containerd, runc)"}
    assert list(suites["conformance.slurm"].properties()) == []  # type: ignore[no-untyped-call]


def test_a_pods_phase_not_run_is_a_skipped_suite_with_its_reason(tmp_path: Path) -> None:
    report = Report("v")
    report.results = [StepResult("static", "schema", "pass", "ok")]
    report.not_run = {"pods": "no real node here: needs root"}
    text = render_text(report)
    assert "pods: not run (no real node here: needs root)" in text
    assert "not a full conformance check" in text.splitlines()[-1]
    path = tmp_path / "r.xml"
    write_junit(report, path)
    suites = {suite.name: suite for suite in JUnitXml.fromfile(str(path))}
    [case] = list(suites["conformance.pods"])
    [skipped] = case.result
    assert isinstance(skipped, Skipped)
    assert skipped.message == "not run: no real node here: needs root"


def _noxfile_function(name: str) -> Callable[..., Any]:
    tree = ast.parse((REPO_ROOT / "noxfile.py").read_text())
    (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    space: dict[str, Any] = {"os": __import__("os"), "sys": __import__("sys")}
    exec(compile(ast.Module([node], []), "noxfile.py", "exec"), space)
    return cast("Callable[..., Any]", space[name])


@pytest.mark.parametrize(
    ("args", "root", "builds"),
    [
        ([], True, True),
        ([], False, False),
        (["--phases", "static"], True, False),
        (["--phases=static,pods"], True, True),
        (["--real-pods", "never"], True, False),
        (["--real-pods=always"], False, True),
        (["--phases", "pods"], True, True),
    ],
)
def test_nox_conformance_builds_the_images_when_the_pods_phase_may_run(
    args: list[str], root: bool, builds: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(realpods.TARGET_ENV, raising=False)
    assert _noxfile_function("conformance_pods")(args, root=root) is builds
