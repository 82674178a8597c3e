"""Inputs: fabric files, Kubernetes node labels (presets), ibnetdiscover dumps."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from slinky_topology.build import plan
from slinky_topology.errors import InputError, ValidationError
from slinky_topology.model import BlockOptions, BlockSpec
from slinky_topology.sources import fabric_file, ibnetdiscover, k8s_nodes

DATA = Path(__file__).resolve().parents[2] / "data" / "topology"


def _node(name: str, **labels: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": labels}}


def test_builtin_default_fabric() -> None:
    fabric = fabric_file.load_fabric("default")
    assert len(fabric.nodes) == 36
    assert {n.domain for n in fabric.nodes} == {"rack01", "rack02"}
    assert [s.name for s in fabric.switches if s.parent is None] == ["spine1"]


@pytest.mark.parametrize(
    ("mutate", "location", "message"),
    [
        pytest.param(
            lambda d: d.update(kind="Other"), "::$.kind", "'Fabric' was expected", id="kind"
        ),
        pytest.param(
            lambda d: d["spec"]["nodes"][0].update(leaf="bad name"),
            "::$.spec.nodes[0].leaf",
            "does not match",
            id="leaf-pattern",
        ),
        pytest.param(
            lambda d: d["spec"]["nodes"][1].update(color="red"),
            "::$.spec.nodes[1]",
            "Additional properties",
            id="unknown-key",
        ),
        pytest.param(
            lambda d: d["spec"]["nodes"][0].update(name="gpu[1-"),
            "::$.spec.nodes[0].name",
            "unclosed",
            id="bad-hostlist",
        ),
        pytest.param(
            lambda d: d["spec"]["nodes"][0].update(k8sNode="k[1-2]"),
            "::$.spec.nodes[0].k8sNode",
            "2 Kubernetes nodes for 18",
            id="k8s-count",
        ),
        pytest.param(
            lambda d: d["spec"]["topologies"][1].update(blockSizes="big"),
            "::$.spec.topologies[1].blockSizes",
            "is not valid",
            id="block-sizes",
        ),
    ],
)
def test_fabric_file_errors_name_file_and_json_path(
    tmp_path: Path, mutate: Any, location: str, message: str
) -> None:
    data = yaml.safe_load(
        (Path(fabric_file.__file__).parents[1] / "data" / "default-fabric.yaml").read_text()
    )
    mutate(data)
    path = tmp_path / "fabric.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=message) as info:
        fabric_file.load_fabric(str(path))
    assert str(info.value).startswith(f"{path}{location}:")


def test_fabric_file_missing_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        fabric_file.load_fabric(str(tmp_path / "nope.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("spec: [\n")
    with pytest.raises(InputError, match=r"bad.yaml:2:1: not valid YAML"):
        fabric_file.load_fabric(str(bad))


def test_fabric_partitions_set_subdomains(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(
        "apiVersion: fabric.example.org/v1alpha1\nkind: Fabric\nspec:\n"
        "  nvlinkDomains:\n    - name: r1\n      partitions:\n"
        "        - {id: half1, nodes: ['g[1-2]']}\n"
        "  nodes:\n    - {name: 'g[1-3]', nvlinkDomain: r1}\n"
    )
    fabric = fabric_file.load_fabric(str(path))
    assert [n.subdomain for n in fabric.nodes] == ["half1", "half1", None]


@pytest.mark.parametrize(
    ("preset", "labels", "leaf_chain", "domain"),
    [
        pytest.param("gfd", {"nvidia.com/gpu.clique": "7b96-aa.3"}, [], ("7b96-aa", "3"), id="gfd"),
        pytest.param(
            "topograph",
            {
                "fabric.topograph.run/tier-0": "l1",
                "fabric.topograph.run/tier-1": "s1",
                "accelerator.topograph.run/domain": "nvl1",
            },
            ["l1", "s1"],
            ("nvl1", None),
            id="topograph",
        ),
        pytest.param(
            "gke",
            {
                "cloud.google.com/gce-topology-subblock": "sb1",
                "cloud.google.com/gce-topology-block": "b1",
            },
            ["sb1", "b1"],
            ("sb1", None),
            id="gke",
        ),
        pytest.param(
            "eks",
            {
                "topology.k8s.aws/network-node-layer-1": "nn-top",
                "topology.k8s.aws/network-node-layer-2": "nn-mid",
                "topology.k8s.aws/network-node-layer-3": "nn-low",
            },
            ["nn-low", "nn-mid", "nn-top"],
            (None, None),
            id="eks-3-layers",
        ),
        pytest.param(
            "nebius",
            {
                "topology.nebius.com/tier-0": "nvl9",
                "topology.nebius.com/tier-1": "rack1",
                "topology.nebius.com/tier-2": "spine1",
            },
            ["rack1", "spine1"],
            ("nvl9", None),
            id="nebius",
        ),
        pytest.param(
            "coreweave",
            {
                "ib.coreweave.cloud/leafgroup": "lg1",
                "ib.coreweave.cloud/superpod": "sp1",
                "ds.coreweave.com/nvlink.domain": "DH4-016",
            },
            ["lg1", "sp1"],
            ("DH4-016", None),
            id="coreweave",
        ),
        pytest.param(
            "crusoe",
            {
                "crusoe.ai/pod.id": "pod1",
                "crusoe.ai/ib.partition.id": "p1",
                "nvidia.com/gpu.clique": "u1.1",
            },
            ["pod1", "p1"],
            ("u1", "1"),
            id="crusoe",
        ),
        pytest.param(
            "oci",
            {
                "oci.oraclecloud.com/host.rack_id": "rk1",
                "oci.oraclecloud.com/host.network_block_id": "nb1",
                "oci.oraclecloud.com/host.gpu_memory_fabric_id": "gmf1",
            },
            ["rk1", "nb1"],
            ("gmf1", None),
            id="oci",
        ),
    ],
)
def test_presets(
    preset: str,
    labels: dict[str, str],
    leaf_chain: list[str],
    domain: tuple[str | None, str | None],
) -> None:
    for choice in (preset, "auto"):
        fabric = k8s_nodes.fabric_from_nodes([_node("k1", **labels)], preset=choice)
        node = fabric.nodes[0]
        parents = {s.name: s.parent for s in fabric.switches}
        chain = []
        cur = node.leaf
        while cur is not None:
            chain.append(cur)
            cur = parents[cur]
        assert chain == leaf_chain
        assert (node.domain, node.subdomain) == domain


def test_auto_detection_errors() -> None:
    with pytest.raises(InputError, match="no known topology labels"):
        k8s_nodes.fabric_from_nodes([_node("a", foo="bar")], allow_empty=False)
    mixed = [
        _node("a", **{"fabric.topograph.run/tier-0": "l"}),
        _node("b", **{"topology.nebius.com/tier-1": "r"}),
    ]
    with pytest.raises(InputError, match=r"several presets found \(nebius, topograph\)"):
        k8s_nodes.fabric_from_nodes(mixed)
    with pytest.raises(InputError, match="unknown preset"):
        k8s_nodes.fabric_from_nodes(mixed, preset="azure")


def test_label_map_and_repeated_values_are_qualified() -> None:
    nodes = [
        _node("a", rack="1", pod="p1", nvl="d1"),
        _node("b", rack="1", pod="p2", nvl="d2"),
        _node("c", rack="2", pod="p2", nvl="d2"),
    ]
    fabric = k8s_nodes.fabric_from_nodes(nodes, label_map="accelerator=nvl,leaf=rack,spine=pod")
    leaves = {n.name: n.leaf for n in fabric.nodes}
    assert leaves == {"a": "p1-1", "b": "p2-1", "c": "2"}
    assert {s.name: s.parent for s in fabric.switches} == {
        "p1": None,
        "p2": None,
        "p1-1": "p1",
        "p2-1": "p2",
        "2": "p2",
    }
    assert plan(fabric).specs()["b"] == "fabric:p2:p2-1,nvlink:d2"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("leaf", "not ROLE=LABEL_KEY", id="no-equals"),
        pytest.param("rack=x", "role 'rack' is unknown", id="unknown-role"),
        pytest.param("leaf=a,tier0=b", "one tier twice", id="tier-twice"),
        pytest.param(",", "empty", id="empty"),
    ],
)
def test_label_map_errors(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        k8s_nodes.preset_from_label_map(text)


def test_slurm_name_key_selector_and_document_shapes() -> None:
    doc = {
        "kind": "List",
        "items": [
            {
                "metadata": {
                    "name": "k1",
                    "labels": {"nvidia.com/gpu.clique": "u.1", "pool": "gpu"},
                    "annotations": {"slurm/name": "s1"},
                }
            },
            {
                "metadata": {
                    "name": "k2",
                    "labels": {"nvidia.com/gpu.clique": "u.1"},
                    "annotations": {"slurm/name": "s2"},
                }
            },
        ],
    }
    fabric = k8s_nodes.fabric_from_nodes(
        doc, slurm_name_key="slurm/name", node_selector={"pool": "gpu"}
    )
    assert [(n.name, n.kube_name) for n in fabric.nodes] == [("s1", "k1")]
    with pytest.raises(InputError, match="none of the 2 Nodes has the label or annotation other"):
        k8s_nodes.fabric_from_nodes(doc, slurm_name_key="other", allow_empty=False)
    with pytest.raises(InputError, match="NodeList"):
        k8s_nodes.node_items({"kind": "Pod"})
    with pytest.raises(InputError, match=r"no metadata\.name"):
        k8s_nodes.node_items([{"metadata": {}}])


def test_read_cluster_nodes_pages_through_a_client() -> None:
    calls: list[dict[str, Any]] = []
    pages = [
        SimpleNamespace(
            items=[{"metadata": {"name": "a"}}], metadata=SimpleNamespace(_continue="t1")
        ),
        SimpleNamespace(
            items=[{"metadata": {"name": "b"}}], metadata=SimpleNamespace(_continue=None)
        ),
    ]

    class FakeApi:
        api_client = SimpleNamespace(sanitize_for_serialization=lambda obj: obj)

        def list_node(self, **kwargs: Any) -> Any:
            calls.append(kwargs)
            return pages[len(calls) - 1]

    out = k8s_nodes.read_cluster_nodes(FakeApi(), label_selector="pool=gpu")
    assert [o["metadata"]["name"] for o in out] == ["a", "b"]
    assert calls == [
        {"limit": 500, "label_selector": "pool=gpu"},
        {"limit": 500, "label_selector": "pool=gpu", "_continue": "t1"},
    ]


def test_ibnetdiscover_sample() -> None:
    text = (DATA / "ib" / "two-tier.ibnetdiscover").read_text()
    fabric = ibnetdiscover.fabric_from_ibnetdiscover(text, "two-tier")
    # spine01 and spine02 see the same leaves -> merged into spine01
    assert {s.name: s.parent for s in fabric.switches} == {
        "leaf01": "spine01",
        "leaf02": "spine01",
        "spine01": None,
    }
    leaves = {n.name: n.leaf for n in fabric.nodes}
    assert leaves["gpu04"] == "leaf01"  # mlx5_0 is on leaf01, mlx5_1 on leaf02
    assert leaves["stor01"] == "leaf02"
    only_gpu = ibnetdiscover.fabric_from_ibnetdiscover(text, node_regex="^gpu")
    assert "stor01" not in {n.name for n in only_gpu.nodes}


def test_ibnetdiscover_three_tiers_and_names() -> None:
    text = "\n".join(
        [
            'Switch\t36 "S-0001"\t\t# "MF0;core-a:MQM9700/U1" enhanced port 0 lid 1 lmc 0',
            '[1]\t"S-0002"[1]\t\t# "MF0;sp1:MQM9700/U1" lid 2 4xNDR',
            "",
            'Switch\t36 "S-0002"\t\t# "MF0;sp1:MQM9700/U1" enhanced port 0 lid 2 lmc 0',
            '[1]\t"S-0001"[1]\t\t# "MF0;core-a:MQM9700/U1" lid 1 4xNDR',
            '[2]\t"S-0003"[1]\t\t# "plain switch name" lid 3 4xNDR',
            "",
            'Switch\t36 "S-0003"\t\t# "plain switch name" enhanced port 0 lid 3 lmc 0',
            '[1]\t"S-0002"[2]\t\t# "MF0;sp1:MQM9700/U1" lid 2 4xNDR',
            '[2]\t"H-00a1"[1](00a2)\t\t# "host1 mlx5_0" lid 4 4xNDR',
            "",
            'Ca\t1 "H-00a1"\t\t# "host1 mlx5_0"',
            '[1](00a2)\t"S-0003"[2]\t\t# lid 4 lmc 0 "plain switch name" lid 3 4xNDR',
        ]
    )
    fabric = ibnetdiscover.fabric_from_ibnetdiscover(text)
    assert {s.name: s.parent for s in fabric.switches} == {
        "plain-switch-name": "sp1",
        "sp1": "core-a",
        "core-a": None,
    }
    with pytest.raises(InputError, match="unrecognised"):
        ibnetdiscover.fabric_from_ibnetdiscover("garbage line\n", "x")
    with pytest.raises(InputError, match="no Switch or Ca records"):
        ibnetdiscover.fabric_from_ibnetdiscover("vendid=0x2c9\n")


def test_read_cluster_nodes_wraps_client_errors() -> None:
    class BrokenApi:
        api_client = SimpleNamespace(sanitize_for_serialization=lambda obj: obj)

        def list_node(self, **kwargs: Any) -> Any:
            raise RuntimeError("403 Forbidden")

    with pytest.raises(InputError, match="listing Nodes failed: 403 Forbidden"):
        k8s_nodes.read_cluster_nodes(BrokenApi())


# --- issue 19: label inputs get the fabric file's block controls; partial labels ------------------

TOPOGRAPH_DOMAIN = "accelerator.topograph.run/domain"
TOPOGRAPH_SUB = "accelerator.topograph.run/sub-domain"


def _topograph_node(name: str, leaf: str, domain: str, sub: str | None = None) -> dict[str, Any]:
    labels = {"fabric.topograph.run/tier-0": leaf, TOPOGRAPH_DOMAIN: domain}
    if sub is not None:
        labels[TOPOGRAPH_SUB] = sub
    return _node(name, **labels)


def test_topograph_preset_reads_the_sub_domain() -> None:
    """The sub-domain label as topograph's k8s engine writes it (a raw id, sometimes carrying
    the domain as a prefix) becomes the node's sub-domain; blocks per sub-domain follow it."""
    nodes = [
        _topograph_node("a1", "leaf1", "nvl1", "r1"),
        _topograph_node("a2", "leaf1", "nvl1", "nvl1.r2"),
        _topograph_node("a3", "leaf1", "nvl1"),
    ]
    fabric = k8s_nodes.fabric_from_nodes(nodes, preset="topograph")
    assert [(n.domain, n.subdomain) for n in fabric.nodes] == [
        ("nvl1", "r1"),
        ("nvl1", "r2"),
        ("nvl1", None),
    ]
    options = BlockOptions(source="subdomain")
    by_sub = plan(k8s_nodes.fabric_from_nodes(nodes, preset="topograph", block_options=options))
    assert by_sub.specs() == {
        "a1": "fabric:leaf1,nvlink:nvl1.r1",
        "a2": "fabric:leaf1,nvlink:nvl1.r2",
        "a3": "fabric:leaf1,nvlink:nvl1",
    }


def test_block_options_reach_the_nvlink_topology() -> None:
    """BlockSizes and the oversized-domain policy given for a label input shape its block
    topology: a 4-node domain over base 2 is split, or refused when asked to."""
    nodes = [_topograph_node(f"n{i}", "leaf1", "nvl1") for i in range(1, 5)]
    split = k8s_nodes.fabric_from_nodes(nodes, block_options=BlockOptions(block_sizes=(2, 4)))
    (request,) = [r for r in split.topologies if r.kind == "block"]
    assert request.block_sizes == (2, 4)
    spec = plan(split).doc().get("nvlink").spec  # type: ignore[union-attr]
    assert isinstance(spec, BlockSpec)
    assert [(b.name, b.nodes) for b in spec.blocks] == [
        ("nvl1-1", ("n1", "n2")),
        ("nvl1-2", ("n3", "n4")),
    ]
    strict = BlockOptions(block_sizes=(2, 4), oversized="error")
    with pytest.raises(ValidationError, match="needs 4 node slots, more than the base block size"):
        plan(k8s_nodes.fabric_from_nodes(nodes, block_options=strict))


def test_nodes_without_a_slurm_name_are_skipped_and_counted() -> None:
    """A Node without the Slurm-name label/annotation (no slurmd there) is left out, counted in
    Fabric.skipped and named in a warning that reaches the plan; values are trimmed."""
    nodes: list[dict[str, Any]] = [
        {"metadata": {"name": f"k{i}", "labels": {TOPOGRAPH_DOMAIN: " nvl1 "}}} for i in range(8)
    ]
    for i, item in enumerate(nodes[:2]):
        item["metadata"]["annotations"] = {"slurm/name": f" s{i}\n"}
    nodes[2]["metadata"]["labels"]["slurm/name"] = "   "  # blank counts as absent
    fabric = k8s_nodes.fabric_from_nodes(nodes, preset="topograph", slurm_name_key="slurm/name")
    assert [(n.name, n.kube_name, n.domain) for n in fabric.nodes] == [
        ("s0", "k0", "nvl1"),
        ("s1", "k1", "nvl1"),
    ]
    assert fabric.skipped == ("k2", "k3", "k4", "k5", "k6", "k7")
    (warning,) = plan(fabric).warnings
    assert warning.subject == "6 Kubernetes Nodes"
    assert "no label or annotation slurm/name" in warning.message
    assert "k2, k3, k4, k5, k6, ..." in warning.message


def test_label_values_are_trimmed() -> None:
    fabric = k8s_nodes.fabric_from_nodes(
        [_node("a", **{"fabric.topograph.run/tier-0": " leaf1\t", TOPOGRAPH_DOMAIN: "nvl1 "})]
    )
    assert [(n.leaf, n.domain) for n in fabric.nodes] == [("leaf1", "nvl1")]
    assert [s.name for s in fabric.switches] == ["leaf1"]


@pytest.mark.parametrize(
    ("nodes", "kwargs", "message"),
    [
        pytest.param(
            [_node("a", foo="bar")],
            {"preset": "topograph"},
            "no Node has a label of preset topograph (looked for fabric.topograph.run/tier-0..7, "
            "accelerator.topograph.run/domain, accelerator.topograph.run/sub-domain)",
            id="preset-matches-nothing",
        ),
        pytest.param(
            [_node("a", foo="bar")],
            {"label_map": "leaf=rack,accelerator=nvl"},
            "no Node has a label of preset custom (looked for rack, nvl)",
            id="label-map-matches-nothing",
        ),
        pytest.param(
            [_node("a", pool="cpu")],
            {"preset": "gfd", "node_selector": {"pool": "gpu"}},
            "no Nodes match --node-selector pool=gpu",
            id="selector-matches-nothing",
        ),
        pytest.param(
            [_node("a", foo="bar")], {}, "no known topology labels", id="auto-finds-nothing"
        ),
    ],
)
def test_nothing_to_place_is_an_error_unless_allowed(
    nodes: list[dict[str, Any]], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        k8s_nodes.fabric_from_nodes(nodes, allow_empty=False, **kwargs)
    fabric = k8s_nodes.fabric_from_nodes(nodes, allow_empty=True, **kwargs)
    assert all(n.leaf is None and n.domain is None for n in fabric.nodes)
    assert [t.kind for t in plan(fabric).doc().topologies] == ["flat"]


def test_label_map_subdomain_role() -> None:
    preset = k8s_nodes.preset_from_label_map("accelerator=nvl,subdomain=tray")
    assert preset.subdomains == ("tray",)
    fabric = k8s_nodes.fabric_from_nodes(
        [_node("a", nvl="d1", tray="t1")], label_map="accelerator=nvl,subdomain=tray"
    )
    assert (fabric.nodes[0].domain, fabric.nodes[0].subdomain) == ("d1", "t1")


def test_fabric_file_oversized_domains_key(tmp_path: Path) -> None:
    """``oversizedDomains`` of a fabric topology reaches the request (default split)."""
    data = yaml.safe_load(_FABRIC_WITH_REQUESTS)
    path = tmp_path / "fabric.yaml"
    path.write_text(yaml.safe_dump(data))
    requests = {r.name: r for r in fabric_file.load_fabric(str(path)).topologies}
    assert requests["split"].oversized == "split"
    assert requests["strict"].oversized == "error"
    assert not any(r.cluster_default for r in requests.values())
    with pytest.raises(ValidationError, match="domain r1: needs 4 node slots"):
        plan(fabric_file.load_fabric(str(path)))


_FABRIC_WITH_REQUESTS = """\
apiVersion: fabric.example.org/v1alpha1
kind: Fabric
spec:
  nodes:
    - {name: "n[1-4]", nvlinkDomain: r1}
  topologies:
    - {name: split, type: block, blockSizes: [2, 4]}
    - {name: strict, type: block, blockSizes: [2, 4], oversizedDomains: error}
"""
