"""Inputs: each module turns one kind of source into a :class:`~slinky_topology.model.Fabric`."""
