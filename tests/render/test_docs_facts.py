"""Facts the docs state, checked against where they come from.

Each test reads a fact from a README (or MIGRATING.md, or NOTES.txt as Helm renders it) and
compares it with its source of truth: the charts' ``Chart.yaml`` versions, the upstream
conformance floor and its intentional differences, the objects the chart renders, and the
Kubernetes versions the harness pins (the static checks' newest schemas, the control plane's
build). A doc that drifts from its source fails here, naming the file and the value to write.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from slinky_harness import parity
from slinky_harness.build import controlplane
from slinky_harness.helm import charts
from slinky_harness.helm import client as helm
from slinky_harness.k8s import schemas as kubeschema

ROOT = Path(__file__).resolve().parents[2]
CHARTS = {c.name: c for c in charts.discover_charts()}
CLUSTER = CHARTS["slurm-cluster"]
FLOOR = parity.FLOOR_FILE
INTENTIONAL = parity.DIFFERENCES_FILE

DOCS = sorted(
    [
        ROOT / "README.md",
        ROOT / "MIGRATING.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "examples").glob("*/README.md"),
        *(ROOT / "charts").glob("*/README.md.gotmpl"),
    ]
)
NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10,
}  # fmt: skip


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _yaml_blocks(text: str) -> list[Any]:
    """The parsed fenced ```yaml blocks of a Markdown text."""
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, flags=re.S)]


# --- chart versions ----------------------------------------------------------------------------


def test_docs_name_the_current_chart_versions() -> None:
    """Every ``charts/<chart> --version X`` and ``charts/<chart>:X`` in the docs is the chart's
    version in its Chart.yaml."""
    wrong = []
    pattern = re.compile(r"charts/([a-z-]+)(?:\s+--version\s+|:)(\d+\.\d+\.\d+)")
    for doc in DOCS:
        for name, version in pattern.findall(doc.read_text(encoding="utf-8")):
            if name in CHARTS and version != CHARTS[name].version:
                wrong.append(f"{_rel(doc)}: {name} {version}, the chart is {CHARTS[name].version}")
    assert wrong == []


def _dependency_lists() -> list[Any]:
    """Every umbrella dependency list: the example's Chart.yaml, then each doc's YAML snippet."""
    found = []
    umbrella = yaml.safe_load((ROOT / "examples/umbrella/Chart.yaml").read_text(encoding="utf-8"))
    found.append(("examples/umbrella/Chart.yaml", umbrella["dependencies"]))
    for doc in DOCS:
        for block in _yaml_blocks(doc.read_text(encoding="utf-8")):
            if isinstance(block, dict) and isinstance(block.get("dependencies"), list):
                found.append((_rel(doc), block["dependencies"]))
    return [pytest.param(where, deps, id=f"{where}#{i}") for i, (where, deps) in enumerate(found)]


@pytest.mark.parametrize(("where", "deps"), _dependency_lists())
def test_umbrella_pins_take_the_current_charts(
    tmp_path: Path, where: str, deps: list[dict[str, Any]]
) -> None:
    """Each dependency's ``version:`` of an umbrella (the example's Chart.yaml, the README's
    snippet) is met by the chart as it is now: Helm resolves it against ``charts/<name>``."""
    ours = [d for d in deps if d.get("name") in CHARTS]
    assert ours, f"{where}: no dependency on the suite's charts"
    chart = {
        "apiVersion": "v2",
        "name": "pins",
        "version": "0.0.1",
        "dependencies": [
            {
                "name": d["name"],
                "version": str(d["version"]),
                "repository": f"file://{CHARTS[d['name']].path}",
            }
            for d in ours
        ],
    }
    (tmp_path / "Chart.yaml").write_text(yaml.safe_dump(chart), encoding="utf-8")
    result = helm.Helm.pinned().run("dependency", "update", str(tmp_path), check=False)
    versions = {d["name"]: CHARTS[d["name"]].version for d in ours}
    assert result.returncode == 0, (
        f"{where}: pins {[d['version'] for d in ours]} vs {versions}: {result.stderr}"
    )


# --- MIGRATING.md ------------------------------------------------------------------------------


def test_migrating_counts_are_the_parity_floor() -> None:
    """MIGRATING's slurm row says how many of upstream's cases render equal and how many
    differences are intentional: the floor file's count and the number of listed differences."""
    text = (ROOT / "MIGRATING.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `slurm` |"))
    match = re.search(r"all (\d+) cases .*?less (\w+) documented differences", row)
    assert match, f"MIGRATING.md's slurm row states no counts: {row}"
    floor = parity.load_floor(FLOOR)["slurm"]
    listed = yaml.safe_load(INTENTIONAL.read_text(encoding="utf-8"))["slurm"]
    stated = (int(match.group(1)), NUMBERS.get(match.group(2), -1))
    assert stated == (floor["equal"], len(listed)), (
        f"MIGRATING.md: write 'all {floor['equal']} cases' and {len(listed)} differences "
        f"({FLOOR.name}, {INTENTIONAL.name})"
    )
    assert floor["accepted"] == floor["equal"], "'all ... accepted and render equal' needs both"


# --- names and features the chart renders ------------------------------------------------------


def test_docs_name_the_config_map_the_chart_renders() -> None:
    """slurm-cluster's config files go to ``<fullname>-config-extra`` (upstream's name); no doc
    calls it ``<fullname>-config`` or ``<release>-config-extra``."""
    result = helm.template(
        CLUSTER.path, {"configFiles": {"cgroup.conf": "CgroupPlugin=autodetect\n"}}
    )
    assert result.ok, result.describe()
    names = {d["metadata"]["name"] for d in result.docs if d["kind"] == "ConfigMap"}
    fullname = next(d["metadata"]["name"] for d in result.docs if d["kind"] == "Controller")
    assert f"{fullname}-config-extra" in names
    stale = re.compile(r"<fullname>-config(?![-\w])|<release>-config-extra")
    found = [
        f"{_rel(doc)}: {m.group(0)}"
        for doc in DOCS
        for m in stale.finditer(doc.read_text(encoding="utf-8"))
    ]
    assert found == [], "write `<fullname>-config-extra`"


def _known_gaps() -> str:
    text = (CLUSTER.path / "README.md.gotmpl").read_text(encoding="utf-8")
    return text.split("## Known gaps", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize(
    ("words", "values", "suffix"),
    [
        pytest.param(
            ("dcgm",),
            {
                "vendor": {"nvidia": {"dcgm": {"enabled": True}}},
                "nodesets": {"gpu": {"gpu": {"count": 8}}},
            },
            "-prolog-dcgm",
            id="dcgm",
        ),
        pytest.param(
            ("A3", "a3mega"),
            {
                "nodesets": {"a3-mega": {}},
                "vendor": {
                    "google": {
                        "a3mega": [
                            {
                                "targetNodeSet": "a3-mega",
                                "nodePool": "pool",
                                "networks": ["default", *(f"vpc{i}" for i in range(1, 9))],
                            }
                        ]
                    }
                },
            },
            "-config-a3mega",
            id="a3mega",
        ),
    ],
)
def test_known_gaps_name_no_feature_the_chart_renders(
    words: tuple[str, ...], values: dict[str, Any], suffix: str
) -> None:
    """A feature the chart renders (its ConfigMap is there) is not listed under "Known gaps"."""
    result = helm.template(CLUSTER.path, values)
    assert result.ok, result.describe()
    assert any(
        d["metadata"]["name"].endswith(suffix) for d in result.docs if d["kind"] == "ConfigMap"
    )
    gaps = _known_gaps()
    assert not [w for w in words if w in gaps], (
        f"README Known gaps lists {words}: the chart renders it"
    )


# --- NOTES.txt ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "srun"),
    [
        pytest.param({}, None, id="no-nodeset"),
        pytest.param({"nodesets": {"slinky": {"enabled": True}}}, None, id="no-partition"),
        pytest.param(
            {"nodesets": {"slinky": {"enabled": True}}, "partitions": {"all": {"enabled": True}}},
            "srun -N 1 hostname",
            id="default-partition",
        ),
        pytest.param(
            {"nodesets": {"slinky": {"partition": {"enabled": True}}}},
            "srun -p slinky -N 1 hostname",
            id="partition-not-default",
        ),
    ],
)
def test_notes_suggest_srun_only_where_it_runs(values: dict[str, Any], srun: str | None) -> None:
    """NOTES suggests ``srun`` only when a NodeSet is in a partition, with ``-p`` unless a
    partition is ``Default=YES`` (Slurm refuses a job without one otherwise)."""
    result = helm.dry_run_install(CLUSTER.path, values)
    assert result.ok, result.describe()
    lines = [line.strip() for line in result.notes.splitlines() if "srun" in line]
    if srun is None:
        assert lines == [], result.notes
    else:
        assert [line for line in lines if line.startswith(srun)], result.notes


# --- Kubernetes versions -----------------------------------------------------------------------


def test_conformance_docs_state_the_pinned_kubernetes_versions() -> None:
    """README's conformance phases name the static checks' default Kubernetes (the newest schemas
    the harness has) and the live control plane's (its pinned build), as every kube-apiserver
    version README and docs/ state does; the worked example prints the static one."""
    newest = kubeschema.newest_version()
    live = controlplane.K8S_VERSION
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Conformance of your own values", 1)[1].split("\n## ", 1)[0]
    static = section.split("- **static**", 1)[1].split("\n- **", 1)[0]
    live_text = section.split("- **live**", 1)[1].split("\n- **", 1)[0]
    assert f"default {newest}" in static, f"README: the static phase's default is {newest}"
    assert live in live_text, f"README: the live control plane is {live}"
    for doc in [ROOT / "README.md", ROOT / "docs" / "testing.md"]:
        text = doc.read_text(encoding="utf-8")
        stated = set(re.findall(r"kube-apiserver[^.]*?(v\d+\.\d+\.\d+)", text))
        assert stated == {live}, f"{_rel(doc)} names kube-apiserver {stated}; the build is {live}"
    example = (ROOT / "examples/conformance/README.md").read_text(encoding="utf-8")
    printed = set(re.findall(r"valid for Kubernetes (\d+\.\d+\.\d+)", example))
    assert printed <= {newest}, f"examples/conformance/README.md prints {printed}, not {newest}"
