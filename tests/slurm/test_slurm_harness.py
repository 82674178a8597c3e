"""The harness itself: pinned chroot, warm reuse, controller lifecycle, isolation, cleanup."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from slinky_harness.build import slurm_chroot
from slinky_harness.build.slurm_chroot import (
    SLURM_SERIES,
    chroot_info,
    debian_mirror,
    ensure_chroot,
    mounts_under,
)
from slinky_harness.core import processes
from slinky_harness.core.polling import wait_for
from slinky_harness.slurm.check import main as slurm_main
from slinky_harness.slurm.conf import parse_records
from slinky_harness.slurm.ctld import SlurmctldStartError, slurmctld
from slinky_harness.slurm.topology import TreeTopology, expand, parse_topology_conf, read_tree

if TYPE_CHECKING:
    from slinky_harness.slurm.ctld import CtldFactory


def test_chroot_is_pinned_to_slurm_series(slurm_root: Path) -> None:
    info = chroot_info(slurm_root)
    assert info.slurm_version.startswith(SLURM_SERIES + "."), info.slurm_version
    assert (slurm_root / "usr/sbin/slurmctld-wlm").exists()
    assert (slurm_root / "usr/bin/scontrol").exists()
    # the emulator build is optional; when recorded as present its binaries must be there
    if info.emulator:
        assert (slurm_root / "usr/sbin/slurmctld-wlm-emulator").exists()
        assert (slurm_root / "usr/sbin/slurmd-wlm-emulator").exists()


def test_chroot_lives_outside_the_clone(slurm_root: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    assert repo not in slurm_root.resolve().parents


def test_warm_reuse_builds_nothing(slurm_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A complete chroot is returned as it stands: no build, no mirror lookup, no lock, and its
    marker is not rewritten."""
    marker = slurm_root / slurm_chroot.MARKER
    before = marker.stat().st_mtime_ns

    def refuse(*_args: object, **_kwargs: object) -> None:
        pytest.fail("ensure_chroot rebuilt or looked up the mirror for a warm chroot")

    for name in ("_build", "debian_mirror", "locked"):
        monkeypatch.setattr(slurm_chroot, name, refuse)
    assert ensure_chroot() == slurm_root
    assert marker.stat().st_mtime_ns == before


def test_mirror_comes_from_apt_sources(slurm_root: Path) -> None:
    if os.environ.get("SLINKY_DEBIAN_MIRROR"):
        pytest.skip("mirror overridden by SLINKY_DEBIAN_MIRROR")
    sources = [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]
    text = "".join(p.read_text(errors="replace") for p in sources if p.is_file())
    mirror = debian_mirror()
    assert mirror in text
    assert chroot_info(slurm_root).mirror == mirror


def test_controller_answers_and_stops_cleanly(slurm_root: Path, slurm_data: Path) -> None:
    with slurmctld(slurm_data / "tree", root=slurm_root) as ctld:
        pid = ctld.pid
        workdir = ctld.workdir
        assert ctld.alive()
        assert "UP" in ctld.scontrol("ping")
        expected = parse_topology_conf((slurm_data / "tree/topology.conf").read_text())
        assert set(ctld.sinfo("-h", "-N", "-o", "%N").split()) == expected.all_nodes()
        assert "Running as primary controller" in ctld.log()
        assert (workdir / "etc/slurm.key").stat().st_size == 1024
        assert (workdir / "etc/slurm.key").stat().st_mode & 0o777 == 0o600
    assert not processes.alive(pid)
    assert not workdir.exists()  # temporary work folder removed
    assert mounts_under(slurm_root) == []


def test_failed_start_reports_and_cleans_up(slurm_root: Path, tmp_path: Path) -> None:
    files = {
        "slurm.conf": "TopologyPlugin=topology/tree\nNodeName=n[1-2] State=CLOUD\n",
        "topology.conf": "SwitchName=s1 Switches=nosuch\n",
    }
    with (
        pytest.raises(SlurmctldStartError) as err,
        slurmctld(files, root=slurm_root, workdir=tmp_path / "w"),
    ):
        pass
    assert err.value.returncode not in (None, 0)
    assert "nosuch" in str(err.value)
    assert "nosuch" in err.value.log
    assert mounts_under(slurm_root) == []


def test_exception_in_body_still_stops_controller(slurm_root: Path, slurm_data: Path) -> None:
    pid = 0
    with (
        pytest.raises(RuntimeError, match="boom"),
        slurmctld(slurm_data / "tree", root=slurm_root) as ctld,
    ):
        pid = ctld.pid
        raise RuntimeError("boom")
    assert pid and not processes.alive(pid)


def test_controllers_run_concurrently_in_isolation(
    slurm_root: Path, slurm_data: Path, tmp_path: Path
) -> None:
    """Three controllers at once: own ports, own state, own config; each shows its own topology."""
    tree = (slurm_data / "tree/topology.conf").read_text()
    variants = {}
    for i in range(3):
        # leaf<i> only, so each controller's topology differs
        leaf = next(ln for ln in tree.splitlines() if ln.startswith(f"SwitchName=leaf{i + 1} "))
        nodes = re.search(r"Nodes=(\S+)", leaf)
        assert nodes
        variants[f"c{i}"] = {
            "slurm.conf": f"ClusterName=c{i}\nTopologyPlugin=topology/tree\n"
            f"NodeName={nodes.group(1)} CPUs=1 State=CLOUD\nPartitionName=p Nodes=ALL\n",
            "topology.conf": leaf + "\n",
        }
    with ExitStack() as stack:
        ctlds = {
            name: stack.enter_context(slurmctld(files, root=slurm_root, workdir=tmp_path / name))
            for name, files in variants.items()
        }
        assert len({c.port for c in ctlds.values()}) == 3
        for name, ctld in ctlds.items():
            expected = parse_topology_conf(variants[name]["topology.conf"])
            assert isinstance(expected, TreeTopology)
            shown = read_tree(ctld.show_topology())
            assert set(shown) == set(expected.children)
            config = ctld.scontrol("show", "config")
            assert re.search(rf"^ClusterName\s*=\s*{name}$", config, re.MULTILINE)
            assert (tmp_path / name / "state").is_dir()
    assert mounts_under(slurm_root) == []


def test_emulator_build_starts_when_present(slurm_root: Path, slurm_data: Path) -> None:
    """The ``slurm-wlm-emulator`` build (many slurmd per host) loads the same files."""
    if not chroot_info(slurm_root).emulator:
        pytest.skip("Debian sid has no slurm-wlm-emulator at the moment")
    expected = parse_topology_conf((slurm_data / "tree/topology.conf").read_text())
    assert isinstance(expected, TreeTopology)
    with slurmctld(slurm_data / "tree", root=slurm_root, emulator=True) as ctld:
        assert set(read_tree(ctld.show_topology())) == set(expected.children)
        assert Path(f"/proc/{ctld.pid}/exe").resolve().name == "slurmctld-wlm-emulator"


def test_killed_test_process_leaves_no_daemon(
    slurm_root: Path, slurm_data: Path, tmp_path: Path
) -> None:
    """SIGKILL of the process holding a controller (and slurmd) kills them too: no orphans."""
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from slinky_harness.slurm.ctld import slurmctld\n"
        "files, root, work = (Path(a) for a in sys.argv[1:4])\n"
        "with slurmctld(files, root=root, workdir=work) as c:\n"
        "    print(c.pid, flush=True)\n"
        "    time.sleep(300)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(slurm_data / "tree"), str(slurm_root), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        pid = int(holder.stdout.readline())
        assert pid > 0 and processes.alive(pid)
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    wait_for(lambda: not processes.alive(pid), timeout=10, what=f"pid {pid} to end", every=0.1)


def test_extra_files_and_hostlist_oracle(start_ctld: CtldFactory) -> None:
    """Extra config files land next to slurm.conf; Slurm's hostlist parser agrees with ours."""
    gres = "NodeName=g[01-02] Name=gpu Count=4\n"
    files = {
        "slurm.conf": "GresTypes=gpu\nNodeName=g[01-02] CPUs=4 Gres=gpu:4 State=CLOUD\n"
        "PartitionName=all Nodes=ALL Default=YES\n",
        "gres.conf": gres,
    }
    with start_ctld(files) as ctld:
        assert (ctld.etc_dir / "gres.conf").read_text() == gres
        (node,) = parse_records(ctld.scontrol("show", "node", "-o", "g01"))
        assert node["Gres"] == "gpu:4"
        for expr in (
            "n[1-3]",
            "gpu[0009-0011],x1",
            "rack[1-2]-n[01-02]",
            "ip-10-1-0-10.ec2.internal",
        ):
            assert ctld.hostnames(expr) == expand(expr)


def test_cli_check(slurm_root: Path, slurm_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert slurm_main([str(slurm_data / "tree")]) == 0
    broken = slurm_data / "broken/switch-cycle"
    assert slurm_main([str(slurm_data / "tree"), str(broken)]) == 1
    err = capsys.readouterr().err
    assert f"{broken}: REJECTED" in err
    assert "fatal" in err
    assert slurm_main(["--nonsense"]) == 2
    assert slurm_main([]) == 2


def test_restart_keeps_the_saved_state_and_reads_the_new_files(start_ctld: CtldFactory) -> None:
    """``restart`` stops slurmctld and starts it on new files with the state it saved, as a
    slurmctld pod restarting on its volume: a held job and a dynamic node survive, the new
    slurm.conf is in force, and a plain start (a new pod without the volume) forgets both."""
    conf = "MaxNodeCount=8\nPartitionName=all Nodes=ALL Default=YES MaxTime=10\n"
    with start_ctld({"slurm.conf": conf}) as ctld:
        ctld.create_node("dyn-0", Features="dyn")
        job = ctld.submit("--hold", "--wrap", "true")
        assert ctld.job(job)["JobState"] == "PENDING"
        before = ctld.pid
        ctld.restart({"slurm.conf": conf.replace("MaxTime=10", "MaxTime=20")})
        assert ctld.pid != before, "slurmctld was not restarted"
        assert ctld.job(job)["JobState"] == "PENDING", "the held job was forgotten"
        assert "dyn-0" in ctld.hostnames(ctld.sinfo("-h", "-N", "-o", "%N").strip() or "none")
        (part,) = parse_records(ctld.scontrol("show", "partition", "-o", "all"))
        assert part["MaxTime"] == "00:20:00"
    with start_ctld({"slurm.conf": conf}) as fresh:
        assert fresh.job(job) == {}
