"""Golden files: small fabrics rendered by the CLI and compared byte for byte.

The files under ``tests/data/topology/golden/`` were generated once by this code and then
reviewed by hand against topology.md (b.1, b.2, b.4, b.5, b.8). To regenerate after an intended
change, run ``SLINKY_UPDATE_GOLDEN=1 pytest tests/unit/topology/test_topology_golden.py`` and
review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slinky_topology.cli import main

DATA = Path(__file__).resolve().parents[2] / "data" / "topology"
GOLDEN = DATA / "golden"

_FABRIC = {
    "default": ["--fabric", "default"],
    "small-tree": ["--fabric", str(DATA / "fabrics" / "small-tree.yaml")],
    "nvl72-partial": ["--fabric", str(DATA / "fabrics" / "nvl72-partial.yaml")],
    "uneven": ["--fabric", str(DATA / "fabrics" / "uneven.yaml")],
    "gfd-nodes": ["--from-nodes", str(DATA / "nodes" / "gfd-nodes.json")],
    "topograph-nodes": ["--from-nodes", str(DATA / "nodes" / "topograph-nodes.json")],
    "ib-two-tier": [
        "--ibnetdiscover",
        str(DATA / "ib" / "two-tier.ibnetdiscover"),
        "--ib-node-regex",
        "^gpu",
    ],
}

CASES = [
    ("default", "topology.yaml", ["generate"]),
    ("default", "topology-tree.conf", ["generate", "--format", "topology.conf-tree"]),
    ("default", "topology-block.conf", ["generate", "--format", "topology.conf-block"]),
    ("default", "values.yaml", ["generate", "--format", "values"]),
    ("default", "annotations.json", ["annotations"]),
    ("small-tree", "topology.yaml", ["generate"]),
    ("small-tree", "topology-tree.conf", ["generate", "--format", "topology.conf-tree"]),
    ("small-tree", "annotations-tree.json", ["annotations", "--format", "topology.conf-tree"]),
    ("nvl72-partial", "topology.yaml", ["generate"]),
    ("nvl72-partial", "topology-dynamic.yaml", ["generate", "--shape", "dynamic"]),
    ("nvl72-partial", "topology-block.conf", ["generate", "--format", "topology.conf-block"]),
    ("nvl72-partial", "annotations.json", ["annotations"]),
    ("uneven", "topology.yaml", ["generate"]),
    ("uneven", "topology-block.conf", ["generate", "--format", "topology.conf-block"]),
    ("gfd-nodes", "topology.yaml", ["generate"]),
    ("gfd-nodes", "annotations.json", ["annotations"]),
    ("topograph-nodes", "topology-static.yaml", ["generate", "--shape", "static"]),
    ("topograph-nodes", "annotations.json", ["annotations"]),
    ("ib-two-tier", "topology-tree.conf", ["generate", "--format", "topology.conf-tree"]),
]


@pytest.mark.parametrize(
    ("case", "name", "argv"), [pytest.param(c, n, a, id=f"{c}/{n}") for c, n, a in CASES]
)
def test_golden(case: str, name: str, argv: list[str], tmp_path: Path) -> None:
    out = tmp_path / name
    assert main([*argv, *_FABRIC[case], "-o", str(out)]) == 0
    golden = GOLDEN / case / name
    if os.environ.get("SLINKY_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(out.read_text())
    assert out.read_text() == golden.read_text(), f"{golden} is stale"


def test_golden_check_mode_agrees(capsys: pytest.CaptureFixture[str]) -> None:
    golden = GOLDEN / "default" / "topology.yaml"
    assert main(["generate", "--fabric", "default", "-o", str(golden), "--check"]) == 0
    assert capsys.readouterr().out == ""
