"""Conformance, static phase: what can be proven from the values and the render alone.

Steps, in order (each finding names the values path in the user's terms):

* ``schema``: Helm's own verdict (``helm lint`` of the chart or the built umbrella with the user's
  files: what Helm refuses is what an install refuses), with the paths and fixes of each
  installed chart's ``values.schema.json`` read in Python (and the umbrella's own schema) where
  Helm refuses; the values are read as Helm reads them (a date stays a string).
* ``pass-through``: the Kubernetes structs slurm-cluster passes through from the values (pod
  specs, containers, Service specs) against the OpenAPI schemas of ``--kube-version``
  (:mod:`.passthrough`): an unknown or misplaced key, at its values path, with "did you mean".
* ``render-helm4`` / ``render-helm3``: ``helm template`` with the pinned Helm 4 and Helm 3; a
  chart's refusal (its ``validate.yaml`` list, a ``fail``, a schema error) is mapped to the values
  path it names. Helm 4's documents are what the later steps read.
* ``openapi``: built-in kinds against the Kubernetes OpenAPI schemas of ``--kube-version``;
  ``crds``: custom resources against the CRDs (Slinky's with their CEL rules, cert-manager,
  Prometheus Operator, KEDA).
* ``api-server``: what the API server refuses at install beyond the schemas: an ExternalName
  that is no lower-case DNS name, ConfigMaps and Secrets over 1 MiB or with bad or doubled keys,
  hostPath ``..`` (and ``/`` or ``/etc``, root on the node), a volumeMount naming no volume, two
  mounts on one path, an object too large for etcd.
* ``slurm-conf``: what slurmctld will be given: at least one partition when there are NodeSets,
  one of them ``Default=YES`` (a job without ``-p`` finds it), every NodeSet's ``Gres`` named
  in ``GresTypes`` (else slurmctld shows ``Gres=(null)``); a GPU vendor hook with no GPU
  NodeSet is a warning.
* ``invariants``: the render invariants every tier checks (:mod:`slinky_harness.k8s.manifests`).
* ``pod-security``: the Pod Security level each namespace needs for its pods, and the label to
  set; it fails only when a namespace the render makes enforces a lower level.
* ``rbac``: what each ServiceAccount may do; a wildcard grant fails.
* ``references``: partitions naming unknown or disabled NodeSets, an inline topology placing a
  node in two blocks (or under two leaf switches), and Secrets the render refers to but never
  makes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from slinky_conformance.context import Context, Outcome, Step, StepFailed
from slinky_conformance.steps.static.helm import (
    check_render_helm3,
    check_render_helm4,
    check_schema,
)
from slinky_conformance.steps.static.objects import (
    check_api_server,
    check_crds,
    check_openapi,
    check_pass_through,
)
from slinky_conformance.steps.static.references import check_references
from slinky_conformance.steps.static.security import (
    check_exposure,
    check_invariants,
    check_pod_security,
    check_rbac,
)
from slinky_conformance.steps.static.slurm_conf import check_slurm_conf
from slinky_harness.helm import client as helm_client

if TYPE_CHECKING:
    from collections.abc import Iterator

PHASE = "static"


def _wrap(check: Any) -> Any:
    """``check`` with harness errors of its own tools turned into a step failure."""

    def run(ctx: Context) -> Outcome:
        try:
            outcome: Outcome = check(ctx)
        except (helm_client.HelmError, OSError, ValueError) as exc:
            raise StepFailed(str(exc)) from exc
        return outcome

    return run


def _steps() -> Iterator[Step]:
    render = f"{PHASE}/render-helm4"
    yield Step(PHASE, "schema", _wrap(check_schema))
    yield Step(PHASE, "pass-through", _wrap(check_pass_through))
    yield Step(PHASE, "render-helm4", _wrap(check_render_helm4), (f"{PHASE}/schema",))
    yield Step(PHASE, "render-helm3", _wrap(check_render_helm3), (f"{PHASE}/schema",))
    yield Step(PHASE, "openapi", _wrap(check_openapi), (render,))
    yield Step(PHASE, "crds", _wrap(check_crds), (render,))
    yield Step(PHASE, "api-server", _wrap(check_api_server), (render,))
    yield Step(PHASE, "slurm-conf", _wrap(check_slurm_conf), (render,))
    yield Step(PHASE, "invariants", _wrap(check_invariants), (render,))
    yield Step(PHASE, "pod-security", _wrap(check_pod_security), (render,))
    yield Step(PHASE, "exposure", _wrap(check_exposure), (render,))
    yield Step(PHASE, "rbac", _wrap(check_rbac), (render,))
    yield Step(PHASE, "references", _wrap(check_references))


STEPS: tuple[Step, ...] = tuple(_steps())
