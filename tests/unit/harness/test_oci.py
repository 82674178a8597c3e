"""OCI archives written from files (``slinky_harness.build.oci``), the real node's small images."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from typing import TYPE_CHECKING, Any

from slinky_harness.build import oci

if TYPE_CHECKING:
    from pathlib import Path


def _write(tmp_path: Path, name: str) -> tuple[Path, str]:
    program = tmp_path / "program"
    program.write_bytes(b"\x7fELF not really")
    target = tmp_path / f"{name}.tar"
    digest = oci.write_archive(
        target,
        "registry.example/team/tool:1.2",
        [oci.Entry("bin"), oci.Entry("bin/tool", program), oci.Entry("bin/sh", link="tool")],
        oci.ImageConfig(entrypoint=["/bin/tool"], user="401:401"),
    )
    return target, digest


def _read(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {
            m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }


def test_archive_is_a_consistent_oci_layout_named_by_its_reference(tmp_path: Path) -> None:
    """Every blob the index and manifest point to is in the archive under its own sha256 and
    size; the layer's diff_id is its digest (uncompressed); the index names the image by the full
    reference (what ``ctr images import`` files it under)."""
    archive, digest = _write(tmp_path, "a")
    files = _read(archive)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads(files["index.json"])
    (entry,) = index["manifests"]
    assert entry["digest"] == digest
    assert entry["annotations"]["io.containerd.image.name"] == "registry.example/team/tool:1.2"
    assert entry["annotations"]["org.opencontainers.image.ref.name"] == "1.2"

    def blob(descriptor: dict[str, Any]) -> bytes:
        data = files["blobs/sha256/" + descriptor["digest"].removeprefix("sha256:")]
        assert "sha256:" + hashlib.sha256(data).hexdigest() == descriptor["digest"]
        assert len(data) == descriptor["size"]
        return data

    manifest = json.loads(blob(entry))
    config = json.loads(blob(manifest["config"]))
    (layer,) = manifest["layers"]
    assert config["rootfs"]["diff_ids"] == [layer["digest"]]
    assert config["config"]["Entrypoint"] == ["/bin/tool"]
    assert config["config"]["User"] == "401:401"
    with tarfile.open(fileobj=io.BytesIO(blob(layer))) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert members["bin/sh"].issym() and members["bin/sh"].linkname == "tool"
    assert members["bin/tool"].mode == 0o755


def test_same_files_give_the_same_digest(tmp_path: Path) -> None:
    """Archives are reproducible: no timestamp or owner of the build machine enters them."""
    first = _write(tmp_path, "a")
    second = _write(tmp_path, "b")
    assert first[1] == second[1]
    assert first[0].read_bytes() == second[0].read_bytes()
