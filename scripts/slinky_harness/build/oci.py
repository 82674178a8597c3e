"""OCI image archives written directly from files: the small images of the real node (the pause
image, CoreDNS, a busybox for tests) need no builder, only a layer of a few files.

:func:`write_archive` packs files into one uncompressed layer and writes an OCI image layout as a
tar (``oci-layout``, ``index.json``, ``blobs/sha256/...``) that ``ctr images import`` reads; the
image is named by the ``io.containerd.image.name`` annotation, so it lands under exactly the
reference given. Every timestamp and owner is fixed, so the same files give the same digest.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

__all__ = ["Entry", "ImageConfig", "write_archive"]

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
    labels: dict[str, str] = field(default_factory=dict)


def _layer(entries: Sequence[Entry]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.path.lstrip("/"))
            info.mtime = EPOCH
            info.mode = entry.mode
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
    return buffer.getvalue()


def _blob(data: bytes) -> tuple[str, int]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), len(data)


def _json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def write_archive(
    target: Path, reference: str, entries: Sequence[Entry], config: ImageConfig
) -> str:
    """Write an OCI archive of one linux/amd64 image named ``reference`` holding ``entries``;
    return the manifest digest."""
    layer = _layer(entries)
    layer_digest, layer_size = _blob(layer)
    image_config: dict[str, Any] = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {
            "Entrypoint": list(config.entrypoint) or None,
            "Cmd": list(config.cmd) or None,
            "User": config.user,
            "Env": list(config.env),
            "Labels": dict(config.labels) or None,
        },
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    }
    config_bytes = _json(image_config)
    config_digest, config_size = _blob(config_bytes)
    manifest = {
        "schemaVersion": 2,
        "mediaType": _MANIFEST,
        "config": {"mediaType": _CONFIG, "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": _LAYER, "digest": layer_digest, "size": layer_size}],
    }
    manifest_bytes = _json(manifest)
    manifest_digest, manifest_size = _blob(manifest_bytes)
    tag = reference.rsplit(":", 1)[1] if ":" in reference.rsplit("/", 1)[-1] else "latest"
    index = {
        "schemaVersion": 2,
        "mediaType": _INDEX,
        "manifests": [
            {
                "mediaType": _MANIFEST,
                "digest": manifest_digest,
                "size": manifest_size,
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {
                    "io.containerd.image.name": reference,
                    "org.opencontainers.image.ref.name": tag,
                },
            }
        ],
    }
    files = {
        "oci-layout": _json({"imageLayoutVersion": "1.0.0"}),
        "index.json": _json(index),
        f"blobs/sha256/{layer_digest[7:]}": layer,
        f"blobs/sha256/{config_digest[7:]}": config_bytes,
        f"blobs/sha256/{manifest_digest[7:]}": manifest_bytes,
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(target, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for folder in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(folder)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            info.mtime = EPOCH
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = EPOCH
            tar.addfile(info, io.BytesIO(data))
    return manifest_digest
