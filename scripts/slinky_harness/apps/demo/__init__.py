"""The suite's main job on an embedded default: README's first command (``nox -s demo``).

1. ``slinky-topology`` turns a fabric (default: two GB200 NVL72-style racks under two leaf
   switches and a spine, built into the package) into ``topology.yaml``; every chart of the
   suite is rendered with Helm 4 and validated strictly (Kubernetes schemas, our CRDs, the
   render invariants).
2. A kwok control plane starts (real kube-apiserver, controller-manager, scheduler, etcd; built
   once and cached) with a fake fleet made from the same fabric: one GB200 node per fabric node,
   labelled the way topograph's Kubernetes engine labels nodes (``fabric.topograph.run/tier-N``,
   ``accelerator.topograph.run/domain``) plus the GPU feature labels.
3. charts/slurm-operator and charts/slurm-cluster are installed with Helm 4 ``--wait``.
   slurm-cluster gets a GB200 NodeSet and the topology that ``slinky-topology`` generates from
   the *live* Node labels (preset ``topograph``); the nodes get the
   ``topology.slinky.slurm.net/spec`` annotations that the gpu-topology-labeler would write.
4. The real Slinky operator v1.2.1 manager (built from its Go module with the control plane,
   ``slinky_harness.k8s.operator``) runs as a local process with the chart Deployment's arguments,
   as the chart's ServiceAccount (so the chart's RBAC is what it may do), and reconciles the
   installed Controller into its ``slurm.conf`` ConfigMap. Only with ``--no-operator`` is it
   not run (the report says so) and the harness writes a slurm.conf from the installed objects.
5. A real slurmctld 26.05 (Debian sid chroot) loads that slurm.conf (the operator's, localised
   for the chroot, with the Controller's config files and keys; else the harness's) plus one
   dynamic node per Kubernetes node, featured with its Slurm NodeSet name and placed by its
   annotation; the report shows ``sinfo``, ``scontrol show topology`` and where an 18-node job
   lands.

``--keep`` leaves the cluster and its releases running and prints the kubeconfig.

One module per step: :mod:`.topology` (1, 2), :mod:`.install` (3), :mod:`.operator` (4),
:mod:`.slurm` (5); :mod:`.run` runs them in order and is the command line
(``python -m slinky_harness.apps.demo``). This module holds what they share.
"""

from __future__ import annotations

from typing import Any

from slinky_harness.core.errors import HarnessError
from slinky_harness.k8s import fleet

REGISTRY = "registry.demo.invalid"


GPU_SCENARIO = "gpu-topology-values.yaml"


PRESET = "topograph"
"""Label preset of the fleet's nodes (what topograph's ``k8s`` engine writes)."""


TIER_LABEL = fleet.TOPOGRAPH_TIER_LABEL


DOMAIN_LABEL = fleet.TOPOGRAPH_DOMAIN_LABEL


SPEC_ANNOTATION = "topology.slinky.slurm.net/spec"


GPU_PRODUCT = "NVIDIA-GB200"


NODESET = "gb200"


OPERATOR = ("slurm-operator", "slinky")
"""(release, namespace) of charts/slurm-operator."""


SLURM = ("slurm", "slurm")
"""(release, namespace) of charts/slurm-cluster."""


HELM_TIMEOUT = "120s"


OPERATOR_VALUES: dict[str, Any] = {
    # No cert-manager runs in the demo cluster: the chart makes the webhook certificate itself.
    "certManager": {"enabled": False},
    # No webhook server answers under kwok (the pods are fakes). With the chart's
    # failurePolicy: Fail the API server would refuse the slurm-cluster objects; Ignore keeps the
    # configurations installed and a 1 s timeout bounds each call to the unreachable pod IP.
    "webhook": {
        "timeoutSeconds": 1,
        "validating": {"failurePolicy": "Ignore"},
        "mutating": {"failurePolicy": "Ignore"},
    },
}


NODE_CPUS = "144"


NODE_MEMORY = "960Gi"


NODE_MEMORY_MB = 960 * 1024


class DemoError(HarnessError):
    """A step of the demo failed; the message says which and why."""
