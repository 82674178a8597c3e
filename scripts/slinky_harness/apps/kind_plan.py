"""The kind run of ``nox -s kind`` as data: :func:`build_plan` turns a :class:`PlanInput` into the
ordered steps (:class:`Run`, :class:`Poll`, :class:`StageChart`) that :mod:`slinky_harness.apps.kind`
executes. Everything here is a pure function of its inputs, so the unit tests check the plan
without Docker; the cluster config and the harness's per-chart values are the files in
``kind_cluster/`` beside this module.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slinky_harness.core.errors import HarnessError
from slinky_harness.helm import charts
from slinky_harness.helm.charts import image_ref
from slinky_harness.helm.values import merge
from slinky_harness.k8s.realpods import TARGET_ENV

if TYPE_CHECKING:
    from collections.abc import Mapping

NODE_IMAGE = (
    "kindest/node:v1.37.0@sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5"
)
"""kind v0.33.0's own default node image (``pkg/apis/config/defaults/image.go``), tag and digest."""


DATA_DIR = Path(__file__).with_name("kind_cluster")


CLUSTER_CONFIG = DATA_DIR / "cluster.yaml"


PODS_CONFIG = DATA_DIR / "pods.yaml"
"""The second cluster's config: the real-pod tests' own (one control plane, one worker)."""


PODS_SUFFIX = "-pods"
"""The real-pod tests' cluster is ``<name>-pods``: the tests install slurm-operator and
slurm-cluster under their own release names, which the chart-testing releases would clash with."""


REAL_POD_TESTS = (
    "tests/cluster/test_real_slurm.py",
    "tests/cluster/test_conformance_real_pods.py",
)
"""The tests that run on real pods (``SLINKY_REAL_PODS``, :mod:`slinky_harness.k8s.realpods`)."""


PYTEST_SUMMARY = r"^=+ (.*\bpassed\b.*?) =+$"
"""pytest's last line (``--color=no``) when at least one test passed."""


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
    archives: tuple[Path, ...] = ()
    """The archives of :func:`slinky_harness.build.images.ensure_images`, loaded into the
    real-pod tests' cluster in this order."""

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    @property
    def pods_name(self) -> str:
        return f"{self.name}{PODS_SUFFIX}"

    @property
    def pods_kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig-pods"


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


def scheduler_name(values: Mapping[str, Any]) -> str:
    name = (values.get("schedulerConfig") or {}).get("schedulerName")
    if not name:
        raise KindError(
            "the slurm-bridge values of the kind run must set schedulerConfig.schedulerName "
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
    shared = bridge_values.get("sharedConfig") or {}
    release_args: tuple[str, ...] = ()
    if not shared.get("slurmRestApi"):
        # slurmrestd of the release ct created (its Service "<release>-restapi"; the bridge, in the
        # same namespace, derives the JWT key Secret from it). One argv word: ct passes the value
        # to helm split on whitespace.
        url = f"http://${{cluster_release}}-restapi.{slurm_ns}:6820"
        release_args = (f"--helm-extra-set-args=--set=sharedConfig.slurmRestApi={url}",)
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
    steps += real_pod_steps(spec)
    cleanup: list[Step] = []
    if not spec.keep:
        cleanup += [
            Run("delete the kind cluster", ("kind", "delete", "cluster", "--name", spec.name)),
            Run(
                "delete the real-pod tests' kind cluster",
                ("kind", "delete", "cluster", "--name", spec.pods_name),
            ),
        ]
    return steps, cleanup


def real_pod_steps(spec: PlanInput) -> list[Step]:
    """The real-pod tests on their own kind cluster: the first cluster is deleted (unless kept:
    a runner holds one at a time), then ``<name>-pods`` is created, every image archive is loaded
    into it (``kind load image-archive``: ``ctr images import`` on each node, which files each
    image of the OCI archive under its ``io.containerd.image.name``), and pytest runs
    :data:`REAL_POD_TESTS` with ``SLINKY_REAL_PODS=kind:<name>-pods``."""
    if not spec.archives:
        raise KindError("no image archives to load: slinky_harness.build.images builds them")
    pods = spec.pods_name
    steps: list[Step] = []
    if not spec.keep:
        steps.append(
            Run(
                "delete the kind cluster (the real-pod tests get their own)",
                ("kind", "delete", "cluster", "--name", spec.name),
            )
        )
    steps.append(
        Run(
            f"create the kind cluster {pods} for the real-pod tests",
            (
                "kind",
                "create",
                "cluster",
                "--name",
                pods,
                "--config",
                str(PODS_CONFIG),
                "--image",
                NODE_IMAGE,
                "--kubeconfig",
                str(spec.pods_kubeconfig),
                "--wait",
                "300s",
            ),
        )
    )
    steps += [
        Run(
            f"load {archive.name} into {pods} (kind load image-archive)",
            ("kind", "load", "image-archive", str(archive), "--name", pods),
        )
        for archive in spec.archives
    ]
    # the labeler image the first cluster's steps built with docker (under the profile's
    # reference), loaded under the chart's default reference, which the real-pod tests install
    chart = "gpu-topology-labeler"
    built = image_ref(
        spec.chart_defaults[chart],
        chart_values(chart, spec.profile, spec.harness_values)[0],
        spec.app_versions[chart],
    )
    default = image_ref(spec.chart_defaults[chart], {}, spec.app_versions[chart])
    if built != default:
        steps.append(Run(f"tag the labeler image {default}", ("docker", "tag", built, default)))
    steps.append(
        Run(
            f"load the labeler image into {pods} (kind load docker-image)",
            ("kind", "load", "docker-image", default, "--name", pods),
        )
    )
    steps.append(
        Run(
            f"real-pod tests on {pods}-worker ({', '.join(REAL_POD_TESTS)})",
            (
                "env",
                f"{TARGET_ENV}=kind:{pods}",
                f"KUBECONFIG={spec.pods_kubeconfig}",
                "python",
                "-m",
                "pytest",
                *REAL_POD_TESTS,
                "--color=no",
                "-p",
                "no:cacheprovider",
            ),
            capture="real_pods",
            pattern=PYTEST_SUMMARY,
            timeout=2700,
        )
    )
    return steps
