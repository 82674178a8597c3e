"""The client side of a throw-away slurmctld: Slurm's commands run in the chroot against one
controller (:class:`SlurmClient`, the base of :class:`~slinky_harness.slurm.ctld.SlurmCtld`), what
they answer (:class:`CommandResult`, :class:`WouldStart`) and the errors of the controller's
commands and daemons. :mod:`slinky_harness.slurm.ctld` starts and stops the daemons."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

from slinky_harness.build.slurm_chroot import (
    CHROOT_ENV,
    MOUNT_POINT,
    TEST_GROUP,
    TEST_USERS,
    chroot_argv,
)
from slinky_harness.core.errors import HarnessError, WaitTimeout
from slinky_harness.core.polling import wait_for
from slinky_harness.slurm.conf import CONF_PATH, parse_records

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path

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


def last_problem(log: str) -> str:
    """The last fatal or error line of a Slurm daemon's log (for a start-up error message)."""
    lines = [ln for ln in log.splitlines() if re.search(r"\b(fatal|error)\b", ln, re.IGNORECASE)]
    if lines:
        return lines[-1].strip()
    tail = log.strip().splitlines()
    return tail[-1].strip() if tail else "(no output)"


class SlurmClient:
    """Slurm's client commands against one controller, run in the chroot ``root`` with the
    controller's work folder mounted (``workdir``); ``emulator``: prefer the
    ``slurm-wlm-emulator`` clients."""

    def __init__(self, root: Path, workdir: Path, *, emulator: bool) -> None:
        self.root = root
        self.workdir = workdir
        """Host folder mounted on ``/srv/slinky`` for this controller's processes."""
        self.emulator = emulator

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
