"""The real Slinky binaries: slurm-operator v1.2.1 (manager, webhook) and slurm-bridge v1.2.1
(scheduler, admission, controllers).

Where they come from:

1. by default, ``tools/go.mod``, which requires ``github.com/SlinkyProject/slurm-operator``,
   ``slurm-bridge`` and ``slurm-client`` at v1.2.1 with their hashes pinned in ``tools/go.sum``:
   :func:`slinky_harness.build.controlplane.ensure_binaries` builds them in the same ``go build``
   as the control plane (one module graph, so every Kubernetes package is compiled once), through
   the ordinary Go module proxy;
2. ``SLINKY_OPERATOR_SRC`` (an override for developers of the operator, manager and webhook
   only): a source checkout of ``github.com/SlinkyProject/slurm-operator``, built with
   ``go build -modfile`` on a copy of its ``go.mod`` into ``<cache>/operator/local/bin``; the
   checkout is only read.

A build that cannot happen raises :class:`OperatorUnavailable` naming what failed.
``python -m slinky_harness.build.slinky build`` builds (or reports why it cannot). The processes
run in :mod:`slinky_harness.k8s.operator` and :mod:`slinky_harness.k8s.bridge`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from slinky_harness.build.cache import staged_folder
from slinky_harness.build.controlplane import SLINKY_VERSION, ControlPlaneError, ensure_binaries
from slinky_harness.build.gobuild import BuildError, go_build
from slinky_harness.core.errors import HarnessError
from slinky_harness.core.paths import cache_root

if TYPE_CHECKING:
    from collections.abc import Sequence

MODULE = "github.com/SlinkyProject/slurm-operator"


VERSION = SLINKY_VERSION


SOURCE_ENV = "SLINKY_OPERATOR_SRC"


BINARIES = ("manager", "webhook")


class OperatorUnavailable(HarnessError):
    """A Slinky component cannot be built or started here; the message says what failed and where
    its log is."""


def _checkout() -> Path | None:
    """The source checkout named by ``SLINKY_OPERATOR_SRC``, checked to be the operator."""
    value = os.environ.get(SOURCE_ENV)
    if not value:
        return None
    src = Path(value).expanduser().resolve()
    gomod = src / "go.mod"
    if not gomod.is_file():
        raise OperatorUnavailable(
            f"{SOURCE_ENV}={value}: no go.mod there; point it at a checkout of {MODULE}"
        )
    first = gomod.read_text().splitlines()[0].split()
    if first[-1:] != [MODULE]:
        raise OperatorUnavailable(
            f"{SOURCE_ENV}={value}: go.mod declares {first[-1:]}, not {MODULE}"
        )
    return src


def _build_checkout(src: Path) -> Path:
    """Build ``src`` (a local checkout) into a cache folder keyed by its go.mod and sources."""
    digest = hashlib.sha256(str(src).encode())
    for path in sorted((src / "go.mod", src / "go.sum")):
        if path.is_file():
            digest.update(path.read_bytes())
    bindir = cache_root() / "operator" / "local" / digest.hexdigest()[:16] / "bin"
    log = bindir.parent / "build.log"
    bindir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="slinky-operator-mod-") as tmp:
        modfile = Path(tmp) / "go.mod"
        shutil.copyfile(src / "go.mod", modfile)
        if (src / "go.sum").is_file():
            shutil.copyfile(src / "go.sum", Path(tmp) / "go.sum")
        with staged_folder(bindir, "local") as staging:
            go_build(
                [
                    f"-modfile={modfile}",
                    "-trimpath",
                    "-o",
                    f"{staging}/",
                    "./cmd/manager",
                    "./cmd/webhook",
                ],
                cwd=src,
                log=log,
                what=f"slurm-operator from {src}",
            )
    return bindir


def operator_binary(name: str) -> Path:
    """The path of the operator's ``manager`` or ``webhook``, built once and cached."""
    if name not in BINARIES:
        raise OperatorUnavailable(f"no operator binary {name!r}; one of {BINARIES}")
    try:
        src = _checkout()
        if src is not None:
            return _build_checkout(src) / name
        return ensure_binaries() / f"slurm-operator-{name}"
    except (BuildError, ControlPlaneError) as exc:
        raise OperatorUnavailable(f"building slurm-operator {VERSION} failed: {exc}") from exc


def source() -> str:
    """Where :func:`binary` takes the operator from, in words."""
    src = _checkout()
    if src is not None:
        return f"the source checkout {src} ({SOURCE_ENV})"
    return f"{MODULE}@{VERSION} (tools/go.mod, hash pinned in tools/go.sum)"


def ensure_operator() -> Path:
    """The folder holding the operator's binaries (``slurm-operator-manager`` and
    ``slurm-operator-webhook``, or ``manager``/``webhook`` from a local checkout)."""
    return operator_binary("manager").parent


def bridge_binary(name: str) -> Path:
    """``scheduler``, ``admission`` or ``controllers``, built with the control plane."""
    if name not in ("scheduler", "admission", "controllers"):
        raise OperatorUnavailable(
            f"no slurm-bridge binary {name!r}; one of scheduler, admission, controllers"
        )
    try:
        return ensure_binaries() / f"slurm-bridge-{name}"
    except ControlPlaneError as exc:
        raise OperatorUnavailable(f"building slurm-bridge failed: {exc}") from exc


# -- CLI --------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``build``: build or reuse and say where; ``path``: print the folder of the binaries.
    Exit 2 with one line when the build fails."""
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.build.slinky", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("command", choices=["build", "path"])
    args = parser.parse_args(argv)
    try:
        manager = operator_binary("manager")
    except OperatorUnavailable as exc:
        print(f"operator: {exc}", file=sys.stderr)
        return 2
    if args.command == "path":
        print(manager.parent)
    else:
        print(f"operator: {VERSION} manager and webhook in {manager.parent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


if __name__ == "__main__":
    raise SystemExit(main())
