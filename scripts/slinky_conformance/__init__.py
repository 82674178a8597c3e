"""Conformance of a user's deployment: one command proves their values before they ship.

``nox -s conformance -- -f my-values.yaml [-f more.yaml] [--chart NAME | --umbrella PATH]
[--fabric FILE | --nodes nodes.json] [--kube-version X] [--junit report.xml] [--keep]``, or
``slinky-conformance`` with the same arguments (:mod:`.cli`). The values are those of one of the
suite's charts or of an umbrella chart (:mod:`.target`). Three phases run the same real parts as
the suite's own test tiers:

* **static** (:mod:`.static`): the strict values schema; the render with Helm 4 and Helm 3; every
  object against the Kubernetes OpenAPI schemas of the target version and the CRD schemas; the
  render invariants; the Pod Security level each namespace needs; what RBAC it grants; the
  cross-references between values (partitions and NodeSets, topology, Secrets).
* **live** (:mod:`.live`): a kwok control plane with a fleet made from the fabric, the Nodes dump
  or (without either) the values' node selectors and GPU requests; the charts installed with
  Helm 4; the real Slinky operator and its webhook reconcile; every NodeSet's pods placed.
* **slurm** (:mod:`.slurm`): a real slurmctld 26.05 loads the operator's slurm.conf with the
  user's files; one test job per partition runs (``--segment`` inside one block on block
  topologies); with accounting on, slurmdbd accepts its configuration.

Every step passes, fails or is skipped with its reason (:mod:`.report`); every finding names the
values path to change and what to change it to. The report goes to the terminal and, with
``--junit``, to JUnit XML.
"""
