"""The conformance live phase's parts that need no control plane: the fleet copied from a Nodes
dump, the fleet made from values, what a Helm schema refusal and a scheduler refusal are mapped
to, and the post-renderer that keeps served webhooks pointed at the local server."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from slinky_conformance.context import Context
from slinky_conformance.report import Finding, Report, StepResult, render_text, write_junit
from slinky_conformance.steps.live import fleet as values_fleet
from slinky_conformance.steps.live import install as live
from slinky_conformance.steps.live import placement
from slinky_conformance.steps.slurm import load as slurm_load
from slinky_conformance.steps.slurm import state as slurm_state
from slinky_conformance.target import resolve
from slinky_harness.helm import webhook_postrender
from slinky_harness.k8s import placement as k8s_placement
from slinky_harness.k8s.fleet import FleetError, fleet_from_nodes, load_nodes

REPO = Path(__file__).resolve().parents[3]
NODES = REPO / "tests" / "data" / "conformance" / "nodes-h100.json"


def write(tmp_path: Path, values: dict[str, Any]) -> Path:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    return path


def test_nodes_dump_is_copied_without_status_taints() -> None:
    dump = json.loads(NODES.read_text())
    nodes = {n["metadata"]["name"]: n for n in load_nodes(NODES).nodes()}
    assert set(nodes) == {n["metadata"]["name"] for n in dump["items"]}
    for item in dump["items"]:
        copy = nodes[item["metadata"]["name"]]
        assert item["metadata"]["labels"].items() <= copy["metadata"]["labels"].items()
        assert copy["status"]["allocatable"] == item["status"]["allocatable"]
        kept = [
            t
            for t in item["spec"].get("taints", [])
            if not t["key"].startswith("node.kubernetes.io/")
        ]
        assert copy["spec"].get("taints", []) == [
            {k: t[k] for k in ("key", "value", "effect") if k in t} for t in kept
        ]
    # the dump's h100-02 is unreachable there: the copy is schedulable
    assert all(
        not t["key"].startswith("node.kubernetes.io/") for t in nodes["h100-02"]["spec"]["taints"]
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param({"kind": "List", "items": []}, "no Nodes", id="empty"),
        pytest.param({"kind": "Pod", "metadata": {"name": "x"}}, "not a Node", id="not-a-node"),
        pytest.param(
            {
                "items": [
                    {
                        "kind": "Node",
                        "metadata": {"name": "a"},
                        "status": {"allocatable": {"cpu": "1"}},
                    }
                ]
            },
            "allocatable.memory: required",
            id="no-memory",
        ),
    ],
)
def test_a_bad_nodes_dump_is_refused_with_where(data: object, message: str) -> None:
    with pytest.raises(FleetError, match=message):
        fleet_from_nodes(data, "dump.json")


def test_fleet_from_values_carries_each_nodeset_selector_taints_and_gpus(tmp_path: Path) -> None:
    values = {
        "slurm-cluster": {
            "nodesets": {
                "gpu": {"enabled": False},
                "h100": {
                    "replicas": 3,
                    "gpu": {"vendor": "nvidia", "count": 8},
                    "slurmd": {"resources": {"limits": {"vpc.amazonaws.com/efa": 32}}},
                    "podSpec": {
                        "nodeSelector": {"nvidia.com/gpu.product": "H100"},
                        "tolerations": [
                            {
                                "key": "dedicated",
                                "operator": "Equal",
                                "value": "hpc",
                                "effect": "NoSchedule",
                            }
                        ],
                    },
                },
                "mi300": {"replicas": 1, "slurmd": {"resources": {"limits": {"amd.com/gpu": 4}}}},
            }
        }
    }
    target = resolve([write(tmp_path, values)])
    groups = {g.name: g for g in values_fleet.fleet_from_values(target).groups}
    assert set(groups) == {"system", "nodeset-h100", "nodeset-mi300"}
    h100 = groups["nodeset-h100"]
    assert h100.count == 3
    assert h100.labels["nvidia.com/gpu.product"] == "H100"
    assert h100.resources["nvidia.com/gpu"] == "8"
    assert h100.resources["vpc.amazonaws.com/efa"] == "32"
    assert list(h100.taints) == [{"key": "dedicated", "effect": "NoSchedule", "value": "hpc"}]
    assert groups["nodeset-mi300"].resources["amd.com/gpu"] == "4"
    assert not groups["system"].taints


def test_schema_refusal_maps_to_the_umbrella_values_path(tmp_path: Path) -> None:
    target = resolve([write(tmp_path, {"slurm-cluster": {}})])
    stderr = (
        "Error: values don't meet the specifications of the schema(s) in the following chart(s):\n"
        "slurm-cluster:\n"
        "- at '/nodesets/gpu': validation failed\n"
        "  - at '/nodesets/gpu/podSpec/nodeSelector/nvidia.com~1gpu.product': got number, want string\n"
    )
    findings = live.schema_findings(target, stderr)
    assert [f.path for f in findings] == [
        'slurm-cluster.nodesets.gpu.podSpec.nodeSelector["nvidia.com/gpu.product"]'
    ]


def node(
    name: str, labels: dict[str, str], gpus: int = 0, taints: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "8Gi"} | ({"nvidia.com/gpu": str(gpus)} if gpus else {})
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints or []},
        "status": {"allocatable": allocatable},
    }


@pytest.mark.parametrize(
    ("needs", "nodes", "path", "says"),
    [
        pytest.param(
            k8s_placement.PodNeeds({"gpu": "h100"}, {}, [], {"nvidia.com/gpu": 8}),
            [node("a", {"gpu": "a100"}, 8)],
            "slurm-cluster.nodesets.big.podSpec.nodeSelector",
            "no node has gpu=h100",
            id="selector",
        ),
        pytest.param(
            k8s_placement.PodNeeds({"gpu": "h100"}, {}, [], {"nvidia.com/gpu": 16}),
            [node("a", {"gpu": "h100"}, 8), node("b", {}, 0)],
            "slurm-cluster.nodesets.big.gpu.count",
            "ask for at most 8 GPUs",
            id="gpus",
        ),
        pytest.param(
            k8s_placement.PodNeeds({}, {}, [], {"vpc.amazonaws.com/efa": 32}),
            [node("a", {}, 0) | {"status": {"allocatable": {"vpc.amazonaws.com/efa": "8"}}}],
            'slurm-cluster.nodesets.big.slurmd.resources.limits["vpc.amazonaws.com/efa"]',
            "at most 8 vpc.amazonaws.com/efa",
            id="efa",
        ),
        pytest.param(
            k8s_placement.PodNeeds({"gpu": "h100"}, {}, [], {}),
            [
                node(
                    "a",
                    {"gpu": "h100"},
                    8,
                    [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}],
                )
            ],
            "slurm-cluster.nodesets.big.podSpec.tolerations",
            "dedicated=x:NoSchedule",
            id="taint",
        ),
    ],
)
def test_an_unplaced_nodeset_is_a_finding_at_what_to_change(
    tmp_path: Path, needs: k8s_placement.PodNeeds, nodes: list[dict[str, Any]], path: str, says: str
) -> None:
    target = resolve([write(tmp_path, {"slurm-cluster": {"nodesets": {"big": {"replicas": 1}}}})])
    refused = k8s_placement.Placed(pods=1, refused={"big-0": "0/1 nodes are available"})
    findings = placement.nodeset_findings(target, "big", needs, nodes, refused)
    assert len(findings) == 1
    assert findings[0].path == path
    assert says in findings[0].problem + findings[0].fix


def test_placed_nodeset_is_no_finding(tmp_path: Path) -> None:
    target = resolve([write(tmp_path, {"slurm-cluster": {}})])
    needs = k8s_placement.PodNeeds({"gpu": "h100"}, {}, [], {"nvidia.com/gpu": 8})
    placed = k8s_placement.Placed(pods=1, placed={"big-0": "a"})
    assert (
        placement.nodeset_findings(target, "big", needs, [node("a", {"gpu": "h100"}, 8)], placed)
        == []
    )


def test_post_renderer_keeps_the_live_webhook_settings_and_nothing_else() -> None:
    live_config: dict[str, Any] = {
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "w"},
        "webhooks": [{"name": "a.kb.io", "clientConfig": {"url": "https://127.0.0.1:1/v", "caBundle": "Q0E="},
                      "failurePolicy": "Fail", "timeoutSeconds": 10, "sideEffects": "None"}],
    }  # fmt: skip
    rendered = [
        {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "w"},
         "webhooks": [{"name": "a.kb.io", "clientConfig": {"service": {"name": "s", "namespace": "n"}},
                       "failurePolicy": "Ignore", "sideEffects": "NoneOnDryRun"}]},
        {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "other"},
         "webhooks": [{"name": "a.kb.io", "clientConfig": {"service": {"name": "s"}}}]},
        {"kind": "ConfigMap", "metadata": {"name": "w"}, "data": {"k": "v"}},
    ]  # fmt: skip
    settings = webhook_postrender.live_settings([live_config])
    out = list(
        yaml.safe_load_all(webhook_postrender.rewrite(yaml.safe_dump_all(rendered), settings))
    )
    hook = out[0]["webhooks"][0]
    assert hook["clientConfig"] == live_config["webhooks"][0]["clientConfig"]
    assert (hook["failurePolicy"], hook["timeoutSeconds"], hook["sideEffects"]) == (
        "Fail",
        10,
        "NoneOnDryRun",
    )
    assert out[1:] == rendered[1:]


def test_a_fleet_made_from_the_values_says_the_cluster_was_not_checked(tmp_path: Path) -> None:
    """Without --nodes or --fabric the fleet step says so in its reason and leaves a caveat
    that the summary line and every JUnit suite carry; with --nodes, no caveat."""
    values = {"slurm-cluster": {"nodesets": {"a": {"replicas": 2}}}}
    target = resolve([write(tmp_path, values)])
    ctx = Context(target, tmp_path, "1.36")
    outcome = live.fleet_step(ctx)
    assert "your cluster was not checked" in outcome.reason
    assert [c.split(":")[0] for c in ctx.caveats] == ["your cluster was not checked"]
    assert "--nodes" in ctx.caveats[0]
    report = Report("v", [StepResult("live", "fleet", "pass", outcome.reason)], notes=ctx.caveats)
    text = render_text(report)
    assert text.rstrip().splitlines()[-1] == (
        "1 passed, 0 failed, 0 skipped: v conforms; your cluster was not checked"
    )
    assert f"NOTE: {ctx.caveats[0]}" in text
    junit = tmp_path / "r.xml"
    write_junit(report, junit)
    suites = ET.parse(junit).getroot().findall("testsuite")
    assert suites, "no suite"
    for suite in suites:
        found = [(p.get("name"), p.get("value")) for p in suite.iter("property")]
        assert found == [("note", ctx.caveats[0])]
    copied = Context(target, tmp_path, "1.36", nodes=NODES)
    live.fleet_step(copied)
    assert copied.caveats == []


def test_as_many_nodes_join_as_pods_were_placed(tmp_path: Path) -> None:
    """The slurm phase's nodes per NodeSet are live/placement's placed pods (a Pending pod
    runs no slurmd), not its replicas; without a placement count, the replicas."""
    target = resolve([write(tmp_path, {"slurm-cluster": {}})])
    nodeset = {
        "kind": "NodeSet",
        "metadata": {"name": "r-slurm-worker-gpu"},
        "spec": {"replicas": 4, "template": {"spec": {"hostname": "gpu-"}}},
    }
    ctx = Context(target, tmp_path, "1.36", objects=[nodeset])
    assert [(n, c) for n, c, _ in slurm_state.nodesets_of(ctx)] == [("gpu", 4)]
    ctx.extra["placed"] = {"gpu": 2}
    assert [(n, c) for n, c, _ in slurm_state.nodesets_of(ctx)] == [("gpu", 2)]
    assert slurm_load._joined(ctx, 2) == ""
    ctx.extra["placed"] = {"gpu": 9}
    assert slurm_load._joined(ctx, 4) == " (of 9 placed pods: at most 4 per NodeSet join)"


def _gate_run(static_failure: str) -> dict[str, StepResult]:
    """The real static and live step lists, every step's work replaced: the static steps pass
    except ``static_failure``; a live step that runs passes (it would need a control plane)."""
    from dataclasses import replace  # noqa: PLC0415

    from slinky_conformance.context import Outcome, run_steps  # noqa: PLC0415
    from slinky_conformance.steps import live as live_phase  # noqa: PLC0415
    from slinky_conformance.steps import pods as pods_phase  # noqa: PLC0415
    from slinky_conformance.steps import static as static_phase  # noqa: PLC0415

    def verdict(step_id: str) -> Any:
        def run(_: Context) -> Outcome:
            if step_id == static_failure:
                return Outcome("refused", [Finding("slurm-cluster.x", "wrong", "fix it")])
            return Outcome("held")

        return run

    phases = (*static_phase.STEPS, *live_phase.STEPS, *pods_phase.STEPS)
    steps = [replace(s, run=verdict(s.id)) for s in phases]
    ctx = Context(target=resolve([], chart="slurm-cluster"), work=Path(), kube_version="1.36")
    report = run_steps(ctx, steps, "gate")
    return {f"{r.phase}/{r.name}": r for r in report.results}


@pytest.mark.parametrize(
    "failed", ["static/api-server", "static/slurm-conf", "static/pass-through"]
)
def test_nothing_is_installed_from_values_a_gating_static_step_refused(failed: str) -> None:
    """Invariant: when the API server would refuse an object, slurmctld would refuse slurm.conf,
    or the chart drops a key, neither the live nor the pods phase installs anything (each of
    their steps is skipped, naming the failed static step): one clear failure, not minutes of a
    doomed install."""
    results = _gate_run(failed)
    assert results[failed].status == "fail"
    installing = {k: r for k, r in results.items() if k.startswith(("live/", "pods/"))}
    assert installing and {r.status for r in installing.values()} == {"skip"}
    assert f"{failed} (fail)" in installing["live/fleet"].reason
    assert f"{failed} (fail)" in installing["pods/node"].reason


def test_a_policy_finding_does_not_stop_the_install() -> None:
    """A pod-security finding stands beside the live verdict: the live and pods steps run."""
    results = _gate_run("static/pod-security")
    assert results["static/pod-security"].status == "fail"
    assert {r.status for k, r in results.items() if k.startswith(("live/", "pods/"))} == {"pass"}
