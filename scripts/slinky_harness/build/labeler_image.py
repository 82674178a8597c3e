"""The labeler image built and run without Docker: rootful podman from Debian's packages builds the
repository ``Dockerfile`` on a Python base made from Debian packages, and runs it.

No image registry is reachable from the suite's machines, so nothing here pulls an image:

1. **Packages** (:func:`ensure_packages`): ``podman``, ``runc``, ``debootstrap`` and
   ``debian-archive-keyring`` are installed with ``apt-get`` when a command or file they provide is
   missing, at pinned versions on Debian bookworm (:data:`APT_PACKAGES`; the distribution's
   candidate elsewhere, or when the archive no longer has the pinned one, said in one line). The
   downloaded ``.deb`` files stay in ``$SLINKY_SUITE_CACHE/image/apt`` for the next machine that
   restores the cache.
2. **Base** (:func:`ensure_base`): ``debootstrap --variant=minbase`` of Debian bookworm with
   ``python3`` and ``python3-venv`` (about 1.5 min cold; its ``.deb`` files cached in
   ``image/debootstrap``), documentation, locales and apt lists removed, kept as
   ``image/base-bookworm-r<recipe>.tar`` and ``podman import``-ed as :data:`BASE_TAG`. The
   ``Dockerfile`` takes it through its ``BASE_IMAGE`` build argument (default: the public
   ``python:3.11-slim-bookworm``, which the release workflow uses).
3. **Build** (:func:`build`): ``podman build --pull=never --network host`` of the repository with
   its ``.dockerignore``; ``VERSION`` is the labeler chart's ``appVersion``. The host's CA bundle is
   mounted for the ``pip install`` step and named by ``PIP_CERT`` (machines behind a TLS-inspecting
   proxy need it; the final image never sees it).
4. **Run** (:func:`run_argv`): the way the chart runs the pod: the image's own user (65532), a
   read-only root filesystem with a tmpfs on ``/tmp`` only (the chart's ``emptyDir``), every
   capability dropped, ``no-new-privileges``, host network (the kwok API server listens on
   127.0.0.1), files mounted read-only.

What works on these machines and why (Debian bookworm, root without ``CAP_SYS_RESOURCE``, cgroup v1
with a v2 hierarchy beside it, ext4 root, no systemd):

* storage driver ``overlay``: the kernel's overlayfs on ext4 as root; no fuse-overlayfs needed.
  :func:`storage_driver` mounts a test overlay first and falls back to ``vfs`` (every layer a full
  copy) where that fails, e.g. inside a container whose root is itself an overlay;
  ``SLINKY_IMAGE_STORAGE_DRIVER`` forces one. Each driver has its own storage folder.
* runtime ``runc``: Debian's default ``crun`` 1.8 refuses this hybrid cgroup layout ("cgroups in
  hybrid mode not supported"); runc handles v1 and v2. ``--cgroup-manager cgroupfs`` (no systemd).
* ``--ulimit`` on every build and run (:data:`ULIMITS`): podman's rootful defaults (1,048,576 open
  files, 4,194,304 processes) exceed this machine's hard limits, and without ``CAP_SYS_RESOURCE``
  the runtime may not raise them, so it fails with "setrlimit ... operation not permitted".

Podman's storage lives in ``$SLINKY_SUITE_CACHE/image/storage-<driver>`` (never the machine's own
``/var/lib/containers``), its run state under the temporary folder.

Usage::

    python -m slinky_harness.build.labeler_image prepare    # packages, base, build; prints reference, size, time
    python -m slinky_harness.build.labeler_image ref        # the reference the release workflow publishes
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.build.cache import locked
from slinky_harness.build.podman import (
    SUITE,
    ImageError,
    Podman,
    cache_root,
    ensure_packages,
    run_logged,
)
from slinky_harness.build.slurm_chroot import SlurmChrootError, debian_mirror
from slinky_harness.core import paths
from slinky_harness.core.files import write_atomic
from slinky_harness.core.progress import heartbeat

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

REPO_ROOT = paths.REPO_ROOT
DOCKERFILE = REPO_ROOT / "Dockerfile"
LABELER_CHART = REPO_ROOT / "charts" / "gpu-topology-labeler"
"""Debian release of the test base (its python3 is 3.11, like the public default base)."""
BASE_PACKAGES = ("python3", "python3-venv")
BASE_RECIPE = 1
"""Bump when the base's build steps change: a base of another recipe is rebuilt."""
BASE_TAG = f"localhost/slinky-suite/python-base:{SUITE}-r{BASE_RECIPE}"
LOCAL_TAG = "localhost/slinky-suite/gpu-topology-labeler:test"
"""What :func:`build` tags the image as (never a registry name: nothing here is pushed)."""
IMAGE_USER = "65532:65532"
"""The ``USER`` the Dockerfile sets, the chart's ``runAsUser``/``runAsGroup``."""
ULIMITS = ("nofile=8192:8192", "nproc=4096:4096")
"""Limits under any sane hard limit (see the module docstring)."""
PRUNE_AFTER = "72h"
"""Untagged images older than this are removed after each build, so the storage stays bounded."""
BUILD_CA = "/run/slinky-build-ca.pem"
"""Where the host's CA bundle is mounted during ``RUN`` steps (build only)."""


# --- the base ----------------------------------------------------------------------------------

TRIM = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "var/cache/apt",
    "var/lib/apt/lists",
    "var/log",
)
"""Emptied in the base: nothing in the image reads them."""


def base_tarball() -> Path:
    return cache_root() / f"base-{SUITE}-r{BASE_RECIPE}.tar"


def _build_base_tarball(dest: Path, mirror: str) -> None:
    """debootstrap into a temporary folder beside ``dest``; ``dest`` appears only when complete."""
    folder = dest.parent
    log = folder / f"base-{SUITE}.log"
    log.write_text("")
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    debs = folder / "debootstrap"
    debs.mkdir(parents=True, exist_ok=True)
    rootfs = Path(tempfile.mkdtemp(prefix=".base-", dir=folder))
    try:
        run_logged(
            [
                "unshare", "--mount", "--propagation", "private", "--pid", "--fork",
                "--kill-child", debootstrap, "--variant=minbase",
                f"--include={','.join(BASE_PACKAGES)}", f"--cache-dir={debs}",
                SUITE, str(rootfs), mirror,
            ],
            log,
        )  # fmt: skip
        for sub in TRIM:
            target = rootfs / sub
            if target.is_dir():
                for child in target.iterdir():
                    if child.is_dir() and not child.is_symlink():
                        shutil.rmtree(child)
                    else:
                        child.unlink()
        staging = dest.with_name(f".{dest.name}.partial")
        run_logged(
            ["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs), "-cf", str(staging), "."],
            log,
        )
        staging.chmod(0o644)
        staging.replace(dest)
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)


def ensure_base(podman: Podman) -> str:
    """The base image's tag in ``podman``'s storage, built and imported when missing."""
    with locked(cache_root() / "base.lock"):
        if podman.exists(BASE_TAG):
            return BASE_TAG
        tarball = base_tarball()
        if not tarball.is_file():
            try:
                mirror = debian_mirror()
            except SlurmChrootError as exc:
                raise ImageError(str(exc)) from exc
            with heartbeat(
                f"image: debootstrap {SUITE} with {' '.join(BASE_PACKAGES)} from {mirror}",
                "about 1.5 min cold on 2 cores",
            ):
                _build_base_tarball(tarball, mirror)
        podman.run(
            "import",
            "--change", 'CMD ["python3"]',
            "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--message", f"slinky-suite test base: Debian {SUITE} minbase + {' '.join(BASE_PACKAGES)}",
            str(tarball),
            BASE_TAG,
        )  # fmt: skip
        return BASE_TAG


# --- build and run -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Build:
    """One ``podman build`` of the Dockerfile."""

    ref: str
    image_id: str
    seconds: float
    size: int
    """Bytes, uncompressed, base included."""
    base_size: int
    cached_steps: int
    """Steps podman reused from its layer cache (0 on a cold build)."""

    @property
    def added(self) -> int:
        """Bytes the Dockerfile adds to its base."""
        return self.size - self.base_size

    def describe(self) -> str:
        return (
            f"{self.ref} ({self.image_id[:12]}): {self.size / 1e6:.0f} MB uncompressed, "
            f"{self.added / 1e6:.0f} MB over its base; built in {self.seconds:.0f}s"
            + (f" ({self.cached_steps} steps from the layer cache)" if self.cached_steps else "")
        )


def labeler_version() -> str:
    meta = yaml.safe_load((LABELER_CHART / "Chart.yaml").read_text(encoding="utf-8"))
    return str(meta["appVersion"])


def host_ca_bundle() -> Path | None:
    """The CA bundle this machine's TLS clients trust (``None`` when there is no file)."""
    for candidate in (os.environ.get("PIP_CERT"), ssl.get_default_verify_paths().cafile):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def build_argv(
    podman: Podman, base: str, *, tag: str = LOCAL_TAG, version: str, ca: Path | None
) -> list[str]:
    """``podman build`` of the repository Dockerfile on ``base`` (see the module docstring)."""
    args = [
        "build",
        "--pull=never",
        "--network", "host",
        "--layers",
        *(f"--ulimit={u}" for u in ULIMITS),
        "--build-arg", f"BASE_IMAGE={base}",
        "--build-arg", f"VERSION={version}",
        "--file", str(DOCKERFILE),
        "--tag", tag,
    ]  # fmt: skip
    if ca is not None:
        args += ["--volume", f"{ca}:{BUILD_CA}:ro", "--build-arg", f"PIP_CERT={BUILD_CA}"]
    if os.environ.get("PIP_INDEX_URL"):
        args += ["--build-arg", f"PIP_INDEX_URL={os.environ['PIP_INDEX_URL']}"]
    return podman.argv(*args, str(REPO_ROOT))


def build(podman: Podman | None = None, *, tag: str = LOCAL_TAG) -> Build:
    """Packages and base when missing, then ``podman build`` of the Dockerfile (layer-cached)."""
    if os.geteuid() != 0:
        raise ImageError("building the labeler image needs root (rootful podman)")
    ensure_packages()
    podman = podman or Podman.default()
    base = ensure_base(podman)
    argv = build_argv(podman, base, tag=tag, version=labeler_version(), ca=host_ca_bundle())
    log = cache_root() / "build.log"
    log.write_text("")
    started = time.monotonic()
    with (
        locked(cache_root() / "build.lock"),
        heartbeat(
            f"image: podman build of {DOCKERFILE.name} on {base} (log: {log})",
            "about 1 min cold (pip install from PyPI), seconds when its layers are cached",
        ),
    ):
        output = run_logged(argv, log)
    seconds = time.monotonic() - started
    # Earlier builds leave untagged images (old layers, build-stage cache); keep recent ones only.
    podman.run("image", "prune", "--force", f"--filter=until={PRUNE_AFTER}", check=False)
    info = podman.inspect(tag)
    return Build(
        ref=tag,
        image_id=str(info["Id"]),
        seconds=seconds,
        size=int(info["Size"]),
        base_size=podman.size(base),
        cached_steps=len(re.findall(r"^--> Using cache ", output, re.MULTILINE)),
    )


def run_argv(
    podman: Podman,
    image: str,
    args: Sequence[str] = (),
    *,
    mounts: Mapping[Path, str] | None = None,
    env: Mapping[str, str] | None = None,
    entrypoint: str | None = None,
    name: str | None = None,
) -> list[str]:
    """``podman run`` of ``image`` as the chart runs its pod: the image's user, read-only root
    with a tmpfs on ``/tmp`` only, no capabilities, no privilege gain, host network; ``mounts``
    (host file or folder to container path) are read-only."""
    opts = [
        "run", "--rm",
        "--network", "host",
        "--read-only", "--read-only-tmpfs=false",
        "--tmpfs", "/tmp:rw,nosuid,nodev,size=64m,mode=1777",
        "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges",
        *(f"--ulimit={u}" for u in ULIMITS),
    ]  # fmt: skip
    if name:
        opts += ["--name", name]
    for host, inside in (mounts or {}).items():
        opts += ["--volume", f"{host}:{inside}:ro"]
    for key, value in (env or {}).items():
        opts += ["--env", f"{key}={value}"]
    if entrypoint is not None:
        opts += ["--entrypoint", entrypoint]
    return podman.argv(*opts, image, *args)


_INLINED = {
    "certificate-authority": "certificate-authority-data",
    "client-certificate": "client-certificate-data",
    "client-key": "client-key-data",
}


def self_contained_kubeconfig(source: Path, dest: Path, owner: str = IMAGE_USER) -> Path:
    """``source`` with every file it names inlined (``certificate-authority`` becomes
    ``certificate-authority-data``, ...), so it works where those paths do not exist (a
    container), written to ``dest`` with mode 0400 for ``owner`` (``uid:gid``), like the token a
    pod gets. Writing another user's file needs root."""
    config = yaml.safe_load(source.read_text(encoding="utf-8"))
    for section, key in (("clusters", "cluster"), ("users", "user")):
        for item in config.get(section) or []:
            entry = item.get(key) or {}
            for path_key, data_key in _INLINED.items():
                if path_key in entry:
                    raw = Path(entry.pop(path_key)).read_bytes()
                    entry[data_key] = base64.b64encode(raw).decode()
    uid, _, gid = owner.partition(":")
    text = yaml.safe_dump(config, sort_keys=False)
    return write_atomic(dest, text, mode=0o400, owner=(int(uid), int(gid or uid)))


def run(
    podman: Podman,
    image: str,
    args: Sequence[str] = (),
    *,
    timeout: float = 300,
    **options: Any,
) -> subprocess.CompletedProcess[str]:
    """Run the container (see :func:`run_argv`) to its end; never raises on its exit status."""
    argv = run_argv(podman, image, args, **options)
    try:
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ImageError(f"{image} {' '.join(args)[:80]}: no result in {timeout:.0f}s") from exc


# --- command line ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.build.labeler_image", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("prepare", help="install packages, make the base, build the image")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    build_parser().parse_args(argv)
    try:
        built = build()
    except (ImageError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"image: {built.describe()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
