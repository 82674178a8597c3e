"""Pinned command-line tools for every test tier, built once and cached outside the clone.

Each tool is a Go program. It is taken, in this order, from:

1. ``PATH``, when the program there reports exactly the pinned version;
2. the cache, ``$SLINKY_SUITE_CACHE/tools/<tool>/<version>/<tool>``
   (default ``~/.cache/slinky-suite``);
3. a build from the Go module proxy: ``go mod download`` of the pinned module, then
   ``go build`` inside the module (so its own ``replace`` lines apply) with the version
   ldflags, into a temporary folder that is renamed into the cache when complete.

kubectl comes from the control-plane build of :mod:`slinky_harness.build.controlplane` (this
repository's ``tools/`` Go module, because ``k8s.io/kubernetes`` cannot be built on its own).
Go's module and build caches live in ``$SLINKY_SUITE_CACHE/go`` so that warm runs rebuild nothing.

Usage::

    python -m slinky_harness.build.toolchain install [TOOL ...]   # build or reuse, print paths
    python -m slinky_harness.build.toolchain path                 # print a PATH prefix
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from slinky_harness.build import controlplane
from slinky_harness.build.cache import staged_folder
from slinky_harness.build.gobuild import BuildError, go_build, module_dir
from slinky_harness.core.paths import cache_root

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence


class ToolError(BuildError):
    """A pinned tool could be had neither from PATH nor from a build."""


@dataclass(frozen=True)
class GoTool:
    """A command built from one Go module at a pinned version."""

    name: str
    """Command name in the cache and on PATH (``helm3`` for Helm 3)."""
    module: str
    version: str
    package: str
    """Package to build, relative to the module root (``./cmd/helm``) or an import path."""
    version_args: tuple[str, ...]
    version_regex: str
    """Pattern whose first group is the version the command reports."""
    ldflags: str = ""
    expected: str = "under a minute"
    """How long a cold build takes on 2 cores (said while it runs)."""

    @property
    def reported_version(self) -> str:
        return self.version.removeprefix("v")


TOOLS: dict[str, GoTool] = {
    tool.name: tool
    for tool in (
        GoTool(
            name="helm",
            module="helm.sh/helm/v4",
            version="v4.3.1",
            package="./cmd/helm",
            version_args=("version", "--template", "{{.Version}}"),
            version_regex=r"^v?(\S+)$",
            ldflags="-X helm.sh/helm/v4/internal/version.version=v4.3.1",
            expected="about 3 min cold on 2 cores",
        ),
        GoTool(
            name="helm3",
            module="helm.sh/helm/v3",
            version="v3.22.0",
            package="./cmd/helm",
            version_args=("version", "--template", "{{.Version}}"),
            version_regex=r"^v?(\S+)$",
            ldflags="-X helm.sh/helm/v3/internal/version.version=v3.22.0",
            expected="about 2.5 min cold on 2 cores (less after helm 4)",
        ),
        GoTool(
            name="ct",
            module="github.com/helm/chart-testing/v3",
            version="v3.14.0",
            package="./ct",
            version_args=("version",),
            version_regex=r"Version:\s+v?(\S+)",
            ldflags="-X github.com/helm/chart-testing/v3/ct/cmd.Version=v3.14.0",
        ),
        GoTool(
            name="kubeconform",
            module="github.com/yannh/kubeconform",
            version="v0.7.0",
            package="./cmd/kubeconform",
            version_args=("-v",),
            version_regex=r"^v?(\S+)$",
            ldflags="-X main.version=v0.7.0",
        ),
        GoTool(
            name="helm-docs",
            module="github.com/norwoodj/helm-docs",
            version="v1.14.2",
            package="./cmd/helm-docs",
            version_args=("--version",),
            version_regex=r"version v?(\S+)",
            ldflags="-X main.version=1.14.2",
        ),
        GoTool(
            name="actionlint",
            module="github.com/rhysd/actionlint",
            version="v1.7.12",
            package="./cmd/actionlint",
            version_args=("-version",),
            version_regex=r"^v?(\d\S*)$",
            ldflags="-X github.com/rhysd/actionlint.version=v1.7.12",
        ),
        GoTool(  # release workflow only: pushes Artifact Hub metadata next to each chart
            name="oras",
            module="oras.land/oras",
            version="v1.3.6",
            package="./cmd/oras",
            version_args=("version",),
            version_regex=r"Version:\s+v?(\S+)",
        ),
    )
}

LINT_TOOLS = ("helm", "helm3", "ct", "kubeconform", "helm-docs", "actionlint")
"""The tools the offline tiers (lint, render, props) need."""
ALL_TOOLS = (*LINT_TOOLS, "kubectl")


def cached_path(tool: GoTool) -> Path:
    return cache_root() / "tools" / tool.name / tool.version / tool.name


def reported_version(path: Path | str, tool: GoTool) -> str | None:
    """The version ``path`` reports, or None when it cannot tell."""
    try:
        proc = subprocess.run(
            [str(path), *tool.version_args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(tool.version_regex, proc.stdout.strip(), re.MULTILINE)
    return match.group(1) if match else None


def _from_path(tool: GoTool) -> Path | None:
    found = shutil.which(tool.name)
    if found is None:
        return None
    if reported_version(found, tool) == tool.reported_version:
        return Path(found)
    return None


def _build(tool: GoTool, log: Path) -> Path:
    if shutil.which("go") is None:
        raise ToolError(
            f"{tool.name} {tool.version}: not on PATH at that version and no 'go' to build it; "
            f"install Go 1.26+ or put {tool.name} {tool.version} on PATH"
        )
    workdir = module_dir(tool.module, tool.version)
    dest = cached_path(tool)
    with staged_folder(dest.parent, tool.version) as staging:
        args = ["-trimpath", "-o", str(staging / tool.name)]
        if tool.ldflags:
            args += ["-ldflags", tool.ldflags]
        go_build(
            [*args, tool.package],
            cwd=workdir,
            log=log,
            what=f"{tool.name} {tool.version}",
            expected=tool.expected,
        )
    return dest


def _kubectl() -> Path:
    wanted = controlplane.K8S_VERSION
    found = shutil.which("kubectl")
    if found:
        proc = subprocess.run(
            [found, "version", "--client", "-o", "json"],
            capture_output=True,
            text=True,
            check=False,
        )
        if f'"gitVersion": "{wanted}"' in proc.stdout:
            return Path(found)
    try:
        return controlplane.ensure_binaries() / "kubectl"
    except controlplane.ControlPlaneError as exc:
        raise ToolError(f"kubectl {wanted}: {exc}") from exc


@cache
def ensure(name: str) -> Path:
    """Return the path of the pinned tool ``name``, building it if needed."""
    if name == "kubectl":
        return _kubectl()
    try:
        tool = TOOLS[name]
    except KeyError:
        raise ToolError(f"unknown tool {name!r}; known: {', '.join(sorted(TOOLS))}") from None
    on_path = _from_path(tool)
    if on_path is not None:
        return on_path
    cached = cached_path(tool)
    if cached.is_file() and reported_version(cached, tool) == tool.reported_version:
        return cached
    log = cache_root() / "tools" / tool.name / f"{tool.version}.build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    print(f"toolchain: building {tool.name} {tool.version} from {tool.module}", file=sys.stderr)
    built = _build(tool, log)
    got = reported_version(built, tool)
    if got != tool.reported_version:
        raise ToolError(
            f"{tool.name}: the build reports version {got!r}, expected {tool.reported_version!r}"
        )
    print(
        f"toolchain: built {tool.name} {tool.version} in {time.monotonic() - started:.0f}s",
        file=sys.stderr,
    )
    return built


def ct_config_dir() -> Path:
    """chart-testing's own lint config files (``chart_schema.yaml``, ``lintconf.yaml``)."""
    tool = TOOLS["ct"]
    return module_dir(tool.module, tool.version) / "etc"


def path_prefix(names: Iterable[str]) -> str:
    """A PATH prefix that puts each tool under its own name first."""
    bindir = cache_root() / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    for name in names:
        link = bindir / name
        target = ensure(name)
        if link.is_symlink() or link.exists():
            if link.resolve() == target.resolve():
                continue
            link.unlink()
        link.symlink_to(target)
    return str(bindir)


def tool_env(
    names: Iterable[str] = LINT_TOOLS, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``base`` (default: this process's environment) with the tools first on PATH."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = f"{path_prefix(names)}{os.pathsep}{env.get('PATH', '')}"
    return env


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.build.toolchain", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    install = sub.add_parser("install", help="build or reuse tools and print their paths")
    install.add_argument(
        "tools", nargs="*", help=f"tools to install (default: all: {' '.join(TOOLS)})"
    )
    path = sub.add_parser("path", help="print a PATH prefix with the tools")
    path.add_argument("tools", nargs="*", help="tools to put on it (default: the lint tools)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "install":
            for name in args.tools or ALL_TOOLS:
                print(f"{name} {ensure(name)}")
        else:
            print(path_prefix(args.tools or LINT_TOOLS))
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
