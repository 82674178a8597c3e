"""What the real node runs besides kubelet and kube-proxy (those come with the control plane,
:mod:`slinky_harness.build.controlplane`): the Debian packages (containerd, runc, the CNI plugins,
iptables, a static busybox), CoreDNS built from its Go module (``tools/coredns``: a small main
with no ``forward`` plugin), the pause binary compiled from the Kubernetes module's
``build/pause/linux/pause.c``, and three OCI archives that the node imports into containerd::

    $SLINKY_SUITE_CACHE/nodeparts/<key>/{coredns,pause,images/*.tar,build.json}

The key is a digest of every input (CoreDNS's module files, pause.c, the busybox binary, this
module and the archive writer), so a changed input builds a new folder and an unchanged one is
reused. :mod:`slinky_harness.k8s.realnode` runs them.

Usage::

    python -m slinky_harness.build.nodeparts     # install and build or reuse; print the folder
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from slinky_harness.build import oci
from slinky_harness.build.cache import locked, staged_folder
from slinky_harness.build.controlplane import K8S_VERSION, TOOLS_MODULE
from slinky_harness.build.gobuild import BuildError, go_build, module_dir
from slinky_harness.build.podman import AptPackage, ImageError, ensure_packages
from slinky_harness.core.errors import HarnessError
from slinky_harness.core.paths import cache_root
from slinky_harness.core.progress import heartbeat

if TYPE_CHECKING:
    from collections.abc import Sequence

COREDNS_MODULE = TOOLS_MODULE / "coredns"
COREDNS_VERSION = "v1.14.7"
PAUSE_TAG = "3.10.2"
"""``TAG`` of ``build/pause/Makefile`` in k8s.io/kubernetes v1.36.3."""
BUSYBOX = Path("/bin/busybox")

PAUSE_IMAGE = f"registry.k8s.io/pause:{PAUSE_TAG}"
"""containerd's ``sandbox_image``: the name Kubernetes gives the same program."""
COREDNS_IMAGE = f"localhost/slinky-suite/coredns:{COREDNS_VERSION}"
BUSYBOX_IMAGE = "localhost/slinky-suite/busybox:1.35.0"
"""A shell, ``nslookup`` and ``wget`` for the real node's tests."""

COLD_BUILD = "about 2 min on 2 cores (CoreDNS's go build), seconds when cached"

NODE_PACKAGES = (
    AptPackage("containerd", "containerd", "1.6.20~ds1-1+deb12u3"),
    AptPackage("runc", "runc", "1.1.5+ds1-1+deb12u1"),
    AptPackage("containernetworking-plugins", "/usr/lib/cni/bridge", "1.1.1+ds1-3+b5"),
    AptPackage("iptables", "iptables", "1.8.9-2"),
    AptPackage("conntrack", "conntrack", "1:1.4.7-1+b2"),
    AptPackage("busybox-static", "/usr/share/doc/busybox-static", "1:1.35.0-4+deb12u1+b1"),
)
"""containerd 1.6.20 with Debian's runc (crun refuses hybrid cgroups); the CNI bridge,
host-local and portmap plugins; iptables for kube-proxy; busybox-static for the test image."""


class NodePartsError(HarnessError):
    """A part of the real node could not be installed or built."""


@dataclass(frozen=True)
class NodeParts:
    """The built parts (see the module docstring)."""

    folder: Path

    @property
    def images(self) -> dict[str, Path]:
        """Image reference -> OCI archive."""
        return {
            PAUSE_IMAGE: self.folder / "images" / "pause.tar",
            COREDNS_IMAGE: self.folder / "images" / "coredns.tar",
            BUSYBOX_IMAGE: self.folder / "images" / "busybox.tar",
        }


def _pause_source() -> Path:
    source = module_dir("k8s.io/kubernetes", K8S_VERSION, within=TOOLS_MODULE)
    return source / "build" / "pause" / "linux" / "pause.c"


def _inputs() -> list[Path]:
    return [
        COREDNS_MODULE / "go.mod",
        COREDNS_MODULE / "go.sum",
        COREDNS_MODULE / "main.go",
        _pause_source(),
        BUSYBOX,
        Path(__file__),
        Path(oci.__file__),
    ]


def build_key() -> str:
    """``coredns<ver>-pause<tag>-<digest of every input>``."""
    digest = hashlib.sha256()
    for path in _inputs():
        if not path.is_file():
            raise NodePartsError(f"{path} is missing; the real node is built from it")
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"coredns{COREDNS_VERSION[1:]}-pause{PAUSE_TAG}-{digest.hexdigest()[:16]}"


def _complete(folder: Path) -> bool:
    parts = NodeParts(folder)
    return (folder / "build.json").is_file() and all(p.is_file() for p in parts.images.values())


def _compile_pause(out: Path, log: Path) -> None:
    cmd = [
        "gcc", "-Os", "-Wall", "-static", f"-DVERSION=v{PAUSE_TAG}-slinky-suite",
        "-o", str(out), str(_pause_source()),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    log.write_text(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        raise NodePartsError(f"gcc of pause.c failed (exit {proc.returncode}); log: {log}")
    subprocess.run(["strip", str(out)], check=False, capture_output=True)


def _busybox_entries() -> list[oci.Entry]:
    applets = ("sh", "cat", "echo", "ls", "nslookup", "sleep", "wget", "httpd", "hostname", "env")
    return [
        oci.Entry("bin"),
        oci.Entry("bin/busybox", BUSYBOX),
        *(oci.Entry(f"bin/{name}", link="busybox", mode=0o777) for name in applets),
        oci.Entry("tmp", mode=0o1777),
    ]


def _build(folder: Path, key: str) -> None:
    with staged_folder(folder, key) as staging:
        started = time.monotonic()
        images = staging / "images"
        images.mkdir()
        log = folder.parent / f"{key}.coredns.log"
        try:
            go_build(
                ["-trimpath", "-ldflags", "-s -w", "-o", str(staging / "coredns"), "."],
                cwd=COREDNS_MODULE,
                log=log,
                what=f"nodeparts: CoreDNS {COREDNS_VERSION} (tools/coredns)",
                expected="about 90 s on 2 cores with a cold Go cache",
            )
        except BuildError as exc:
            raise NodePartsError(str(exc)) from exc
        _compile_pause(staging / "pause", folder.parent / f"{key}.pause.log")
        parts = NodeParts(staging)
        oci.write_archive(
            parts.images[PAUSE_IMAGE],
            PAUSE_IMAGE,
            [oci.Entry("pause", staging / "pause")],
            oci.ImageConfig(entrypoint=["/pause"], user="65535:65535", env=()),
        )
        oci.write_archive(
            parts.images[COREDNS_IMAGE],
            COREDNS_IMAGE,
            [oci.Entry("coredns", staging / "coredns")],
            oci.ImageConfig(entrypoint=["/coredns"], env=()),
        )
        oci.write_archive(
            parts.images[BUSYBOX_IMAGE],
            BUSYBOX_IMAGE,
            _busybox_entries(),
            oci.ImageConfig(cmd=["sh"], env=("PATH=/bin",)),
        )
        record = {
            "key": key,
            "coredns": COREDNS_VERSION,
            "pause": PAUSE_TAG,
            "images": {ref: path.name for ref, path in parts.images.items()},
            "build_seconds": round(time.monotonic() - started, 1),
        }
        (staging / "build.json").write_text(json.dumps(record, indent=2) + "\n")


def ensure_packages_installed() -> list[str]:
    """Install the missing :data:`NODE_PACKAGES` (root, Debian); return what was installed."""
    try:
        return ensure_packages(packages=NODE_PACKAGES, role="nodeparts")
    except ImageError as exc:
        raise NodePartsError(str(exc)) from exc


def ensure_parts() -> NodeParts:
    """Install the packages, then build the parts or reuse them (see the module docstring)."""
    ensure_packages_installed()
    key = build_key()
    folder = cache_root() / "nodeparts" / key
    if _complete(folder):
        print(f"nodeparts: reusing {key} in {folder}", file=sys.stderr)
        return NodeParts(folder)
    with locked(folder.parent / f".{key}.lock"):
        if not _complete(folder):
            with heartbeat(f"nodeparts: CoreDNS, pause and images ({key})", COLD_BUILD):
                _build(folder, key)
    return NodeParts(folder)


def main(argv: Sequence[str] | None = None) -> int:
    """Install and build or reuse; print the folder (exit 1 with the reason on failure)."""
    argparse.ArgumentParser(
        prog="python -m slinky_harness.build.nodeparts", description=__doc__.splitlines()[0]
    ).parse_args(argv)
    if os.geteuid() != 0:
        print("nodeparts: not root; the real node needs root, nothing to build", file=sys.stderr)
        return 0
    try:
        print(ensure_parts().folder)
    except (NodePartsError, BuildError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
