"""Conformance, live phase: the deployment on a kwok control plane with the real Slinky operator.

Steps, in order (each needs the one before):

* ``fleet``: the fake Nodes: a copy of ``--nodes`` (``kubectl get nodes -o json``), one node
  per node of ``--fabric`` (labelled as topograph labels them; a fabric says nothing about GPUs,
  so each is a 4-GPU GB200 tray, as in the demo), or, without either, the nodes the values ask
  for (:mod:`.fleet`).
* ``control-plane``: kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok as
  local processes with that fleet (:class:`~slinky_harness.k8s.cluster.Cluster`). With
  ``--keep`` it outlives the run and the report says how to reach and stop it.
* ``install``: what the deployment needs first (the user's ``--existing`` objects, the
  namespaces the bridge manages, the third-party CRDs its objects use; the Slinky CRDs and an
  operator release when the deployment does not bring its own), then the deployment with Helm 4,
  past the real admission webhook of that operator. An umbrella that brings the operator is
  installed as its README says: first without the subcharts that make Slinky objects, then
  everything. A refusal is a finding at the values path Helm's message names.
* ``reconcile``: the real operator manager (v1.2.1, as the release's ServiceAccount) writes the
  Controller's slurm.conf ConfigMap naming every partition the values ask for; what slurmctld
  reads is left in ``ctx.slurm_files`` for the slurm phase.
* ``placement``: every NodeSet's pods, made by the operator and placed by kube-scheduler, and
  the operator release's own Deployment pods; an unplaced pod is a finding at the node selector,
  the GPU (or other extended resource) request or the tolerations (:mod:`.placement`). The
  operator makes NodeSet pods only once slurmrestd answers, and deletes a healthy pod whose Slurm
  node never registers: a real slurmctld and slurmrestd run for it on the operator's files
  (without the accounting keys, which need a slurmdbd: proving accounting is the slurm phase's),
  with each StatefulSet-mode pod's Slurm node registered as its slurmd would register it.

What the slurm phase may use, in ``ctx.extra``: ``proxy`` (the
:class:`~slinky_harness.k8s.operator.ServiceProxy` the operator reaches slurmrestd through),
``manager`` and ``webhook`` (the running processes), ``operator_objects``, ``controller``,
``namespace``, ``nodesets`` (the release's NodeSet objects), ``slurm_conf`` (the operator's, as
written) and ``slurmctld`` (the one placement started, still running). Everything started is on
``ctx.stack``, closed at the end of the run.
"""

from __future__ import annotations

from slinky_conformance.context import Step
from slinky_conformance.steps.live import install, placement, reconcile

STATIC_NEEDS = (
    "static/schema",
    "static/render-helm4",
    "static/crds",
    "static/references",
    "static/api-server",
    "static/slurm-conf",
    "static/pass-through",
)
"""The static steps whose failure makes an install pointless: values the schema refuses, a render
that fails, custom resources their CRDs refuse, references nothing creates, objects the API
server refuses (the install would stop there), a slurm.conf slurmctld refuses (the placement's
slurmctld and the slurm phase would stop there) and keys the chart drops (what would be installed
is not what the values say). The policy steps (pod security, exposure, RBAC, invariants) do not
stop the install: their findings stand beside the live and slurm verdicts."""

STEPS: tuple[Step, ...] = (
    # Nothing is installed from values the static phase refused (one clear failure, not a cascade).
    Step("live", "fleet", install.fleet_step, after=STATIC_NEEDS),
    Step("live", "control-plane", install.control_plane, needs=("live/fleet",)),
    Step("live", "install", install.install, needs=("live/control-plane",)),
    Step("live", "reconcile", reconcile.reconcile, needs=("live/install",)),
    Step("live", "placement", placement.placement_step, needs=("live/reconcile",)),
)
