"""Generate, validate and publish Slurm topology for Slinky clusters.

Pipeline (pure in the middle, I/O at the edges)::

    sources.fabric_file | sources.k8s_nodes | sources.ibnetdiscover  ->  model.Fabric
    build.plan(fabric)                     -> build.Plan (topologies + per-node units)
    pipeline.render_output / render_annotations_output   (validated text)
    emit.topology_yaml | emit.topology_conf | emit.annotations | emit.values
    parse.parse_topology_yaml / parse_topology_conf  ->  model.TopologyDoc
    validate.validate_doc / validate_specs / validate_fabric  ->  errors.Finding list

The command line is :func:`slinky_topology.cli.main` (``slinky-topology``).
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
