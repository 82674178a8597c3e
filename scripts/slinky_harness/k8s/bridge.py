"""The real slurm-bridge v1.2.1 (scheduler, admission webhook, controllers) as local processes.

The three binaries are built with the control plane from ``tools/go.mod``
(:func:`slinky_harness.build.controlplane.ensure_binaries`: ``slurm-bridge-scheduler``,
``slurm-bridge-admission``, ``slurm-bridge-controllers``). :func:`run_for_release` runs them as a
``slurm-bridge`` release's Deployments would, beside the kwok control plane:

* each under the ServiceAccount its Deployment names (a TokenRequest kubeconfig, 0600), so the
  chart's RBAC is what it may do;
* with the Deployment's own arguments; only listen addresses move to free ports on 127.0.0.1 and
  in-pod file paths to the files the harness wrote from the release's ConfigMaps;
* with the environment the Deployment gives, ``SLURM_JWT`` read from the Secret its
  ``secretKeyRef`` names;
* the scheduler with the chart's complete ``scheduler-config.yaml`` (plugin section included);
  the only change is ``clientConnection.kubeconfig`` (in a pod it is the in-cluster config). The
  v1.2.1 plugin reads ``/etc/slurm-bridge/config.yaml`` at a fixed path, so, as the pod's
  ConfigMap volume does, the release's ``config.yaml`` is bind-mounted there in a private mount
  namespace of the scheduler process only;
* the admission webhook on its fixed port 9443 (v1.2.1 has no flag for it), with a throw-away
  serving certificate; the release's webhook configurations are pointed at it.

Calls to slurmrestd go to the Service URL of the chart's ``config.yaml``; pass a
:class:`~slinky_harness.k8s.operator.ServiceProxy` that routes it to the chroot's slurmrestd.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.build.slinky import OperatorUnavailable, bridge_binary
from slinky_harness.core import ports
from slinky_harness.k8s import operator as slinky_operator
from slinky_harness.k8s.accounts import SERVICE_ACCOUNT_MOUNT, service_account_folder

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from slinky_harness.k8s.cluster import Cluster

CONFIG_MOUNT = Path("/etc/slurm-bridge")
"""Where the v1.2.1 scheduler plugin reads ``config.yaml`` (a constant in its code)."""
ADMISSION_PORT = 9443
"""controller-runtime's default webhook port; the v1.2.1 admission binary has no flag for it."""
EXPECTED_NOISE = ("context canceled",)
JOB_ID_LABEL = "scheduler.slinky.slurm.net/slurm-jobid"
"""Label the v1.2.1 scheduler puts on a pod: the id of its Slurm (external) job."""
EXCLUSIVE_ANNOTATION = "slurmjob.slinky.slurm.net/exclusive"
"""Pod annotation: ``"false"`` lets the pod's Slurm job share its nodes (whole nodes otherwise)."""


def slurm_jwt(key: bytes, username: str, *, lifetime: int = 86400) -> str:
    """An HS256 JWT that Slurm's ``auth/jwt`` accepts for ``username`` (claims ``sun``, ``iat``,
    ``exp``), signed with ``key`` (the cluster's ``jwt.key``)."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    now = int(time.time())
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = b64(json.dumps({"sun": username, "iat": now, "exp": now + lifetime}).encode())
    signature = hmac.new(key, f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{b64(signature)}"


def _configmap_file(manifest: Sequence[dict[str, Any]], key: str) -> str:
    found = [
        d["data"][key]
        for d in manifest
        if d.get("kind") == "ConfigMap" and key in (d.get("data") or {})
    ]
    if len(found) != 1:
        raise OperatorUnavailable(f"expected one ConfigMap with {key}, found {len(found)}")
    return str(found[0])


def container_env(cluster: Cluster, deployment: dict[str, Any]) -> dict[str, str]:
    """The first container's ``env`` as the kubelet would resolve it: plain values and
    ``secretKeyRef``/``configMapKeyRef`` read from the API server (as the admin)."""
    namespace = deployment["metadata"]["namespace"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env: dict[str, str] = {}
    for item in container.get("env") or []:
        if "value" in item:
            env[item["name"]] = str(item["value"])
            continue
        source = item.get("valueFrom") or {}
        if "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            env[item["name"]] = slinky_operator.secret_value(
                cluster, namespace, ref["name"], ref["key"]
            ).decode()
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            data = cluster.kubectl_json("get", "configmap", ref["name"], "-n", namespace)["data"]
            env[item["name"]] = str(data[ref["key"]])
    return env


def pod_mounts(kubeconfig: Path, deployment: dict[str, Any], folder: Path) -> dict[Path, Path]:
    """The ServiceAccount folder a pod of ``deployment`` gets (controller-runtime reads its
    namespace there for leader election), for the identity in ``kubeconfig``."""
    account = service_account_folder(
        kubeconfig, deployment["metadata"]["namespace"], folder / "serviceaccount"
    )
    return {account: SERVICE_ACCOUNT_MOUNT}


@dataclass
class Bridge:
    """The running components of one release and what they were given."""

    scheduler: slinky_operator.Manager
    admission: slinky_operator.Manager | None
    controllers: slinky_operator.Manager
    config: dict[str, Any]
    """The release's ``config.yaml`` (schedulerName, slurmRestApi, partition, ...)."""
    scheduler_config: dict[str, Any]
    """The KubeSchedulerConfiguration the scheduler runs with."""

    @property
    def scheduler_name(self) -> str:
        return str(self.config["schedulerName"])

    def components(self) -> dict[str, slinky_operator.Manager]:
        found = {"scheduler": self.scheduler, "controllers": self.controllers}
        if self.admission is not None:
            found["admission"] = self.admission
        return found


def _component_deployment(manifest: Sequence[dict[str, Any]], component: str) -> dict[str, Any]:
    """The release's one Deployment labelled ``app.kubernetes.io/component: <component>`` (the
    scheduler's is named after the scheduler name, so its name tells nothing)."""
    found = [
        d
        for d in manifest
        if d.get("kind") == "Deployment"
        and (d["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == component
    ]
    if len(found) != 1:
        raise OperatorUnavailable(
            f"expected one slurm-bridge {component} Deployment (label "
            f"app.kubernetes.io/component={component}) in the release, found {len(found)}"
        )
    return found[0]


@contextlib.contextmanager
def run_for_release(
    cluster: Cluster,
    manifest: Sequence[dict[str, Any]],
    workdir: Path,
    *,
    proxy: slinky_operator.ServiceProxy,
) -> Iterator[Bridge]:
    """Run the release's scheduler, admission webhook (when the chart enables it) and
    controllers; stop them on exit."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_dir = workdir / "etc-slurm-bridge"
    config_dir.mkdir(exist_ok=True)
    config_text = _configmap_file(manifest, "config.yaml")
    (config_dir / "config.yaml").write_text(config_text)
    config = yaml.safe_load(config_text)
    network = slinky_operator.proxy_env(proxy)

    config_file = str(config_dir / "config.yaml")

    def start(
        stack: contextlib.ExitStack,
        component: str,
        local: Callable[[Path, Path], dict[str, str]],
        *,
        front: Sequence[str] = (),
        kubeconfig_flag: bool = True,
        mounts: dict[Path, Path] | None = None,
        env: dict[str, str] | None = None,
    ) -> slinky_operator.Manager:
        """Run ``component`` as its Deployment would: its ServiceAccount (kubeconfig and pod
        folder), its arguments with ``local(folder, kubeconfig)`` values, its environment. The
        scheduler takes its connection from its configuration file (``kubeconfig_flag=False``)."""
        deployment = _component_deployment(manifest, component)
        folder = workdir / component
        kubeconfig = slinky_operator.deployment_identity(cluster, deployment, folder)
        args = slinky_operator.local_args(deployment, local(folder, kubeconfig))
        return stack.enter_context(
            slinky_operator.run_process(
                slinky_operator.with_mounts(
                    [
                        str(bridge_binary(component)),
                        *([f"--kubeconfig={kubeconfig}"] if kubeconfig_flag else []),
                        *front,
                        *args,
                    ],
                    {**pod_mounts(kubeconfig, deployment, folder), **(mounts or {})},
                ),
                folder / f"{component}.log",
                env={**container_env(cluster, deployment), **(env or {})},
                what=f"slurm-bridge {component}",
            )
        )

    scheduler_config = yaml.safe_load(_configmap_file(manifest, "scheduler-config.yaml"))
    port = ports.allocate_one()

    def scheduler_local(folder: Path, kubeconfig: Path) -> dict[str, str]:
        # The chart's KubeSchedulerConfiguration; only the connection is local (in a pod it is the
        # in-cluster config).
        scheduler_config.setdefault("clientConnection", {})["kubeconfig"] = str(kubeconfig)
        path = folder / "scheduler-config.yaml"
        path.write_text(yaml.safe_dump(scheduler_config, sort_keys=False))
        return {"--config": str(path), "--secure-port": str(port)}

    with contextlib.ExitStack() as stack:
        controllers = start(
            stack,
            "controllers",
            lambda folder, kubeconfig: {"--config": config_file},
            env=network,
        )
        scheduler = start(
            stack,
            "scheduler",
            scheduler_local,
            front=["--bind-address=127.0.0.1"],
            kubeconfig_flag=False,
            mounts={config_dir: CONFIG_MOUNT},
            env=network,
        )
        slinky_operator.wait_port(port, scheduler, timeout=60)

        admission: slinky_operator.Manager | None = None
        hooks = [d for d in manifest if d.get("kind", "").endswith("WebhookConfiguration")]
        if hooks:
            ca = slinky_operator.serving_certificate(
                workdir / "admission" / "k8s-webhook-server" / "serving-certs"
            )
            admission = start(
                stack,
                "admission",
                lambda folder, kubeconfig: {"--config": config_file},
                env={"TMPDIR": str(workdir / "admission")},
            )
            slinky_operator.wait_port(ADMISSION_PORT, admission)
            slinky_operator.point_webhooks_at(cluster, hooks, ADMISSION_PORT, ca)

        yield Bridge(scheduler, admission, controllers, config, scheduler_config)
