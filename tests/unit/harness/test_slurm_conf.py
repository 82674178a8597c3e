"""The Slurm harness without daemons: the slurm.conf it composes, Slurm's record format, the
chroot's Debian mirror, and the placement experiment's job mix and usage errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from slinky_harness.apps.placement import JOBS, SEED, job_mix, main
from slinky_harness.build.slurm_chroot import SlurmChrootError, debian_mirror
from slinky_harness.core.paths import REPO_ROOT
from slinky_harness.slurm.conf import HARNESS_KEYS, compose_slurm_conf, parse_records

if TYPE_CHECKING:
    from pathlib import Path

FABRIC = REPO_ROOT / "tests" / "data" / "fabrics" / "nvl72-racks.yaml"


def test_harness_keys_are_refused() -> None:
    for key in ("SlurmctldPort", "slurmctldhost", "AuthType"):
        assert key.lower() in HARNESS_KEYS
        with pytest.raises(ValueError, match=key.lower()):
            compose_slurm_conf(f"{key}=x\nNodeName=n1 State=CLOUD\n", {})
    text = compose_slurm_conf("ClusterName=mine\n", {"SlurmctldPort": "1"})
    assert "ClusterName=slinky" not in text
    assert "SlurmctldPort=1" in text


def test_parse_records_keeps_values_with_spaces() -> None:
    recs = parse_records("NodeName=a OS=Linux 6.1.0 #1 SMP Topology=t:x\n\nSwitchName=s Nodes=\n")
    assert recs == [
        {"NodeName": "a", "OS": "Linux 6.1.0 #1 SMP", "Topology": "t:x"},
        {"SwitchName": "s", "Nodes": ""},
    ]


def test_mirror_parsing_both_apt_formats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLINKY_DEBIAN_MIRROR", raising=False)
    one_line = tmp_path / "a"
    (one_line / "sources.list.d").mkdir(parents=True)
    (one_line / "sources.list").write_text(
        "# comment\n"
        "deb http://security.example/debian-security bookworm-security main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main\n"
    )
    assert debian_mirror(one_line) == "http://mirror.example/debian"
    deb822 = tmp_path / "b"
    (deb822 / "sources.list.d").mkdir(parents=True)
    (deb822 / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://other.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb deb-src\nURIs: http://other.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n"
    )
    (deb822 / "sources.list.d" / "x.sources.disabled").write_text(
        "Types: deb\nURIs: http://disabled.example/debian\nSuites: bookworm\n"
    )
    assert debian_mirror(deb822) == "http://other.example/debian"
    empty = tmp_path / "c"
    empty.mkdir()
    with pytest.raises(SlurmChrootError, match="SLINKY_DEBIAN_MIRROR"):
        debian_mirror(empty)
    monkeypatch.setenv("SLINKY_DEBIAN_MIRROR", "http://override.example/debian/")
    assert debian_mirror(empty) == "http://override.example/debian"


def test_job_mix_is_fixed_by_its_seed() -> None:
    mix = job_mix(SEED, JOBS)
    assert mix == job_mix(SEED, JOBS)
    assert mix != job_mix(SEED + 1, JOBS)
    assert all(2 <= j.size <= 16 for j in mix)
    assert [j.arrival_s for j in mix] == sorted(j.arrival_s for j in mix)


def test_main_usage_errors() -> None:
    assert main(["--fabric", str(FABRIC), "--modes", "mesh"]) == 2
    assert main(["--fabric", str(FABRIC), "--jobs", "0"]) == 2
    assert main(["--fabric", str(FABRIC), "--no-such-option"]) == 2
    assert main(["--jobs", "4"]) == 2  # --fabric is required
