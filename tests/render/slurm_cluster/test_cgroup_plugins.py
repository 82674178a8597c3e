"""slurm-cluster with cgroups turned off (``CgroupPlugin=disabled``, what a host without cgroup v2
needs: the real node of the cluster tier found it) renders only with plugins that do without."""

from __future__ import annotations

from tests.render.render_support import one, render

OFF = {"cgroup.conf": "CgroupPlugin=disabled\n"}


def _controller_conf(values: dict[str, object]) -> str:
    controller = one(render("slurm-cluster", values), "Controller")
    conf: str = controller["spec"].get("extraConf", "")
    return conf


def test_cgroups_off_with_linuxproc_renders_both_lines() -> None:
    """CgroupPlugin=disabled with ``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none``
    from ``controller.extraConfMap`` renders, with both lines in the Controller's slurm.conf."""
    conf = _controller_conf(
        {
            "configFiles": OFF,
            "controller": {
                "extraConfMap": {"ProctrackType": "proctrack/linuxproc", "TaskPlugin": "task/none"}
            },
        }
    )
    assert "ProctrackType=proctrack/linuxproc" in conf.splitlines(), conf
    assert "TaskPlugin=task/none" in conf.splitlines(), conf


def test_cgroups_on_needs_no_proctrack_line() -> None:
    """With cgroups on (a cgroup.conf that does not disable them, or none) Slurm's default
    ProctrackType is right, and nothing is asked of the values."""
    assert "ProctrackType" not in _controller_conf(
        {"configFiles": {"cgroup.conf": "CgroupPlugin=cgroup/v1\n"}}
    )
    assert "ProctrackType" not in _controller_conf({})
