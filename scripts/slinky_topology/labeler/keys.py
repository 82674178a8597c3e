"""Label and annotation keys owned by the labeler, and label value normalisation.

Ownership is the fixed key set below: the controller only ever adds, changes or removes these
keys on Nodes, never any other (GFD, cloud provider or user labels are left alone).

=============================================  ==========  ======================================
key                                            kind        value
=============================================  ==========  ======================================
``topology.slinky.slurm.net/spec``             annotation  Slurm ``Topology=`` string (b.8)
``topology.slinky.slurm.net/nvlink-domain``    label       NVLink domain (e.g. ClusterUUID, rack)
``topology.slinky.slurm.net/nvlink-partition`` label       partition (clique) inside the domain
``topology.slinky.slurm.net/leaf``             label       switch at tier 0 (closest to the node)
``topology.slinky.slurm.net/spine``            label       switch at tier 1
``topology.slinky.slurm.net/core``             label       switch at tier 2
``topology.slinky.slurm.net/tier-N``           label       switch at tier N, 3 <= N <= 7
=============================================  ==========  ======================================

The discovery agent (``labeler discover``) owns one more label, on its own Node only:
``topology.slinky.slurm.net/gpu-clique`` = ``<ClusterUUID>.<CliqueId>`` of the NVLink fabric.
The controller never writes or removes it; it reads it through
``--label-map accelerator=topology.slinky.slurm.net/gpu-clique``.

Label values must match ``([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`` and be at most 63
characters. :func:`label_value` keeps a valid value as is; any other value becomes its cleaned
prefix, ``-`` and 16 hex digits of its SHA-256, so two different inputs never share a value in
practice and the same input always gives the same value.
"""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "CLIQUE_LABEL",
    "DOMAIN_LABEL",
    "OWNED_ANNOTATIONS",
    "OWNED_KEYS",
    "OWNED_LABELS",
    "PARTITION_LABEL",
    "PREFIX",
    "SPEC_ANNOTATION",
    "TIER_LABELS",
    "is_label_value",
    "label_value",
]

PREFIX = "topology.slinky.slurm.net"
SPEC_ANNOTATION = f"{PREFIX}/spec"
DOMAIN_LABEL = f"{PREFIX}/nvlink-domain"
PARTITION_LABEL = f"{PREFIX}/nvlink-partition"
CLIQUE_LABEL = f"{PREFIX}/gpu-clique"
#: Tier labels, closest first: tier 0 = leaf.
TIER_LABELS: tuple[str, ...] = (
    f"{PREFIX}/leaf",
    f"{PREFIX}/spine",
    f"{PREFIX}/core",
    *(f"{PREFIX}/tier-{i}" for i in range(3, 8)),
)
OWNED_LABELS: frozenset[str] = frozenset({DOMAIN_LABEL, PARTITION_LABEL, *TIER_LABELS})
OWNED_ANNOTATIONS: frozenset[str] = frozenset({SPEC_ANNOTATION})
OWNED_KEYS: frozenset[str] = OWNED_LABELS | OWNED_ANNOTATIONS

_VALUE_RE = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_BAD_CHARS = re.compile(r"[^-A-Za-z0-9_.]+")
MAX_VALUE = 63
_HASH_LEN = 16


def is_label_value(value: str) -> bool:
    """Whether ``value`` is a valid, non-empty Kubernetes label value."""
    return len(value) <= MAX_VALUE and _VALUE_RE.fullmatch(value) is not None


def label_value(value: str) -> str:
    """``value`` as a valid label value: itself when valid, else ``<cleaned prefix>-<hash16>``."""
    if is_label_value(value):
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:_HASH_LEN]
    cleaned = _BAD_CHARS.sub("-", value)
    cleaned = cleaned[: MAX_VALUE - _HASH_LEN - 1]
    cleaned = cleaned.strip("-_.")
    cleaned = re.sub(r"^[^A-Za-z0-9]+", "", cleaned)
    return f"{cleaned}-{digest}" if cleaned else f"x{digest}"
