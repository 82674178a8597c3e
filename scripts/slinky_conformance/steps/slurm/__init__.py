"""Conformance, slurm phase: a real slurmctld 26.05 (the Slurm chroot of the real-Slurm tier)
runs what the operator wrote for the user's values.

The live phase hands over ``ctx.slurm_files`` (what the slurmctld pod reads: the operator's
slurm.conf, localised, the Controller's config files and scripts, the key Secrets), the
release's objects and the control plane (Secrets and Services are read there; without one, from
the objects and ``--existing``). Steps:

* ``load``: slurmctld starts on those files (with accounting on, after the release's slurmdbd:
  slurmctld 26.05 starts only when its slurmdbd answers; see ``accounting``). When it refuses
  them, each line of its log that says why is traced back to the values that produced what it
  names (``controller.extraConfMap.<Option>``, ``controller.extraConf``,
  ``configFiles["<file>"]``, ``partitions.<p>.config``, ``scheduling.*``, ...). Then one
  dynamic node per NodeSet pod (its replicas, at most :data:`NODES_PER_NODESET`) joins as the
  operator's pods register (``<nodeset>-<i>``, the NodeSet's ``slurmd --conf``, its ``Gres``
  kept), placed in the units of a topology.yaml that lists none. gres.conf gets lines that stand
  in for the GPUs each node's slurmd would find (:func:`check_gres_conf`); a node whose GPUs
  slurmctld does not count (``Gres=(null)``: ``GresTypes`` does not name them) is a finding at
  the values that declare them.
* ``partitions``: every partition the values ask for exists and holds exactly the nodes of its
  NodeSets, with the topology the values give it (one topology.yaml has); every topology is
  shown as the file (plus the placed nodes) says (:mod:`slinky_harness.slurm.release`, shared
  with the cluster tier).
* ``jobs``: slurmctld's scheduler places one job in every partition (``sbatch --test-only``:
  the nodes are dynamic CLOUD nodes without slurmd); on a partition whose topology is a block
  topology the job asks ``--segment`` for a base block's worth of nodes and must land inside one
  base block. Each NodeSet whose nodes declare GPUs gets a job that asks for all of them
  (``--gres=gpu:N``, the partition's other nodes excluded): it must land on the NodeSet's nodes
  in one of the partitions that hold them (its own first).
* ``accounting``: the host the ``Accounting`` object names must resolve (an external slurmdbd's
  ``externalConfig.host``, the database's ``storageConfig.host``; a cluster name, ``db``,
  ``db.ns.svc``, must be a Service of the cluster instead); for an in-cluster slurmdbd, a real
  slurmdbd 26.05 accepted the operator's slurmdbd.conf (against a private MariaDB, provisioned
  with the storage settings and password) and slurmctld registered its cluster with it. When
  slurmdbd refuses its configuration, ``load`` runs slurmctld against a stand-in and this step
  names the option.

A deployment without a slurmctld of its own (no slurm-cluster, ``controller.external``) or
without accounting passes these steps saying so: nothing is wrong, and a skipped step would fail
the run.
"""

from __future__ import annotations

from slinky_conformance.context import Step
from slinky_conformance.steps.slurm import accounting, jobs, load, partitions

STEPS: tuple[Step, ...] = (
    Step("slurm", "load", load.load, needs=("live/reconcile",)),
    Step("slurm", "partitions", partitions.partitions, needs=("slurm/load",)),
    Step("slurm", "jobs", jobs.jobs, needs=("slurm/load",)),
    Step("slurm", "accounting", accounting.accounting, needs=("slurm/load",)),
)
"""The slurm phase's steps in run order."""
