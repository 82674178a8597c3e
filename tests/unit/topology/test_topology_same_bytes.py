"""The optimized generator writes the same bytes as the generator before the speed work (issue 19
item 7).

The digests below were taken from the outputs of ``main`` before any of the speed changes
(hostlist grouping, per-unit annotation strings, the hand-written annotations JSON), on the
benchmark's own fabric shape: one fabric with sequential names (hostlists compress into ranges)
and one with random names (nothing compresses).  The two ``#`` header lines carry the generator
version, so the body is hashed; the header's own content digest is checked against the body.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from slinky_topology.bench import synthetic_fabric
from slinky_topology.build import plan
from slinky_topology.emit.annotations import render_annotations
from slinky_topology.pipeline import render_annotations_output, render_output

BEFORE = {
    (4000, "sequential"): {
        "topology.yaml": "385e829198988be93866cf1a529feb09b77a7563506a0372d296fefc314c5413",
        "topology.conf-tree": "9790f13a12b311dab5248069eb3a81b9a950ce14aa17cfae5459bbb38a6efb73",
        "topology.conf-block": "e4eaee19f80e2ac4fe23fd298bae6aee69ef685ffa9e790e35f1dd1016a02f1b",
        "annotations": "2e408cb3d9b5c67c3cfb2422ef37aca636ff0ec947365cbcb53f223556654058",
        "annotations-tree": "d70237667dc2d401a8e0f67724458597c282c58b8533b8b9f0499b210d4f0ffd",
    },
    (3000, "random"): {
        "topology.yaml": "d076165deba5798e6cd993b879c4a471910dbd00e8cb257ab2e7db3a13f906be",
        "topology.conf-tree": "9a12173b465964fc9401cdcf5fea9ca39f3a0d67ac828531e68847b2b7247c67",
        "topology.conf-block": "3ac898b488f5a4c6347346822ee2f4bfe1992c9624de32428e1adcacf85cc6a2",
        "annotations": "c6344442193e96a45172b31283531239113970e0fcbb24406b7fd4bc9705fc0b",
        "annotations-tree": "cbe3bf2d2e5346dda52de9a1ae316697a0cabb73c5f7e90ffedbf3b9ad35ca7e",
    },
}


def _body(text: str) -> str:
    """``text`` without its two-line ``#`` header, checking the header's content digest."""
    lines = text.splitlines(keepends=True)
    if not lines[0].startswith("# "):
        return text  # JSON: no header
    body = "".join(lines[2:])
    assert lines[1] == f"# content sha256 {hashlib.sha256(body.encode()).hexdigest()[:16]}\n"
    return body


@pytest.mark.parametrize(("nodes", "names"), sorted(BEFORE))
def test_outputs_are_byte_identical_to_before(nodes: int, names: str) -> None:
    p = plan(synthetic_fabric(nodes, names))
    outputs = {
        "topology.yaml": render_output(p, "topology.yaml").text,
        "topology.conf-tree": render_output(p, "topology.conf-tree").text,
        "topology.conf-block": render_output(p, "topology.conf-block").text,
        "annotations": render_annotations_output(p).text,
        "annotations-tree": render_annotations_output(p, "topology.conf-tree").text,
    }
    got = {k: hashlib.sha256(_body(v).encode()).hexdigest() for k, v in outputs.items()}
    assert got == BEFORE[(nodes, names)]


@pytest.mark.parametrize(
    "specs",
    [
        {},
        {"gpu2": "fabric:core:leaf1,nvl:b1", "gpu10": "", "gpu1": "nvl:b0"},
        {'we"ird\\name': "t:\u00e9\u4e2d\x01\t", "\U0001f600": "fabric:s"},
    ],
)
def test_annotations_json_matches_json_dumps(specs: dict[str, str]) -> None:
    """The hand-written JSON is what ``json.dumps(indent=2, sort_keys=True)`` writes (the encoder
    the emitter used before), escapes and non-ASCII text included."""
    assert render_annotations(specs) == json.dumps(specs, indent=2, sort_keys=True) + "\n"
