#!/usr/bin/env -S python3 -m nox -f
# /// script
# dependencies = ["nox==2026.10.20", "uv==0.13.8"]
# ///
"""Test tiers of the Slinky chart suite. ``nox -l`` lists them; ``nox`` runs what CI runs."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import nox

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
PYTEST = ("pytest", "--strict-config", "--strict-markers", "-ra")
MYPY_CACHE = (
    "import mypy.version, slinky_harness.core.paths as p;"
    "print(p.cache_root() / 'mypy' / mypy.version.__version__)"
)

# pytest-xdist workers per tier (``-n``). The slurm and cluster tiers mostly wait on daemons, jobs and
# reconciles, so they run more workers than the machine has cores; the CPU-bound tiers run one per
# core. SLINKY_WORKERS=N overrides every tier (1 runs in one process); ``-- -n N`` one session.
WORKERS = {"lint": 2, "render": 2, "props": 2, "unit": 2, "slurm": 6, "cluster": 3}


def _install(session: nox.Session, *groups: str) -> None:
    """Install the package (editable) and the named dependency groups."""
    requirements: list[str] = []
    for group in groups:
        requirements += nox.project.dependency_groups(PYPROJECT, group)
    session.install("-e", ".", *dict.fromkeys(requirements))


def _tools(session: nox.Session, *names: str) -> Path:
    """Build or reuse the pinned Go tools and put them first on PATH. The build runs in the
    open, so a cold one shows what it builds and its progress; the PATH is read afterwards.
    Returns the tools' folder: ``session.run`` looks a program up on the process's own PATH,
    not the session's, so a session that runs a tool itself names it by its full path."""
    # `install` with no names means every tool (the control plane's kubectl too); `path` with no
    # names means the lint tools, which is what a session that names none needs.
    session.run(
        "python", "-m", "slinky_harness.build.toolchain", "install" if names else "path", *names
    )
    prefix = session.run(
        "python", "-m", "slinky_harness.build.toolchain", "path", *names, silent=True
    )
    if prefix is None:  # --install-only: nothing ran, so there is no folder to put on PATH
        return Path()
    assert isinstance(prefix, str)
    folder = prefix.strip().splitlines()[-1]
    session.env["PATH"] = f"{folder}{os.pathsep}{os.environ['PATH']}"
    return Path(folder)


def _prebuild(session: nox.Session) -> None:
    """The control plane with the Slinky operator and slurm-bridge (one Go build), and the Slurm
    chroot, built or reused in the open before pytest, which would hide their progress lines."""
    session.run("python", "-m", "slinky_harness.build.controlplane")
    session.run("python", "-m", "slinky_harness.build.slurm_chroot")


def _workers(tier: str) -> tuple[str, ...]:
    workers = int(os.environ.get("SLINKY_WORKERS", WORKERS.get(tier, 1)))
    return ("-n", str(workers)) if workers > 1 else ()


def _targets(folder: str, posargs: Sequence[str]) -> list[str]:
    """``folder`` followed by ``posargs``; when a posarg names a test file or folder (``path`` or
    ``path::test``), only the posargs: ``nox -s unit -- tests/unit/x.py`` runs that file alone."""
    named = any(not arg.startswith("-") and (ROOT / arg.split("::")[0]).exists() for arg in posargs)
    return list(posargs) if named else [folder, *posargs]


def _pytest(session: nox.Session, folder: str, *extra: str, tier: str = "") -> None:
    session.run(
        *PYTEST, *_workers(tier or session.name), *extra, *_targets(folder, session.posargs)
    )


@contextlib.contextmanager
def _beside(session: nox.Session, tier: str, folder: str, *extra: str) -> Iterator[None]:
    """Run ``tier``'s pytest in the background while the ``with`` body runs, then show its output
    and fail the session if it failed. Both tiers mostly wait (on Slurm jobs, on reconciles), so
    side by side they take little longer than the longer one alone."""
    # beside the session's virtualenv: session.create_tmp() would point TMPDIR at the clone for
    # every later command, and podman's and MariaDB's socket paths have length limits
    log = Path(session.virtualenv.location) / f"{tier}.log"
    argv = [*PYTEST, *_workers(tier), *extra, *_targets(folder, session.posargs)]
    env = {**os.environ, **{k: v for k, v in session.env.items() if v is not None}}
    env["PATH"] = f"{session.bin}{os.pathsep}{env['PATH']}"
    session.log(f"{tier} tier: started beside this one; its output follows at the end ({log})")
    started = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )

    def announce() -> None:
        code = proc.wait()
        session.log(f"{tier} tier: ended (exit {code}) after {time.monotonic() - started:.0f} s")

    threading.Thread(target=announce, daemon=True).start()
    try:
        yield
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGTERM)
        raise
    finally:
        while proc.poll() is None:
            session.log(f"waiting for the {tier} tier ({time.monotonic() - started:.0f} s so far)")
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
        print(f"----- {tier} tier ($ {shlex.join(argv)}) -----")
        print(log.read_text(), end="", flush=True)
    if proc.returncode != 0:
        session.error(f"the {tier} tier failed (exit {proc.returncode}); its output is above")


def _slurm_setup(session: nox.Session) -> None:
    session.run("python", "-m", "slinky_harness.build.slurm_chroot")
    # Slurm 24.11 (slurmctld only), for tests/slurm/test_slurm_versions.py: the version rules.
    session.run("python", "-m", "slinky_harness.build.slurm_chroot", "--suite", "trixie")
    session.env["SLINKY_REQUIRE_SLURM"] = "1"  # fail, never skip, when the tier cannot run


def _cluster_setup(session: nox.Session) -> None:
    _tools(session, "helm", "helm3", "ct", "kubectl")
    _prebuild(session)
    # The real node's containerd, runc, CNI plugins and iptables (Debian packages), CoreDNS
    # (tools/coredns), the pause binary and their images (tests/cluster/test_real_node.py).
    session.run("python", "-m", "slinky_harness.build.nodeparts")
    # The images the charts render (Slurm from the sid chroot, operator, webhook, slurm-bridge,
    # the log sidecar), cached by content (tests/cluster/test_real_slurm.py imports them).
    session.run("python", "-m", "slinky_harness.build.images", "--prune")
    # Podman and the image base from Debian packages, then the labeler image from the Dockerfile,
    # in the open (tests/cluster/test_image.py runs it; its build then comes from the layer cache).
    session.run("python", "-m", "slinky_harness.build.labeler_image", "prepare")


# One run: the real Slinky operator and slurm-bridge are built with the control plane from
# tools/go.mod (SlinkyProject modules pinned in tools/go.sum), so nothing in it is optional.
# --dist loadscope: each file runs whole in one worker, except the files of tests/conftest.py's
# SPREAD, whose independent tests are handed out one by one.
CLUSTER_ARGS = ("tests/cluster", "--dist", "loadscope")


@nox.session
def lint(session: nox.Session) -> None:
    """ct lint, helm lint --strict (Helm 4 and 3), schemas, skeleton, README drift, yamllint, ruff, mypy."""
    _install(session, "test", "lint", "typing")
    _tools(session)
    session.run("ruff", "check", "scripts", "tests", "noxfile.py")
    session.run("ruff", "format", "--check", "scripts", "tests", "noxfile.py")
    # mypy's cache outside the clone, by mypy version: a fresh clone checks in 2 s, not 20 (mypy
    # compares each file's hash when its path or mtime changed, so a stale entry is never trusted).
    cache = session.run("python", "-c", MYPY_CACHE, silent=True)
    if cache is not None:  # None only under --install-only, where nothing runs
        session.run("mypy", "--cache-dir", str(cache).strip())
    _pytest(session, "tests/lint")


@nox.session
def render(session: nox.Session) -> None:
    """helm template of every chart, ci scenario and profile; strict schemas and render invariants."""
    _install(session, "test")
    _tools(session)
    _pytest(session, "tests/render")


@nox.session
def props(session: nox.Session) -> None:
    """Property-based tests: chart values from each values.schema.json, and topology invariants."""
    _install(session, "test")
    _tools(session)
    _pytest(session, "tests/props")


@nox.session
def unit(session: nox.Session) -> None:
    """Unit tests of the Python packages (topology generator, CRD generator, harness)."""
    _install(session, "test")
    _tools(session)
    _pytest(session, "tests/unit", "-m", "not bench")


@nox.session(default=False)
def slurm(session: nox.Session) -> None:
    """Real Slurm 26.05 and 24.11 (Debian sid, trixie chroots): generated topology loads in slurmctld."""
    _install(session, "test")
    _slurm_setup(session)
    _pytest(session, "tests/slurm")


@nox.session(default=False)
def cluster(session: nox.Session) -> None:
    """Real kube-apiserver, controller-manager and scheduler with kwok nodes (builds them once)."""
    _install(session, "test")
    _cluster_setup(session)
    _pytest(session, *CLUSTER_ARGS)


@nox.session
def live(session: nox.Session) -> None:
    """The slurm and cluster tiers side by side (what ``nox`` runs; each alone: ``-s slurm``, ``-s cluster``)."""
    _install(session, "test")
    _slurm_setup(session)
    # The slurm tier needs only the Slurm chroots: it starts before the cluster tier's builds,
    # so on a cold cache its tests run while the control plane and the node parts compile.
    with _beside(session, "slurm", "tests/slurm"):
        _cluster_setup(session)
        _pytest(session, *CLUSTER_ARGS, tier="cluster")


# Not a default session: the cluster tier runs the same demo (tests/cluster/test_demo.py, which
# also checks its report against the live cluster), so a CI run runs the demo once.
@nox.session(default=False)
def demo(session: nox.Session) -> None:
    """README's main command: a kwok GPU fleet, the suite installed, its topology in a real slurmctld."""
    _install(session, "test")
    _tools(session, "helm", "kubectl")
    _prebuild(session)
    session.run("python", "-m", "slinky_harness.apps.demo", *session.posargs)


def conformance_builds(args: list[str]) -> bool:
    """Whether a conformance command line needs the control plane and the Slurm chroot: a run of
    any phase but ``static`` (``--phases static``, the quick check, builds neither)."""
    phases = "static,live,slurm,pods"
    for index, arg in enumerate(args):
        if arg == "--phases" and index + 1 < len(args):
            phases = args[index + 1]
        elif arg.startswith("--phases="):
            phases = arg.partition("=")[2]
    return any(p.strip() not in ("", "static") for p in phases.split(","))


def conformance_pods(args: list[str], *, root: bool | None = None) -> bool:
    """Whether a conformance command line may run the pods phase (real pods), so its images and
    the real node's parts are built first: the phase is not left out (``--phases``, ``--real-pods
    never``) and a real node can start here (root; the command itself says why not, when not),
    or ``SLINKY_REAL_PODS`` names a kind cluster."""
    phases = "static,live,slurm,pods"
    mode = "auto"
    for index, arg in enumerate(args):
        value = args[index + 1] if index + 1 < len(args) else ""
        if arg == "--phases":
            phases = value
        elif arg.startswith("--phases="):
            phases = arg.partition("=")[2]
        elif arg == "--real-pods":
            mode = value
        elif arg.startswith("--real-pods="):
            mode = arg.partition("=")[2]
    if mode == "never" or "pods" not in [p.strip() for p in phases.split(",")]:
        return False
    if root is None:
        root = sys.platform.startswith("linux") and os.geteuid() == 0
    return root or mode == "always" or os.environ.get("SLINKY_REAL_PODS", "").startswith("kind:")


@nox.session(default=False)
def conformance(session: nox.Session) -> None:
    """Your own values on the suite's real parts: nox -s conformance -- -f my-values.yaml [...]."""
    _install(session, "conformance")
    session.install("-e", "tools/conformance")
    if conformance_builds(session.posargs):
        _tools(session, "helm", "helm3", "kubectl")
        _prebuild(session)
        if conformance_pods(session.posargs):
            # the pods phase: the real node's parts and the images the charts render, in the
            # open (cached by content: seconds when warm)
            session.run("python", "-m", "slinky_harness.build.nodeparts")
            session.run("python", "-m", "slinky_harness.build.images")
    else:
        _tools(session, "helm", "helm3")
    session.run("slinky-conformance", *session.posargs)


@nox.session(default=False)
def docs(session: nox.Session) -> None:
    """Regenerate generated files: values schemas, shared chart helpers, chart READMEs
    (helm-docs), the CRDs and MIGRATING.md's field-by-field differences."""
    _install(session, "crdgen", "schemagen")
    tools = _tools(session, "helm-docs")
    session.run("python", "-m", "slinky_schemagen")
    session.run("python", "-m", "slinky_schemagen.helpers")
    session.run("python", "-m", "slinky_crdgen")
    session.run("python", "-m", "slinky_harness.parity.migrating")
    session.run(str(tools / "helm-docs"), "--chart-search-root", "charts", external=True)


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Benchmarks: topology generation at 1k, 10k and 65,536 nodes, side by side with NVIDIA topograph."""
    _install(session, "test")
    session.run(*PYTEST, "tests/unit/bench", "-m", "bench")
    session.run("python", "-m", "slinky_harness.apps.bench", *session.posargs)
    _tools(session, "kubectl")
    session.run("python", "-m", "slinky_harness.apps.labeler_bench")


@nox.session(default=False)
def kind(session: nox.Session) -> None:
    """For users with Docker and internet: the suite on a multi-node kind cluster (ct install flow)."""
    _install(session, "test")
    session.run("python", "-m", "slinky_harness.apps.kind", *session.posargs)


@nox.session(default=False)
def package(session: nox.Session) -> None:
    """Release: check versions against each chart's CHANGELOG.md, then helm package into dist/."""
    _install(session)
    _tools(session, "helm")
    session.run("python", "-m", "slinky_harness.apps.release", "package", *session.posargs)


if __name__ == "__main__":
    nox.main()
