"""What real slurmctld 26.05 does with topology files our validator rejects.

Each ``tests/data/slurm/broken/<case>/`` holds the files and an ``expect.yaml``:

* ``rejected``: slurmctld exits during start-up with a fatal line (naming ``mentions`` when given);
* ``warned``: it starts and logs a warning naming ``mentions``;
* ``accepted``: it starts and says nothing about ``mentions`` (Slurm does not check; only our
  validator does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from slinky_harness.slurm.check import LoadResult, check_load
from slinky_harness.slurm.topology import (
    BlockTopology,
    TreeTopology,
    parse_topology_conf,
    parse_topology_yaml,
    read_blocks,
    read_tree,
)

BROKEN = Path(__file__).resolve().parents[1] / "data" / "slurm" / "broken"
CASES = sorted(p.name for p in BROKEN.iterdir() if (p / "expect.yaml").is_file())


def _message(line: str) -> str:
    """A log line without its ``[timestamp]`` prefix."""
    return line.split("] ", 1)[-1]


def _lines_naming(lines: tuple[str, ...], name: str) -> list[str]:
    return [ln for ln in lines if name in _message(ln)]


@pytest.fixture(scope="module")
def results(slurm_root: Path) -> dict[str, LoadResult]:
    return {case: check_load(BROKEN / case, root=slurm_root) for case in CASES}


def test_cases_exist() -> None:
    assert len(CASES) >= 6


@pytest.mark.parametrize("case", CASES)
def test_broken_topology(case: str, results: dict[str, LoadResult]) -> None:
    expect: dict[str, Any] = yaml.safe_load((BROKEN / case / "expect.yaml").read_text())
    result = results[case]
    mentions = expect.get("mentions")
    outcome = expect["outcome"]
    if outcome == "rejected":
        assert not result.started, f"{case}: slurmctld started"
        fatal = [ln for ln in result.errors if "fatal" in _message(ln)]
        assert fatal, f"{case}: no fatal line in\n{result.log}"
        if mentions:
            assert _lines_naming(tuple(fatal), str(mentions)), (case, fatal)
    elif outcome == "warned":
        assert result.accepted, (case, result.errors)
        assert _lines_naming(result.warnings, str(mentions)), (case, result.warnings)
    elif outcome == "accepted":
        assert result.accepted, (case, result.errors)
        if mentions:
            assert not _lines_naming(result.warnings + result.errors, str(mentions))
    else:
        pytest.fail(f"{case}: unknown outcome {outcome!r}")


def test_node_in_two_blocks_is_kept_in_both(results: dict[str, LoadResult]) -> None:
    """Slurm keeps a node listed in two blocks in both: aggregation silently double-counts it."""
    case = "node-in-two-blocks"
    model = parse_topology_conf((BROKEN / case / "topology.conf").read_text())
    assert isinstance(model, BlockTopology)
    base, _ = read_blocks(results[case].topologies[""])
    assert base == {b: frozenset(n) for b, n in model.blocks.items()}
    shared = set.intersection(*(set(n) for n in model.blocks.values()))
    assert shared and all(shared <= nodes for nodes in base.values())


def test_node_under_two_leaves_is_kept_under_both(results: dict[str, LoadResult]) -> None:
    case = "node-under-two-leaves"
    model = parse_topology_conf((BROKEN / case / "topology.conf").read_text())
    assert isinstance(model, TreeTopology)
    shown = read_tree(results[case].topologies[""])
    for leaf in model.leaves():
        assert shown[leaf].nodes == set(model.nodes[leaf])


def test_first_cluster_default_wins(results: dict[str, LoadResult]) -> None:
    """With two ``cluster_default: true``, the first one is the default (we require exactly one)."""
    case = "two-cluster-defaults"
    topologies = parse_topology_yaml((BROKEN / case / "topology.yaml").read_text())
    defaults = [t.name for t in topologies if t.cluster_default]
    assert len(defaults) == 2
    shown = results[case].topologies
    assert shown[""] == shown[defaults[0]] != shown[defaults[1]]
