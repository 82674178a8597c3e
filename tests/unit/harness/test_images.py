"""The image builder (``slinky_harness.build.images``): cache keys and reuse, archive layout, the
entrypoints' handling of the operator's arguments, and the references the charts render."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from slinky_harness.build import images, oci
from slinky_harness.helm.client import template

REPO = Path(__file__).resolve().parents[3]


def _marker(root: Path, version: str = "26.05.5-1") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / ".slinky-chroot.json").write_text(json.dumps({"slurm_version": version}))
    return root


def test_slurm_key_follows_the_chroot_marker_only(tmp_path: Path) -> None:
    """Same marker, same key (nothing rebuilt); a different marker (new Slurm or recipe), a
    different key; the key names the Slurm version."""
    a = images.slurm_key(_marker(tmp_path / "a"))
    b = images.slurm_key(_marker(tmp_path / "b"))
    c = images.slurm_key(_marker(tmp_path / "c", "26.05.6-1"))
    assert a == b
    assert a != c
    assert a.startswith("slurm-26.05.5-1-")
    with pytest.raises(images.ImagesError, match="no marker"):
        images.slurm_key(tmp_path)


def test_slinky_key_changes_when_a_binary_changes(tmp_path: Path) -> None:
    """The key of the Go images is a digest of the binaries' contents: an unchanged binary keeps
    it, one changed byte changes it."""
    binary = tmp_path / "manager"
    binary.write_bytes(b"one")
    first = images.slinky_key({images.OPERATOR_IMAGE: binary})
    assert images.slinky_key({images.OPERATOR_IMAGE: binary}) == first
    binary.write_bytes(b"two")
    assert images.slinky_key({images.OPERATOR_IMAGE: binary}) != first


def test_cached_builds_once_and_reuses(tmp_path: Path) -> None:
    """An archive that exists is reused without calling its build; a missing one is built once
    into its final path; a failed build leaves neither the archive nor a partial file."""
    calls: list[Path] = []

    def build(path: Path) -> None:
        calls.append(path)
        path.write_text("archive")

    target = tmp_path / "images" / "slurm-x.tar"
    assert images._cached(target, build, "t", "instant") == target
    assert images._cached(target, build, "t", "instant") == target
    assert len(calls) == 1
    assert target.read_text() == "archive"

    def broken(path: Path) -> None:
        path.write_text("half")
        raise RuntimeError("boom")

    other = tmp_path / "images" / "slurm-y.tar"
    with pytest.raises(RuntimeError):
        images._cached(other, broken, "t", "instant")
    assert sorted(p.name for p in other.parent.iterdir() if not p.name.endswith(".lock")) == [
        "slurm-x.tar"
    ]


def test_tree_layer_leaves_out_renumbers_and_hollows(tmp_path: Path) -> None:
    """``exclude`` drops a path and all below it, ``empty`` keeps a folder without its contents,
    ``owners`` renumbers a uid/gid, ``owned`` gives a path to one uid, symlinks stay links."""
    root = tmp_path / "root"
    for folder in ("usr/bin", "usr/share/doc/x", "proc/1", "var/lib/slurm"):
        (root / folder).mkdir(parents=True)
    (root / "usr/bin/slurmd").write_text("elf")
    (root / "usr/share/doc/x/README").write_text("doc")
    (root / "proc/1/status").write_text("x")
    (root / "usr/bin/sh").symlink_to("slurmd")
    uid = os.getuid()
    layer = oci.tree_layer(
        root,
        tmp_path / "layer.tar",
        exclude=["usr/share/doc"],
        empty=["proc"],
        owners={uid: 401},
        owned={"var/lib/slurm": 7},
    )
    with tarfile.open(layer.path) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert "usr/share/doc" not in members
    assert not any(name.startswith("usr/share/doc/") for name in members)
    assert "proc" in members
    assert not any(name.startswith("proc/") for name in members)
    assert members["usr/bin/slurmd"].uid == 401
    assert members["var/lib/slurm"].uid == 7
    assert members["usr/bin/sh"].issym()
    assert members["usr/bin/sh"].linkname == "slurmd"


def test_images_sharing_a_layer_store_it_once(tmp_path: Path) -> None:
    """Two images on the same layer: the archive holds that blob once, and the index names
    both images by their references, each with its own config."""
    program = tmp_path / "p"
    program.write_text("x")
    shared = oci.write_layer(tmp_path / "shared.tar", [oci.Entry("p", program)])
    own = oci.write_layer(tmp_path / "own.tar", [oci.Entry("q", program)])
    archive = tmp_path / "a.tar"
    digests = oci.write_images(
        archive,
        [
            oci.Image("r.example/a:1", [shared], oci.ImageConfig(entrypoint=["/p"])),
            oci.Image("r.example/b:2", [shared, own], oci.ImageConfig(entrypoint=["/q"])),
        ],
    )
    with tarfile.open(archive) as tar:
        names = [m.name for m in tar.getmembers()]
        index = json.loads(tar.extractfile("index.json").read())  # type: ignore[union-attr]
    assert names.count(f"blobs/sha256/{shared.digest[7:]}") == 1
    refs = {m["annotations"]["io.containerd.image.name"]: m["digest"] for m in index["manifests"]}
    assert refs == digests
    assert set(refs) == {"r.example/a:1", "r.example/b:2"}


def _run_entrypoint(tmp_path: Path, name: str, program: str, *args: str, **env: str) -> list[str]:
    """Run the entrypoint ``name`` with a stand-in ``program`` that prints its arguments."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    fake = bindir / program
    fake.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    fake.chmod(0o755)
    script = tmp_path / f"{name}.sh"
    script.write_text(images.ENTRYPOINTS[name])
    run_env = {"PATH": f"{bindir}:{os.environ['PATH']}", **env}
    proc = subprocess.run(
        ["bash", str(script), *args], capture_output=True, text=True, env=run_env, check=True
    )
    return proc.stdout.splitlines()


def test_slurmd_entrypoint_reads_the_operators_quoted_conf(tmp_path: Path) -> None:
    """The operator v1.2.1 passes ``--conf`` as ``'K=V K=V'`` with the quotes inside the
    argument: slurmd gets the node settings as ONE argument without quotes, in the foreground."""
    args = _run_entrypoint(
        tmp_path, "slurmd", "slurmd",
        "-Z", "--conf-server", "slurm-controller.slurm:6817",
        "--conf", "'Features=gpu Gres=gpu:emu:2'",
        SLURMD_OPTIONS="-v",
    )  # fmt: skip
    assert args == [
        "-D", "-v", "-Z", "--conf-server", "slurm-controller.slurm:6817",
        "--conf", "Features=gpu Gres=gpu:emu:2",
    ]  # fmt: skip


def test_slurmctld_and_login_entrypoints_keep_their_arguments(tmp_path: Path) -> None:
    """slurmctld runs in the foreground with ``$SLURMCTLD_OPTIONS`` and the container's args;
    the login image runs sackd with the operator's ``$SACKD_OPTIONS`` (its conf server)."""
    assert _run_entrypoint(tmp_path, "slurmctld", "slurmctld", "-i", SLURMCTLD_OPTIONS="-v") == [
        "-D",
        "-v",
        "-i",
    ]
    assert _run_entrypoint(
        tmp_path, "login", "sackd", SACKD_OPTIONS="--conf-server slurm-controller.slurm:6817"
    ) == ["-D", "--conf-server", "slurm-controller.slurm:6817"]


def _rendered_images(docs: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "image" and isinstance(value, str):
                    found.add(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for doc in docs:
        if "helm.sh/hook" in (doc.get("metadata", {}).get("annotations") or {}):
            continue  # `helm test` pods (kubectl images) are not part of a release's workload
        walk(doc)
    return found


@pytest.mark.parametrize(
    ("chart", "values"),
    [
        ("slurm-operator", {}),
        (
            "slurm-cluster",
            {
                "loginsets": {"login": {"replicas": 1}},
                "nodesets": {"compute": {"replicas": 1}},
                "accounting": {"enabled": True, "storageConfig": {"passwordKeyRef": {
                    "name": "db", "key": "password"}}},
            },
        ),
        ("slurm-bridge", {}),
    ],
)  # fmt: skip
def test_every_image_the_charts_render_by_default_is_built(
    chart: str, values: dict[str, Any]
) -> None:
    """Each image reference a chart renders with its default images (every component on) is one
    the builder makes, so ``IfNotPresent`` finds it on the real node and no registry is asked."""
    result = template(REPO / "charts" / chart, values)
    assert result.ok, result.describe()
    rendered = _rendered_images(result.docs)
    assert rendered, "no image rendered"
    built = set(images.SLURM_IMAGES) | set(images.GO_IMAGES) | {images.LOGFILE_IMAGE}
    assert rendered <= built, sorted(rendered - built)
