"""The slurm phase's pure parts: a Slurm log line traced to the values that produced it, and
the accounting host check (no Slurm, no cluster: tests/slurm/test_conformance_slurm.py runs the
steps on a real slurmctld)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from slinky_conformance import trace
from slinky_conformance.context import Context
from slinky_conformance.steps.slurm import accounting, load
from slinky_conformance.target import Target, resolve
from slinky_harness.slurm import release

if TYPE_CHECKING:
    from pathlib import Path

LOG = "[2026-12-02T01:37:36.714] error: "


def umbrella(tmp_path: Path, block: dict[str, Any]) -> Target:
    import yaml  # noqa: PLC0415

    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"slurm-cluster": block}))
    return resolve([values])


@pytest.mark.parametrize(
    ("block", "option", "value", "expected"),
    [
        pytest.param(
            {"controller": {"extraConfMap": {"MaxJobCnt": 5}}}, "MaxJobCnt", None,
            [("controller", "extraConfMap", "MaxJobCnt")], id="conf-map-key",
        ),
        pytest.param(
            {"controller": {"extraConf": "MinJobAge=1\nmaxjobcnt=5\n"}}, "MaxJobCnt", None,
            [("controller", "extraConf")], id="raw-text-any-case",
        ),
        pytest.param(
            {"nodesets": {"a": {"partition": {"config": "MaxTime=1:00"}}},
             "partitions": {"b": {"config": "Default=YES MaxTime=forever"}}},
            "MaxTime", "forever",
            [("partitions", "b", "config"), ("nodesets", "a", "partition", "config")],
            id="the-text-holding-the-value-first",
        ),
        pytest.param(
            {"scheduling": {"preemption": {"type": "preempt/qos"}}}, "PreemptType", None,
            [("scheduling", "preemption", "type")], id="structured-scheduling-key",
        ),
        pytest.param(
            {"scheduling": {"preset": "fifo"}}, "PreemptType", None, [],
            id="structured-key-the-user-did-not-set",
        ),
        pytest.param(
            {"accounting": {"extraConfMap": {"MaxJobCnt": 5}}}, "MaxJobCnt", None, [],
            id="slurmdbd-options-left-out",
        ),
        pytest.param(
            {"configFiles": {"gres.conf": "NodeName=x Name=gpu Frob=1\n"}}, "Frob", None,
            [("configFiles", "gres.conf")], id="config-file-text",
        ),
    ],
)  # fmt: skip
def test_option_paths(
    block: dict[str, Any], option: str, value: str | None, expected: list[tuple[str, ...]]
) -> None:
    assert trace.option_paths(block, option, value=value, without=[("accounting",)]) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            "_parse_next_key: Parsing error at unrecognized key: MaxJobCnt",
            trace.Culprit("MaxJobCnt"), id="unknown-key",
        ),
        pytest.param(
            'Bad value "forever" for MaxTime', trace.Culprit("MaxTime", "forever"),
            id="bad-value",
        ),
        pytest.param(
            "MaxJobCount value (lots) is not a valid number", trace.Culprit("MaxJobCount", "lots"),
            id="not-a-number",
        ),
        pytest.param(
            'Parse error in file /srv/slinky/etc/gres.conf line 2: " Frob=1"',
            trace.Culprit("Frob", None, " Frob=1", "gres.conf"), id="parse-error-line",
        ),
        pytest.param(
            "Invalid PrologSlurmctld(`/srv/slinky/etc/x.sh`): No such file or directory",
            trace.Culprit("PrologSlurmctld", "/srv/slinky/etc/x.sh"), id="invalid-option",
        ),
    ],
)  # fmt: skip
def test_culprits_name_what_the_line_names(line: str, expected: trace.Culprit) -> None:
    assert trace.culprits(line)[0] == expected


def test_trace_names_the_values_path_and_quotes_slurmctld(tmp_path: Path) -> None:
    target = umbrella(tmp_path, {"controller": {"extraConfMap": {"MaxJobCnt": 5}}})
    ctx = Context(target=target, work=tmp_path, kube_version="")
    errors = [
        f"{LOG}_parse_next_key: Parsing error at unrecognized key: MaxJobCnt",
        "[2026-12-02T01:37:36.715] fatal: Unable to process configuration file",
    ]
    [finding] = trace.trace(ctx, errors, "MaxJobCnt=5\n")
    assert finding.path == "slurm-cluster.controller.extraConfMap.MaxJobCnt"
    assert finding.fix == (
        "remove or correct MaxJobCnt: slurmctld says: Parsing error at unrecognized key: MaxJobCnt"
    )


def test_trace_falls_back_to_the_users_raw_slurm_conf(tmp_path: Path) -> None:
    """A refusal that names none of the user's options (SelectType=select/x makes slurmctld
    complain about the operator's MaxNodeCount) lands on the raw text the user gave."""
    target = umbrella(tmp_path, {"controller": {"extraConf": "SelectType=select/x\n"}})
    ctx = Context(target=target, work=tmp_path, kube_version="")
    errors = [f"{LOG}MaxNodeCount only compatible with cons_tres"]
    [finding] = trace.trace(ctx, errors, "MaxNodeCount=1024\nSelectType=select/x\n")
    assert finding.path == "slurm-cluster.controller.extraConf"
    assert "MaxNodeCount only compatible with cons_tres" in finding.fix


@pytest.mark.parametrize(
    ("host", "objects", "fails"),
    [
        pytest.param("10.1.2.3", [], False, id="address"),
        pytest.param("db.example.invalid", [], True, id="does-not-resolve"),
        pytest.param("localhost", [], False, id="resolves"),
        pytest.param("mariadb.slurm-db.svc", [("mariadb", "slurm-db")], False, id="svc-present"),
        pytest.param("mariadb.slurm-db.svc.cluster.local", [], True, id="svc-absent"),
        pytest.param("mariadb", [("mariadb", "slurm")], False, id="short-name-in-namespace"),
        pytest.param("mariadb", [("mariadb", "other")], True, id="short-name-elsewhere"),
    ],
)  # fmt: skip
def test_check_host(tmp_path: Path, host: str, objects: list[tuple[str, str]], fails: bool) -> None:
    target = umbrella(tmp_path, {})
    services = [
        {"kind": "Service", "metadata": {"name": name, "namespace": namespace}}
        for name, namespace in objects
    ]
    ctx = Context(target=target, work=tmp_path, kube_version="", objects=services)
    findings, said = accounting.check_host(ctx, host, 3306, "slurm", "slurm-cluster.x.host")
    assert bool(findings) == fails, (findings, said)
    assert all(f.path == "slurm-cluster.x.host" and f.fix for f in findings)


@pytest.mark.parametrize(
    ("extra_conf", "expected"),
    [
        pytest.param("", {"Features": "gpu"}, id="none"),
        pytest.param(
            "Features=h100,ib Gres=gpu:h100:8", {"Features": "gpu,h100,ib", "Gres": "gpu:h100:8"},
            id="features-joined",
        ),
        pytest.param("feature=gpu weight=5", {"Features": "gpu", "Weight": "5"}, id="once-each"),
    ],
)  # fmt: skip
def test_slurmd_conf_is_what_the_pods_register_with(
    extra_conf: str, expected: dict[str, str]
) -> None:
    """The operator's rule (v1.2.1 ``slurmdConfArgs``): the NodeSet's name is always a feature."""
    assert release.slurmd_conf("gpu", extra_conf) == expected


def test_slurmd_conf_refuses_an_item_without_a_value() -> None:
    with pytest.raises(ValueError, match="'Gres' is not Key=Value"):
        release.slurmd_conf("gpu", "Gres")


@pytest.mark.parametrize(
    ("gres", "expected"),
    [
        pytest.param("gpu:8", {"": 8}, id="untyped"),
        pytest.param("gpu:GB200:4", {"GB200": 4}, id="typed"),
        pytest.param("gpu:h100:8(S:0-1),nic:2", {"h100": 8}, id="as-scontrol-shows-it"),
        pytest.param("gpu:a:2,gpu:b:1,GPU:1", {"a": 2, "b": 1, "": 1}, id="several-any-case"),
        pytest.param("gpu", {"": 1}, id="no-count-is-one"),
        pytest.param("gpu:h100", {"h100": 1}, id="typed-no-count-is-one"),
        pytest.param("(null)", {}, id="null"),
        pytest.param("shard:8,nic:2", {}, id="no-gpu"),
    ],
)
def test_gres_gpus_counts_each_gpu_type(gres: str, expected: dict[str, int]) -> None:
    assert load.gres_gpus(gres) == expected


def test_check_gres_conf_gives_each_node_the_gpus_it_declares() -> None:
    """The values' gres.conf first, then per node AutoDetect=off and, per GPU type, device
    files numbered on from the previous type's."""
    text = load.check_gres_conf(
        "Name=nic Count=2\n",
        {"gpu-0": "gpu", "cpu-0": "cpu"},
        {"gpu": {"a": 2, "b": 1}, "cpu": {}},
    )
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert lines == [
        "Name=nic Count=2",
        "NodeName=gpu-0 AutoDetect=off Name=gpu Type=a File=/dev/nvidia[0-1]",
        "NodeName=gpu-0 AutoDetect=off Name=gpu Type=b File=/dev/nvidia2",
        "NodeName=cpu-0 AutoDetect=off",
    ]
