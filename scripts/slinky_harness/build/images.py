"""The images our charts run, built here under the references the charts render by default, so
that a pod with ``imagePullPolicy: IfNotPresent`` finds them in the real node's containerd and no
registry is asked. One builder, cached by content::

    $SLINKY_SUITE_CACHE/images/slurm-<key>.tar     slurmctld, slurmd, slurmrestd, slurmdbd, login,
                                                   the MariaDB image (one archive, shared layers)
    $SLINKY_SUITE_CACHE/images/slinky-<key>.tar    operator, webhook, slurm-bridge's three images,
                                                   the log sidecar (the chart's alpine reference)

``<key>`` is a digest of every input: for the Slurm archive, the sid chroot's marker (its Slurm
version and recipe; its apt lists are fixed when it is built) and this module with the archive
writer; for the other, the Go binaries, busybox and the same sources. An archive whose key exists
is reused without building anything; a changed input makes a new key.

**The Slurm images** (:data:`SLURM_IMAGES`) share two layers: the sid chroot of
:mod:`slinky_harness.build.slurm_chroot` (Debian's Slurm 26.05 packages, MariaDB; documentation,
locales and apt lists left out; Debian's slurm user 64030 renumbered to upstream's 401), and a
small layer with ``sackd`` and ``tini`` (downloaded with ``apt-get download`` from the chroot's
own apt lists), ``/etc/passwd`` with ``slurm`` as 401 and one entrypoint per image. The contract
is the one Slinky's operator v1.2.1 expects of SlinkyProject's images: the operator gives only
arguments (and a few variables) and runs slurmctld and slurmdbd as 401, slurmrestd as 65534 and
slurmd privileged as root; logs go to FIFOs under ``/var/log/slurm`` read by the log sidecar:

* slurmctld: ``slurmctld -D`` with ``$SLURMCTLD_OPTIONS`` and the container's arguments; the
  reconfigure sidecar's ``tini -g -- bash -c ...`` finds tini and bash;
* slurmd: ``slurmd -D`` with ``$SLURMD_OPTIONS`` and the operator's ``-Z --conf-server H:P
  --conf 'K=V ...'``, whose ``--conf`` value carries literal single quotes: the entrypoint lets the
  shell read them as quotes (as upstream's supervisord command line does);
* slurmrestd: ``tini -g -- slurmrestd`` with ``0.0.0.0:6820`` by default (the operator adds it);
* slurmdbd: ``tini -g -- slurmdbd -D``;
* login: ``sackd -D`` with ``$SACKD_OPTIONS`` (the operator's ``--conf-server``), so the Slurm
  commands in the pod find the configuration; no sshd or sssd (not installed: ``kubectl exec``
  is how the tests log in);
* :data:`MARIADB_IMAGE` (not rendered by any chart: the accounting database): a MariaDB server
  on a fresh data folder, with the database and user named by its environment.

Usage::

    python -m slinky_harness.build.images            # build or reuse; print the archives
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from slinky_harness.build import oci
from slinky_harness.build.cache import locked
from slinky_harness.build.slinky import bridge_binary, operator_binary
from slinky_harness.build.slurm_chroot import SlurmChrootError, chroot_info, ensure_chroot
from slinky_harness.core.errors import HarnessError
from slinky_harness.core.paths import cache_root
from slinky_harness.core.progress import heartbeat

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

SLURM_TAG = "26.05-ubuntu26.04"
"""The tag slurm-cluster's values give every Slurm image."""
SLINKY_TAG = "1.2.1"
"""The operator's and slurm-bridge's charts default their image tags to this appVersion."""
SLURMCTLD_IMAGE = f"ghcr.io/slinkyproject/slurmctld:{SLURM_TAG}"
SLURMD_IMAGE = f"ghcr.io/slinkyproject/slurmd:{SLURM_TAG}"
SLURMRESTD_IMAGE = f"ghcr.io/slinkyproject/slurmrestd:{SLURM_TAG}"
SLURMDBD_IMAGE = f"ghcr.io/slinkyproject/slurmdbd:{SLURM_TAG}"
LOGIN_IMAGE = f"ghcr.io/slinkyproject/login:{SLURM_TAG}"
MARIADB_IMAGE = "localhost/slinky-suite/mariadb:sid"
LOGFILE_IMAGE = "docker.io/library/alpine:3.22"
"""The log sidecar and the login pods' initconf container: a shell and the POSIX tools (busybox)."""
OPERATOR_IMAGE = f"ghcr.io/slinkyproject/slurm-operator:{SLINKY_TAG}"
WEBHOOK_IMAGE = f"ghcr.io/slinkyproject/slurm-operator-webhook:{SLINKY_TAG}"
BRIDGE_IMAGES = {
    name: f"ghcr.io/slinkyproject/slurm-bridge-{name}:{SLINKY_TAG}"
    for name in ("scheduler", "admission", "controllers")
}

SLURM_UID = 401
"""Upstream's slurm user and group (SlinkyProject/containers; the operator runs as it)."""
NONROOT_UID = 65532
"""distroless's ``nonroot`` user, which upstream's Go images run as."""
BUSYBOX = Path("/bin/busybox")
EXTRA_PACKAGES = ("sackd", "tini")
"""Downloaded from the chroot's apt lists (not in the chroot): the login pod's auth and config
daemon, and the init that upstream's entrypoints and the operator's reconfigure sidecar call."""
LEFT_OUT = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "var/lib/apt/lists",
    "var/cache/apt",
    "var/cache/debconf",
    "var/log",
    "srv/slinky",
)
"""Parts of the chroot no container reads (about 120 MB)."""
HOLLOW = ("proc", "sys", "dev", "run", "tmp")
SLURM_FOLDERS = ("var/log/slurm", "var/spool/slurmctld", "run/slurmctld")
"""Owned by slurm (401) in the images: slurmctld, which runs as slurm, writes there
(``/run/slurm`` stays root's: slurmd, as root, refuses it otherwise)."""
COLD_BUILD = "about 10 s on 2 cores (a 190 MB layer from the chroot), under 1 s when cached"

ENTRYPOINTS: Mapping[str, str] = {
    "slurmctld": """#!/bin/bash
# slurmctld in the foreground, as the slurm user the operator runs it as (401). The operator gives
# no arguments by default; the chart's slurmctld.args and $SLURMCTLD_OPTIONS add to the command.
set -euo pipefail
eval "exec slurmctld -D ${SLURMCTLD_OPTIONS:-} \\"\\$@\\""
""",
    "slurmd": """#!/bin/bash
# slurmd in the foreground (root, privileged). The operator passes
#   -Z --conf-server HOST:PORT --conf 'Features=a Gres=...'
# with the single quotes inside the argument: read the line again so they quote.
set -euo pipefail
eval "exec slurmd -D ${SLURMD_OPTIONS:-} $*"
""",
    "login": """#!/bin/bash
# sackd in the foreground: it fetches the configuration from $SACKD_OPTIONS's --conf-server into
# /run/slurm/conf (where the Slurm commands look) and serves authentication on sack.socket.
set -euo pipefail
eval "exec sackd -D ${SACKD_OPTIONS:-} \\"\\$@\\""
""",
    "mariadb": """#!/bin/bash
# MariaDB for slurmdbd: a fresh data folder on first start; MARIADB_DATABASE, MARIADB_USER and
# MARIADB_PASSWORD name the database and the user allowed to reach it from anywhere. Runs as
# root (the image has no mysql user); the InnoDB settings are the ones slurmdbd asks for.
set -euo pipefail
data=/var/lib/mysql
common=(--no-defaults --user=root --datadir="$data" --tmpdir=/tmp
  --innodb-buffer-pool-size=64M --innodb-log-file-size=64M
  --innodb-snapshot-isolation=OFF --innodb-lock-wait-timeout=900)
mkdir -p "$data" /run/mysqld
init=()
if [ ! -d "$data/mysql" ]; then
  mariadb-install-db "${common[@]}" --auth-root-authentication-method=socket --skip-test-db
  db="${MARIADB_DATABASE:-slurm_acct_db}" user="${MARIADB_USER:-slurm}"
  cat >/tmp/init.sql <<SQL
CREATE DATABASE IF NOT EXISTS \\`$db\\`;
CREATE USER IF NOT EXISTS '$user'@'%' IDENTIFIED BY '${MARIADB_PASSWORD:?MARIADB_PASSWORD is unset}';
GRANT ALL ON \\`$db\\`.* TO '$user'@'%';
SQL
  init=(--init-file=/tmp/init.sql)
fi
exec mariadbd "${common[@]}" --socket=/run/mysqld/mysqld.sock --bind-address=0.0.0.0 \\
  --port=3306 --skip-name-resolve "${init[@]}" "$@"
""",
}
"""One entrypoint per Slurm image that needs one (``/usr/local/bin/<name>-entrypoint.sh``). The
folders they use are in the image (``/run/slurm``, ``/var/spool/slurmd``) or mounted by the
operator (``/run/slurmctld``)."""

PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

SLURM_IMAGES: Mapping[str, oci.ImageConfig] = {
    SLURMCTLD_IMAGE: oci.ImageConfig(
        entrypoint=["/usr/local/bin/slurmctld-entrypoint.sh"], env=(PATH_ENV,)
    ),
    SLURMD_IMAGE: oci.ImageConfig(
        entrypoint=["/usr/local/bin/slurmd-entrypoint.sh"], env=(PATH_ENV,)
    ),
    SLURMRESTD_IMAGE: oci.ImageConfig(
        entrypoint=["tini", "-g", "--", "slurmrestd"], cmd=["0.0.0.0:6820"], env=(PATH_ENV,)
    ),
    SLURMDBD_IMAGE: oci.ImageConfig(
        entrypoint=["tini", "-g", "--", "slurmdbd", "-D"], env=(PATH_ENV,)
    ),
    LOGIN_IMAGE: oci.ImageConfig(
        entrypoint=["/usr/local/bin/login-entrypoint.sh"], env=(PATH_ENV,)
    ),
    MARIADB_IMAGE: oci.ImageConfig(
        entrypoint=["/usr/local/bin/mariadb-entrypoint.sh"], env=(PATH_ENV,)
    ),
}
"""Image reference -> its runtime config (all on the chroot layer and the extra layer)."""

GO_IMAGES: Mapping[str, tuple[str, Callable[[], Path]]] = {
    OPERATOR_IMAGE: ("manager", lambda: operator_binary("manager")),
    WEBHOOK_IMAGE: ("webhook", lambda: operator_binary("webhook")),
    **{
        ref: (name, lambda name=name: bridge_binary(name))  # type: ignore[misc]
        for name, ref in BRIDGE_IMAGES.items()
    },
}
"""Image reference -> (the program's name in ``/``, how to build or find it), as upstream's
Dockerfiles lay them out: ``ENTRYPOINT ["/<name>"]``, ``USER 65532:65532``."""


class ImagesError(HarnessError):
    """An image could not be built; the message names the step and its log."""


@dataclass(frozen=True)
class Archives:
    """The built archives and the references each holds."""

    slurm: Path
    slinky: Path

    @property
    def references(self) -> dict[str, Path]:
        """Image reference -> the archive holding it."""
        refs = dict.fromkeys(SLURM_IMAGES, self.slurm)
        refs.update(dict.fromkeys([*GO_IMAGES, LOGFILE_IMAGE], self.slinky))
        return refs


def images_root() -> Path:
    """``<suite cache>/images``."""
    return cache_root() / "images"


def digest_of(parts: Sequence[tuple[str, bytes | Path]]) -> str:
    """16 hex digits of sha256 over named parts (bytes, or a file's content), in order."""
    digest = hashlib.sha256()
    for name, part in parts:
        data = part if isinstance(part, bytes) else part.read_bytes()
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:16]


def _sources() -> list[tuple[str, bytes | Path]]:
    return [("images.py", Path(__file__)), ("oci.py", Path(oci.__file__))]


def slurm_key(chroot: Path) -> str:
    """``slurm-<version>-<digest>`` of the chroot's marker and the sources."""
    marker = chroot / ".slinky-chroot.json"
    if not marker.is_file():
        raise ImagesError(f"{chroot} has no marker: not a complete Slurm chroot")
    version = json.loads(marker.read_text())["slurm_version"]
    return f"slurm-{version}-{digest_of([('marker', marker), *_sources()])}"


def slinky_key(binaries: Mapping[str, Path]) -> str:
    """``slinky-<tag>-<digest>`` of the Go binaries, busybox and the sources."""
    parts: list[tuple[str, bytes | Path]] = [(ref, path) for ref, path in sorted(binaries.items())]
    return f"slinky-{SLINKY_TAG}-{digest_of([*parts, ('busybox', BUSYBOX), *_sources()])}"


def _cached(target: Path, build: Callable[[Path], None], what: str, expected: str) -> Path:
    """``target`` if it exists; else build it once (locked) into a temporary file renamed in."""
    if target.is_file():
        print(f"images: reusing {target}", file=sys.stderr)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with locked(target.parent / f".{target.stem}.lock"):
        if target.is_file():
            return target
        partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
        try:
            with heartbeat(what, expected, quiet_for=10):
                build(partial)
            partial.rename(target)
        finally:
            partial.unlink(missing_ok=True)
    return target


def _download(chroot: Path, dest: Path, log: Path) -> list[Path]:
    """``apt-get download`` :data:`EXTRA_PACKAGES` (sackd at the chroot's Slurm version) using
    the chroot's apt lists, into ``dest``."""
    version = chroot_info(chroot).slurm_version
    apt = [
        "apt-get", "-q",
        "-o", f"Dir::State::Lists={chroot}/var/lib/apt/lists",
        "-o", f"Dir::State::status={chroot}/var/lib/dpkg/status",
        "-o", f"Dir::Etc::SourceList={chroot}/etc/apt/sources.list",
        "-o", "Dir::Etc::SourceParts=/dev/null",
        "-o", f"Dir::Cache={dest}/apt-cache",
        "-o", "Debug::NoLocking=1",
        "-o", "APT::Sandbox::User=root",
        "download", f"sackd={version}", "tini",
    ]  # fmt: skip
    proc = subprocess.run(apt, cwd=dest, capture_output=True, text=True, check=False, timeout=300)
    log.write_text(f"$ {' '.join(apt)}\n{proc.stdout}{proc.stderr}")
    debs = sorted(dest.glob("*.deb"))
    if proc.returncode != 0 or len(debs) != len(EXTRA_PACKAGES):
        raise ImagesError(f"apt-get download of {', '.join(EXTRA_PACKAGES)} failed; log: {log}")
    return debs


def _passwd(chroot: Path, name: str, old: int) -> str:
    """The chroot's ``/etc/<name>`` with the slurm user (or group) renumbered to 401."""
    lines = []
    for line in (chroot / "etc" / name).read_text().splitlines():
        fields = line.split(":")
        if fields[0] == "slurm":
            fields[2] = str(SLURM_UID)
            if name == "passwd":
                fields[3] = str(SLURM_UID)
        lines.append(":".join(fields))
    if not any(line.startswith("slurm:") for line in lines):
        raise ImagesError(f"{chroot}/etc/{name} has no slurm entry (uid {old} expected)")
    return "\n".join(lines) + "\n"


def _extra_layer(chroot: Path, work: Path, log: Path) -> oci.Layer:
    """sackd and tini, ``/etc/passwd`` and ``/etc/group`` with slurm as 401, the entrypoints,
    the folders Slurm writes in."""
    info = chroot_info(chroot)
    tree = work / "extra"
    for deb in _download(chroot, work, log):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], check=True, capture_output=True)
    etc = tree / "etc"
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "passwd").write_text(_passwd(chroot, "passwd", info.slurm_uid))
    (etc / "group").write_text(_passwd(chroot, "group", info.slurm_gid))
    bindir = tree / "usr" / "local" / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    for name, script in ENTRYPOINTS.items():
        path = bindir / f"{name}-entrypoint.sh"
        path.write_text(script)
        path.chmod(0o755)
    for folder, mode in (
        ("var/log/slurm", 0o755),
        ("var/spool/slurmd", 0o755),
        ("var/spool/slurmctld", 0o755),
        ("run/slurm", 0o755),
        ("run/slurmctld", 0o755),
        ("var/lib/mysql", 0o755),
        ("run/mysqld", 0o755),
        ("tmp", 0o1777),
    ):
        (tree / folder).mkdir(parents=True, exist_ok=True)
        (tree / folder).chmod(mode)
    owned = dict.fromkeys(SLURM_FOLDERS, SLURM_UID)
    return oci.tree_layer(tree, work / "extra.tar", owned=owned)


def build_slurm(target: Path, chroot: Path, log: Path) -> None:
    """Write the Slurm archive (:data:`SLURM_IMAGES`) to ``target``; ``log``: apt's output."""
    info = chroot_info(chroot)
    with tempfile.TemporaryDirectory(prefix=".images-", dir=target.parent) as tmp:
        work = Path(tmp)
        base = oci.tree_layer(
            chroot,
            work / "base.tar",
            exclude=LEFT_OUT,
            empty=HOLLOW,
            owners={info.slurm_uid: SLURM_UID},
        )
        extra = _extra_layer(chroot, work, log)
        oci.write_images(
            target,
            [oci.Image(ref, [base, extra], config) for ref, config in SLURM_IMAGES.items()],
        )


def _busybox_layer(target: Path) -> oci.Layer:
    names = subprocess.run(
        [str(BUSYBOX), "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    entries = [
        oci.Entry("bin"),
        oci.Entry("bin/busybox", BUSYBOX),
        *(oci.Entry(f"bin/{n}", link="busybox", mode=0o777) for n in names if n != "busybox"),
        oci.Entry("tmp", mode=0o1777),
    ]
    return oci.write_layer(target, entries)


def build_slinky(target: Path, binaries: Mapping[str, Path]) -> None:
    """Write the operator's, webhook's, bridge's and log sidecar's archive to ``target``."""
    with tempfile.TemporaryDirectory(prefix=".images-", dir=target.parent) as tmp:
        work = Path(tmp)
        passwd = work / "passwd"
        passwd.write_text(
            f"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:{NONROOT_UID}:"
            f"{NONROOT_UID}:nonroot:/home/nonroot:/sbin/nologin\n"
        )
        group = work / "group"
        group.write_text(f"root:x:0:\nnonroot:x:{NONROOT_UID}:\n")
        base = oci.write_layer(
            work / "base.tar",
            [
                oci.Entry("etc"),
                oci.Entry("etc/passwd", passwd, mode=0o644),
                oci.Entry("etc/group", group, mode=0o644),
                oci.Entry("tmp", mode=0o1777),
                oci.Entry("home"),
                oci.Entry("home/nonroot"),
            ],
        )
        images = []
        for ref, (name, _) in GO_IMAGES.items():
            layer = oci.write_layer(work / f"{name}.tar", [oci.Entry(name, binaries[ref])])
            config = oci.ImageConfig(
                entrypoint=[f"/{name}"], user=f"{NONROOT_UID}:{NONROOT_UID}", env=(), workdir="/"
            )
            images.append(oci.Image(ref, [base, layer], config))
        busybox = _busybox_layer(work / "busybox.tar")
        images.append(
            oci.Image(
                LOGFILE_IMAGE,
                [busybox],
                oci.ImageConfig(cmd=["/bin/sh"], env=("PATH=/usr/sbin:/usr/bin:/sbin:/bin",)),
            )
        )
        oci.write_images(target, images)


def ensure_images() -> Archives:
    """Build or reuse both archives (see the module docstring)."""
    try:
        chroot = ensure_chroot()
    except SlurmChrootError as exc:
        raise ImagesError(str(exc)) from exc
    root = images_root()
    started = time.monotonic()
    key = slurm_key(chroot)
    slurm = _cached(
        root / f"{key}.tar",
        lambda t: build_slurm(t, chroot, root / f"{key}.apt.log"),
        "images: Slurm images from the sid chroot",
        COLD_BUILD,
    )
    binaries = {ref: find() for ref, (_, find) in GO_IMAGES.items()}
    slinky = _cached(
        root / f"{slinky_key(binaries)}.tar",
        lambda t: build_slinky(t, binaries),
        "images: operator, webhook, slurm-bridge and log sidecar images",
        "about 10 s",
    )
    print(f"images: ready in {time.monotonic() - started:.1f}s", file=sys.stderr)
    return Archives(slurm, slinky)


def prune(keep: Archives) -> list[Path]:
    """Remove archives of other keys from the cache; return what was removed."""
    removed = []
    for path in images_root().glob("*.tar"):
        if path not in (keep.slurm, keep.slinky):
            path.unlink()
            removed.append(path)
    return removed


def main(argv: Sequence[str] | None = None) -> int:
    """Build or reuse; print the archives (exit 1 with the reason on failure)."""
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.build.images", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--prune", action="store_true", help="remove archives of other keys")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("images: not root; the real node needs root, nothing to build", file=sys.stderr)
        return 0
    try:
        archives = ensure_images()
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.prune:
        for path in prune(archives):
            print(f"images: removed {path}", file=sys.stderr)
    print(archives.slurm)
    print(archives.slinky)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
