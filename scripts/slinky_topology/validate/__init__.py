"""Validation rules: slurmctld's load-time checks plus our own stricter ones.

Sources of the rules: topology.md sections b.1, b.2, b.2a, b.2b, b.4, b.5, b.7, b.9 and f.3.
Severity follows slurmctld where it has a rule (``error`` = slurmctld fatal, ``warning`` = Slurm
accepts it with a log line); rules Slurm does not check but we require are ``error`` and say
"(ours)" in the message.

One module per rule family, each adding to a :class:`~.findings.Findings` collector (the one
place a :class:`~slinky_topology.errors.Finding` is built):

============  ===============================================================================
``names``     name length and hostlist safety
``fabric``    a fabric model before layout (:func:`validate_fabric`)
``doc``       a whole topology file: names, cluster default, coverage (:func:`validate_doc`)
``tree``      ``topology/tree`` switches
``block``     ``topology/block`` blocks and ``BlockSizes``
``specs``     per-node ``Topology=`` strings (:func:`validate_specs`)
``size``      the 1 MiB ConfigMap limit
``version``   ``slurmVersion`` gates
============  ===============================================================================

The public functions return lists of findings; :func:`raise_on_errors` turns errors into a
:class:`~slinky_topology.errors.ValidationError`.
"""

from __future__ import annotations

from slinky_topology.validate.block import (
    MAX_BLOCK_LEVEL,
    block_sizes_findings,
    parse_block_sizes,
)
from slinky_topology.validate.doc import validate_doc
from slinky_topology.validate.fabric import validate_fabric
from slinky_topology.validate.findings import Findings, raise_on_errors
from slinky_topology.validate.names import MAX_NAME_LEN
from slinky_topology.validate.size import CONFIGMAP_LIMIT, size_findings
from slinky_topology.validate.specs import parse_spec, validate_specs
from slinky_topology.validate.tree import MAX_FAST_SWITCHES, MAX_TREE_DEPTH
from slinky_topology.validate.version import version_findings

__all__ = [
    "CONFIGMAP_LIMIT",
    "MAX_BLOCK_LEVEL",
    "MAX_FAST_SWITCHES",
    "MAX_NAME_LEN",
    "MAX_TREE_DEPTH",
    "Findings",
    "block_sizes_findings",
    "parse_block_sizes",
    "parse_spec",
    "raise_on_errors",
    "size_findings",
    "validate_doc",
    "validate_fabric",
    "validate_specs",
    "version_findings",
]
