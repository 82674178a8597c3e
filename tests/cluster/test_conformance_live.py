"""The conformance command's ``--keep``: it leaves the control plane running and prints how to
reach and stop it; the printed command stops it. (Every profile and broken values file runs
through the whole command in ``test_conformance.py``.) Marked ``operator``: the real Slinky
operator runs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from slinky_conformance import cli
from slinky_harness.build.controlplane import ensure_binaries
from slinky_harness.core.polling import wait_for

pytestmark = pytest.mark.operator

REPO = Path(__file__).resolve().parents[2]


def test_keep_leaves_the_control_plane_running_and_says_how_to_stop_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--keep``: after the command returns, the printed KUBECONFIG reaches the control plane
    (the release's NodeSet is there), and the printed stop command ends it."""
    work = tmp_path / "work"
    status = cli.main([
        "-f", str(REPO / "values" / "kind.yaml"), "--phases", "live", "--keep", "--out", str(work),
    ])  # fmt: skip
    out = capsys.readouterr().out
    # the static and slurm phases were left out: 'not run', neither passed nor failed (issue 29)
    assert status == 0, out
    assert "not a full conformance check" in out, out
    assert "FAIL" not in out, out
    kubeconfig = re.search(r"export KUBECONFIG=(\S+)", out)
    stop = re.search(r"stop it: (.+)$", out, re.M)
    assert kubeconfig and stop, out
    kubectl = ensure_binaries() / "kubectl"
    env = {"KUBECONFIG": kubeconfig.group(1), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    def get(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(kubectl), *args], env=env, capture_output=True, text=True, timeout=60, check=False
        )

    try:
        nodesets = get("get", "nodesets.slinky.slurm.net", "-A", "-o", "name")
        assert nodesets.returncode == 0 and "nodeset" in nodesets.stdout, nodesets.stderr
    finally:
        subprocess.run(["sh", "-c", stop.group(1)], capture_output=True, timeout=120, check=False)
    wait_for(
        lambda: get("get", "--raw=/readyz").returncode != 0,
        timeout=60,
        what="the API server to stop after the printed stop command",
    )
