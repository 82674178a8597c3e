"""BlockSizes within Slurm's range (issue 30 item 7).

slurmctld keeps the base block size in 16 bits: 65537 is fatal at start-up and 65536 crashes it
(a divide error in topology_block.so). A base above 65535 is refused wherever BlockSizes is read or
written: a fabric file's ``blockSizes``, ``--block-sizes`` (generator and labeler), topology.conf's
``BlockSizes=`` and topology.yaml's ``block_sizes``, each with a fix. A base block larger than every
NVLink domain (or block) is a warning: a job of more nodes than one domain but no more than the base
could never run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from slinky_topology import cli
from slinky_topology.build import plan
from slinky_topology.errors import InputError
from slinky_topology.labeler.cli import main as labeler_main
from slinky_topology.model import Fabric, Node, NvlinkDomain, TopologyRequest
from slinky_topology.pipeline import render_output
from slinky_topology.validate import parse_block_sizes

if TYPE_CHECKING:
    from pathlib import Path

FABRIC = """\
apiVersion: fabric.example.org/v1alpha1
kind: Fabric
metadata: {{name: f}}
spec:
  nodes: [{{name: 'n[1-4]', nvlinkDomain: r1}}, {{name: 'm[1-4]', nvlinkDomain: r2}}]
  topologies: [{{name: nvl, type: block, clusterDefault: true, blockSizes: {sizes}}}]
"""


@pytest.mark.parametrize("text", ["65536", "65537", "65536,131072", "100000"])
def test_block_sizes_flag_refuses_a_base_over_65535(text: str) -> None:
    with pytest.raises(InputError) as err:
        parse_block_sizes(text)
    message = str(err.value)
    assert "over 65535" in message and "16 bits" in message
    assert "use a base block of at most 65535 nodes" in message, "the fix"


@pytest.mark.parametrize("text", ["65535", "18,36,72", "65535,131070", "1,2,4,8,16,32,64,128"])
def test_block_sizes_up_to_65535_are_accepted(text: str) -> None:
    assert parse_block_sizes(text) == tuple(int(v) for v in text.split(","))


def test_fabric_block_sizes_over_65535_exit_1_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fabric = tmp_path / "fabric.yaml"
    fabric.write_text(FABRIC.format(sizes="[65536, 131072]"))
    assert cli.main(["generate", "--fabric", str(fabric), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "topology nvl: invalid BlockSizes 65536,131072: the base block size 65536" in err
    assert "fix: use a base block of at most 65535" in err
    assert not (tmp_path / "out").exists()


def test_labeler_flag_refuses_a_base_over_65535(capsys: pytest.CaptureFixture[str]) -> None:
    assert labeler_main(["--block-sizes=65536"], environ={}) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --block-sizes: invalid BlockSizes 65536: the base block size")


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        pytest.param(
            "topology.conf",
            "BlockName=b1 Nodes=n[1-4]\nBlockSizes=65536\n",
            2,
            id="topology.conf",
        ),
        pytest.param(
            "topology.yaml",
            "- topology: nvl\n  cluster_default: true\n  block:\n    block_sizes: [65536]\n"
            "    blocks:\n      - block: b1\n        nodes: n[1-4]\n",
            None,
            id="topology.yaml",
        ),
    ],
)
def test_check_refuses_a_base_over_65535(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, line: int | None
) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert cli.main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    where = f"{path}:{line}: " if line else f"{path}"
    assert where in err
    assert "invalid BlockSizes 65536: the base block size 65536 is over 65535" in err
    assert "fix: use a base block of at most 65535" in err


def _block_fabric(sizes: tuple[int, ...] | None, slots: int = 4) -> Fabric:
    nodes = tuple(Node(f"{r}n{i}", domain=r) for r in ("ra", "rb") for i in range(1, 4))
    domains = (NvlinkDomain("ra", slots=slots), NvlinkDomain("rb", slots=slots))
    reqs = (TopologyRequest("nvl", "block", cluster_default=True, block_sizes=sizes),)
    return Fabric(nodes=nodes, domains=domains, topologies=reqs)


def test_a_base_larger_than_every_domain_is_warned_once() -> None:
    """Domains of 4 slots (3 nodes each), base 8: a 5-8 node job could never run."""
    out = render_output(plan(_block_fabric((8, 16))), "topology.yaml", "static")
    warned = [w for w in out.warnings if "larger than every" in w.message]
    assert len(warned) == 1, [w.message for w in out.warnings]
    (warning,) = warned
    assert warning.subject == "topology nvl"
    assert (
        "base block size 8 is larger than every NVLink domain (the largest has 4" in warning.message
    )
    assert "a job of 5 to 8 nodes could never run" in warning.message
    assert "lower the first BlockSizes value to 4" in warning.fix


@pytest.mark.parametrize(
    "sizes",
    [
        pytest.param((4, 8), id="base-is-the-domain"),
        pytest.param(None, id="inferred"),
        pytest.param((2, 4), id="base-below-the-domain"),
    ],
)
def test_no_warning_when_some_domain_fills_the_base(sizes: tuple[int, ...] | None) -> None:
    """Partial racks (3 of 4 nodes) do not count: the domain's slots do."""
    out = render_output(plan(_block_fabric(sizes)), "topology.yaml", "static")
    assert not [w for w in out.warnings if "larger than every" in w.message]


def test_check_warns_when_the_base_exceeds_every_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "topology.conf"
    path.write_text("BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-6]\nBlockSizes=8,16\n")
    assert cli.main(["check", str(path)]) == 0
    err = capsys.readouterr().err
    assert "base block size 8 is larger than every block (the largest lists 4 nodes)" in err
    path.write_text("BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-6]\nBlockSizes=4,8\n")
    assert cli.main(["check", str(path)]) == 0
    assert "larger than every block" not in capsys.readouterr().err
