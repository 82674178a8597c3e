"""Fabric texts written by the slurm tier's topology tests, run through the real CLI.

:func:`generate` writes a fabric and returns what ``slinky-topology generate`` made of it;
:func:`fabric_nodes` lists the fabric's node names as the fabric states them (PyYAML and
python-hostlist through :func:`slinky_harness.slurm.topology.expand`), the independent side the
tests compare Slurm's view with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import yaml

from slinky_harness.slurm.topology import expand
from slinky_topology import cli

if TYPE_CHECKING:
    from pathlib import Path


def generate(tmp_path: Path, fabric_text: str, *args: str) -> str:
    """Generate from ``fabric_text`` with ``args``; each call writes a new output file."""
    fabric = tmp_path / "fabric.yaml"
    fabric.write_text(fabric_text)
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    assert cli.main(["generate", "--fabric", str(fabric), *args, "-o", str(out)]) == 0, args
    return out.read_text()


def fabric_nodes(fabric_text: str, *, leaf: bool | None = None) -> list[str]:
    """Node names of the fabric; ``leaf`` True/False: only those with / without a leaf switch."""
    entries = yaml.safe_load(fabric_text)["spec"]["nodes"]
    return [n for e in entries if leaf is None or ("leaf" in e) == leaf for n in expand(e["name"])]
