"""Slurm accounting for the real-Slurm tier: MariaDB and slurmdbd 26.05 in the Slurm chroot.

slurmctld 26.05 does not start with ``AccountingStorageType=accounting_storage/slurmdbd`` unless a
slurmdbd answers, so every test that proves an accounting policy (fair share, QoS, limits, ``sacct``)
runs the real pair from Debian sid's packages (:data:`slinky_harness.build.slurm_chroot.ACCOUNTING_PACKAGES`):

* **MariaDB** (``mariadbd`` of ``mariadb-server-core``): a private instance with its own data folder
  under a work folder, a unix socket there and a free TCP port on 127.0.0.1; ``mariadb-install-db``
  plus start-up take about 1.5 s on the project's 2-core machines. One per test session is enough:
  :meth:`MariaDB.provision` drops and recreates a database and its user in about 0.05 s.
* **slurmdbd**, configured with the ``slurmdbd.conf`` that the Slinky operator writes for the
  chart's ``Accounting`` object (:func:`operator_slurmdbd_conf` reproduces it; the cluster tier passes
  the operator's real Secret content instead). Only what names Kubernetes addresses or container
  paths is changed (:func:`localize_slurmdbd_conf`): ``DbdPort`` (a free port), ``StorageHost`` and
  ``StoragePort`` (the private MariaDB), ``/etc/slurm/`` paths and ``LogFile``. ``DbdHost`` stays the operator's
  (``<accounting>-accounting-0``): slurmdbd runs in a UTS namespace with that host name, as in its pod.
  Start-up on an empty database (schema creation) takes about 0.5 s.

Both daemons are tied to the test process like slurmctld (:mod:`slinky_harness.slurm.ctld`): their own
PID namespace, ``unshare --kill-child`` plus a parent-death signal, a shell as the namespace's first
process for slurmdbd (it switches to ``SlurmUser``), process group stopped on exit, also on errors.

API for a test or another tier (all typed)::

    from slinky_harness.slurm.dbd import (
        mariadb,                 # context manager -> MariaDB (one per session)
        slurmdbd,                # context manager -> Slurmdbd, from a slurmdbd.conf text
        release_accounting,      # context manager -> Slurmdbd, from a rendered chart (below)
    )
    from slinky_harness.slurm.dbd_conf import (
        AccountingSpec,          # the Accounting object's fields the operator reads
        operator_slurmdbd_conf,  # (AccountingSpec, password) -> slurmdbd.conf (operator v1.2.1)
        localize_slurmdbd_conf,  # operator text -> text for the chroot
    )
    from slinky_harness.slurm.ctld import slurmctld

    with mariadb(root=root, workdir=tmp / "db") as db:          # per session
        # a) from a chart render (what the real-Slurm tier does)
        manifest = helm.template(chart, values).docs
        with release_accounting(manifest, database=db, workdir=tmp / "dbd") as dbd:
            with slurmctld(files, accounting=dbd, emulator=True) as ctld:
                ctld.sacctmgr("add", "account", "physics")   # sacctmgr -i ...
                ctld.sacct("-X", "-n", "-P", "-o", "JobID,Account")
        # b) from the operator's own slurmdbd.conf (what the cluster tier will do)
        spec = AccountingSpec.from_object(accounting_cr)        # the Accounting as applied
        db.provision(spec.storage.database, spec.storage.username, password)  # the DBA's step
        with slurmdbd(secret_text, database=db, slurm_key=key, jwt_key=jwt) as dbd:
            with slurmctld(files, accounting=dbd) as ctld: ...

``slurmctld(files, accounting=dbd)`` adds ``AccountingStorageType=accounting_storage/slurmdbd``,
``AccountingStorageHost`` and ``AccountingStoragePort`` (harness-owned keys: refused in the caller's
slurm.conf, so a localised operator slurm.conf simply drops its own) and uses the slurmdbd's
``slurm.key`` (both daemons must share it; a different ``slurm.key`` in ``files`` is refused).
slurmctld registers its ``ClusterName`` with slurmdbd on start (with the cluster's ``root`` account
and root's association); several controllers may share one slurmdbd if their cluster names differ.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slinky_harness.build.slurm_chroot import (
    CHROOT_ENV,
    MOUNT_POINT,
    SlurmChrootError,
    chroot_argv,
    chroot_info,
    ensure_chroot,
)
from slinky_harness.core import ports, processes
from slinky_harness.core.errors import HarnessError, WaitTimeout
from slinky_harness.core.files import write_atomic
from slinky_harness.core.polling import wait_for
from slinky_harness.core.progress import heartbeat
from slinky_harness.slurm.ctld import SlurmCommandError, SlurmctldStartError, last_problem
from slinky_harness.slurm.dbd_conf import (
    DBD_ETC,
    AccountingSpec,
    StorageConfig,
    localize_slurmdbd_conf,
    operator_slurmdbd_conf,
    parse_conf,
    rendered_secret,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

__all__ = [
    "MariaDB",
    "MariaDBStartError",
    "Slurmdbd",
    "SlurmdbdStartError",
    "accounting_daemon",
    "conf_problems",
    "mariadb",
    "release_accounting",
    "slurmdbd",
]


DB_HOSTNAME = "mariadb"
"""Host name of MariaDB's UTS namespace (only its logs show it)."""
DB_SOCKET = f"{MOUNT_POINT}/mysqld.sock"
_MARIADB_ARGS = (
    "--innodb-buffer-pool-size=64M",
    "--innodb-log-file-size=64M",
    # slurmdbd logs an error and warns it will die on a write conflict while this is ON (the
    # MariaDB 11.8 default); Slurm asks for lock waits of 900 s.
    "--innodb-snapshot-isolation=OFF",
    "--innodb-lock-wait-timeout=900",
)


class MariaDBStartError(HarnessError):
    """mariadb-install-db or mariadbd failed, or MariaDB did not answer; ``log`` says why."""

    def __init__(self, message: str, log: str) -> None:
        super().__init__(message)
        self.log = log


class SlurmdbdStartError(SlurmctldStartError):
    """slurmdbd exited during start-up or did not answer; ``log`` holds what it logged."""


# --- MariaDB -------------------------------------------------------------------------------------


def _came_up(proc: subprocess.Popen[bytes], ready: Callable[[], bool], timeout: float) -> bool:
    """Whether ``ready()`` holds before ``proc`` exits or ``timeout`` seconds pass."""
    with contextlib.suppress(WaitTimeout):
        wait_for(
            lambda: proc.poll() is not None or ready(),
            timeout=timeout,
            what="a daemon to answer",
            every=0.05,
        )
    return proc.poll() is None and ready()


def _daemon(
    root: Path, workdir: Path, argv: Sequence[str], logfile: Path, *, hostname: str,
    shell_init: bool = False, env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:  # fmt: skip
    """Start ``argv`` in the chroot in its own PID, mount and UTS namespaces, tied to us."""
    cmd = chroot_argv(
        root,
        argv,
        binds={MOUNT_POINT: workdir, "/run": workdir / "run"},
        hostname=hostname,
        proc=True,
        pid_ns=True,
        shell_init=shell_init,
        cwd=MOUNT_POINT,
    )
    return processes.start(cmd, log=logfile, env=env or CHROOT_ENV)


class MariaDB:
    """A private MariaDB server in the chroot (made by :func:`mariadb`; valid inside the ``with``).

    ``root@localhost`` (unix socket authentication) is the administrator; :meth:`sql` uses it.
    """

    def __init__(self, root: Path, workdir: Path, *, timeout: float) -> None:
        self.root = root
        self.workdir = workdir
        """Host folder mounted on ``/srv/slinky``: ``data/``, ``mysqld.sock``, ``mariadbd.log``."""
        self.timeout = timeout
        self.host = "127.0.0.1"
        self.port = 0
        self.socket = self.workdir / "mysqld.sock"
        """Host path of the unix socket (``/srv/slinky/mysqld.sock`` in the chroot)."""
        self.start_seconds = 0.0
        """mariadb-install-db plus start-up until the port answers."""
        self._proc: subprocess.Popen[bytes] | None = None

    def log(self) -> str:
        parts = []
        for name in ("install.log", "mariadbd.stderr", "mariadbd.log"):
            path = self.workdir / name
            if path.exists():
                parts.append(path.read_text(encoding="utf-8", errors="replace"))
        return "\n".join(parts)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def sql(self, statements: str, *, database: str | None = None, timeout: float = 60.0) -> str:
        """Run SQL as ``root`` over the unix socket; tab-separated rows without a header."""
        argv = ["mariadb", "--no-defaults", f"--socket={DB_SOCKET}", "-u", "root", "-N", "-B"]
        if database:
            argv.append(database)
        cmd = chroot_argv(self.root, argv, binds={MOUNT_POINT: self.workdir})
        res = subprocess.run(
            cmd, input=statements, capture_output=True, text=True, env=CHROOT_ENV,
            timeout=timeout, check=False,
        )  # fmt: skip
        if res.returncode != 0:
            raise SlurmCommandError(("mariadb", statements[:80]), res.returncode, res.stdout,
                                    res.stderr)  # fmt: skip
        return res.stdout

    def provision(self, database: str, username: str, password: str) -> None:
        """The database administrator's step for the chart's storage settings: an empty
        ``database`` (dropped first when it exists) and ``username``@``%`` with ``password`` and
        all privileges on it (created, or its password reset)."""

        def literal(value: str) -> str:
            return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"

        def ident(value: str) -> str:
            return "`" + value.replace("`", "``") + "`"

        user = f"{literal(username)}@'%'"
        self.sql(
            f"DROP DATABASE IF EXISTS {ident(database)};\n"
            f"CREATE DATABASE {ident(database)};\n"
            f"CREATE USER IF NOT EXISTS {user} IDENTIFIED BY {literal(password)};\n"
            f"ALTER USER {user} IDENTIFIED BY {literal(password)};\n"
            f"GRANT ALL PRIVILEGES ON {ident(database)}.* TO {user};\n"
        )

    def _install(self) -> None:
        data = self.workdir / "data"
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True)
        (self.workdir / "run").mkdir(exist_ok=True)
        # Its own temporary folder: in a PID namespace every server has the same pids, and so the
        # same temporary file names in a shared /tmp (parallel test workers collided there).
        (self.workdir / "tmp").mkdir(exist_ok=True)
        self.workdir.chmod(0o755)
        argv = ["mariadb-install-db", "--no-defaults", "--user=root",
                f"--datadir={MOUNT_POINT}/data", "--auth-root-authentication-method=socket",
                f"--tmpdir={MOUNT_POINT}/tmp", "--skip-test-db", *_MARIADB_ARGS]  # fmt: skip
        # own PID namespace: the bootstrap mariadbd it starts dies with it, even on SIGKILL
        cmd = chroot_argv(self.root, argv, binds={MOUNT_POINT: self.workdir},
                          hostname=DB_HOSTNAME, proc=True, pid_ns=True)  # fmt: skip
        rc = processes.run_to_end(
            cmd, log=self.workdir / "install.log", env=CHROOT_ENV, timeout=self.timeout
        )
        if rc != 0:
            raise MariaDBStartError(f"mariadb-install-db exited {rc}", self.log())

    def _start(self) -> None:
        started = time.monotonic()
        self._install()
        for _attempt in range(3):
            self.port = ports.allocate_one()
            argv = ["/usr/sbin/mariadbd", "--no-defaults", "--user=root",
                    f"--datadir={MOUNT_POINT}/data", f"--socket={DB_SOCKET}",
                    f"--tmpdir={MOUNT_POINT}/tmp",
                    f"--port={self.port}", "--bind-address=127.0.0.1", "--skip-name-resolve",
                    f"--pid-file={MOUNT_POINT}/mariadbd.pid",
                    f"--log-error={MOUNT_POINT}/mariadbd.log", *_MARIADB_ARGS]  # fmt: skip
            (self.workdir / "mariadbd.log").unlink(missing_ok=True)
            self._proc = _daemon(
                self.root, self.workdir, argv, self.workdir / "mariadbd.stderr",
                hostname=DB_HOSTNAME,
            )  # fmt: skip
            if _came_up(self._proc, self._answers, self.timeout):
                self.start_seconds = time.monotonic() - started
                return
            self.stop()
            ports.release(self.port)
            if "Address already in use" not in self.log():
                raise MariaDBStartError(
                    f"mariadbd did not start: {last_problem(self.log())}", self.log()
                )
        raise MariaDBStartError("mariadbd found no free port", self.log())

    def _answers(self) -> bool:
        return ports.accepts(self.port) and self.socket.exists()

    def stop(self) -> int | None:
        """SIGTERM to mariadbd's process group (a clean shutdown; SIGKILL after 20 s)."""
        if self._proc is None:
            return None
        return processes.stop(self._proc, grace=20.0)


@contextlib.contextmanager
def mariadb(
    *, root: Path | None = None, workdir: Path | None = None, keep: bool = False,
    timeout: float = 60.0,
) -> Iterator[MariaDB]:  # fmt: skip
    """Start a private MariaDB (fresh data folder), stop it on exit.

    ``workdir``: host folder for its data, socket and logs (default a temporary folder, removed on
    exit unless ``keep``). Raises :class:`MariaDBStartError`.
    """
    chroot = root if root is not None else ensure_chroot()
    if not chroot_info(chroot).accounting:
        raise SlurmChrootError("the chroot has no MariaDB (recipe < 3): rebuild it")
    own = workdir is None
    wd = Path(tempfile.mkdtemp(prefix="slinky-mariadb-")) if workdir is None else workdir
    wd.mkdir(parents=True, exist_ok=True)
    db = MariaDB(chroot, wd, timeout=timeout)
    try:
        with heartbeat(f"MariaDB: a private server in the Slurm chroot ({wd})", "about 3 s"):
            db._start()
        yield db
    finally:
        db.stop()
        ports.release(db.port)
        if own and not keep:
            shutil.rmtree(wd, ignore_errors=True)


# --- slurmdbd ------------------------------------------------------------------------------------


class Slurmdbd:
    """A running slurmdbd in the chroot (made by :func:`slurmdbd`; valid inside the ``with``)."""

    def __init__(
        self, root: Path, workdir: Path, *, database: MariaDB, conf: str, given_conf: str,
        slurm_key: bytes, jwt_key: bytes, timeout: float,
    ) -> None:  # fmt: skip
        self.root = root
        self.workdir = workdir
        """Host folder mounted on ``/srv/slinky``: ``etc/slurmdbd.conf``, keys, ``slurmdbd.stderr``."""
        self.database = database
        self.conf = conf
        """The slurmdbd.conf slurmdbd reads (localised)."""
        self.given_conf = given_conf
        """The slurmdbd.conf as given (the operator's)."""
        self.settings = parse_conf(given_conf)
        """``Key=Value`` settings of the given slurmdbd.conf."""
        self.slurm_key = slurm_key
        self.jwt_key = jwt_key
        self.timeout = timeout
        self.host = parse_conf(conf).get("DbdHost", "localhost")
        self.port = 0
        self.start_seconds = 0.0
        self._proc: subprocess.Popen[bytes] | None = None

    def slurm_conf(self) -> dict[str, str]:
        """The slurm.conf keys that point a slurmctld (and its clients) at this slurmdbd."""
        return {
            "AccountingStorageType": "accounting_storage/slurmdbd",
            "AccountingStorageHost": "127.0.0.1",
            "AccountingStoragePort": str(self.port),
        }

    def log(self) -> str:
        """What slurmdbd logged (its ``-D`` stderr, which also holds errors from before the log
        file opened)."""
        path = self.workdir / "slurmdbd.stderr"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _prepare(self) -> None:
        info = chroot_info(self.root)
        uid, gid = info.slurm_uid, info.slurm_gid
        etc, run = self.workdir / "etc", self.workdir / "run"
        shutil.rmtree(etc, ignore_errors=True)
        shutil.rmtree(run, ignore_errors=True)
        etc.mkdir(parents=True)
        run.mkdir()
        self.workdir.chmod(0o755)
        etc.chmod(0o755)
        os.chown(run, uid, gid)  # slurmdbd (as SlurmUser) creates /run/slurmdbd
        files = {"slurmdbd.conf": self.conf.encode(), "slurm.key": self.slurm_key,
                 "jwt.key": self.jwt_key}  # fmt: skip
        for name, data in files.items():
            # slurmdbd refuses a slurmdbd.conf others can read
            write_atomic(etc / name, data, mode=0o600, owner=(uid, gid))
        (self.workdir / "slurmdbd.stderr").unlink(missing_ok=True)

    def _start(self, given_conf: str) -> None:
        started = time.monotonic()
        for _attempt in range(3):
            self.port = ports.allocate_one()
            self.conf = localize_slurmdbd_conf(
                given_conf, dbd_port=self.port, storage_host=self.database.host,
                storage_port=self.database.port,
            )  # fmt: skip
            self._prepare()
            # slurmdbd finds slurmdbd.conf and slurm.key next to $SLURM_CONF (which need not exist)
            env = {**CHROOT_ENV, "SLURM_CONF": f"{DBD_ETC}/slurm.conf"}
            self._proc = _daemon(
                self.root, self.workdir, ["/usr/sbin/slurmdbd", "-D"],
                self.workdir / "slurmdbd.stderr", hostname=self.host, shell_init=True, env=env,
            )  # fmt: skip
            if _came_up(self._proc, self._answers, self.timeout):
                self.start_seconds = time.monotonic() - started
                return
            rc = self._proc.poll()
            self.stop()
            ports.release(self.port)
            if "Address already in use" not in self.log():
                what = f"exited with {rc}" if rc is not None else "did not answer"
                raise SlurmdbdStartError(
                    f"slurmdbd {what} during start-up: {last_problem(self.log())}",
                    self.log(),
                    rc,
                )
        raise SlurmdbdStartError("slurmdbd found no free port", self.log(), None)

    def _answers(self) -> bool:
        return ports.accepts(self.port)

    def stop(self) -> int | None:
        """SIGTERM to slurmdbd's process group (SIGKILL after 10 s)."""
        if self._proc is None:
            return None
        return processes.stop(self._proc, grace=10.0)


@contextlib.contextmanager
def slurmdbd(
    conf: str,
    *,
    database: MariaDB,
    root: Path | None = None,
    workdir: Path | None = None,
    slurm_key: bytes | None = None,
    jwt_key: bytes | None = None,
    keep: bool = False,
    timeout: float = 30.0,
) -> Iterator[Slurmdbd]:
    """Start slurmdbd on ``conf`` (a slurmdbd.conf as the operator writes it), stop it on exit.

    The conf is localised (:func:`localize_slurmdbd_conf`) to ``database`` (which must hold the
    conf's ``StorageLoc``, ``StorageUser`` and ``StoragePass``: see :meth:`MariaDB.provision`).
    ``slurm_key`` / ``jwt_key``: the key Secrets' values (default 1 KiB random each); a slurmctld
    started with ``accounting=`` this slurmdbd uses the same ``slurm.key``. Raises
    :class:`SlurmdbdStartError` with slurmdbd's log when it exits during start-up.
    """
    chroot = root if root is not None else database.root
    if not chroot_info(chroot).accounting:
        raise SlurmChrootError("the chroot has no slurmdbd (recipe < 3): rebuild it")
    own = workdir is None
    wd = Path(tempfile.mkdtemp(prefix="slinky-slurmdbd-")) if workdir is None else workdir
    wd.mkdir(parents=True, exist_ok=True)
    dbd = Slurmdbd(
        chroot, wd, database=database, conf=conf, given_conf=conf,
        slurm_key=slurm_key if slurm_key is not None else os.urandom(1024),
        jwt_key=jwt_key if jwt_key is not None else os.urandom(1024), timeout=timeout,
    )  # fmt: skip
    try:
        dbd._start(conf)
        yield dbd
    finally:
        dbd.stop()
        ports.release(dbd.port)
        if own and not keep:
            shutil.rmtree(wd, ignore_errors=True)


@contextlib.contextmanager
def release_accounting(
    docs: Sequence[Mapping[str, Any]],
    *,
    database: MariaDB,
    secrets_given: Mapping[str, Mapping[str, bytes | str]] | None = None,
    root: Path | None = None,
    workdir: Path | None = None,
    keep: bool = False,
) -> Iterator[Slurmdbd]:
    """slurmdbd for a rendered slurm-cluster release with accounting on (no operator needed).

    From ``docs`` (``helm template`` output): the ``Accounting`` object (storage settings,
    ``extraConf``, key references) and the key Secrets the chart renders (``slurm.key``,
    ``jwt.key``). The database password Secret is the user's (the chart only references it): its
    value comes from ``secrets_given`` (Secret name -> key -> value) or, when absent, a random
    password is made for it. Then, as in a cluster: the database administrator's step
    (:meth:`MariaDB.provision` with the storage settings and that password), the operator's
    slurmdbd.conf (:func:`operator_slurmdbd_conf`) and slurmdbd on it. The password used is
    ``dbd.settings["StoragePass"]``.
    """
    spec = AccountingSpec.from_manifest(docs)

    def value(ref: tuple[str, str]) -> bytes | None:
        given = (secrets_given or {}).get(ref[0], {})
        if ref[1] in given:
            raw = given[ref[1]]
            return raw.encode("utf-8") if isinstance(raw, str) else raw
        return rendered_secret(docs, *ref)

    s = spec.storage
    password_bytes = value((s.password_secret, s.password_key))
    password = (
        password_bytes.decode("utf-8") if password_bytes is not None else secrets.token_urlsafe(24)
    )
    database.provision(s.database, s.username, password)
    conf = operator_slurmdbd_conf(spec, password)
    with slurmdbd(
        conf, database=database, root=root, workdir=workdir, slurm_key=value(spec.slurm_key_ref),
        jwt_key=value(spec.jwt_key_ref), keep=keep,
    ) as dbd:  # fmt: skip
        yield dbd


def conf_problems(conf: str, spec: AccountingSpec, password: str) -> list[str]:
    """How a slurmdbd.conf (the operator's, Secret ``<accounting>-accounting``) disagrees with the
    ``Accounting`` object's storage settings and the database password; empty when it agrees."""
    settings = parse_conf(conf)
    s = spec.storage
    want = {
        "StorageHost": s.host,
        "StoragePort": str(s.port),
        "StorageLoc": s.database,
        "StorageUser": s.username,
    }
    problems = [
        f"{key}={settings.get(key, '(unset)')}, but the Accounting object says {value}"
        for key, value in want.items()
        if settings.get(key) != value
    ]
    if settings.get("StoragePass") != password:
        problems.append(
            f"StoragePass is not the password in Secret {s.password_secret} (key {s.password_key})"
        )
    return problems


@contextlib.contextmanager
def accounting_daemon(
    accounting: Mapping[str, Any],
    *,
    database: MariaDB,
    slurm_key: bytes,
    jwt_key: bytes,
    conf: str | None = None,
    password: str | None = None,
    workdir: Path | None = None,
    root: Path | None = None,
) -> Iterator[Slurmdbd]:
    """The slurmdbd a release's slurm.conf points at, run on ``database`` with the cluster's
    ``slurm_key`` and ``jwt_key``.

    For an operator-run ``Accounting`` object: on ``conf`` (the slurmdbd.conf the operator wrote;
    None: :func:`operator_slurmdbd_conf` of the object) with the database ``password`` (the value
    of ``storageConfig.passwordKeyRef``; None: a random one), after the database administrator's
    step (:meth:`MariaDB.provision` with the storage settings). For an external one (a slurmdbd
    somewhere else): a stand-in on the operator's own slurmdbd.conf shape, so that a slurmctld
    pointed at it starts. Raises :class:`SlurmdbdStartError` when slurmdbd refuses the conf.
    """
    if (accounting.get("spec") or {}).get("external"):
        name = str(accounting["metadata"]["name"])
        spec = AccountingSpec(
            name=name,
            namespace=str(accounting["metadata"].get("namespace", "")),
            storage=StorageConfig(
                host="", port=3306, database=f"{name.replace('-', '_')}_acct",
                username="slurm", password_secret="", password_key="",
            ),
            extra_conf="",
            jwks=False,
            slurm_key_ref=("", ""),
            jwt_key_ref=("", ""),
        )  # fmt: skip
        password, conf = secrets.token_urlsafe(16), None
    else:
        spec = AccountingSpec.from_object(accounting)
        password = password if password is not None else secrets.token_urlsafe(24)
    text = conf if conf is not None else operator_slurmdbd_conf(spec, password)
    database.provision(spec.storage.database, spec.storage.username, password)
    with slurmdbd(
        text, database=database, root=root, workdir=workdir, slurm_key=slurm_key,
        jwt_key=jwt_key,
    ) as running:  # fmt: skip
        yield running
