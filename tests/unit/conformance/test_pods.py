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


SMALL = {"cpu": "50m", "memory": "64Mi"}


def _gpu_plan(tmp_path: Path, values: dict[str, Any], node: str = NODE) -> overrides.Plan:
    return overrides.cluster_plan(_chart_target(tmp_path, values), node, cgroup_v2=True)


def test_gpu_nodesets_run_with_emulated_device_files(tmp_path: Path) -> None:
    """Each NodeSet's GPUs, wherever the values declare them (gpu.count/type, gpu.gres,
    extraConfMap.Gres, several types in extraConf), become that many device files in its slurmd
    pod and gres.conf File= lines for its Slurm node, numbered on per type; its job asks for one
    GPU of the first type; the chart's device-plugin limit is 0 (a NodeSet whose GPUs are only
    in Gres gets none); a CPU NodeSet is cut to one replica, a disabled one is not planned."""
    plan = _gpu_plan(
        tmp_path,
        {
            "nodesets": {
                "h100": {"replicas": 4, "gpu": {"count": 8, "type": "h100"}},
                "amd": {"gpu": {"vendor": "amd", "gres": "gpu:mi300x:4"}},
                "emu": {"extraConfMap": {"Gres": "gpu:emu:2"}},
                "mixed": {"extraConf": "Features=x Gres=gpu:a100:1,gpu:t4:2"},
                "cpu": {"replicas": 3, "ordinalPadding": 2},
                "off": {"enabled": False, "gpu": {"count": 1}},
            }
        },
    )
    planned = {n.name: (n.nodes, n.gres, n.not_run) for n in plan.nodesets}
    assert planned == {
        "amd": (("amd-0",), "gpu:mi300x:1", ""),
        "cpu": (("cpu-00",), "", ""),
        "emu": (("emu-0",), "gpu:emu:1", ""),
        "h100": (("h100-0",), "gpu:h100:1", ""),
        "mixed": (("mixed-0",), "gpu:a100:1", ""),
    }
    values = plan.cluster_values
    assert values["configFiles"]["gres.conf"].splitlines() == [
        "NodeName=amd-0 Name=gpu Type=mi300x File=/dev/emu-gpu/gpu[0-3]",
        "NodeName=emu-0 Name=gpu Type=emu File=/dev/emu-gpu/gpu[0-1]",
        "NodeName=h100-0 Name=gpu Type=h100 File=/dev/emu-gpu/gpu[0-7]",
        "NodeName=mixed-0 Name=gpu Type=a100 File=/dev/emu-gpu/gpu0",
        "NodeName=mixed-0 Name=gpu Type=t4 File=/dev/emu-gpu/gpu[1-2]",
    ]
    nodesets = values["nodesets"]
    assert nodesets["h100"]["gpu"] == {"count": 8, "type": "h100"}
    assert nodesets["h100"]["replicas"] == 1 and nodesets["cpu"]["replicas"] == 1
    assert nodesets["h100"]["slurmd"]["resources"] == {
        "requests": SMALL,
        "limits": {"nvidia.com/gpu": 0},
    }
    assert nodesets["amd"]["slurmd"]["resources"]["limits"] == {"amd.com/gpu": 0}
    assert "limits" not in nodesets["emu"]["slurmd"]["resources"]
    for name, count in (("h100", 8), ("mixed", 3)):
        spec = nodesets[name]["podSpec"]
        assert spec["nodeSelector"] == ON_NODE
        (init,) = spec["initContainers"]
        assert init["securityContext"] == {"privileged": True}
        assert f"-lt {count} ]" in init["command"][-1], init
        (volume,) = spec["volumes"]
        assert volume["emptyDir"] == {}
        mounts = nodesets[name]["slurmd"]["volumeMounts"]
        assert mounts == [{"name": volume["name"], "mountPath": "/dev/emu-gpu"}]
    said = "\n".join(plan.overrides)
    for line in (
        "nodesets.h100: 8 emulated GPU device files",
        "Gres=gpu:h100:8, as declared in nodesets.h100.gpu.count",
        "Gres=gpu:a100:1,gpu:t4:2, as declared in nodesets.mixed.extraConf",
        "nodesets.h100.slurmd.resources.limits: nvidia.com/gpu: 0",
        'configFiles["gres.conf"]: the emulated GPUs\' File= lines in place of the generated '
        "AutoDetect",
        "nodesets.cpu.replicas: 3 -> 1",
    ):
        assert line in said, said


def test_gres_that_cannot_be_emulated_keeps_the_nodeset_off_real_pods(tmp_path: Path) -> None:
    """GPUs through DRA and GRES other than gpu (a shard beside GPUs, a NIC) get no slurmd on the
    real node: replicas 0, a node selector no node matches, and the reason names the values
    path and what cannot be emulated."""
    plan = _gpu_plan(
        tmp_path,
        {
            "nodesets": {
                "claimed": {"replicas": 2, "gpu": {"count": 2, "dra": "gpu-claim"}},
                "shared": {"extraConfMap": {"Gres": "gpu:1,shard:4"}},
                "nic": {"extraConf": "Gres=nic:2"},
            }
        },
    )
    why = {n.name: (n.nodes, n.not_run) for n in plan.nodesets}
    assert why["claimed"][0] == () and "nodesets.claimed.gpu.dra" in why["claimed"][1]
    assert "DRA (gpu.dra: gpu-claim)" in why["claimed"][1]
    assert "nodesets.shared.extraConfMap.Gres" in why["shared"][1]
    assert "'shard:4'" in why["shared"][1]
    assert "'nic:2'" in why["nic"][1] and "nodesets.nic.extraConf" in why["nic"][1]
    nodesets = plan.cluster_values["nodesets"]
    for name in ("claimed", "shared", "nic"):
        assert nodesets[name]["replicas"] == 0
        assert nodesets[name]["podSpec"]["nodeSelector"] == {overrides.NO_NODE_LABEL: "true"}
        assert "initContainers" not in nodesets[name]["podSpec"]
    assert "gres.conf" not in (plan.cluster_values.get("configFiles") or {})
    assert plan.slurmd_count() == 0
    assert any(
        line.startswith("nodesets.claimed.replicas: 2 -> 0, no pod") for line in plan.overrides
    )


def test_a_daemonset_nodesets_slurm_node_is_the_real_nodes_name(tmp_path: Path) -> None:
    """The operator names a DaemonSet's slurmd after its Kubernetes node (up to the first dot):
    the plan waits for that name and gres.conf names it; a second DaemonSet NodeSet would take
    the same name, so it runs no pod, said."""
    plan = _gpu_plan(
        tmp_path,
        {
            "nodesets": {
                "dgx": {"scalingMode": "DaemonSet", "gpu": {"count": 8, "type": "h100"}},
                "edge": {"scalingMode": "DaemonSet"},
            }
        },
        node="realnode.local",
    )
    planned = {n.name: (n.nodes, n.gres) for n in plan.nodesets}
    assert planned["dgx"] == (("realnode",), "gpu:h100:1")
    assert planned["edge"][0] == ()
    edge = next(n for n in plan.nodesets if n.name == "edge")
    assert "second DaemonSet" in edge.not_run and "realnode of dgx" in edge.not_run
    assert plan.cluster_values["configFiles"]["gres.conf"] == (
        "NodeName=realnode Name=gpu Type=h100 File=/dev/emu-gpu/gpu[0-7]\n"
    )


def test_the_users_gres_conf_keeps_the_lines_that_need_no_gpus(tmp_path: Path) -> None:
    """A gres.conf of the values: AutoDetect, GPU and File= lines (real hardware) give way to the
    emulated GPUs' lines, each dropped line said; a count-only GRES line stays."""
    given = (
        "AutoDetect=nvml\n"
        "NodeName=h100-[0-3] Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"
        "NodeName=io-[0-9] Name=bw Type=lustre Count=4G Flags=CountOnly\n"
    )
    plan = _gpu_plan(
        tmp_path,
        {
            "configFiles": {"gres.conf": given},
            "nodesets": {"h100": {"gpu": {"count": 2, "type": "h100"}}},
        },
    )
    assert plan.cluster_values["configFiles"]["gres.conf"].splitlines() == [
        "NodeName=h100-0 Name=gpu Type=h100 File=/dev/emu-gpu/gpu[0-1]",
        "NodeName=io-[0-9] Name=bw Type=lustre Count=4G Flags=CountOnly",
    ]
    line = next(o for o in plan.overrides if o.startswith('configFiles["gres.conf"]'))
    assert "AutoDetect=nvml; NodeName=h100-[0-3] Name=gpu Type=h100 File=/dev/nvidia[0-7]" in line


def test_gres_weights_go_with_accounting(tmp_path: Path) -> None:
    """Accounting off on the real node: a GRES weight of scheduling.priority.weightTRES would be
    refused by the chart (no GRES tracked), so it goes, the other weights stay, said."""
    plan = _gpu_plan(
        tmp_path,
        {
            "accounting": {"enabled": True},
            "scheduling": {"priority": {"weightTRES": "CPU=1000,GRES/gpu=8000,Mem=2000"}},
            "nodesets": {"h100": {"gpu": {"count": 8}}},
        },
    )
    assert plan.cluster_values["scheduling"]["priority"]["weightTRES"] == "CPU=1000,Mem=2000"
    assert (
        "scheduling.priority.weightTRES: CPU=1000,GRES/gpu=8000,Mem=2000 -> CPU=1000,Mem=2000"
        in "\n".join(plan.overrides)
    )


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("gpu", ("", 1)),
        ("gpu:4", ("", 4)),
        ("gpu:h100", ("h100", 1)),
        ("gpu:h100:8", ("h100", 8)),
        ("gpu:h100:8(S:0-1)", None),
        ("gpu:a:b:1", None),
        ("shard:4", None),
        ("mps:100", None),
    ],
)
def test_a_gres_item_is_read_as_slurm_reads_it(
    text: str, parsed: tuple[str, int] | None, tmp_path: Path
) -> None:
    """An extraConfMap.Gres item is emulated (type, count) exactly when it is gpu[:type][:count]."""
    plan = _gpu_plan(tmp_path, {"nodesets": {"n": {"extraConfMap": {"Gres": text}}}})
    (nodeset,) = plan.nodesets
    if parsed is None:
        assert nodeset.not_run and repr(text) in nodeset.not_run
        return
    kind, count = parsed
    assert not nodeset.not_run
    last = count - 1
    files = "gpu0" if count == 1 else f"gpu[0-{last}]"
    line = f"NodeName=n-0 Name=gpu{' Type=' + kind if kind else ''} File=/dev/emu-gpu/{files}"
    assert plan.cluster_values["configFiles"]["gres.conf"] == line + "\n"


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
