"""Every chart follows the one skeleton described in CONTRIBUTING.md."""

from __future__ import annotations

import re

import pytest

from slinky_harness.helm import charts

CHARTS = charts.discover_charts()
REQUIRED_FILES = (
    "Chart.yaml",
    "values.yaml",
    "values.schema.json",
    "README.md.gotmpl",
    "README.md",
    "CHANGELOG.md",
    ".helmignore",
    "templates/_helpers.tpl",
    "templates/_common.tpl",
    "templates/validate.yaml",
    "templates/NOTES.txt",
)
STANDARD_HELPERS = (
    "name",
    "fullname",
    "chart",
    "namespace",
    "labels",
    "selectorLabels",
    "image",
    "imagePullSecrets",
)
ARTIFACTHUB_ANNOTATIONS = (
    "artifacthub.io/license",
    "artifacthub.io/links",
    "artifacthub.io/images",
    "artifacthub.io/changes",
)


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_files_exist(chart: charts.Chart) -> None:
    """The skeleton files exist, with at least one ci scenario and one helm test."""
    missing = [name for name in REQUIRED_FILES if not (chart.path / name).is_file()]
    assert not missing, f"{chart.name} lacks {missing}"
    assert chart.ci_files, f"{chart.name} has no ci/*-values.yaml scenario"
    assert list((chart.path / "templates" / "tests").glob("*.yaml")), (
        f"{chart.name} has no helm test"
    )


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_chart_yaml_is_complete(chart: charts.Chart) -> None:
    """apiVersion v2, semver version, appVersion, kubeVersion >= 1.29, maintainers, Artifact Hub annotations."""
    meta = chart.meta
    assert meta.get("apiVersion") == "v2"
    assert meta.get("name") == chart.path.name, "the folder is named after the chart"
    assert re.fullmatch(r"\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?", str(meta.get("version", "")))
    assert meta.get("appVersion")
    major, minor, _ = (int(x) for x in chart.min_kube_version.split("."))
    assert (major, minor) >= (1, 29), "the oldest supported Kubernetes is 1.29"
    assert meta.get("maintainers"), "maintainers are required"
    missing = [a for a in ARTIFACTHUB_ANNOTATIONS if a not in (meta.get("annotations") or {})]
    assert not missing, f"missing Artifact Hub annotations {missing}"


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_helpers_are_prefixed_and_complete(chart: charts.Chart) -> None:
    """Every define is prefixed with the chart name; the standard helper set exists."""
    defines: list[str] = []
    for path in (chart.path / "templates").rglob("*"):
        if path.is_file():
            defines += re.findall(r'{{-?\s*define\s+"([^"]+)"', path.read_text())
    unprefixed = [d for d in defines if not d.startswith(f"{chart.name}.")]
    assert not unprefixed, f"defines must start with {chart.name}.: {unprefixed}"
    missing = [h for h in STANDARD_HELPERS if f"{chart.name}.{h}" not in defines]
    assert not missing, f"standard helpers missing: {missing}"


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_helmignore_keeps_packages_clean(chart: charts.Chart) -> None:
    """Packages leave out ci scenarios and the README template, and keep README.md and CHANGELOG.md."""
    lines = (chart.path / ".helmignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    for wanted in ("ci/", "*.gotmpl"):
        assert wanted in patterns or f"/{wanted}" in patterns, f".helmignore must exclude {wanted}"
    # CHANGELOG.md and README.md ship in the package on purpose (helm pull users read them).
    for kept in ("CHANGELOG.md", "README.md", "*.md"):
        assert kept not in patterns and f"/{kept}" not in patterns, (
            f".helmignore must not exclude {kept}: it is packaged deliberately"
        )


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_templates_are_grouped_by_component(chart: charts.Chart) -> None:
    """Only helpers (the chart's own and the generated shared ones), NOTES and the validation
    template sit at the top of templates/."""
    top = sorted(p.name for p in (chart.path / "templates").iterdir() if p.is_file())
    assert top == sorted(["NOTES.txt", "_common.tpl", "_helpers.tpl", "validate.yaml"]), top


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_every_value_is_documented(chart: charts.Chart) -> None:
    """Every key in values.yaml carries a helm-docs '# --' comment (directly or on its parent)."""
    lines = (chart.path / "values.yaml").read_text().splitlines()
    undocumented = []
    documented_indents: list[int] = []
    for index, line in enumerate(lines):
        match = re.match(r"^( *)([A-Za-z0-9_.-]+):", line)
        if not match:
            continue
        indent = len(match[1])
        documented_indents = [i for i in documented_indents if i < indent]
        above = index - 1
        while (
            above >= 0
            and lines[above].lstrip().startswith("#")
            and not lines[above].lstrip().startswith("# --")
        ):
            above -= 1
        has_doc = above >= 0 and lines[above].lstrip().startswith("# --")
        if has_doc:
            documented_indents.append(indent)
        elif not documented_indents:
            undocumented.append(f"values.yaml:{index + 1}: {match[2]}")
    assert not undocumented, undocumented
