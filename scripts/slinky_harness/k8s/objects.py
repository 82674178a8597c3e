"""Waiting for the objects a controller writes: one object until it is there (and ready), and
what the Slinky operator writes for a Controller (its slurm.conf ConfigMap and StatefulSet).

The conformance command (its live phase), the cluster tier's operator tests and the demo share
these; each keeps its own verdict on what was written.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from slinky_harness.core.polling import wait_for

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from slinky_harness.k8s.cluster import Cluster

Doc = dict[str, Any]

OBJECT_TIMEOUT = 60.0


def wait_object(
    cluster: Cluster,
    kind: str,
    name: str,
    namespace: str,
    ready: Callable[[Doc], bool] | None = None,
    *,
    what: str = "",
    alive: Callable[[], None] | None = None,
    detail: Callable[[Doc], object] | None = None,
    timeout: float = OBJECT_TIMEOUT,
) -> Doc:
    """``kind``/``name`` in ``namespace`` once it exists and ``ready`` holds for it (``what`` says
    what ``ready`` waits for). ``alive`` runs before each look: it raises when whatever should
    write the object has stopped. On time-out the :class:`~slinky_harness.core.errors.WaitTimeout`
    names the object and the last version seen (``detail`` of it, or the whole object), or says
    that it was never created."""
    last: list[Doc] = []

    def look() -> Doc | None:
        if alive is not None:
            alive()
        text = cluster.kubectl(
            "get", kind, name, "-n", namespace, "-o", "json", "--ignore-not-found", check=False
        )
        if not text.strip():
            return None
        found: Doc = json.loads(text)
        last[:] = [found]
        return found if ready is None or ready(found) else None

    def seen() -> object:
        if not last:
            return "not created"
        return detail(last[0]) if detail is not None else last[0]

    result: Doc = wait_for(
        look,
        timeout=timeout,
        what=f"{kind} {namespace}/{name}{what}",
        every=0.5,
        detail=seen,
    )
    return result


def slurm_conf(config: Doc) -> str:
    """The ``slurm.conf`` of a ConfigMap ("" when it has none)."""
    return str((config.get("data") or {}).get("slurm.conf", ""))


def conf_partitions(config: Doc) -> set[str]:
    """The ``PartitionName=`` names of a ConfigMap's slurm.conf."""
    return set(re.findall(r"^PartitionName=(\S+)", slurm_conf(config), re.M))


def conf_nodesets(config: Doc) -> set[str]:
    """The ``NodeSet=`` names of a ConfigMap's slurm.conf."""
    return set(re.findall(r"^NodeSet=(\S+)", slurm_conf(config), re.M))


def wait_controller_config(
    cluster: Cluster,
    controller: str,
    namespace: str,
    *,
    partitions: Collection[str] = (),
    nodesets: Collection[str] = (),
    external: bool = False,
    alive: Callable[[], None] | None = None,
    timeout: float = OBJECT_TIMEOUT,
) -> Doc:
    """The ConfigMap ``<controller>-config`` the Slinky operator writes, once its slurm.conf
    names every partition of ``partitions`` and every Slurm NodeSet of ``nodesets``; then, unless
    the Controller is ``external`` (a slurmctld elsewhere), its StatefulSet
    ``<controller>-controller``. The operator writes slurm.conf as soon as it reconciles the
    Controller and again as its cache learns the NodeSets: a first version without the NodeSets'
    lines is not an error, so this waits for the names rather than for the first version."""
    wanted, sets = set(partitions), set(nodesets)
    config = wait_object(
        cluster,
        "configmap",
        f"{controller}-config",
        namespace,
        lambda c: wanted <= conf_partitions(c) and sets <= conf_nodesets(c),
        what=f" naming partitions {sorted(wanted)} and NodeSets {sorted(sets)}",
        alive=alive,
        detail=lambda c: (
            f"it names partitions {sorted(conf_partitions(c))}, NodeSets {sorted(conf_nodesets(c))}"
        ),
        timeout=timeout,
    )
    if not external:
        wait_object(
            cluster,
            "statefulset",
            f"{controller}-controller",
            namespace,
            alive=alive,
            detail=lambda _: "made",
            timeout=timeout,
        )
    return config
