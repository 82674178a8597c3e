"""The control plane's binaries: kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
etcd, kwok and kwokctl, the real node's kubelet and kube-proxy, and the real Slinky components
(slurm-operator's manager and webhook, slurm-bridge's scheduler, admission and controllers),
built in one ``go build`` from this repository's ``tools/`` Go module (so every Kubernetes package
compiles once) into a cache outside the clone::

    $SLINKY_SUITE_CACHE/controlplane/<k8s>-etcd<ver>-kwok<ver>-slinky<ver>-node/bin/

(``SLINKY_SUITE_CACHE`` defaults to ``~/.cache/slinky-suite``). A build goes to a staged folder
renamed into place only when every binary is built and reports the pinned version, so that a
partial build is never reused; concurrent callers wait for each other on a lock file.
:mod:`slinky_harness.k8s.cluster` runs them.

Usage::

    python -m slinky_harness.build.controlplane     # build or reuse, print the bin folder
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from slinky_harness.build.cache import locked, staged_folder
from slinky_harness.build.gobuild import BuildError, go_build
from slinky_harness.core.errors import HarnessError
from slinky_harness.core.paths import REPO_ROOT, cache_root

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

TOOLS_MODULE = REPO_ROOT / "tools"


K8S_VERSION = "v1.36.3"


ETCD_VERSION = "v3.6.16"


KWOK_VERSION = "v0.8.0"


SLINKY_VERSION = "v1.2.1"
"""slurm-operator, slurm-bridge and slurm-client, required by ``tools/go.mod`` at this version."""


COLD_BUILD = "about 15 min on 2 cores with an empty Go cache (seconds when warm)"


K8S_BUILD_DATE = "2026-07-22T18:07:38Z"
"""Publication time of k8s.io/kubernetes v1.36.3 on the module proxy; used as buildDate so
that builds are reproducible."""


BUILD_KEY = (
    f"{K8S_VERSION}-etcd{ETCD_VERSION[1:]}-kwok{KWOK_VERSION[1:]}-slinky{SLINKY_VERSION[1:]}-node"
)
"""The cache folder's name; ``-node``: the set holds the real node's kubelet and kube-proxy (a
folder of its own, so that a checkout without them never replaces binaries another one runs)."""


PACKAGES: dict[str, str] = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kubectl": "k8s.io/kubernetes/cmd/kubectl",
    "kubelet": "k8s.io/kubernetes/cmd/kubelet",
    "kube-proxy": "k8s.io/kubernetes/cmd/kube-proxy",
    "etcd": "go.etcd.io/etcd/server/v3",
    "kwok": "sigs.k8s.io/kwok/cmd/kwok",
    "kwokctl": "sigs.k8s.io/kwok/cmd/kwokctl",
    "slurm-operator-manager": "github.com/SlinkyProject/slurm-operator/cmd/manager",
    "slurm-operator-webhook": "github.com/SlinkyProject/slurm-operator/cmd/webhook",
    "slurm-bridge-scheduler": "github.com/SlinkyProject/slurm-bridge/cmd/scheduler",
    "slurm-bridge-admission": "github.com/SlinkyProject/slurm-bridge/cmd/admission",
    "slurm-bridge-controllers": "github.com/SlinkyProject/slurm-bridge/cmd/controllers",
}
"""Binary name -> Go package, all built in one ``go build`` inside ``tools/``: the control plane
and the real Slinky components share one module graph (Kubernetes v1.36.3 for both), so every
Kubernetes package is compiled once. kubelet and kube-proxy run the real node
(:mod:`slinky_harness.k8s.realnode`)."""


_GO_OUTPUT_NAMES = {
    "etcd": "server",
    "slurm-operator-manager": "manager",
    "slurm-operator-webhook": "webhook",
    "slurm-bridge-scheduler": "scheduler",
    "slurm-bridge-admission": "admission",
    "slurm-bridge-controllers": "controllers",
}
"""``go build -o dir/`` names a main package after its folder (``.../server/v3`` is ``server``)."""


_VERSION_CHECKS: dict[str, tuple[tuple[str, ...], str]] = {
    "kube-apiserver": (("--version",), f"Kubernetes {K8S_VERSION}"),
    "kube-controller-manager": (("--version",), f"Kubernetes {K8S_VERSION}"),
    "kube-scheduler": (("--version",), f"Kubernetes {K8S_VERSION}"),
    "kubectl": (("version", "--client"), f"Client Version: {K8S_VERSION}"),
    "kubelet": (("--version",), f"Kubernetes {K8S_VERSION}"),
    "kube-proxy": (("--version",), f"Kubernetes {K8S_VERSION}"),
    "etcd": (("--version",), f"etcd Version: {ETCD_VERSION[1:]}"),
    "kwokctl": (("--version",), KWOK_VERSION[1:]),
}


class ControlPlaneError(HarnessError):
    """The control plane could not be built, started, used or stopped."""


def binaries_dir() -> Path:
    """Where ``ensure_binaries`` puts the binaries (it may not exist yet)."""
    return cache_root() / "controlplane" / BUILD_KEY / "bin"


def ldflags() -> str:
    """Version stamps that ``hack/lib/version.sh`` would set, plus stripped symbols."""
    minor = K8S_VERSION.split(".")[1]
    values = {
        "gitVersion": K8S_VERSION,
        "gitMajor": K8S_VERSION[1:].split(".", maxsplit=1)[0],
        "gitMinor": minor,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": K8S_BUILD_DATE,
    }
    stamps = [
        f"-X {pkg}.{var}={val}"
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for var, val in values.items()
    ]
    return " ".join(["-s", "-w", *stamps])


def _module_digest() -> str:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        path = TOOLS_MODULE / name
        if not path.is_file():
            raise ControlPlaneError(f"{path} is missing; the control plane is built from it")
        digest.update(path.read_bytes())
    digest.update(ldflags().encode())
    return digest.hexdigest()


def _is_complete(bindir: Path, digest: str) -> bool:
    stamp = bindir.parent / "build.json"
    try:
        recorded = json.loads(stamp.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    if recorded.get("digest") != digest:
        return False
    return all(os.access(bindir / name, os.X_OK) for name in PACKAGES)


def _check_versions(bindir: Path) -> None:
    for name, (args, expected) in _VERSION_CHECKS.items():
        proc = subprocess.run(
            [str(bindir / name), *args], capture_output=True, text=True, timeout=60, check=False
        )
        if expected not in proc.stdout + proc.stderr:
            got = (proc.stdout + proc.stderr).strip().splitlines()[:1]
            raise ControlPlaneError(f"{name} reports {got}, expected {expected!r}")


def _build(target: Path, digest: str, log: Path) -> None:
    with staged_folder(target, BUILD_KEY) as staging:
        out = staging / "bin"
        out.mkdir()
        started = time.monotonic()
        try:
            go_build(
                ["-trimpath", "-ldflags", ldflags(), "-o", f"{out}/", *PACKAGES.values()],
                cwd=TOOLS_MODULE,
                log=log,
                what=f"controlplane: {len(PACKAGES)} binaries ({BUILD_KEY})",
                expected=COLD_BUILD,
            )
        except BuildError as exc:
            tail = log.read_text().strip().splitlines()[-5:]
            raise ControlPlaneError(f"{exc}\n  " + "\n  ".join(tail) + f"\nlog: {log}") from exc
        for name, go_name in _GO_OUTPUT_NAMES.items():
            (out / go_name).rename(out / name)
        _check_versions(out)
        record = {
            "digest": digest,
            "k8s": K8S_VERSION,
            "etcd": ETCD_VERSION,
            "kwok": KWOK_VERSION,
            "slinky": SLINKY_VERSION,
            "packages": PACKAGES,
            "ldflags": ldflags(),
            "build_seconds": round(time.monotonic() - started, 1),
        }
        (staging / "build.json").write_text(json.dumps(record, indent=2) + "\n")


def ensure_binaries() -> Path:
    """Return the folder with the control-plane binaries, building them when needed.

    A build goes to a temporary folder renamed into place only when every binary is built
    and reports the pinned version, so a partial build is never reused. Concurrent callers
    wait for each other on a lock file.
    """
    bindir = binaries_dir()
    digest = _module_digest()
    if _is_complete(bindir, digest):
        print(f"controlplane: reusing {BUILD_KEY} binaries in {bindir}", file=sys.stderr)
        return bindir
    with locked(bindir.parent.parent / f".{BUILD_KEY}.lock"):
        if _is_complete(bindir, digest):
            print(f"controlplane: reusing {BUILD_KEY} binaries in {bindir}", file=sys.stderr)
            return bindir
        log = bindir.parent.parent / f"{BUILD_KEY}.build.log"
        print(
            f"controlplane: building {', '.join(PACKAGES)} ({BUILD_KEY}) from {TOOLS_MODULE} "
            f"into {bindir}",
            file=sys.stderr,
        )
        _build(bindir.parent, digest, log)
    return bindir


def main(argv: Sequence[str] | None = None) -> int:
    """Build or reuse the binaries; print their folder (exit 1 with the reason on failure)."""
    argparse.ArgumentParser(
        prog="python -m slinky_harness.build.controlplane", description=__doc__.splitlines()[0]
    ).parse_args(argv)
    try:
        print(ensure_binaries())
    except ControlPlaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
