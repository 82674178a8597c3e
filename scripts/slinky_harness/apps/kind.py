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
8. ``kind delete cluster`` unless ``--keep``.

Without a Docker engine or without kind (pinned v0.33.0: from PATH, the cache, or built from the
Go module proxy like the other pinned tools), it prints one line saying what is missing and how to
get it, and exits 0 without claiming anything passed.

Usage::

    python -m slinky_harness.apps.kind [--name NAME] [--keep]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.build import cache, gobuild, toolchain
from slinky_harness.build.gobuild import BuildError
from slinky_harness.core import paths
from slinky_harness.core.errors import HarnessError, WaitTimeout
from slinky_harness.core.polling import wait_for
from slinky_harness.helm import charts
from slinky_harness.helm.values import merge

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
NODE_IMAGE = (
    "kindest/node:v1.37.0@sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5"
)
"""kind v0.33.0's own default node image (``pkg/apis/config/defaults/image.go``), tag and digest."""
DATA_DIR = Path(__file__).with_name("kind_cluster")
CLUSTER_CONFIG = DATA_DIR / "cluster.yaml"
DEFAULT_NAME = "slinky-suite"
PROFILE = "kind"
GPUS_PER_WORKER = 8
PROBE_IMAGE = "docker.io/library/busybox:1.37"
"""Image of the pod handed to slurm-bridge."""
MANAGED_NODE_TAINT = "slinky.slurm.net/managed-node"
HOSTNAME_OVERRIDE = "nodeset.slinky.slurm.net/hostname-override"
JOB_FAILED = (
    r"JobState=(FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED)"
)

INSTALL_ORDER = ("slurm-operator", "slurm-cluster", "gpu-topology-labeler", "slurm-bridge")
NAMESPACES = {
    "slurm-operator": "slinky",
    "slurm-cluster": "slurm",
    "gpu-topology-labeler": "slinky",
    "slurm-bridge": "slurm",
}


class KindError(HarnessError):
    """The kind run failed; the message names the step and the tail of its output."""


class Missing(HarnessError):
    """A prerequisite (Docker engine, kind) is absent; the message is the one line to print."""


# --- the plan: data only --------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """Run ``argv``; a non-zero exit fails the run. ``${var}`` in ``argv`` takes captured values."""

    what: str
    argv: tuple[str, ...]
    stdin: str | None = None
    capture: str | None = None
    """Store group 1 of ``pattern`` (searched in stdout) under this name."""
    pattern: str = r"(\S+)"
    timeout: int = 900


@dataclass(frozen=True)
class Poll:
    """Run ``argv`` every ``interval`` s until stdout matches ``until``; ``fail`` ends it at once."""

    what: str
    argv: tuple[str, ...]
    until: str
    fail: str | None = None
    capture: str | None = None
    """Store group 1 of ``until`` under this name."""
    timeout: int = 600
    interval: int = 5


@dataclass(frozen=True)
class StageChart:
    """Copy ``source`` to ``dest`` without its ``ci/`` and write ``values`` as its only ci file."""

    what: str
    source: Path
    dest: Path
    values: dict[str, Any] = field(compare=False, hash=False)


Step = Run | Poll | StageChart


@dataclass(frozen=True)
class Worker:
    name: str
    gpus: int
    bridge: bool


@dataclass(frozen=True)
class PlanInput:
    """Everything :func:`build_plan` needs; nothing in it is read from the machine."""

    name: str
    workdir: Path
    repo: Path
    config: Path
    workers: tuple[Worker, ...]
    profile: Mapping[str, Any]
    harness_values: Mapping[str, Mapping[str, Any]]
    """``scripts/slinky_harness/apps/kind_cluster/<chart>-values.yaml`` by chart name."""
    chart_dirs: Mapping[str, Path]
    chart_defaults: Mapping[str, Mapping[str, Any]]
    """Each chart's ``values.yaml`` (to work out the labeler image) ..."""
    app_versions: Mapping[str, str]
    """... and ``appVersion``."""
    keep: bool = False

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"


def chart_values(
    chart: str, profile: Mapping[str, Any], harness: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, Any], str]:
    """The values the run installs ``chart`` with, and where they came from.

    The profile's block (with the profile's ``global``) when it has one that is not
    ``enabled: false``, merged with the harness's file for the chart; otherwise the harness's file.
    """
    block = charts.profile_block(dict(profile), chart)
    extra = dict(harness.get(chart) or {})
    if block is not None:
        values = {k: v for k, v in block.items() if k != "enabled"}
        if "global" in profile:
            values["global"] = copy.deepcopy(profile["global"])
        source = f"values/{PROFILE}.yaml"
        if extra:
            source += f" + scripts/slinky_harness/apps/kind_cluster/{chart}-values.yaml"
        return merge(values, extra), source
    values = copy.deepcopy(extra)
    if "global" in profile:
        values["global"] = copy.deepcopy(profile["global"])
    return values, f"scripts/slinky_harness/apps/kind_cluster/{chart}-values.yaml"


def image_ref(defaults: Mapping[str, Any], values: Mapping[str, Any], app_version: str) -> str:
    """The image reference the labeler chart renders (its ``gpu-topology-labeler.image`` helper)."""
    image = merge(defaults.get("image") or {}, values.get("image") or {})
    registry = str((values.get("global") or {}).get("imageRegistry") or image.get("registry") or "")
    ref = str(image["repository"])
    if registry:
        ref = f"{registry.rstrip('/')}/{ref}"
    if image.get("digest"):
        return f"{ref}@{image['digest']}"
    return f"{ref}:{image.get('tag') or app_version}"


def scheduler_name(values: Mapping[str, Any]) -> str:
    name = (values.get("scheduler") or {}).get("schedulerName")
    if not name:
        raise KindError(
            "the slurm-bridge values of the kind run must set scheduler.schedulerName "
            "(it is the value of the managed-node taint in scripts/slinky_harness/apps/kind_cluster/cluster.yaml)"
        )
    return str(name)


def workers_of(config: Mapping[str, Any], cluster: str) -> tuple[Worker, ...]:
    """The worker nodes kind will create from ``config``, named as kind names them."""
    found = []
    index = 0
    for node in config.get("nodes") or []:
        if node.get("role") != "worker":
            continue
        index += 1
        labels = node.get("labels") or {}
        gpus = int(labels.get("nvidia.com/gpu.count", 0))
        bridge = labels.get("scheduler.slinky.slurm.net/slurm-bridge") == "worker"
        suffix = "" if index == 1 else str(index)
        found.append(Worker(f"{cluster}-worker{suffix}", gpus, bridge))
    if not found:
        raise KindError("the kind cluster config has no worker node")
    return tuple(found)


def _kubectl(*args: str) -> tuple[str, ...]:
    return ("kubectl", *args)


def _in_login(*args: str) -> tuple[str, ...]:
    return _kubectl("exec", "-n", NAMESPACES["slurm-cluster"], "${login_pod}", "--", *args)


def _probe_pod(scheduler: str) -> str:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "slurm-bridge-probe", "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "restartPolicy": "Never",
            "tolerations": [
                {"key": MANAGED_NODE_TAINT, "operator": "Exists", "effect": "NoExecute"}
            ],
            "containers": [
                {
                    "name": "probe",
                    "image": PROBE_IMAGE,
                    "command": ["sh", "-c", "hostname"],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "32Mi"},
                        "limits": {"cpu": "100m", "memory": "32Mi"},
                    },
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                        "runAsNonRoot": True,
                        "runAsUser": 65534,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                }
            ],
        },
    }
    return json.dumps(pod)


def build_plan(spec: PlanInput) -> tuple[list[Step], list[Step]]:
    """The ordered steps of a kind run, and the clean-up steps (empty with ``keep``)."""
    steps: list[Step] = [
        Run(
            "create the kind cluster",
            (
                "kind",
                "create",
                "cluster",
                "--name",
                spec.name,
                "--config",
                str(spec.config),
                "--image",
                NODE_IMAGE,
                "--kubeconfig",
                str(spec.kubeconfig),
                "--wait",
                "300s",
            ),
        )
    ]
    for worker in spec.workers:
        if worker.gpus:
            patch = [
                {"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": str(worker.gpus)}
            ]
            steps += [
                Run(
                    f"advertise {worker.gpus} nvidia.com/gpu on {worker.name}",
                    _kubectl(
                        "patch",
                        "node",
                        worker.name,
                        "--subresource=status",
                        "--type=json",
                        "-p",
                        json.dumps(patch),
                    ),
                ),
                Poll(
                    f"kubelet reports nvidia.com/gpu allocatable on {worker.name}",
                    _kubectl(
                        "get",
                        "node",
                        worker.name,
                        "-o",
                        r"jsonpath={.status.allocatable.nvidia\.com/gpu}",
                    ),
                    until=rf"^{worker.gpus}$",
                    timeout=120,
                ),
            ]
        if worker.bridge:
            steps.append(
                Run(
                    f"slurmd on {worker.name} registers under the node's name",
                    _kubectl("annotate", "node", worker.name, f"{HOSTNAME_OVERRIDE}={worker.name}"),
                )
            )

    values = {
        chart: chart_values(chart, spec.profile, spec.harness_values) for chart in INSTALL_ORDER
    }
    labeler_image = image_ref(
        spec.chart_defaults["gpu-topology-labeler"],
        values["gpu-topology-labeler"][0],
        spec.app_versions["gpu-topology-labeler"],
    )
    steps += [
        Run(
            "build the labeler image",
            ("docker", "build", "-t", labeler_image, str(spec.repo)),
            timeout=1800,
        ),
        Run(
            "load the labeler image into the kind nodes",
            ("kind", "load", "docker-image", labeler_image, "--name", spec.name),
        ),
    ]
    for namespace in sorted(set(NAMESPACES.values())):
        steps.append(Run(f"namespace {namespace}", _kubectl("create", "namespace", namespace)))

    def ct_install(chart: str, *extra: str) -> list[Step]:
        chart_values_, source = values[chart]
        staged = spec.workdir / "charts" / chart
        return [
            StageChart(
                f"stage {chart} with {source}",
                spec.chart_dirs[chart],
                staged,
                chart_values_,
            ),
            Run(
                f"ct install {chart} (helm install --wait, helm test)",
                (
                    "ct",
                    "install",
                    "--config",
                    str(spec.repo / "ct.yaml"),
                    "--charts",
                    str(staged),
                    "--namespace",
                    NAMESPACES[chart],
                    "--skip-clean-up",
                    *extra,
                ),
                timeout=1800,
            ),
        ]

    slurm_ns = NAMESPACES["slurm-cluster"]
    steps += ct_install("slurm-operator")
    steps += ct_install("slurm-cluster")
    steps += [
        Run(
            "find the slurm-cluster release chart-testing created",
            ("helm", "list", "-n", slurm_ns, "-q", "--filter", "^slurm-cluster-"),
            capture="cluster_release",
            pattern=r"^(slurm-cluster-\S+)$",
        ),
        Poll(
            "a login pod is running",
            _kubectl(
                "get",
                "pods",
                "-n",
                slurm_ns,
                "-l",
                "app.kubernetes.io/component=login",
                "-o",
                'jsonpath={range .items[?(@.status.phase=="Running")]}{.metadata.name}{"\\n"}{end}',
            ),
            until=r"^(\S+)$",
            capture="login_pod",
        ),
        Poll(
            "every Slurm node is idle",
            _in_login("sinfo", "--noheader", "--format=%t"),
            until=r"\A(?:idle\s*)+\Z",
        ),
        Run(
            "srun hostname through the login pod",
            _in_login("srun", "--nodes=1", "--time=1", "hostname"),
            capture="srun_host",
        ),
        Run(
            "sbatch --wrap hostname through the login pod",
            _in_login("sbatch", "--parsable", "--time=1", "--wrap", "hostname"),
            capture="job_id",
            pattern=r"^(\d+)",
        ),
        Poll(
            "the batch job completes (scontrol show job)",
            _in_login("scontrol", "show", "job", "${job_id}"),
            until=r"JobState=(COMPLETED)\b",
            fail=JOB_FAILED,
        ),
    ]
    steps += ct_install("gpu-topology-labeler")
    gpu_workers = [w for w in spec.workers if w.gpus]
    if gpu_workers:
        steps.append(
            Poll(
                f"the labeler annotates {gpu_workers[0].name} with its Slurm topology",
                _kubectl(
                    "get",
                    "node",
                    gpu_workers[0].name,
                    "-o",
                    r"jsonpath={.metadata.annotations.topology\.slinky\.slurm\.net/spec}",
                ),
                until=r"^(\S+)$",
            )
        )
    bridge_values = values["slurm-bridge"][0]
    cluster_ref = (bridge_values.get("slurm") or {}).get("cluster") or {}
    release_args: tuple[str, ...] = ()
    if not cluster_ref.get("release"):
        # One argv word: ct passes the value to helm split on whitespace.
        release_args = ("--helm-extra-set-args=--set=slurm.cluster.release=${cluster_release}",)
    steps += ct_install("slurm-bridge", *release_args)
    bridge_workers = [w.name for w in spec.workers if w.bridge]
    if not bridge_workers:
        raise KindError(
            "the kind cluster config has no bridge worker (label it as cluster.yaml does)"
        )
    scheduler = scheduler_name(bridge_values)
    steps += [
        Run(
            f"a pod with schedulerName {scheduler}",
            _kubectl("apply", "-f", "-"),
            stdin=_probe_pod(scheduler),
        ),
        Poll(
            "slurm-bridge places the pod and it completes",
            _kubectl(
                "get",
                "pod",
                "-n",
                "default",
                "slurm-bridge-probe",
                "-o",
                "jsonpath={.status.phase} {.spec.nodeName}",
            ),
            until=rf"^(Succeeded) {re.escape(bridge_workers[0])}$",
            fail=r"^Failed",
            timeout=600,
        ),
    ]
    cleanup: list[Step] = []
    if not spec.keep:
        cleanup.append(
            Run("delete the kind cluster", ("kind", "delete", "cluster", "--name", spec.name))
        )
    return steps, cleanup


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


def plan_input(name: str, workdir: Path, keep: bool) -> PlanInput:
    """Read the repository's inputs of :func:`build_plan`."""
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
    )


def stage_chart(step: StageChart) -> None:
    if step.dest.exists():
        shutil.rmtree(step.dest)
    shutil.copytree(step.source, step.dest, ignore=shutil.ignore_patterns("ci"))
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
        spec = plan_input(args.name, workdir, args.keep)
        env = toolchain.tool_env(["helm", "ct", "kubectl"])
        env["PATH"] = f"{kind.parent}{os.pathsep}{env['PATH']}"
        env["KUBECONFIG"] = str(spec.kubeconfig)
        steps, cleanup = build_plan(spec)
        started = time.monotonic()
        execute(steps, env, lambda line: print(line, file=sys.stderr))
    except (KindError, BuildError, OSError) as exc:
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
    kept = f"; cluster kept, KUBECONFIG={spec.kubeconfig}" if args.keep else ""
    print(
        f"kind: suite installed and tested on {args.name} ({NODE_IMAGE.split('@', maxsplit=1)[0]}), "
        f"Slurm job and slurm-bridge pod completed in {time.monotonic() - started:.0f}s{kept}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
