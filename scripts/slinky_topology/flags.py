"""Command-line flags that ``slinky-topology`` and the labeler share, defined once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slinky_topology.model import OVERSIZED_POLICIES

if TYPE_CHECKING:
    import argparse

__all__ = ["add_block_arguments"]


def add_block_arguments(group: argparse._ArgumentGroup) -> None:
    """``--block-sizes``, ``--block-source`` and ``--oversized-domains``: the block topology of
    inputs without a fabric file (Node labels, ibnetdiscover). Each defaults to ``None`` (not
    given), so a caller can tell them apart from a fabric file's own settings."""
    group.add_argument(
        "--block-sizes",
        metavar="SIZES",
        help="BlockSizes, e.g. 18,36,72 (default: inferred: the largest domain, doubled up to "
        "the widest switch subtree)",
    )
    group.add_argument(
        "--block-source",
        choices=["domain", "subdomain"],
        help="one base block per NVLink domain (default) or per sub-domain (clique)",
    )
    group.add_argument(
        "--oversized-domains",
        choices=list(OVERSIZED_POLICIES),
        help="a domain with more nodes than the base block size: split into base-size blocks "
        "<domain>-<i> (default) or fail",
    )
