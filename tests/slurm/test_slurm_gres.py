"""Where a NodeSet's GPUs come from, on a real slurmctld 26.05 (issue 30, item 4).

slurm-cluster writes a NodeSet's node ``Gres=`` once (values.yaml ``gpu``): the GPUs of ``gpu``
or of the ``vendor.google.a3mega`` entry that targets it, then the other GRES of a ``Gres`` key
(any case) of ``extraConf``/``extraConfMap``; a ``gpu`` item there beside them is refused. Each
case renders the chart; a refused case must name the GPUs declared twice, an accepted one is
registered as the operator registers its pods (``slurmd -Z --conf``: ``release.slurmd_conf``,
which joins a key given twice) on slurmctld loaded with the chart's slurm.conf lines, and
``scontrol show node`` must count exactly the GPUs the values declare. slurmctld drops a GPU
without a device file, so gres.conf gives the node 64 (``/dev/nvidia[0-63]``, never opened by
slurmctld) of each GPU type its line names: more than any case declares, so the count is the
node line's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from slinky_harness.apps.demo.slurm import harness_slurm_conf
from slinky_harness.helm import client as helm
from slinky_harness.k8s.operator import slurm_nodeset_name
from slinky_harness.slurm import release
from slinky_harness.slurm.conf import parse_records

if TYPE_CHECKING:
    from slinky_harness.slurm.ctld import CtldFactory

CHART = Path(__file__).resolve().parents[2] / "charts" / "slurm-cluster"
A3MEGA = {
    "google": {
        "a3mega": [
            {"targetNodeSet": "gpu", "nodePool": "a3", "networks": [f"n{i}" for i in range(9)]}
        ]
    }
}


def gres_conf(host: str, gres: str) -> str:
    """A gres.conf line per GPU type of a ``Gres`` value, each with 64 device files."""
    types = {item.split(":")[1] if item.count(":") == 2 else "" for item in gres.split(",")}
    return "".join(
        f"NodeName={host} Name=gpu{f' Type={t}' if t else ''} File=/dev/nvidia[0-63]\n"
        for t in sorted(types)
        if gres
    )


def gpu_count(gres: str) -> int:
    """GPUs in a ``Gres`` value as ``scontrol show node`` prints it (``gpu:h100:8(S:0-1),nic:2``)."""
    total = 0
    for item in filter(None, re.sub(r"\([^)]*\)", "", gres).split(",")):
        parts = item.split(":")
        if parts[0].lower() == "gpu" and parts[-1].isdigit():
            total += int(parts[-1])
    return total


@pytest.mark.parametrize(
    ("values", "gpus"),
    [
        pytest.param(
            {"nodesets": {"gpu": {"gpu": {"count": 8}, "extraConf": "Weight=10 Features=ib"}}},
            8,
            id="gpu-count-and-extraConf",
        ),
        pytest.param(
            {"nodesets": {"gpu": {"gpu": {"count": 8}, "extraConf": "Weight=10 gres=gpu:h100:8"}}},
            8,
            id="gpu-count-and-lower-case-gres",
        ),
        pytest.param(
            {"nodesets": {"gpu": {"gpu": {"count": 4}, "extraConfMap": {"Gres": ["gpu:4"]}}}},
            4,
            id="gpu-count-and-extraConfMap-gres",
        ),
        pytest.param({"vendor": A3MEGA, "nodesets": {"gpu": {}}}, 8, id="a3mega"),
        pytest.param(
            {"vendor": A3MEGA, "nodesets": {"gpu": {"extraConf": "Weight=10"}}},
            8,
            id="a3mega-and-extraConf",
        ),
    ],
)
def test_node_registers_the_gpus_the_values_declare(
    start_ctld: CtldFactory, values: dict[str, Any], gpus: int
) -> None:
    """The GPUs a NodeSet declares are the GPUs slurmctld counts on its node, or the chart
    refuses the values, naming the GPUs declared twice."""
    result = helm.template(CHART, values)
    if not result.ok:
        assert "declares GPUs" in result.stderr, result.describe()
        return
    controller = next(d for d in result.docs if d["kind"] == "Controller")
    (nodeset,) = [d for d in result.docs if d["kind"] == "NodeSet"]
    name = slurm_nodeset_name(nodeset)
    conf = harness_slurm_conf(
        {
            "extraConf": controller["spec"].get("extraConf") or "",
            "nodesets": [(name, nodeset["spec"].get("partition") or {}, [])],
        }
    )
    registered = release.slurmd_conf(name, str(nodeset["spec"].get("extraConf") or ""))
    host = f"{name}-0"
    gres = gres_conf(host, registered.get("Gres", ""))
    with start_ctld({"slurm.conf": conf, "gres.conf": gres}) as ctld:
        ctld.create_node(host, **registered)
        (node,) = parse_records(ctld.scontrol("show", "node", "-o", host))
    assert gpu_count(node.get("Gres", "")) == gpus, (registered, node.get("Gres"))
