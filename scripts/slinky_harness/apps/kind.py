"""``nox -s kind``: the suite on a multi-node kind cluster, for machines with Docker and internet.

The run is a fixed, ordered plan built by :func:`build_plan` (a pure function of its inputs, so the
unit tests check it without Docker) and executed by :func:`execute`:

1. ``kind create cluster`` from ``kind_cluster/cluster.yaml`` beside this module (one control
   plane, two workers labelled as GFD GPU nodes) with a node image pinned by tag and digest;
2. ``nvidia.com/gpu`` patched onto each worker's ``status.capacity`` (kind nodes have no GPUs);
3. ``docker build`` of the labeler image from the repository ``Dockerfile``, ``kind load docker-image``;
4. chart-testing's install flow, ``ct install --config ct.yaml`` (``helm install --wait``, rollout
   checks, ``helm test``), for slurm-operator, slurm-cluster, gpu-topology-labeler and slurm-bridge,
   each from a staged copy of the chart whose only ``ci/`` file holds the chart's block of
   ``values/kind.yaml`` (plus its ``global``) merged with the harness's additions in
   ``kind_cluster/<chart>-values.yaml``; a block with ``enabled: false`` (or none) means the
   harness's file is the chart's values;
5. a real Slurm job through the login pod: ``srun hostname``, then ``sbatch --wrap hostname``
   followed by ``scontrol show job`` until it is COMPLETED;
6. the labeler's topology annotation on a worker;
7. a Pod with ``schedulerName`` of the bridge, which must run to completion on the bridge worker;
8. the real-pod tests (``tests/cluster/test_real_slurm.py``, as on the cluster tier's real node) on
   a second cluster, ``<name>-pods`` (``kind_cluster/pods.yaml``), after the first is deleted: the
   image archives of :mod:`slinky_harness.build.images` (built or reused before step 1; building
   them needs root, as on the cluster tier) loaded with ``kind load image-archive``, then pytest
   with ``SLINKY_REAL_PODS=kind:<name>-pods`` (:mod:`slinky_harness.k8s.realpods`);
9. ``kind delete cluster`` of both unless ``--keep``.

Without a Docker engine or without kind (pinned v0.33.0: from PATH, the cache, or built from the
Go module proxy like the other pinned tools), it prints one line saying what is missing and how to
get it, and exits 0 without claiming anything passed.

Usage::

    python -m slinky_harness.apps.kind [--name NAME] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from slinky_harness.apps.kind_plan import (
    CLUSTER_CONFIG,
    DATA_DIR,
    DEFAULT_NAME,
    INSTALL_ORDER,
    NODE_IMAGE,
    PROFILE,
    KindError,
    PlanInput,
    Poll,
    Run,
    StageChart,
    Step,
    build_plan,
    workers_of,
)
from slinky_harness.build import cache, gobuild, toolchain
from slinky_harness.build.gobuild import BuildError
from slinky_harness.build.images import ImagesError, ensure_images
from slinky_harness.core import paths
from slinky_harness.core.errors import HarnessError, WaitTimeout
from slinky_harness.core.polling import wait_for
from slinky_harness.helm import charts

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

KIND = toolchain.GoTool(
    name="kind",
    module="sigs.k8s.io/kind",
    version="v0.33.0",
    package=".",
    version_args=("version",),
    version_regex=r"^kind v(\S+)",
)


class Missing(HarnessError):
    """A prerequisite (Docker engine, kind) is absent; the message is the one line to print."""


# --- the plan: data only --------------------------------------------------------------------------


# --- the machine: prerequisites, inputs, execution --------------------------------------------------


def docker_missing(which: Callable[[str], str | None] = shutil.which) -> str | None:
    """Why Docker cannot be used, or None when ``docker info`` reaches an engine."""
    docker = which("docker")
    if docker is None:
        return "no docker command on PATH"
    try:
        proc = subprocess.run(
            [docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`docker info` failed ({exc})"
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"`docker info` reaches no engine ({reason})"
    return None


def ensure_kind() -> Path:
    """kind at the pinned version: from PATH, the cache, or built from the Go module proxy."""
    found = shutil.which("kind")
    if found and toolchain.reported_version(found, KIND) == KIND.reported_version:
        return Path(found)
    cached = toolchain.cached_path(KIND)
    if cached.is_file() and toolchain.reported_version(cached, KIND) == KIND.reported_version:
        return cached
    hint = f"`go install {KIND.module}@{KIND.version}` or put kind {KIND.version} on PATH"
    if shutil.which("go") is None:
        raise Missing(f"kind {KIND.version} is not on PATH and there is no go to build it; {hint}")
    log = paths.cache_root() / "tools" / "kind" / f"{KIND.version}.build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        workdir = gobuild.module_dir(KIND.module, KIND.version)
        with cache.staged_folder(cached.parent, KIND.version) as staging:
            gobuild.go_build(
                ["-trimpath", "-o", str(staging / "kind"), KIND.package],
                cwd=workdir,
                log=log,
                what=f"kind {KIND.version}",
            )
    except BuildError as exc:
        raise Missing(f"kind {KIND.version} could not be built ({exc}); {hint}") from exc
    return cached


def plan_input(name: str, workdir: Path, keep: bool, archives: Sequence[Path] = ()) -> PlanInput:
    """Read the repository's inputs of :func:`build_plan`; ``archives``: the built images."""
    suite = {chart.name: chart for chart in charts.discover_charts()}
    missing = [c for c in INSTALL_ORDER if c not in suite]
    if missing:
        raise KindError(f"charts not found under charts/: {', '.join(missing)}")
    profile = charts.profiles().get(PROFILE)
    if profile is None:
        raise KindError(f"values/{PROFILE}.yaml is missing; the kind run installs that profile")
    harness = {}
    for chart in INSTALL_ORDER:
        path = DATA_DIR / f"{chart}-values.yaml"
        harness[chart] = (charts.load_yaml(path) or {}) if path.is_file() else {}
    config = charts.load_yaml(CLUSTER_CONFIG) or {}
    return PlanInput(
        name=name,
        workdir=workdir,
        repo=paths.REPO_ROOT,
        config=CLUSTER_CONFIG,
        workers=workers_of(config, name),
        profile=profile,
        harness_values=harness,
        chart_dirs={c: suite[c].path for c in INSTALL_ORDER},
        chart_defaults={
            c: charts.load_yaml(suite[c].path / "values.yaml") or {} for c in INSTALL_ORDER
        },
        app_versions={c: str(suite[c].meta.get("appVersion", "")) for c in INSTALL_ORDER},
        keep=keep,
        archives=tuple(archives),
    )


def stage_chart(step: StageChart) -> None:
    """Copy the chart (linked subcharts as real folders; no archive or lock an earlier ``helm
    dependency build`` left) and, beside it, every chart it depends on by ``file://../<name>``:
    ct runs ``helm dependency build``, which resolves those paths."""
    if step.dest.exists():
        shutil.rmtree(step.dest)
    ignore = shutil.ignore_patterns("ci", "*.tgz", "Chart.lock")
    shutil.copytree(step.source, step.dest, ignore=ignore)
    meta = charts.load_yaml(step.source / "Chart.yaml") or {}
    for dep in meta.get("dependencies") or []:
        repository = str(dep.get("repository", ""))
        if not repository.startswith("file://../"):
            continue
        name = repository.removeprefix("file://../")
        beside = step.dest.parent / name
        if beside.exists():
            shutil.rmtree(beside)
        shutil.copytree(step.source.parent / name, beside, ignore=ignore)
    (step.dest / "ci").mkdir()
    (step.dest / "ci" / "kind-values.yaml").write_text(
        yaml.safe_dump(step.values, sort_keys=False) if step.values else "{}\n"
    )


VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``${name}`` in a step's argv: a value an earlier step captured. Any other ``$`` is left alone."""


def _substitute(argv: Sequence[str], found: Mapping[str, str]) -> list[str]:
    def value(match: re.Match[str]) -> str:
        if match[1] not in found:
            raise KindError(f"step uses ${{{match[1]}}} before a step captured it")
        return found[match[1]]

    return [VARIABLE.sub(value, arg) for arg in argv]


def _run(
    argv: Sequence[str], env: Mapping[str, str], stdin: str | None, timeout: int
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(argv),
            input=stdin,
            capture_output=True,
            text=True,
            env=dict(env),
            cwd=paths.REPO_ROOT,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise KindError(
            f"{argv[0]} {argv[1] if len(argv) > 1 else ''}: no result in {timeout}s"
        ) from exc
    except OSError as exc:
        raise KindError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc


def _tail(proc: subprocess.CompletedProcess[str]) -> str:
    return " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-8:]) or "no output"


def execute(
    steps: Sequence[Step],
    env: Mapping[str, str],
    log: Callable[[str], None],
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, str]:
    """Run the steps in order; returns the captured values. Raises ``KindError`` on the first failure."""
    found: dict[str, str] = {}
    for number, step in enumerate(steps, start=1):
        log(f"kind: [{number}/{len(steps)}] {step.what}")
        if isinstance(step, StageChart):
            stage_chart(step)
            continue
        argv = _substitute(step.argv, found)
        if isinstance(step, Run):
            proc = _run(argv, env, step.stdin, step.timeout)
            if proc.returncode != 0:
                raise KindError(f"{step.what}: exit {proc.returncode}: {_tail(proc)}")
            if step.capture:
                match = re.search(step.pattern, proc.stdout, re.MULTILINE)
                if match is None:
                    raise KindError(
                        f"{step.what}: output does not match {step.pattern!r}: {_tail(proc)}"
                    )
                found[step.capture] = match.group(1)
            continue
        match = _poll(step, argv, env, sleep)
        if step.capture:
            found[step.capture] = match.group(1)
    return found


def _poll(
    step: Poll, argv: Sequence[str], env: Mapping[str, str], sleep: Callable[[float], None]
) -> re.Match[str]:
    """Run ``argv`` until its output matches ``step.until`` (fail at once on ``step.fail``)."""
    last: list[subprocess.CompletedProcess[str]] = []

    def attempt() -> re.Match[str] | None:
        proc = _run(argv, env, None, 120)  # one attempt; the time-out bounds the poll
        last[:] = [proc]
        if step.fail and re.search(step.fail, proc.stdout, re.MULTILINE):
            raise KindError(f"{step.what}: {_tail(proc)}")
        if proc.returncode != 0:
            return None
        return re.search(step.until, proc.stdout, re.MULTILINE)

    try:
        return wait_for(
            attempt, timeout=step.timeout, what=step.what, every=step.interval, sleep=sleep
        )
    except WaitTimeout:
        raise KindError(
            f"{step.what}: not reached in {step.timeout}s; last output: {_tail(last[0])}"
        ) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.apps.kind", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--name", default=DEFAULT_NAME, help="kind cluster name (default: %(default)s)"
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the cluster (and its kubeconfig) after the run, passed or failed",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", args.name) or len(args.name) > 40:
        build_parser().error("--name must be a lower-case DNS label of at most 40 characters")
    reason = docker_missing()
    if reason is not None:
        print(
            f"kind tier not run: {reason}; it needs a running Docker engine "
            "(https://docs.docker.com/engine/install/) and internet access: nothing was tested"
        )
        return 0
    try:
        kind = ensure_kind()
    except Missing as exc:
        print(f"kind tier not run: {exc}: nothing was tested")
        return 0
    workdir = Path(tempfile.mkdtemp(prefix=f"slinky-kind-{args.name}-"))
    cleanup: list[Step] = []
    env: dict[str, str] = {}
    try:
        archives = ensure_images()
        spec = plan_input(args.name, workdir, args.keep, (archives.slurm, archives.slinky))
        env = toolchain.tool_env(["helm", "ct", "kubectl"])
        env["PATH"] = f"{kind.parent}{os.pathsep}{env['PATH']}"
        env["KUBECONFIG"] = str(spec.kubeconfig)
        steps, cleanup = build_plan(spec)
        started = time.monotonic()
        found = execute(steps, env, lambda line: print(line, file=sys.stderr))
    except (KindError, BuildError, ImagesError, OSError) as exc:
        kept = f" (cluster kept, KUBECONFIG={workdir / 'kubeconfig'})" if args.keep else ""
        print(f"error: {exc}{kept}", file=sys.stderr)
        return 1
    finally:
        for step in cleanup:
            try:
                execute([step], env, lambda line: print(line, file=sys.stderr))
            except KindError as exc:
                print(f"warning: {exc}", file=sys.stderr)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    kept = (
        f"; clusters kept, KUBECONFIG={spec.kubeconfig} and {spec.pods_kubeconfig}"
        if args.keep
        else ""
    )
    print(
        f"kind: suite installed and tested on {args.name} ({NODE_IMAGE.split('@', maxsplit=1)[0]}), "
        f"Slurm job and slurm-bridge pod completed, real-pod tests on {spec.pods_name}: "
        f"{found['real_pods']}, in {time.monotonic() - started:.0f}s{kept}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
