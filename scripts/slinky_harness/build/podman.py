"""Podman as the harness runs it, and the Debian packages it comes from: what the labeler image
(:mod:`slinky_harness.build.labeler_image`) is built and run with.

* :func:`ensure_packages` installs podman, crun, buildah's pieces and the overlay tools from the
  machine's Debian release (:func:`apt_plan` says which, from :data:`APT_PACKAGES`);
* :class:`Podman` runs ``podman`` with the suite's own storage under
  ``$SLINKY_SUITE_CACHE/image/storage-<driver>`` (:func:`storage_driver`: overlay where the kernel
  mounts one, else vfs), cgroupfs and file events (no systemd here).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slinky_harness.core import paths
from slinky_harness.core.errors import HarnessError
from slinky_harness.core.progress import heartbeat

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

SUITE = "bookworm"
"""The Debian release of the machines and of the image base."""


class ImageError(HarnessError):
    """The image cannot be built or run here; one line that says what and why."""


@dataclass(frozen=True)
class AptPackage:
    """A Debian package the image tier needs."""

    name: str
    provides: str
    """A command on PATH, or an absolute path, whose presence means the package is not needed."""
    bookworm: str
    """The version pinned on Debian bookworm."""

    def present(self, which: Callable[[str], str | None] | None = None) -> bool:
        if self.provides.startswith("/"):
            return Path(self.provides).exists()
        return (which or _which)(self.provides) is not None


def _which(name: str) -> str | None:
    """``shutil.which`` that also looks in the sbin folders (debootstrap, runc)."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return shutil.which(name, path=path)


APT_PACKAGES = (
    AptPackage("podman", "podman", "4.3.1+ds1-8+deb12u1+b3"),
    AptPackage("runc", "runc", "1.1.5+ds1-1+deb12u1"),
    AptPackage("debootstrap", "debootstrap", "1.0.128+nmu2+deb12u2"),
    AptPackage(
        "debian-archive-keyring", "/usr/share/keyrings/debian-archive-keyring.gpg", "2023.3+deb12u2"
    ),
)
"""``runc`` is checked by command because Docker's ``containerd.io`` package ships one (and
conflicts with Debian's). Their dependencies (conmon, containers-common, ...) come with them."""


def os_codename(os_release: Path = Path("/etc/os-release")) -> str:
    """``VERSION_CODENAME`` of this machine's distribution (``""`` when unknown)."""
    try:
        text = os_release.read_text(encoding="utf-8")
    except OSError:
        return ""
    match = re.search(r"^VERSION_CODENAME=\"?([^\"\n]*)\"?$", text, re.MULTILINE)
    return match[1] if match else ""


def apt_plan(
    missing: Sequence[AptPackage], codename: str, available: Callable[[str, str], bool]
) -> tuple[list[str], list[str]]:
    """The ``apt-get install`` arguments for ``missing`` and a note per package not pinned.

    On bookworm each package is pinned (``name=version``) when the archive still has that version
    (``available(name, version)``); otherwise, and on any other distribution, the candidate is
    installed and a note says so.
    """
    args: list[str] = []
    notes: list[str] = []
    for package in missing:
        if codename == SUITE and available(package.name, package.bookworm):
            args.append(f"{package.name}={package.bookworm}")
            continue
        args.append(package.name)
        if codename == SUITE:
            notes.append(f"{package.name} {package.bookworm} is no longer in the archive")
        else:
            notes.append(f"{package.name}: {codename or 'this distribution'} is not {SUITE}")
    return args, notes


def _apt_has(name: str, version: str) -> bool:
    proc = subprocess.run(
        ["apt-cache", "madison", name], capture_output=True, text=True, check=False
    )
    return any(
        line.split("|")[1].strip() == version
        for line in proc.stdout.splitlines()
        if line.count("|") >= 2
    )


def run_logged(argv: Sequence[str], log: Path, *, env: Mapping[str, str] | None = None) -> str:
    """Run ``argv``, its output appended to ``log``; raise ImageError with the last line."""
    with log.open("a") as out:
        out.write(f"$ {shlex.join(argv)}\n")
        out.flush()
        proc = subprocess.run(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env=dict(env) if env is not None else None,
            check=False,
        )
        out.write(proc.stdout)
    if proc.returncode != 0:
        tail = (proc.stdout.strip().splitlines() or ["no output"])[-1]
        raise ImageError(
            f"{Path(argv[0]).name} failed (exit {proc.returncode}): {tail} (log: {log})"
        )
    return proc.stdout


def ensure_packages(
    which: Callable[[str], str | None] = _which,
    packages: Sequence[AptPackage] = APT_PACKAGES,
    role: str = "image",
) -> list[str]:
    """Install the missing ``packages`` (the image tier's :data:`APT_PACKAGES` unless given, for
    ``role``, the word that starts each line); return what was installed (``[]`` when nothing)."""
    missing = [p for p in packages if not p.present(which)]
    if not missing:
        return []
    if os.geteuid() != 0 or which("apt-get") is None:
        names = " ".join(p.name for p in missing)
        raise ImageError(f"the {role} tier needs {names}; install them (apt-get install {names})")
    folder = cache_root()
    archives = folder / "apt"
    (archives / "partial").mkdir(parents=True, exist_ok=True)
    log = folder / "apt.log"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    what = f"{role}: apt-get install " + " ".join(p.name for p in missing)
    with heartbeat(what, "about 30 s (downloads cached in image/apt)"):
        run_logged(["apt-get", "update"], log, env=env)
        args, notes = apt_plan(missing, os_codename(), _apt_has)
        for note in notes:
            print(f"{role}: {note}; installing the candidate", file=sys.stderr, flush=True)
        run_logged(
            [
                "apt-get", "install", "-y", "--no-install-recommends",
                "-o", f"Dir::Cache::Archives={archives}", *args,
            ],
            log,
            env=env,
        )  # fmt: skip
    return args


def cache_root() -> Path:
    """``$SLINKY_SUITE_CACHE/image``."""
    return paths.cache_root() / "image"


def overlay_works(folder: Path) -> bool:
    """Whether the kernel mounts an overlay on ``folder``'s filesystem (in a private mount
    namespace, gone when the probe ends)."""
    probe = Path(tempfile.mkdtemp(prefix=".overlay-probe-", dir=folder))
    try:
        for name in ("lower", "upper", "work", "merged"):
            (probe / name).mkdir()
        options = f"lowerdir={probe / 'lower'},upperdir={probe / 'upper'},workdir={probe / 'work'}"
        proc = subprocess.run(
            [
                "unshare", "--mount", "--propagation", "private",
                "mount", "-t", "overlay", "overlay", "-o", options, str(probe / "merged"),
            ],
            capture_output=True,
            check=False,
        )  # fmt: skip
        return proc.returncode == 0
    except OSError:
        return False
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def storage_driver() -> str:
    """``SLINKY_IMAGE_STORAGE_DRIVER``, else ``overlay`` where the kernel mounts one, else ``vfs``."""
    forced = os.environ.get("SLINKY_IMAGE_STORAGE_DRIVER")
    if forced:
        return forced
    folder = cache_root()
    folder.mkdir(parents=True, exist_ok=True)
    return "overlay" if overlay_works(folder) else "vfs"


RUNROOT_LIMIT = 50
"""Podman refuses a ``--runroot`` longer than this (its socket paths must fit in sun_path)."""


def runroot(driver: str) -> Path:
    """Podman's run-time state: under the temporary folder (nox gives each session its own),
    or under ``/tmp`` where that path would be longer than podman accepts."""
    wanted = Path(tempfile.gettempdir()) / f"slinky-suite-podman-{driver}"
    if len(str(wanted)) <= RUNROOT_LIMIT:
        return wanted
    return Path("/tmp") / f"slinky-suite-podman-{driver}"


@dataclass(frozen=True)
class Podman:
    """Rootful podman with storage of its own (see the module docstring for each flag)."""

    root: Path
    runroot: Path
    driver: str
    runtime: str = "runc"

    @classmethod
    def default(cls) -> Podman:
        driver = storage_driver()
        return cls(
            root=cache_root() / f"storage-{driver}",
            runroot=runroot(driver),
            driver=driver,
        )

    def argv(self, *args: str) -> list[str]:
        return [
            "podman",
            "--root", str(self.root),
            "--runroot", str(self.runroot),
            "--tmpdir", str(self.runroot / "libpod"),
            "--storage-driver", self.driver,
            "--runtime", self.runtime,
            "--cgroup-manager", "cgroupfs",
            "--events-backend", "file",
            *args,
        ]  # fmt: skip

    def run(
        self, *args: str, timeout: float = 300, check: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        try:
            proc = subprocess.run(
                self.argv(*args),
                capture_output=True,
                text=True,
                timeout=timeout,
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ImageError(f"podman {args[0]}: no result in {timeout:.0f}s") from exc
        if check and proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise ImageError(f"podman {args[0]} failed (exit {proc.returncode}): {tail}")
        return proc

    def exists(self, ref: str) -> bool:
        return self.run("image", "exists", ref, check=False).returncode == 0

    def inspect(self, ref: str) -> dict[str, Any]:
        data = json.loads(self.run("image", "inspect", ref).stdout)
        return dict(data[0])

    def size(self, ref: str) -> int:
        """Bytes of the image, every layer counted, uncompressed (``podman images`` SIZE)."""
        return int(self.inspect(ref)["Size"])
