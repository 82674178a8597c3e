"""OCI image archives written directly from files: the small images of the real node (the pause
image, CoreDNS, a busybox for tests) need no builder, only a layer of a few files.

:func:`write_archive` packs files into one uncompressed layer and writes an OCI image layout as a
tar (``oci-layout``, ``index.json``, ``blobs/sha256/...``) that ``ctr images import`` reads; the
image is named by the ``io.containerd.image.name`` annotation, so it lands under exactly the
reference given. :func:`write_images` writes several images into one archive from layers kept as
files (:func:`write_layer`, :func:`tree_layer` for a whole chroot), a shared layer stored once:
the Slurm images of :mod:`slinky_harness.build.images`. Every timestamp and owner is fixed, so
the same files give the same digest.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "Entry",
    "Image",
    "ImageConfig",
    "Layer",
    "tree_layer",
    "write_archive",
    "write_images",
    "write_layer",
]

EPOCH = 0
"""Modification time of every file and of the image (reproducible digests)."""

_LAYER = "application/vnd.oci.image.layer.v1.tar"
_CONFIG = "application/vnd.oci.image.config.v1+json"
_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
_INDEX = "application/vnd.oci.image.index.v1+json"


@dataclass(frozen=True)
class Entry:
    """One file, folder or symlink of the layer (``path`` relative, no leading slash)."""

    path: str
    source: Path | None = None
    """A file to copy; ``None`` for a folder (or a symlink, with ``link``)."""
    mode: int = 0o755
    link: str = ""
    """Target of a symlink."""


@dataclass(frozen=True)
class ImageConfig:
    """What the runtime reads from the image config."""

    entrypoint: Sequence[str] = ()
    cmd: Sequence[str] = ()
    user: str = ""
    env: Sequence[str] = ("PATH=/usr/local/bin:/usr/bin:/bin",)
    workdir: str = ""
    labels: dict[str, str] = field(default_factory=dict)


def _info(name: str, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mtime = EPOCH
    info.mode = mode
    return info


def _add_entries(tar: tarfile.TarFile, entries: Sequence[Entry]) -> None:
    for entry in entries:
        info = _info(entry.path.lstrip("/"), entry.mode)
        if entry.link:
            info.type = tarfile.SYMTYPE
            info.linkname = entry.link
            tar.addfile(info)
        elif entry.source is None:
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        else:
            data = entry.source.read_bytes()
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@dataclass(frozen=True)
class Layer:
    """An uncompressed layer tar on disk: its digest is also its diff_id."""

    path: Path
    digest: str
    size: int


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def _finish(path: Path) -> Layer:
    return Layer(path, _file_digest(path), path.stat().st_size)


def write_layer(target: Path, entries: Sequence[Entry]) -> Layer:
    """A layer holding ``entries`` (owned by root, fixed timestamps) written to ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(target, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add_entries(tar, entries)
    return _finish(target)


def tree_layer(
    root: Path,
    target: Path,
    *,
    exclude: Sequence[str] = (),
    empty: Sequence[str] = (),
    owners: Mapping[int, int] | None = None,
    owned: Mapping[str, int] | None = None,
) -> Layer:
    """A layer of the folder tree ``root`` (a chroot) written to ``target``.

    ``exclude``: paths (relative, no leading slash) left out with everything below them;
    ``empty``: folders kept but without their contents (``proc``, ``dev``); ``owners``: uid and
    gid renumbering (``{64030: 401}``: Debian's slurm user becomes upstream's); ``owned``: paths
    given to one uid and gid (``{"run/slurmctld": 401}``). Files keep their
    modes; timestamps are fixed; device nodes, sockets and fifos are left out (the runtime makes
    its own ``/dev``)."""
    renumber = dict(owners or {})
    given = dict(owned or {})
    skip = set(exclude)
    hollow = set(empty)

    def normalised(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if not (info.isfile() or info.isdir() or info.issym() or info.islnk()):
            return None
        info.uid = renumber.get(info.uid, info.uid)
        info.gid = renumber.get(info.gid, info.gid)
        if info.name in given:
            info.uid = info.gid = given[info.name]
        info.uname = info.gname = ""
        info.mtime = EPOCH
        return info

    target.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(target, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for folder, dirs, files in os.walk(root):
            here = Path(folder)
            rel = here.relative_to(root)
            kept = [] if str(rel) in hollow else files
            dirs[:] = (
                [] if str(rel) in hollow else sorted(d for d in dirs if str(rel / d) not in skip)
            )
            names = [*dirs, *sorted(f for f in kept if str(rel / f) not in skip)]
            for name in names:
                path = here / name
                tar.add(path, arcname=str(rel / name), recursive=False, filter=normalised)
                if path.is_symlink() and name in dirs:
                    dirs.remove(name)  # a symlink to a folder is stored as the link only
    return _finish(target)


@dataclass(frozen=True)
class Image:
    """One image of an archive: its reference (what ``ctr images import`` files it under),
    its layers bottom first, and its runtime config."""

    reference: str
    layers: Sequence[Layer]
    config: ImageConfig


def _json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _blob(data: bytes) -> tuple[str, int]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), len(data)


def _tag(reference: str) -> str:
    return reference.rsplit(":", 1)[1] if ":" in reference.rsplit("/", 1)[-1] else "latest"


def write_images(target: Path, images: Sequence[Image]) -> dict[str, str]:
    """Write one OCI archive (linux/amd64) holding ``images``; a layer shared by several images
    is stored once. Return reference -> manifest digest."""
    blobs: dict[str, bytes | Path] = {}
    manifests: list[dict[str, Any]] = []
    digests: dict[str, str] = {}
    for image in images:
        config = image.config
        image_config: dict[str, Any] = {
            "architecture": "amd64",
            "os": "linux",
            "created": "1970-01-01T00:00:00Z",
            "config": {
                "Entrypoint": list(config.entrypoint) or None,
                "Cmd": list(config.cmd) or None,
                "User": config.user,
                "Env": list(config.env),
                "WorkingDir": config.workdir,
                "Labels": dict(config.labels) or None,
            },
            "rootfs": {"type": "layers", "diff_ids": [layer.digest for layer in image.layers]},
        }
        config_bytes = _json(image_config)
        config_digest, config_size = _blob(config_bytes)
        blobs[config_digest] = config_bytes
        for layer in image.layers:
            blobs[layer.digest] = layer.path
        manifest = {
            "schemaVersion": 2,
            "mediaType": _MANIFEST,
            "config": {"mediaType": _CONFIG, "digest": config_digest, "size": config_size},
            "layers": [
                {"mediaType": _LAYER, "digest": layer.digest, "size": layer.size}
                for layer in image.layers
            ],
        }
        manifest_bytes = _json(manifest)
        manifest_digest, manifest_size = _blob(manifest_bytes)
        blobs[manifest_digest] = manifest_bytes
        digests[image.reference] = manifest_digest
        manifests.append(
            {
                "mediaType": _MANIFEST,
                "digest": manifest_digest,
                "size": manifest_size,
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {
                    "io.containerd.image.name": image.reference,
                    "org.opencontainers.image.ref.name": _tag(image.reference),
                },
            }
        )
    index = {"schemaVersion": 2, "mediaType": _INDEX, "manifests": manifests}
    target.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(target, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for folder in ("blobs", "blobs/sha256"):
            info = _info(folder, 0o755)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        small = {"oci-layout": _json({"imageLayoutVersion": "1.0.0"}), "index.json": _json(index)}
        for name, data in small.items():
            info = _info(name, 0o644)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for digest, content in blobs.items():
            info = _info(f"blobs/sha256/{digest[7:]}", 0o644)
            if isinstance(content, bytes):
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
            else:
                info.size = content.stat().st_size
                with content.open("rb") as f:
                    tar.addfile(info, f)
    return digests


def write_archive(
    target: Path, reference: str, entries: Sequence[Entry], config: ImageConfig
) -> str:
    """Write an OCI archive of one linux/amd64 image named ``reference`` holding ``entries``;
    return the manifest digest."""
    with tempfile.TemporaryDirectory(dir=target.parent if target.parent.is_dir() else None) as tmp:
        layer = write_layer(Path(tmp) / "layer.tar", entries)
        return write_images(target, [Image(reference, [layer], config)])[reference]
