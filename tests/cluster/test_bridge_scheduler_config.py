"""slurm-bridge's KubeSchedulerConfiguration against a real kube-scheduler v1.36 and the upstream facts.

Our scheduler build lacks the SlurmBridge plugin, so the chart also renders the same configuration
without the plugin's own section (``scheduler-config-base.yaml``). ``kube-scheduler
--write-config-to`` loads and validates a configuration, builds every profile's framework (so an
unknown plugin or a bad extension point is an error) and exits 0; it never needs a running cluster.
"""

from __future__ import annotations

import re
import subprocess
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from slinky_harness.build import controlplane as cp_build
from slinky_harness.core.paths import REPO_ROOT
from slinky_harness.helm import charts
from slinky_harness.helm import client as helm

if TYPE_CHECKING:
    from pathlib import Path

FACTS: dict[str, Any] = yaml.safe_load(
    (REPO_ROOT / "tests/data/bridge/plugin-facts.yaml").read_text()
)
BRIDGE = REPO_ROOT / "charts" / "slurm-bridge"
SCENARIOS = [
    s for c in charts.discover_charts() if c.name == "slurm-bridge" for s in charts.scenarios(c)
]
DUMMY_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: unused}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def _render(values: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    result = helm.template(BRIDGE, values)
    assert result.ok, result.describe()
    configs = next(
        d["data"]
        for d in result.docs
        if d["kind"] == "ConfigMap" and "scheduler-config.yaml" in d.get("data", {})
    )
    deployment = next(
        d
        for d in result.docs
        if d["kind"] == "Deployment"
        and d["metadata"]["labels"].get("app.kubernetes.io/component") == "scheduler"
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return configs, [*container.get("command", []), *container.get("args", [])]


def _write_config_to(config_text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    config = yaml.safe_load(config_text)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(DUMMY_KUBECONFIG)
    # Only the connection is the test's: the scheduler must read some kubeconfig.
    config.setdefault("clientConnection", {})["kubeconfig"] = str(kubeconfig)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    scheduler = cp_build.ensure_binaries() / "kube-scheduler"
    return subprocess.run(
        [str(scheduler), "--config", str(path), "--write-config-to", str(tmp_path / "out.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_base_configuration_is_accepted_by_kube_scheduler(
    scenario: charts.Scenario, tmp_path: Path
) -> None:
    """The configuration minus the SlurmBridge section loads, validates and builds in kube-scheduler."""
    configs, _ = _render(scenario.values)
    proc = _write_config_to(configs["scheduler-config-base.yaml"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = yaml.safe_load((tmp_path / "out.yaml").read_text())
    rendered = yaml.safe_load(configs["scheduler-config-base.yaml"])
    assert [p["schedulerName"] for p in written["profiles"]] == [
        p["schedulerName"] for p in rendered["profiles"]
    ]


def test_the_check_fails_on_the_plugin_our_build_lacks(tmp_path: Path) -> None:
    """Negative control: the full configuration names SlurmBridge, which this kube-scheduler refuses."""
    configs, _ = _render({})
    proc = _write_config_to(configs["scheduler-config.yaml"], tmp_path)
    assert proc.returncode != 0
    assert FACTS["plugin"] in proc.stderr


def test_full_configuration_matches_upstream_plugin_facts() -> None:
    """SlurmBridge runs at exactly the upstream extension points, beside the upstream in-tree plugins."""
    configs, args = _render({})
    full = yaml.safe_load(configs["scheduler-config.yaml"])
    base = yaml.safe_load(configs["scheduler-config-base.yaml"])
    (profile,) = full["profiles"]
    plugins = profile["plugins"]
    for point, expected in FACTS["profile"].items():
        assert [p["name"] for p in plugins[point]["enabled"]] == expected, point
    assert [p["name"] for p in plugins["multiPoint"]["disabled"]] == FACTS["multiPointDisabled"]
    assert [c["name"] for c in profile.get("pluginConfig", [])] == [FACTS["plugin"]]
    # The base configuration is the full one with every trace of the plugin removed, nothing else.
    (base_profile,) = base["profiles"]
    for point, expected in FACTS["profile"].items():
        without = [name for name in expected if name != FACTS["plugin"]]
        got = [p["name"] for p in (base_profile["plugins"].get(point) or {}).get("enabled", [])]
        assert got == without, point
    assert base["leaderElection"] == full["leaderElection"]
    gates = next(a for a in args if a.startswith("--feature-gates="))
    pairs = dict(item.split("=") for item in gates.removeprefix("--feature-gates=").split(","))
    assert pairs == {k: str(v).lower() for k, v in FACTS["featureGates"].items()}
    assert re.fullmatch(r"[a-z0-9-]+", profile["schedulerName"])
