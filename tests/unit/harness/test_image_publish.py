"""The image harness's pure parts (apt pins, podman command lines, kubeconfig inlining) and the
release plan and notes (slinky_harness.apps.publish)."""

from __future__ import annotations

import base64
import os
import re
import tempfile
from pathlib import Path

import pytest
import yaml

from slinky_harness.apps import publish, release
from slinky_harness.build import labeler_image as image
from slinky_harness.build import podman
from slinky_harness.build.podman import APT_PACKAGES, AptPackage, Podman, apt_plan, os_codename

PODMAN = Podman(root=Path("/c/storage-overlay"), runroot=Path("/t/run"), driver="overlay")


def _missing(*names: str) -> list[AptPackage]:
    return [p for p in APT_PACKAGES if p.name in names]


@pytest.mark.parametrize(
    ("codename", "available", "args", "notes"),
    [
        pytest.param(
            "bookworm",
            True,
            ["podman=4.3.1+ds1-8+deb12u1+b3", "runc=1.1.5+ds1-1+deb12u1"],
            [],
            id="bookworm-pinned",
        ),
        pytest.param(
            "bookworm",
            False,
            ["podman", "runc"],
            [
                "podman 4.3.1+ds1-8+deb12u1+b3 is no longer in the archive",
                "runc 1.1.5+ds1-1+deb12u1 is no longer in the archive",
            ],
            id="bookworm-pin-gone",
        ),
        pytest.param(
            "noble",
            True,
            ["podman", "runc"],
            ["podman: noble is not bookworm", "runc: noble is not bookworm"],
            id="ubuntu-candidate",
        ),
    ],
)
def test_apt_plan_pins_on_bookworm_only_when_the_archive_has_the_version(
    codename: str, available: bool, args: list[str], notes: list[str]
) -> None:
    got = apt_plan(_missing("podman", "runc"), codename, lambda _n, _v: available)
    assert got == (args, notes)


def test_a_package_is_needed_only_when_what_it_provides_is_missing(tmp_path: Path) -> None:
    runc = AptPackage("runc", "runc", "1")
    assert runc.present(lambda name: "/usr/bin/runc" if name == "runc" else None)
    assert not runc.present(lambda _name: None)
    keyring = AptPackage("k", str(tmp_path / "key.gpg"), "1")
    assert not keyring.present()
    (tmp_path / "key.gpg").write_bytes(b"")
    assert keyring.present()


def test_os_codename(tmp_path: Path) -> None:
    release_file = tmp_path / "os-release"
    release_file.write_text('NAME="Debian GNU/Linux"\nVERSION_CODENAME=bookworm\n')
    assert os_codename(release_file) == "bookworm"
    assert os_codename(tmp_path / "absent") == ""


def test_every_podman_command_has_private_storage_runc_and_cgroupfs() -> None:
    argv = PODMAN.argv("images")
    assert argv[:2] == ["podman", "--root"]
    assert argv[argv.index("--root") + 1] == "/c/storage-overlay"
    assert argv[argv.index("--storage-driver") + 1] == "overlay"
    assert argv[argv.index("--runtime") + 1] == "runc"
    assert argv[argv.index("--cgroup-manager") + 1] == "cgroupfs"
    assert argv[-1] == "images"


def test_the_build_uses_the_local_base_no_pull_and_the_hosts_ca_for_pip() -> None:
    argv = image.build_argv(PODMAN, image.BASE_TAG, version="9.9.9", ca=Path("/etc/ca.pem"))
    joined = " ".join(argv)
    assert "--pull=never" in argv and "--network host" in joined
    assert f"BASE_IMAGE={image.BASE_TAG}" in argv and "VERSION=9.9.9" in argv
    assert f"/etc/ca.pem:{image.BUILD_CA}:ro" in argv and f"PIP_CERT={image.BUILD_CA}" in argv
    assert all(f"--ulimit={u}" in argv for u in image.ULIMITS)
    assert argv[-1] == str(image.REPO_ROOT) and str(image.DOCKERFILE) in argv
    assert "--volume" not in image.build_argv(PODMAN, "b", version="1", ca=None)


def test_a_run_is_as_locked_down_as_the_charts_pod() -> None:
    argv = image.run_argv(
        PODMAN,
        "img",
        ["--once"],
        mounts={Path("/h/kubeconfig"): "/etc/slinky/kubeconfig"},
        env={"POD_NAMESPACE": "ns"},
    )
    assert {"--read-only", "--read-only-tmpfs=false", "--rm"} <= set(argv)
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert argv[argv.index("--security-opt") + 1] == "no-new-privileges"
    assert argv[argv.index("--network") + 1] == "host"
    assert "/h/kubeconfig:/etc/slinky/kubeconfig:ro" in argv
    assert "POD_NAMESPACE=ns" in argv
    assert "--user" not in argv, "the image's own USER applies"
    assert argv[-2:] == ["img", "--once"]


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_the_mounted_kubeconfig_carries_its_files_inline(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(b"CA")
    source = tmp_path / "kubeconfig"
    source.write_text(
        yaml.safe_dump(
            {
                "clusters": [
                    {
                        "name": "k",
                        "cluster": {
                            "server": "https://127.0.0.1:1",
                            "certificate-authority": str(tmp_path / "ca.crt"),
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    dest = image.self_contained_kubeconfig(source, tmp_path / "out")
    data = yaml.safe_load(dest.read_text())
    cluster = data["clusters"][0]["cluster"]
    assert cluster == {
        "server": "https://127.0.0.1:1",
        "certificate-authority-data": base64.b64encode(b"CA").decode(),
    }
    stat = dest.stat()
    assert (stat.st_uid, stat.st_gid, stat.st_mode & 0o777) == (65532, 65532, 0o400)


# --- publish --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "repo"),
    [
        ("ghcr.io/slinky-suite/gpu-topology-labeler:0.1.0", "oci://ghcr.io/slinky-suite/charts"),
        ("localhost:5000/a/b/labeler@sha256:00", "oci://localhost:5000/a/b/charts"),
        ("registry.example.com/org/labeler", "oci://registry.example.com/org/charts"),
    ],
)
def test_the_charts_go_beside_the_image(ref: str, repo: str) -> None:
    assert publish.chart_repository(ref) == repo


def test_an_image_without_a_namespace_has_no_chart_repository() -> None:
    with pytest.raises(publish.PublishError):
        publish.chart_repository("docker.io/labeler:1")


def test_the_plan_and_its_outputs() -> None:
    version = image.labeler_version()
    plan = publish.plan(f"v{version}", owner="Slinky-Suite")
    assert plan.outputs() == [
        f"version={version}",
        "image=ghcr.io/slinky-suite/gpu-topology-labeler",
        f"image-ref=ghcr.io/slinky-suite/gpu-topology-labeler:{version}",
        "charts=oci://ghcr.io/slinky-suite/charts",
        "registry=ghcr.io",
        "platforms=linux/amd64,linux/arm64",
    ]
    with pytest.raises(publish.PublishError, match="cannot push there"):
        publish.plan(f"v{version}", owner="someone-else")


def test_the_notes_carry_every_charts_changelog_entry() -> None:
    version = image.labeler_version()
    text = publish.notes(f"v{version}")
    for chart in release.discover():
        entry, body = publish.changelog_text(chart)
        assert f"## {chart.name} {chart.version} ({entry.date})" in text
        assert f"--version {chart.version}`" in text
        first = next(line for line in body.splitlines() if line.startswith("- "))
        assert first in text
    assert not re.search(r"^### ", text, re.MULTILINE), "sections sit below the chart headings"
    assert f"cosign verify ghcr.io/slinky-suite/gpu-topology-labeler:{version}" in text


def test_main_prints_github_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    assert publish.main(["check", "--tag", f"v{image.labeler_version()}"]) == 0
    assert capsys.readouterr().out.startswith("version=")
    assert publish.main(["check", "--tag", "v99.0.0"]) == 1
    assert "appVersion" in capsys.readouterr().err


def test_podman_runroot_stays_within_podmans_length_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Podman refuses a --runroot over 50 characters; a long TMPDIR (nox's per-session folder in
    a deep clone) must not break the image build."""
    monkeypatch.setattr(tempfile, "tempdir", "/short")
    assert podman.runroot("overlay") == Path("/short/slinky-suite-podman-overlay")
    monkeypatch.setattr(tempfile, "tempdir", "/work/a-deep-clone/main/.nox/cluster/tmp")
    long = podman.runroot("overlay")
    assert len(str(long)) <= podman.RUNROOT_LIMIT
    assert long == Path("/tmp/slinky-suite-podman-overlay")
