"""A throw-away slurmctld in the Slurm chroot (:func:`slurmctld` -> :class:`SlurmCtld`), with emulated
slurmd, slurmrestd and an optional slurmdbd; the package doc (:mod:`slinky_harness.slurm`) is the
guide: API, how a controller runs, and the node recipe for topology annotations."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from slinky_harness.build.slurm_chroot import (
    CHROOT_ENV,
    MOUNT_POINT,
    TEST_GROUP,
    TEST_USERS,
    ChrootInfo,
    SlurmChrootError,
    chroot_argv,
    chroot_info,
    ensure_chroot,
)
from slinky_harness.core import ports, processes
from slinky_harness.core.errors import HarnessError, WaitTimeout
from slinky_harness.core.files import write_atomic
from slinky_harness.core.polling import wait_for
from slinky_harness.slurm.conf import (
    CONF_PATH,
    DEFAULT_FILES,
    HOSTNAME,
    ConfigFiles,
    FileSource,
    compose_slurm_conf,
    parse_records,
    read_files,
)

if TYPE_CHECKING:
    from slinky_harness.slurm.dbd import Slurmdbd

__all__ = [
    "ENDED_STATES",
    "CommandResult",
    "CtldFactory",
    "SlurmCommandError",
    "SlurmCtld",
    "SlurmctldStartError",
    "SlurmdStartError",
    "slurmctld",
]

CtldFactory = Callable[[ConfigFiles], AbstractContextManager["SlurmCtld"]]
"""What the tier's ``start_ctld`` fixture returns: ``with start_ctld(files) as ctld: ...``."""


ENDED_STATES = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
     "BOOT_FAIL", "DEADLINE"}
)  # fmt: skip
"""Final ``JobState`` values (what :meth:`SlurmCtld.run_job` waits for)."""


class SlurmCommandError(HarnessError):
    """A command run in the chroot exited non-zero."""

    def __init__(self, argv: Sequence[str], returncode: int, stdout: str, stderr: str) -> None:
        detail = (stderr.strip() or stdout.strip()).splitlines()
        super().__init__(
            f"{' '.join(argv)} exited {returncode}: {detail[-1] if detail else '(no output)'}"
        )
        self.argv = tuple(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


class SlurmctldStartError(HarnessError):
    """slurmctld exited during start-up or did not answer in time; ``log`` holds what it logged."""

    def __init__(self, message: str, log: str, returncode: int | None) -> None:
        super().__init__(message)
        self.log = log
        self.returncode = returncode


class SlurmdStartError(HarnessError):
    """An emulated slurmd exited or its node did not become idle; ``log`` holds its output."""

    def __init__(self, message: str, log: str) -> None:
        super().__init__(message)
        self.log = log


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    @property
    def ok(self) -> bool:
        """Exit 0 and no ``error`` on stderr: some scontrol reads (``show topology``) exit 0 even
        when the request failed (``slurm_load_topo error: ...``)."""
        return self.returncode == 0 and not re.search(r"\berror\b", self.stderr, re.IGNORECASE)


@dataclass(frozen=True)
class WouldStart:
    """What ``sbatch --test-only`` says of a job: the nodes it would start on ("" when none)."""

    nodes: str
    text: str
    """sbatch's whole answer (it writes the placement to stderr)."""
    returncode: int

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and bool(self.nodes)

    @property
    def said(self) -> str:
        """sbatch's last line, or its exit status when it said nothing."""
        return self.text.splitlines()[-1] if self.text else f"exit {self.returncode}"


class SlurmCtld:
    """A running slurmctld in the chroot (made by :func:`slurmctld`; valid inside the ``with``)."""

    def __init__(
        self,
        root: Path,
        workdir: Path,
        info: ChrootInfo,
        *,
        emulator: bool,
        timeout: float,
        accounting: Slurmdbd | None = None,
    ) -> None:
        self.root = root
        self.workdir = workdir
        """Host folder mounted on ``/srv/slinky`` for this controller's processes."""
        self.etc_dir = workdir / "etc"
        """Host path of the config folder (``/srv/slinky/etc`` inside the chroot)."""
        self.info = info
        self.emulator = emulator
        self.timeout = timeout
        self.port = 0
        self.slurmd_port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._slurmds: dict[str, subprocess.Popen[bytes]] = {}
        self._restd: subprocess.Popen[bytes] | None = None
        self.restd_port = 0
        self._pid = 0
        self.accounting = accounting
        """The slurmdbd this controller reports to (``slurmctld(..., accounting=...)``), or None."""

    # --- processes -------------------------------------------------------------------------------

    def _argv(
        self,
        argv: Sequence[str],
        *,
        hostname: str | None = None,
        run_dir: Path | None = None,
        own_pids: bool = False,
        shell_init: bool = False,
    ) -> list[str]:
        # /run is per controller too: slurmctld serves auth/slurm tokens to local clients on
        # /run/slurmctld/sack.socket, and a shared /run would let clients ask the wrong controller.
        binds = {MOUNT_POINT: self.workdir, "/run": run_dir or self.workdir / "run"}
        return chroot_argv(
            self.root,
            argv,
            binds=binds,
            hostname=hostname,
            cwd=MOUNT_POINT,  # job output files and the like land in the work folder
            # Daemons get their own PID namespace, tied to this process by a parent-death signal
            # (unshare --kill-child), so they and their children die even if we are SIGKILLed.
            # slurmctld drops to SlurmUser, which clears that signal: a shell stays init for it.
            proc=own_pids,
            pid_ns=own_pids,
            shell_init=shell_init,
        )

    def _client(self, name: str) -> str:
        if self.emulator and (self.root / "usr/bin" / f"{name}-emulator").exists():
            return f"{name}-emulator"
        return name

    def run(
        self,
        *argv: str,
        check: bool = True,
        timeout: float = 60.0,
        input: str | None = None,
        user: str | None = None,
    ) -> CommandResult:
        """Run a command in the chroot with ``SLURM_CONF`` pointing at this controller's slurm.conf.

        ``check``: raise :class:`SlurmCommandError` unless :attr:`CommandResult.ok`. ``user``: run
        it as that user of the chroot (one of :data:`TEST_USERS`; ``setpriv``, no PAM) instead of
        root: auth/slurm then gets the user's token from slurmctld's socket, as on a login node.
        """
        env = {**CHROOT_ENV, "SLURM_CONF": CONF_PATH}
        if user is not None:
            if user not in TEST_USERS:
                raise ValueError(f"unknown chroot user {user!r} (one of {', '.join(TEST_USERS)})")
            drop = ["setpriv", f"--reuid={TEST_USERS[user]}", f"--regid={TEST_GROUP[1]}",
                    "--init-groups", "--"]  # fmt: skip
            argv = (*drop, *argv)
            env["USER"] = env["LOGNAME"] = user
            env["HOME"] = "/nonexistent"
        res = subprocess.run(
            self._argv(argv),
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            input=input,
            check=False,
        )
        result = CommandResult(tuple(argv), res.returncode, res.stdout, res.stderr)
        if check and not result.ok:
            raise SlurmCommandError(argv, res.returncode, res.stdout, res.stderr)
        return result

    def scontrol(self, *args: str) -> str:
        """``scontrol args...`` -> stdout; :class:`SlurmCommandError` on a non-zero exit."""
        return self.run(self._client("scontrol"), *args).stdout

    def sinfo(self, *args: str) -> str:
        return self.run(self._client("sinfo"), *args).stdout

    def log(self) -> str:
        """Everything slurmctld logged (its ``-D`` stderr: also what came before the log file)."""
        path = self.workdir / "slurmctld.stderr"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    @property
    def pid(self) -> int:
        """Host pid of the slurmctld process (0 when not found)."""
        if self._proc is None:
            return 0
        if not self._pid:
            self._pid = _find_descendant(self._proc.pid, "slurmctld")
        return self._pid

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # --- topology helpers ------------------------------------------------------------------------

    def show_topology(self, name: str | None = None, *args: str) -> str:
        """``scontrol show topology [name] [unit=X] [node=N]``."""
        return self.scontrol("show", "topology", *([name] if name else []), *args)

    def hostnames(self, hostlist: str) -> list[str]:
        """Expand a hostlist with Slurm's own parser (``scontrol show hostnames``)."""
        return self.scontrol("show", "hostnames", hostlist).split()

    def create_node(
        self, name: str, topology: str | None = None, *, state: str = "CLOUD", **attrs: str
    ) -> None:
        """``scontrol create NodeName=name CPUs=1 State=CLOUD [Topology=...] [Key=Value ...]``."""
        settings = {"CPUs": "1", **attrs, "State": state}
        if topology is not None:
            settings["Topology"] = topology
        self.scontrol("create", f"NodeName={name}", *(f"{k}={v}" for k, v in settings.items()))

    def set_node_topology(self, name: str, topology: str) -> None:
        """``scontrol update NodeName=name Topology=topology`` (empty: leave every topology)."""
        self.scontrol("update", f"NodeName={name}", f"Topology={topology}")

    def node_topology(self, name: str) -> str:
        """The ``Topology=`` slurmctld reports for a node (``""`` when it has none)."""
        records = parse_records(self.scontrol("show", "node", "-o", name))
        if not records:
            raise SlurmCommandError(("show", "node", name), 1, "", f"no node {name}")
        return records[0].get("Topology", "")

    # --- emulated slurmd ----------------------------------------------------------------------

    def start_slurmd(self, *nodes: str, timeout: float = 30.0) -> None:
        """Start one slurmd per node (see :func:`emulated_nodes`) and wait until all are idle.

        Each runs ``slurmd -D -N <node>`` in its own PID namespace with a fresh ``/proc``, so the
        node's job steps die with it; they are stopped before slurmctld on exit. Real jobs then run:
        ``ctld.run("srun", "-N", "2", "hostname")``, ``sbatch --wait``.
        """
        if len(nodes) + len(self._slurmds) > 1 and not self.emulator:
            raise SlurmChrootError("several slurmd per host need slurmctld(..., emulator=True)")
        daemon = "slurmd-wlm-emulator" if self.emulator else "slurmd-wlm"
        for node in nodes:
            if node in self._slurmds:
                continue
            (self.workdir / "spool" / node).mkdir(parents=True, exist_ok=True)
            run_dir = self.workdir / "slurmd" / node / "run"
            run_dir.mkdir(parents=True, exist_ok=True)
            argv = [f"/usr/sbin/{daemon}", "-D", "-N", node, "-f", CONF_PATH]
            self._slurmds[node] = processes.start(
                self._argv(argv, run_dir=run_dir, own_pids=True),
                log=self.workdir / f"slurmd-{node}.stderr",
                env={**CHROOT_ENV, "SLURM_CONF": CONF_PATH},
            )
        self._wait_idle(nodes, timeout)

    def _wait_idle(self, nodes: Sequence[str], timeout: float) -> None:
        want = set(nodes)
        idle: set[str] = set()

        def all_idle() -> bool:
            for node in nodes:
                proc = self._slurmds[node]
                if proc.poll() is not None:
                    log = self.slurmd_log(node)
                    raise SlurmdStartError(
                        f"slurmd {node} exited with {proc.returncode}: {last_problem(log)}", log
                    )
            res = self.run(self._client("sinfo"), "-h", "-N", "-o", "%N %t", check=False)
            rows = (ln.partition(" ") for ln in res.stdout.splitlines())
            idle.clear()
            idle.update(name for name, _, state in rows if state == "idle")
            return want <= idle

        try:
            wait_for(all_idle, timeout=timeout, what=f"nodes {','.join(nodes)} idle", every=0.2)
        except WaitTimeout:
            missing = sorted(want - idle)
            raise SlurmdStartError(
                f"nodes not idle after {timeout:.0f} s: {','.join(missing)}",
                self.slurmd_log(missing[0]),
            ) from None

    def run_job(
        self, *sbatch_args: str, timeout: float = 60.0, user: str | None = None
    ) -> dict[str, str]:
        """``sbatch --parsable -o /dev/null <args>``, wait until the job ends, return its record.

        Polls ``scontrol show job -o`` every 0.1 s (``sbatch --wait`` polls far slower). Raises
        :class:`TimeoutError` when the job is still pending or running after ``timeout`` seconds.
        ``user``: submit as that chroot user (see :meth:`run`).
        """
        job_id = self.submit(*sbatch_args, user=user)
        return self.wait_job(job_id, ENDED_STATES, timeout=timeout)

    def test_only(self, *sbatch_args: str) -> WouldStart:
        """``sbatch --test-only <args> --wrap true``: where slurmctld would start the job, without
        submitting it."""
        result = self.run(
            self._client("sbatch"), "--test-only", *sbatch_args, "--wrap", "true", check=False
        )
        text = (result.stdout + result.stderr).strip()
        placed = re.search(r"on nodes (\S+)", text)
        return WouldStart(placed.group(1) if placed else "", text, result.returncode)

    def submit(self, *sbatch_args: str, user: str | None = None) -> str:
        """``sbatch --parsable -o /dev/null <args>`` (as ``user``); returns the job id."""
        out = self.run(
            self._client("sbatch"), "--parsable", "-o", "/dev/null", *sbatch_args, user=user
        )
        return out.stdout.strip().split(";")[0]

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job -o <id>`` as one record (empty when slurmctld forgot the job)."""
        res = self.run(self._client("scontrol"), "show", "job", "-o", job_id, check=False)
        records = parse_records(res.stdout) if res.returncode == 0 else []
        return records[0] if records else {}

    def wait_job(
        self, job_id: str, states: Iterable[str], *, timeout: float = 60.0
    ) -> dict[str, str]:
        """Poll the job every 0.1 s until its ``JobState`` is one of ``states``; its record.

        Raises :class:`~slinky_harness.core.errors.WaitTimeout` (a ``TimeoutError``, with the last
        state and reason) after ``timeout`` seconds.
        """
        want = set(states)
        last: dict[str, str] = {}

        def reached() -> dict[str, str] | None:
            last.clear()
            last.update(self.job(job_id))
            return dict(last) if last.get("JobState") in want else None

        try:
            return wait_for(reached, timeout=timeout, what=f"job {job_id}", every=0.1)
        except WaitTimeout:
            raise WaitTimeout(
                f"job {job_id} still {last.get('JobState', 'unknown')} "
                f"(Reason={last.get('Reason', '')}) after {timeout:.0f} s, "
                f"waiting for {'/'.join(sorted(want))}"
            ) from None

    # --- accounting clients (slurmctld(..., accounting=...)) -----------------------------------

    def sacctmgr(self, *args: str, user: str | None = None) -> str:
        """``sacctmgr -i <args>`` (immediate: no confirmation) -> stdout; raises on failure."""
        return self.run(self._client("sacctmgr"), "-i", *args, user=user).stdout

    def registered_clusters(self) -> list[str]:
        """The clusters slurmdbd has registered (``sacctmgr list cluster``; none when it cannot
        be asked)."""
        listed = self.run(
            self._client("sacctmgr"), "-n", "-P", "list", "cluster", "format=Cluster", check=False
        )
        return listed.stdout.split()

    def sacct(self, *args: str, user: str | None = None) -> str:
        """``sacct <args>`` -> stdout (e.g. ``-X -n -P -a -o JobID,Account,QOS``)."""
        return self.run(self._client("sacct"), *args, user=user).stdout

    def sshare(self, *args: str, user: str | None = None) -> str:
        return self.run(self._client("sshare"), *args, user=user).stdout

    def sprio(self, *args: str, user: str | None = None) -> str:
        return self.run(self._client("sprio"), *args, user=user).stdout

    def slurmd_log(self, node: str) -> str:
        path = self.workdir / f"slurmd-{node}.stderr"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    def stop_slurmd(self, *nodes: str) -> None:
        """Stop the given emulated slurmd (all when none given), with their job steps."""
        for node in nodes or tuple(self._slurmds):
            proc = self._slurmds.pop(node, None)
            if proc is not None:
                processes.stop(proc, grace=5.0)

    # --- slurmrestd ------------------------------------------------------------------------------

    def start_slurmrestd(self, timeout: float = 20.0) -> int:
        """Start slurmrestd (JWT auth, as ``nobody``) for this controller; return its local port.

        Callers authenticate with ``X-SLURM-USER-TOKEN`` (a JWT signed with the ``jwt.key`` that
        slurm.conf's ``AuthAltParameters`` names). Stopped with slurmctld.
        """
        if self._restd is not None:
            return self.restd_port
        self.restd_port = ports.allocate_one()
        argv = ["/usr/sbin/slurmrestd", "-u", "65534", "-g", "65534", "-a", "rest_auth/jwt",
                f"127.0.0.1:{self.restd_port}"]  # fmt: skip
        self._restd = processes.start(
            self._argv(argv, own_pids=True, shell_init=True),
            log=self.workdir / "slurmrestd.log",
            # SLURM_JWT=daemon: slurmrestd accepts callers' tokens (Slurm's REST quick start).
            env={**CHROOT_ENV, "SLURM_CONF": CONF_PATH, "SLURM_JWT": "daemon"},
        )
        restd, port = self._restd, self.restd_port

        def failed() -> SlurmctldStartError:
            log = (self.workdir / "slurmrestd.log").read_text(errors="replace")
            return SlurmctldStartError("slurmrestd did not start", log, restd.poll())

        def answers() -> bool:
            if restd.poll() is not None:
                raise failed()
            return ports.accepts(port)

        try:
            wait_for(answers, timeout=timeout, what="slurmrestd", every=0.1)
        except WaitTimeout:
            raise failed() from None
        return self.restd_port

    # --- configuration ---------------------------------------------------------------------------

    def write_file(self, name: str, content: FileSource) -> None:
        """Replace one config file atomically (``slurm.conf`` is composed again).

        Call :meth:`reconfigure` afterwards to make slurmctld read it.
        """
        data = read_files({name: content})[name]
        if name == "slurm.conf":
            data = compose_slurm_conf(data.decode("utf-8"), self._managed()).encode("utf-8")
        tmp = self.etc_dir / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.chmod(0o644)
        tmp.replace(self.etc_dir / name)

    def reconfigure(self, *, settle: float = 5.0) -> None:
        """``scontrol reconfigure``, then wait until slurmctld has re-read its files and answers.

        In ``-D`` mode slurmctld re-executes itself in place (same pid). The wait looks for one more
        "Running as primary controller" line in the log (at most ``settle`` seconds), then pings.
        """
        marker = "Running as primary controller"
        before = self.log().count(marker)
        self.scontrol("reconfigure")
        with contextlib.suppress(WaitTimeout):  # at most ``settle``; _wait_ready decides
            wait_for(
                lambda: self.log().count(marker) > before or not self.alive(),
                timeout=settle,
                what="slurmctld to re-read its files",
                every=0.05,
            )
        self._wait_ready()

    def _managed(self) -> dict[str, str]:
        return {
            "SlurmctldHost": f"{HOSTNAME}(127.0.0.1)",
            "SlurmctldPort": str(self.port),
            "SlurmdPort": str(self.slurmd_port),
            "SlurmUser": "slurm",
            "AuthType": "auth/slurm",
            "CredType": "cred/slurm",
            "StateSaveLocation": f"{MOUNT_POINT}/state",
            "SlurmctldPidFile": f"{MOUNT_POINT}/slurmctld.pid",
            "SlurmctldLogFile": f"{MOUNT_POINT}/slurmctld.log",
            **(self.accounting.slurm_conf() if self.accounting is not None else {}),
        }

    def _prepare(self, files: Mapping[str, bytes], *, keep_state: bool = False) -> None:
        uid, gid = self.info.slurm_uid, self.info.slurm_gid
        for sub in ("state", "spool", "run"):
            d = self.workdir / sub
            if keep_state and sub == "state" and d.is_dir():
                continue
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
            if sub != "run":
                os.chown(d, uid, gid)
        self.workdir.chmod(0o755)
        os.chown(self.workdir, uid, gid)
        shutil.rmtree(self.etc_dir, ignore_errors=True)
        self.etc_dir.mkdir()
        self.etc_dir.chmod(0o755)
        for name, data in {**DEFAULT_FILES, **files}.items():
            if name != "slurm.conf":
                self.write_file(name, data)
        self.write_file("slurm.conf", files.get("slurm.conf", b""))
        key = self.etc_dir / "slurm.key"
        if self.accounting is not None:
            if files.get("slurm.key", self.accounting.slurm_key) != self.accounting.slurm_key:
                raise ValueError("slurm.key differs from the slurmdbd's: both daemons need one key")
            write_atomic(key, self.accounting.slurm_key, mode=0o600)
        elif "slurm.key" not in files:
            write_atomic(key, os.urandom(1024), mode=0o600)
        for script in self.etc_dir.glob("*.sh"):  # PrologSlurmctld=, EpilogSlurmctld= scripts
            script.chmod(0o755)
        for secret in self.etc_dir.glob("*.key"):  # slurm.key, jwt.key: Slurm refuses others' keys
            secret.chmod(0o600)
            os.chown(secret, uid, gid)
        for stale in ("slurmctld.log", "slurmctld.pid", "slurmctld.stderr"):
            (self.workdir / stale).unlink(missing_ok=True)

    # --- lifecycle -------------------------------------------------------------------------------

    def restart(self, files: ConfigFiles) -> None:
        """Stop slurmctld, then start it on ``files`` (a new slurm.conf, keys, ...) with the
        state it saved (``StateSaveLocation``: jobs, dynamic nodes, reservations), as a slurmctld
        pod restarts on its persistent volume."""
        self.stop()
        ports.release(self.port, self.slurmd_port)
        self._start(read_files(files), keep_state=True)

    def _start(self, files: Mapping[str, bytes], *, keep_state: bool = False) -> None:
        last: SlurmctldStartError | None = None
        for _attempt in range(3):
            self.port, self.slurmd_port = ports.allocate_one(), ports.allocate_one()
            self._prepare(files, keep_state=keep_state)
            daemon = "slurmctld-wlm-emulator" if self.emulator else "slurmctld-wlm"
            if not (self.root / "usr/sbin" / daemon).exists() or not self.info.emulator:
                # Without the emulator build the ``slurmctld`` alternative can only be the plain
                # build; Slurm 24.11 needs that program name (its certmgr refuses to start in a
                # program not called slurmctld).
                daemon = "slurmctld"
            argv = ["/usr/sbin/" + daemon, "-D", "-i", "-f", CONF_PATH]
            self._pid = 0
            self._proc = processes.start(
                self._argv(argv, hostname=HOSTNAME, own_pids=True, shell_init=True),
                log=self.workdir / "slurmctld.stderr",
                env=CHROOT_ENV,
            )
            try:
                self._wait_ready()
                return
            except SlurmctldStartError as exc:
                self.stop()
                ports.release(self.port, self.slurmd_port)
                if "Address already in use" not in exc.log:
                    raise
                last = exc
        assert last is not None
        raise last

    def _wait_ready(self) -> None:
        ping = CommandResult(("ping",), -1, "", "no answer yet")

        def up() -> bool:
            nonlocal ping
            proc = self._proc
            if proc is None or proc.poll() is not None:
                rc = proc.returncode if proc is not None else None
                raise SlurmctldStartError(
                    f"slurmctld exited with {rc} during start-up: {last_problem(self.log())}",
                    self.log(),
                    rc,
                )
            try:
                ping = self.run(self._client("scontrol"), "ping", check=False, timeout=10)
            except subprocess.TimeoutExpired:
                ping = CommandResult(("ping",), -1, "", "scontrol ping timed out")
            return ping.returncode == 0 and " UP" in ping.stdout

        try:
            wait_for(up, timeout=self.timeout, what="slurmctld", every=0.05)
        except WaitTimeout:
            raise SlurmctldStartError(
                f"slurmctld did not answer within {self.timeout:.0f} s: {ping.output.strip()}",
                self.log(),
                None,
            ) from None

    def stop(self) -> int | None:
        """Stop emulated slurmd, then SIGTERM slurmctld's process group (SIGKILL after 10 s).

        Returns slurmctld's exit status.
        """
        self.stop_slurmd()
        if self._restd is not None:
            processes.stop(self._restd, grace=5.0)
            ports.release(self.restd_port)
            self._restd = None
        proc = self._proc
        if proc is None:
            return None
        return processes.stop(proc, grace=10.0)


def _find_descendant(ancestor: int, exe_prefix: str) -> int:
    """Host pid of the first descendant of ``ancestor`` whose executable starts with the prefix."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = (entry / "stat").read_text()
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    for pid in sorted(parents):
        up, hops = parents.get(pid), 0
        while up and up != ancestor and hops < 8:
            up, hops = parents.get(up), hops + 1
        if up == ancestor:
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/exe").resolve().name.startswith(exe_prefix):
                    return pid
    return 0


def last_problem(log: str) -> str:
    """The last fatal or error line of a Slurm daemon's log (for a start-up error message)."""
    lines = [ln for ln in log.splitlines() if re.search(r"\b(fatal|error)\b", ln, re.IGNORECASE)]
    if lines:
        return lines[-1].strip()
    tail = log.strip().splitlines()
    return tail[-1].strip() if tail else "(no output)"


@contextlib.contextmanager
def slurmctld(
    files: ConfigFiles | None = None,
    *,
    root: Path | None = None,
    workdir: Path | None = None,
    keep: bool = False,
    emulator: bool = False,
    timeout: float = 30.0,
    accounting: Slurmdbd | None = None,
) -> Iterator[SlurmCtld]:
    """Start a slurmctld on ``files`` (a folder or ``{name: text|bytes|Path}``), stop it on exit.

    ``root``: the chroot (default :func:`ensure_chroot`). ``workdir``: host folder for its config,
    state and logs (created; default a temporary folder removed on exit unless ``keep``).
    ``emulator``: run the ``slurm-wlm-emulator`` build (several slurmd per host). ``accounting``: a
    running slurmdbd (:mod:`slinky_harness.slurm.dbd`): slurm.conf gets
    ``AccountingStorageType=accounting_storage/slurmdbd`` and its host and port, and the controller
    uses its ``slurm.key``. Raises :class:`SlurmctldStartError` when the
    daemon exits during start-up or does not answer ``scontrol ping`` within ``timeout`` seconds.
    """
    data = read_files(files)
    chroot = root if root is not None else ensure_chroot()
    info = chroot_info(chroot)
    if emulator and not info.emulator:
        raise SlurmChrootError("the chroot has no slurm-wlm-emulator build")
    own = workdir is None
    wd = Path(tempfile.mkdtemp(prefix="slinky-slurmctld-")) if workdir is None else workdir
    wd.mkdir(parents=True, exist_ok=True)
    ctld = SlurmCtld(chroot, wd, info, emulator=emulator, timeout=timeout, accounting=accounting)
    try:
        ctld._start(data)
        yield ctld
    finally:
        ctld.stop()
        ports.release(ctld.port, ctld.slurmd_port)
        if own and not keep:
            shutil.rmtree(wd, ignore_errors=True)
