"""The gpu-topology-labeler: keeps Node labels, the Slinky topology annotation and a topology
ConfigMap in line with the fabric (architecture.md, topology.md b.8 and f).

Modules, data flowing one way:

* :mod:`.keys`: the fixed set of label and annotation keys the labeler owns, and label value
  normalisation (long or unsafe values are truncated and hashed deterministically);
* :mod:`.reconcile`: pure ``(desired, current) -> plan``; no I/O;
* :mod:`.publish`: applies a plan (JSON merge patches, ConfigMap create/replace), rate limited
  and retried, after validating the topology it publishes;
* :mod:`.leader`: leader election on a ``coordination.k8s.io/v1`` Lease;
* :mod:`.metrics`: Prometheus metrics, ``/healthz`` and ``/readyz``;
* :mod:`.kube`: the Kubernetes access (list/watch Nodes, ConfigMaps, Events, Leases) and its one
  error, :class:`~.kube.KubeAPIError`;
* :mod:`.config`: the frozen :class:`~.config.LabelerConfig` every other module reads;
* :mod:`.controller`: the watch loops and the passes of one process;
* :mod:`.cli`: flags and environment -> config, then run; ``python -m slinky_topology.labeler``;
* :mod:`.logs`: JSON-lines logging; :mod:`.extra`: the check for the ``labeler`` extra;
* :mod:`.discover`: optional per-node NVML discovery (``... labeler discover``).
"""

from __future__ import annotations

__all__: list[str] = []
