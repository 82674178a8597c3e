"""Cached ``go build``: the one way the harness compiles Go.

Every Go build of the suite (the pinned tools, the control plane with the Slinky components,
topograph, a local operator checkout) runs through :func:`go_build`, which shares one module cache
and one build cache in ``$SLINKY_SUITE_CACHE/go`` (:func:`go_env`), so that a warm run compiles
nothing and two builds of the same package compile it once. Where the result goes is the caller's
:func:`slinky_harness.build.cache.staged_folder`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from slinky_harness.core.errors import HarnessError
from slinky_harness.core.paths import cache_root
from slinky_harness.core.progress import heartbeat

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["BuildError", "go_build", "go_env", "module_dir"]


class BuildError(HarnessError):
    """A build step failed (no ``go``, a failed download or compile); the message names the log."""


def go_env() -> dict[str, str]:
    """Environment for ``go`` commands: caches outside the clone, static binaries."""
    root = cache_root() / "go"
    env = dict(os.environ)
    env.update(
        GOMODCACHE=str(root / "mod"),
        GOCACHE=str(root / "build"),
        GOFLAGS="-mod=mod",
        CGO_ENABLED="0",
        GOTOOLCHAIN="local",
    )
    return env


def module_dir(module: str, version: str, *, within: Path | None = None) -> Path:
    """Download ``module@version`` through the Go module proxy and return its folder.

    ``within``: a Go module folder whose ``go.sum`` pins the module's hashes (``tools/`` for the
    Slinky modules); the download is checked against those instead of the public checksum
    database, which a private proxy such as CI's ``shared/goproxy`` cannot answer for."""
    go = shutil.which("go")
    if go is None:
        raise BuildError(f"{module}@{version}: no 'go' command on PATH; install Go 1.26 or newer")
    with heartbeat(f"go mod download {module}@{version}", "under a minute", quiet_for=10):
        proc = subprocess.run(
            [go, "mod", "download", "-json", f"{module}@{version}"],
            capture_output=True,
            text=True,
            env=go_env(),
            cwd=within if within is not None else tempfile.gettempdir(),
            check=False,
        )
    try:
        info = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError:
        info = {}
    if proc.returncode != 0 or "Dir" not in info:
        reason = info.get("Error") or proc.stderr.strip().splitlines()[-1:] or ["unknown error"]
        raise BuildError(f"{module}@{version}: go mod download failed: {reason}")
    return Path(info["Dir"])


def go_build(
    args: Sequence[str], *, cwd: Path, log: Path, what: str, expected: str = "under a minute"
) -> None:
    """``go build ARGS`` in ``cwd`` with the suite's Go caches (one build cache for every Go
    build of the suite), at low CPU priority, output in ``log``; while it runs, a progress line
    every 30 s says how long it has taken against ``expected`` (what a cold build takes)."""
    go = shutil.which("go")
    if go is None:
        raise BuildError(f"{what}: no 'go' command on PATH to build it; install Go 1.26+")
    cmd = [go, "build", *args]
    nice = shutil.which("nice")
    if nice is not None:
        cmd = [nice, "-n", os.environ.get("SLINKY_SUITE_BUILD_NICE", "19"), *cmd]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out, heartbeat(f"{what}: go build (log: {log})", expected):
        out.write(f"$ (cd {cwd} && {' '.join(cmd)})\n")
        out.flush()
        proc = subprocess.run(
            cmd, cwd=cwd, env=go_env(), stdout=out, stderr=subprocess.STDOUT, check=False
        )
    if proc.returncode != 0:
        tail = log.read_text().strip().splitlines()[-1:] or ["no output"]
        raise BuildError(f"{what}: go build failed ({tail[0]}); full log: {log}")
