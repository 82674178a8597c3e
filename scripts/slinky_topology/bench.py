"""Benchmark generation + validation on synthetic fabrics (``python -m slinky_topology.bench``).

Fabric shape: GB200 NVL72-style racks of 18 nodes, two racks per leaf, 16 leaves per spine, one
core above all spines (a three-tier tree), one NVLink domain per rack. For each size the timed
work is: layout (``plan``), topology.yaml (static, with its validation), topology.conf tree and
block, and the annotations (validated against the skeleton). Peak memory is measured in a second
pass under ``tracemalloc`` (Python allocations) and reported with the process max RSS.

``--names random`` gives non-compressible 25-character node names, which pushes large fabrics
over the 1 MiB ConfigMap limit and exercises the skeleton fallback.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
import tracemalloc
from typing import TYPE_CHECKING

from slinky_topology.build import plan
from slinky_topology.model import Fabric, Node, NvlinkDomain, Switch, TopologyRequest
from slinky_topology.pipeline import render_annotations_output, render_output

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "synthetic_fabric"]

RACK = 18
RACKS_PER_LEAF = 2
LEAVES_PER_SPINE = 16


def synthetic_fabric(n_nodes: int, names: str = "sequential", seed: int = 0) -> Fabric:
    """``n_nodes`` nodes in NVL72 racks under a leaf/spine/core tree (see module doc)."""
    rng = random.Random(seed)
    n_racks = -(-n_nodes // RACK)
    n_leaves = -(-n_racks // RACKS_PER_LEAF)
    n_spines = -(-n_leaves // LEAVES_PER_SPINE)
    switches = [Switch("core1")]
    switches += [Switch(f"spine{s:03d}", "core1") for s in range(n_spines)]
    switches += [
        Switch(f"leaf{leaf:04d}", f"spine{leaf // LEAVES_PER_SPINE:03d}")
        for leaf in range(n_leaves)
    ]
    domains = [NvlinkDomain(f"nvl{r:04d}", slots=RACK) for r in range(n_racks)]
    nodes = []
    for i in range(n_nodes):
        rack = i // RACK
        if names == "random":
            name = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(24)) + "0"
        else:
            name = f"gpu{i:05d}"
        nodes.append(Node(name, leaf=f"leaf{rack // RACKS_PER_LEAF:04d}", domain=f"nvl{rack:04d}"))
    rng.shuffle(nodes)  # input order must not matter
    topologies = (
        TopologyRequest("fabric", "tree", cluster_default=True),
        TopologyRequest("nvl", "block"),
    )
    return Fabric("bench", tuple(switches), tuple(domains), tuple(nodes), topologies)


def _work(fabric: Fabric) -> dict[str, int]:
    p = plan(fabric)
    sizes = {}
    out = render_output(p, "topology.yaml", "static")
    sizes["topology.yaml"] = len(out.text.encode())
    sizes["skeleton"] = 1 if out.shape == "dynamic" else 0
    sizes["tree.conf"] = len(render_output(p, "topology.conf-tree", "static").text.encode())
    sizes["block.conf"] = len(render_output(p, "topology.conf-block", "static").text.encode())
    sizes["annotations"] = len(render_annotations_output(p).text.encode())
    return sizes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m slinky_topology.bench", description=__doc__)
    parser.add_argument(
        "sizes",
        nargs="*",
        type=int,
        default=[1000, 10000, 65536],
        help="node counts (default: 1000 10000 65536)",
    )
    parser.add_argument("--names", choices=["sequential", "random"], default="sequential")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    print(
        f"{'nodes':>8} {'build s':>8} {'gen+val s':>10} {'peak MiB':>9} {'maxrss MiB':>10} "
        f"{'yaml KiB':>9} {'shape':>8}"
    )
    for n in args.sizes:
        t0 = time.perf_counter()
        fabric = synthetic_fabric(n, args.names)
        t1 = time.perf_counter()
        sizes = _work(fabric)
        t2 = time.perf_counter()
        peak = float("nan")
        if not args.no_memory:
            tracemalloc.start()
            _work(fabric)
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        shape = "skeleton" if sizes["skeleton"] else "static"
        print(
            f"{n:>8} {t1 - t0:>8.2f} {t2 - t1:>10.2f} {peak:>9.1f} {rss:>10.1f} "
            f"{sizes['topology.yaml'] / 1024:>9.1f} {shape:>8}"
        )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
