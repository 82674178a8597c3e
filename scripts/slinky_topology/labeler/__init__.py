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
* :mod:`.kube`: the thin Kubernetes client layer (list/watch Nodes, ConfigMaps, Events, Leases);
* :mod:`.controller`: the watch loop and ``main(argv)``; ``python -m slinky_topology.labeler``;
* :mod:`.discover`: optional per-node NVML discovery (``... labeler discover``).
"""

from __future__ import annotations

__all__: list[str] = []
