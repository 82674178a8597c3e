"""``topology/block`` rules (topology.md b.2, b.2a): BlockSizes, block names, one block per node."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slinky_topology.errors import InputError
from slinky_topology.model import natural_key
from slinky_topology.validate.findings import Findings
from slinky_topology.validate.names import check_name

if TYPE_CHECKING:
    from slinky_topology.errors import Finding
    from slinky_topology.model import BlockSpec

__all__ = [
    "MAX_BASE_BLOCK",
    "MAX_BLOCK_LEVEL",
    "block_sizes_findings",
    "check_block_sizes",
    "check_block_spec",
    "parse_block_sizes",
]

MAX_BLOCK_LEVEL = 15
"""Largest ``log2(size / base)`` Slurm accepts (MAX_BLOCK_LEVELS 16)."""
MAX_BASE_BLOCK = 65535
"""Largest base block size: slurmctld keeps it in 16 bits (``bblock_node_cnt``); 65537 is fatal
at start-up and 65536 crashes slurmctld (a divide error in topology_block.so), issue 30 item 7.
Larger levels are stored as multiples of the base and have no such bound."""


def _size_problems(sizes: tuple[int, ...]) -> list[str]:
    if any(s <= 0 for s in sizes):
        return ["values must be positive"]
    base = sizes[0]
    problems: list[str] = []
    if base > MAX_BASE_BLOCK:
        problems.append(
            f"the base block size {base} is over {MAX_BASE_BLOCK}, the largest Slurm stores "
            "(16 bits; 65536 crashes slurmctld)"
        )
    prev = 0
    for s in sizes:
        ratio, rem = divmod(s, base)
        if rem:
            problems.append(f"{s} is not a multiple of the base {base}")
        elif ratio & (ratio - 1):
            problems.append(f"{s} / {base} is not a power of two")
        elif ratio.bit_length() - 1 > MAX_BLOCK_LEVEL:
            problems.append(f"{s} is more than 2^{MAX_BLOCK_LEVEL} base blocks")
        if s <= prev:
            problems.append("values must be strictly increasing")
        prev = s
    return problems


def check_block_sizes(
    out: Findings, sizes: tuple[int, ...], subject: str, *, line: int | None = None
) -> None:
    """BlockSizes rules (b.2): positive, multiples of the base, power-of-two ratios, level <= 15."""
    if not sizes:
        return
    text = ",".join(map(str, sizes))
    for problem in _size_problems(sizes):
        fix = (
            f"use a base block of at most {MAX_BASE_BLOCK} nodes (one NVLink domain, e.g. 18) "
            "and reach larger groups with the next levels (18,36,72,...)"
            if problem.startswith("the base block size")
            else "use base, base*2, base*4, ... (for example 18,36,72)"
        )
        out.error(subject, f"invalid BlockSizes {text}: {problem}", fix, line=line)


def block_sizes_findings(
    sizes: tuple[int, ...], subject: str, where: str | None = None
) -> list[Finding]:
    """The findings of :func:`check_block_sizes`, located at ``where``."""
    out = Findings(where)
    check_block_sizes(out, sizes, subject)
    return out.items


def parse_block_sizes(text: str, what: str = "--block-sizes") -> tuple[int, ...]:
    """``"18,36,72"`` as checked BlockSizes; :class:`InputError` naming ``what`` otherwise.

    For command lines and chart values (the labeler's ``--block-sizes``); a fabric file gives a
    list that its schema checks.
    """
    try:
        sizes = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise InputError(
            f"{what} {text!r} is not a comma-separated list of integers (e.g. 18,36,72)"
        ) from None
    problems = block_sizes_findings(sizes, what)
    if problems:
        raise InputError(f"{what}: {problems[0].message}; {problems[0].fix}")
    return sizes


def check_block_spec(out: Findings, topo: str, spec: BlockSpec, *, base_fit: bool = True) -> None:
    """Blocks of one topology: names, duplicates, nodes in two blocks, sizes against the base.

    ``base_fit``: warn when the base block size is larger than every block's node count (off
    when the caller already checked it against the NVLink domain sizes, as generation does).
    """
    subj = f"topology {topo}"
    if not spec.blocks:
        out.error(subj, "has no blocks (slurmctld fatal)", "define at least one block")
        return
    check_block_sizes(out, spec.block_sizes, subj, line=spec.line)
    seen: dict[str, int | None] = {}
    owner: dict[str, str] = {}
    twice: dict[str, tuple[str, str]] = {}
    for b in spec.blocks:
        check_name(out, "block", b.name, line=b.line)
        if b.name in seen:
            out.error(
                f"block {b.name}",
                "has already been defined",
                "give each block a unique name",
                line=b.line,
            )
        seen.setdefault(b.name, b.line)
    listed = [node for b in spec.blocks for node in b.nodes]
    if len(set(listed)) != len(listed):  # some node is listed twice: find where
        for b in spec.blocks:
            for node in b.nodes:
                if node in owner and node not in twice:
                    twice[node] = (owner[node], b.name)
                owner.setdefault(node, b.name)
    for node, (first, second) in sorted(twice.items(), key=lambda kv: natural_key(kv[0])):
        out.error(
            f"node {node}",
            f"is in blocks {first} and {second} (ours: one block per node)",
            f"remove {node} from one of the blocks",
            line=seen.get(second),
        )
    _check_base(out, subj, spec, base_fit=base_fit)


def _check_base(out: Findings, subj: str, spec: BlockSpec, *, base_fit: bool) -> None:
    non_empty = [b for b in spec.blocks if b.nodes]
    if not spec.block_sizes and not non_empty:
        out.error(subj, "blocks contain no nodes and BlockSizes is not set", "set BlockSizes")
    first = len(non_empty[0].nodes) if non_empty else 0
    base = spec.block_sizes[0] if spec.block_sizes else first
    largest = max((len(b.nodes) for b in non_empty), default=0)
    if base_fit and spec.block_sizes and non_empty and base > largest:
        out.warning(
            subj,
            f"the base block size {base} is larger than every block (the largest lists "
            f"{largest} nodes): a job of {largest + 1} to {base} nodes could never run, since "
            "Slurm puts a job no larger than the base block inside one base block",
            f"lower the first BlockSizes value to {largest} (the NVLink domain size)",
            line=spec.line,
        )
    for b in spec.blocks:
        if base and len(b.nodes) > base:
            out.warning(
                f"block {b.name}",
                f"has {len(b.nodes)} nodes, more than the base size {base}",
                "split the block or raise the base block size",
                line=b.line,
            )
