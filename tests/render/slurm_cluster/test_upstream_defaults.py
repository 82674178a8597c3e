"""slurm-cluster keeps upstream Slinky's ``slurm`` chart (v1.2.1) defaults that shape slurm.conf.

An upstream user swaps charts with their own values and ours' defaults; slurm.conf must then hold
exactly the lines upstream's chart gives it. Each test renders upstream's chart (from
``SLINKY_UPSTREAM_CHARTS`` or upstream's registry, as the parity test does) and ours
with the same ``--set`` flags, and compares what reaches slurm.conf: the Controller's
``extraConf`` line for line, the config, prolog and epilog references, each NodeSet's partition
and node line, the Accounting's slurmdbd.conf lines. Our extensions (scheduling presets, GPUs,
topology) are opt-in: the profiles in ``values/`` turn them on by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from slinky_harness import parity
from slinky_harness.helm import charts
from slinky_harness.helm import client as helm

ROOT = Path(__file__).resolve().parents[3]
CHART = next(c for c in charts.discover_charts() if c.name == "slurm-cluster")

GUIDE = ["nodesets.slinky.enabled=true", "partitions.all.enabled=true"]
"""The ``--set`` flags of upstream's installation guide for its ``slurm`` chart."""

Doc = dict[str, Any]


def _render(chart: Path, sets: list[str]) -> list[Doc]:
    args = [arg for item in sets for arg in ("--set", item)]
    result = helm.template(
        chart, {}, release="slurm", namespace="slurm", api_versions=(), extra_args=args
    )
    assert result.ok, result.describe()
    return result.docs


def _conf_lines(text: Any) -> list[str]:
    """The lines of an ``extraConf`` as the operator writes them into slurm.conf: one per line,
    blank lines and ``#`` comments left out (Slurm reads neither)."""
    lines = [line.strip() for line in str(text or "").splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def slurm_conf(docs: list[Doc]) -> dict[str, Any]:
    """What of a render reaches slurm.conf (and slurmdbd.conf), keyed by where it comes from."""
    out: dict[str, Any] = {}
    for doc in docs:
        spec = doc.get("spec") or {}
        kind = doc.get("kind")
        if kind == "Controller":
            out["Controller.extraConf"] = _conf_lines(spec.get("extraConf"))
            for refs in (
                "configFileRefs",
                "prologScriptRefs",
                "epilogScriptRefs",
                "prologSlurmctldScriptRefs",
                "epilogSlurmctldScriptRefs",
            ):
                out[f"Controller.{refs}"] = sorted(r["name"] for r in spec.get(refs) or [])
        elif kind == "NodeSet":
            name = doc["metadata"]["name"]
            out[f"NodeSet/{name}.partition"] = spec.get("partition") or {}
            out[f"NodeSet/{name}.extraConf"] = _conf_lines(spec.get("extraConf"))
        elif kind == "Accounting":
            out["Accounting.extraConf"] = _conf_lines(spec.get("extraConf"))
    return out


@pytest.fixture(scope="module")
def upstream_chart() -> Path:
    return parity.upstream_chart("slurm")


def test_upstreams_install_guide_renders_upstreams_partition() -> None:
    """Upstream's guide flags give the partition of upstream's ``partitions.all`` default: every
    NodeSet, the default partition, no time limit."""
    docs = _render(CHART.path, GUIDE)
    controller = next(d for d in docs if d["kind"] == "Controller")
    assert _conf_lines(controller["spec"].get("extraConf")) == [
        "PartitionName=all Nodes=ALL Default=YES MaxTime=UNLIMITED"
    ]


@pytest.mark.parametrize(
    "sets",
    [
        pytest.param([], id="defaults"),
        pytest.param(GUIDE, id="install-guide"),
        pytest.param([*GUIDE, "accounting.enabled=true"], id="install-guide-accounting"),
        pytest.param(
            [*GUIDE, "nodesets.slinky.partition.enabled=true", "partitions.all.config=State=UP"],
            id="nodeset-partition-and-config",
        ),
        pytest.param(
            [*GUIDE, "controller.extraConfMap.MinJobAge=60", "partitions.all.nodesets={slinky}"],
            id="extra-conf-map",
        ),
        pytest.param(
            [
                *GUIDE,
                "nodesets.slinky.extraConfMap.Features=a",
                "accounting.enabled=true",
                "accounting.extraConfMap.PurgeJobAfter=12month",
            ],
            id="node-and-dbd-lines",
        ),
    ],
)
def test_slurm_conf_holds_exactly_upstreams_lines(upstream_chart: Path, sets: list[str]) -> None:
    """Invariant: for upstream's values, our defaults add no slurm.conf line to upstream's and
    drop none (no scheduling preset, no GPU or topology line unless asked), in upstream's order."""
    assert slurm_conf(_render(CHART.path, sets)) == slurm_conf(_render(upstream_chart, sets))


def test_upstreams_values_file_renders_upstreams_slurm_conf(upstream_chart: Path) -> None:
    """Upstream's own values.yaml passed as a file, with the guide's flags, gives the same slurm.conf
    lines on both charts: every default there that shapes slurm.conf is ours too."""
    values = parity.upstream_values("slurm")
    args = [arg for item in GUIDE for arg in ("--set", item)]
    rendered = []
    for chart in (CHART.path, upstream_chart):
        result = helm.template(
            chart, values, release="slurm", namespace="slurm", api_versions=(), extra_args=args
        )
        assert result.ok, result.describe()
        rendered.append(slurm_conf(result.docs))
    assert rendered[0] == rendered[1]


def _profiles() -> list[Path]:
    return sorted((ROOT / "values").glob("*.yaml"))


@pytest.mark.parametrize("profile", _profiles(), ids=lambda p: p.stem)
def test_profiles_choose_their_scheduling_preset(profile: Path) -> None:
    """A profile that installs slurm-cluster names its scheduling preset: the chart's default
    (``none``, upstream's slurm.conf) is for upstream users, the profiles opt in."""
    block = (yaml.safe_load(profile.read_text(encoding="utf-8")) or {}).get("slurm-cluster")
    if not isinstance(block, dict) or block.get("enabled") is False:
        pytest.skip(f"{profile.name} installs no slurm-cluster")
    preset = (block.get("scheduling") or {}).get("preset")
    assert preset in {"fairshare", "fifo", "none"}, (
        f"{profile.name}: set slurm-cluster.scheduling.preset (the chart's default is none)"
    )
