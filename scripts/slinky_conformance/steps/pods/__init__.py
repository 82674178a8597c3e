"""Conformance, pods phase: the user's cluster as real pods, when a real node is available.

The other phases fake the pods (kwok) and run Slurm in a chroot; this one runs the containers:
the real node of :mod:`slinky_harness.k8s.realnode` (kubelet, containerd, runc, CNI and CoreDNS
in a private network namespace; root on Linux) or, with ``SLINKY_REAL_PODS=kind:<cluster>``, a
kind worker. ``--real-pods auto`` (the default) runs it when
:func:`slinky_harness.k8s.realpods.unavailable` says nothing stands in the way and reports it as
not run, with that reason, otherwise; ``always`` makes a missing node a usage error; ``never``
leaves it out. Steps, in order (each needs the one before):

* ``node``: the images the charts render (:mod:`slinky_harness.build.images`, built or reused),
  the real node started and the images imported.
* ``install``: slurm-operator (its operator and webhook pods Ready), the user's ``--existing``
  objects, then slurm-cluster with the user's values and the overrides one node needs
  (:mod:`.overrides`; each is listed in the report's notes).
* ``register``: every NodeSet's slurmd (one per NodeSet) registered idle with slurmctld through
  the controller's Service, configless.
* ``jobs``: one ``srun hostname`` on the node of each NodeSet, in a partition that holds it
  (``--gres=gpu[:<type>]:1``, printing the GPU handed over, on a NodeSet with GPUs).

A NodeSet that declares GPUs gets them emulated (:mod:`.gres`: device files, gres.conf ``File=``
lines) and its job asks for one; one whose GRES cannot be emulated (DRA, GRES other than
``gpu``) runs no pod here: the report says its job was not run on real pods, and why.
"""

from __future__ import annotations

from slinky_conformance.context import Step
from slinky_conformance.steps.live import STATIC_NEEDS
from slinky_conformance.steps.pods import run

STEPS: tuple[Step, ...] = (
    # what the static phase refused is not installed on the real node either (the live
    # phase's rule: one clear failure, not a cascade)
    Step("pods", "node", run.node_step, after=STATIC_NEEDS),
    Step("pods", "install", run.install_step, needs=("pods/node",)),
    Step("pods", "register", run.register_step, needs=("pods/install",)),
    Step("pods", "jobs", run.jobs_step, needs=("pods/register",)),
)
"""The pods phase's steps in run order."""
