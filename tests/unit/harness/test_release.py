"""Release plumbing: changelog parsing, refusal without an entry, packaging with the real helm."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from typing import TYPE_CHECKING, Any

import pytest

from slinky_harness.apps import release
from slinky_harness.build import toolchain
from slinky_harness.helm import charts

if TYPE_CHECKING:
    from pathlib import Path

GOOD = """# Changelog

## [Unreleased]

### Fixed

- Something not released yet.

## [0.2.0] - 2026-12-01

### Added

- A feature
  spread over two lines.

### Fixed

- A bug.

## [0.1.0] - 2026-11-30

### Added

- First release.
"""


def _chart(root: Path, name: str = "demo", version: str = "0.2.0", changelog: str = GOOD) -> Path:
    path = root / name
    (path / "templates").mkdir(parents=True)
    (path / "ci").mkdir()
    (path / "Chart.yaml").write_text(
        f"apiVersion: v2\nname: {name}\nversion: {version}\nappVersion: '1.0'\n"
    )
    (path / "values.yaml").write_text("replicas: 1\n")
    (path / "values.schema.json").write_text('{"type": "object"}\n')
    (path / "README.md").write_text(f"# {name}\n")
    (path / "README.md.gotmpl").write_text('{{ template "chart.header" . }}\n')
    (path / "ci" / "default-values.yaml").write_text("replicas: 2\n")
    (path / ".helmignore").write_text("/ci/\n*.gotmpl\n")
    (path / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"
    )
    if changelog:
        (path / "CHANGELOG.md").write_text(changelog)
    return path


def test_parse_reads_versions_dates_sections_and_continuations() -> None:
    entries = release.parse_changelog(GOOD)
    assert [(e.version, e.date) for e in entries] == [
        ("Unreleased", None),
        ("0.2.0", "2026-12-01"),
        ("0.1.0", "2026-11-30"),
    ]
    assert entries[1].changes == {
        "Added": ["A feature spread over two lines."],
        "Fixed": ["A bug."],
    }
    assert entries[1].line == 9


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("## 0.1.0\n", "version heading must read", id="no-brackets"),
        pytest.param("## [0.1.0]\n", "needs a date", id="no-date"),
        pytest.param(
            "## [0.1.0] - 2026-11-30\n### Improved\n", "unknown section", id="bad-section"
        ),
        pytest.param(
            "## [0.1.0] - 2026-11-30\n- loose\n", "not under a '### ' section", id="loose-bullet"
        ),
        pytest.param(
            "## [0.1.0] - 2026-11-30\n### Added\n- a\n## [0.1.0] - 2026-11-29\n",
            "listed twice",
            id="duplicate",
        ),
        pytest.param("### Added\n", "before any version heading", id="section-first"),
    ],
)
def test_parse_rejects_malformed_changelogs(text: str, message: str) -> None:
    with pytest.raises(release.ReleaseError, match=message) as info:
        release.parse_changelog(text, "x/CHANGELOG.md")
    assert str(info.value).startswith("x/CHANGELOG.md:")


def test_check_returns_the_entry_of_the_chart_version(tmp_path: Path) -> None:
    entry = release.check_changelog(release.load_chart(_chart(tmp_path)))
    assert (entry.version, entry.date) == ("0.2.0", "2026-12-01")


@pytest.mark.parametrize(
    ("version", "changelog", "message"),
    [
        pytest.param("0.3.0", GOOD, "has no '## \\[0.3.0\\]", id="version-without-entry"),
        pytest.param("0.1.1", GOOD, "has no '## \\[0.1.1\\]", id="patch-without-entry"),
        pytest.param("0.1.0", GOOD, "newer than Chart.yaml's version 0.1.0", id="changelog-ahead"),
        pytest.param(
            "0.2.0", "## [0.2.0] - 2026-12-01\n### Added\n", "lists no changes", id="empty-entry"
        ),
        pytest.param(
            "0.2.0",
            "## [0.1.0] - 2026-11-30\n### Added\n- a\n## [0.2.0] - 2026-12-01\n### Added\n- b\n",
            "newest first",
            id="wrong-order",
        ),
        pytest.param("0.2.0", "", "is missing", id="no-changelog"),
        pytest.param(
            "0.2.0",
            "## [Unreleased]\n### Added\n- b\n",
            "has no '## \\[0.2.0\\]",
            id="only-unreleased",
        ),
    ],
)
def test_check_refuses(tmp_path: Path, version: str, changelog: str, message: str) -> None:
    chart = release.load_chart(_chart(tmp_path, version=version, changelog=changelog))
    with pytest.raises(release.ReleaseError, match=message):
        release.check_changelog(chart)


def test_package_builds_verified_archives_and_checksums(tmp_path: Path) -> None:
    charts = [release.load_chart(_chart(tmp_path / "src", name=n)) for n in ("alpha", "beta")]
    dist = tmp_path / "dist"
    archives = release.package(charts, dist, toolchain.ensure("helm"))
    assert archives == [dist / "alpha-0.2.0.tgz", dist / "beta-0.2.0.tgz"]
    assert sorted(p.name for p in dist.iterdir()) == [
        "SHA256SUMS",
        "alpha-0.2.0.tgz",
        "beta-0.2.0.tgz",
    ]
    with tarfile.open(archives[0]) as tar:
        names = set(tar.getnames())
    assert "alpha/CHANGELOG.md" in names
    assert not any(n.startswith("alpha/ci") or n.endswith(".gotmpl") for n in names)
    sums = (dist / "SHA256SUMS").read_text().splitlines()
    digest = hashlib.sha256(archives[1].read_bytes()).hexdigest()
    assert sums[1] == f"{digest}  beta-0.2.0.tgz"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".dist-")], "staging left behind"
    assert dist.stat().st_mode & 0o777 == 0o755


def test_package_refuses_before_touching_dist(tmp_path: Path) -> None:
    """A chart without an entry stops the release; the previous dist/ stays as it was."""
    good = release.load_chart(_chart(tmp_path / "src", name="alpha"))
    bad = release.load_chart(_chart(tmp_path / "src", name="beta", version="0.3.0"))
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / "old-0.1.0.tgz").write_bytes(b"previous release")
    with pytest.raises(release.ReleaseError, match=r"beta: Chart\.yaml version 0\.3\.0"):
        release.package([good, bad], dist, toolchain.ensure("helm"))
    assert [p.name for p in dist.iterdir()] == ["old-0.1.0.tgz"]


def test_package_failure_midway_leaves_no_half_written_dist(tmp_path: Path) -> None:
    """helm fails on the second chart after packaging the first: dist/ is untouched, no staging left."""
    good = release.load_chart(_chart(tmp_path / "src", name="alpha"))
    broken_path = _chart(tmp_path / "src", name="beta")
    (broken_path / "values.yaml").write_text("replicas: [1\n")  # helm cannot load the chart
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / "old-0.1.0.tgz").write_bytes(b"previous release")
    with pytest.raises(release.ReleaseError, match="beta: helm package failed"):
        release.package([good, release.load_chart(broken_path)], dist, toolchain.ensure("helm"))
    assert [p.name for p in dist.iterdir()] == ["old-0.1.0.tgz"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist", "src"]


def test_package_refuses_an_archive_with_suite_only_files(tmp_path: Path) -> None:
    path = _chart(tmp_path / "src")
    (path / ".helmignore").write_text("*.gotmpl\n")  # ci/ no longer left out
    with pytest.raises(release.ReleaseError, match="suite-only files"):
        release.package([release.load_chart(path)], tmp_path / "dist", toolchain.ensure("helm"))
    assert not (tmp_path / "dist").exists()


def test_main_check_and_package_the_repository_charts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real charts pass the check and package; every archive carries its CHANGELOG.md."""
    assert release.main(["check"]) == 0
    dist = tmp_path / "dist"
    assert release.main(["package", "--dist", str(dist)]) == 0
    out = capsys.readouterr().out
    for chart in release.discover():
        archive = dist / chart.archive
        assert str(archive) in out
        with tarfile.open(archive) as tar:
            assert f"{chart.name}/CHANGELOG.md" in tar.getnames()


def test_main_prints_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "charts"
    shutil.copytree(release.CHARTS_DIR / "gpu-topology-labeler", src / "gpu-topology-labeler")
    (src / "gpu-topology-labeler" / "CHANGELOG.md").write_text("# Changelog\n")
    monkeypatch.setattr(release, "CHARTS_DIR", src)
    assert release.main(["package", "--dist", str(tmp_path / "dist")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "error: gpu-topology-labeler: Chart.yaml version"
    )
    assert not (tmp_path / "dist").exists()
    assert release.main(["check", "--chart", "nope"]) == 1
    assert "unknown chart(s) nope" in capsys.readouterr().err


PROFILES: dict[str, dict[str, Any]] = {
    "kind": {"global": {}, "demo": {"replicas": 1}, "other": {"enabled": False}},
    "gpu": {"demo": {"enabled": True, "replicas": 2}},
    "bridge-only": {"other": {"replicas": 1}},
    "off": {"demo": {"enabled": False}},
}


def test_profile_links_are_read_from_the_readme() -> None:
    text = "see [`kind`](../../values/kind.yaml) and [gpu](../../values/gpu.yaml); values/x.yaml"
    assert release.profile_links(text) == {"kind", "gpu"}


def test_readme_must_link_exactly_the_profiles_that_configure_the_chart(tmp_path: Path) -> None:
    chart = release.load_chart(_chart(tmp_path))
    readme = chart.path / "README.md"
    readme.write_text("[`kind`](../../values/kind.yaml)\n[`gpu`](../../values/gpu.yaml)\n")
    release.check_profile_links(chart, PROFILES)  # an enabled: false block does not apply
    readme.write_text("[`kind`](../../values/kind.yaml)\n")
    with pytest.raises(release.ReleaseError, match="does not link gpu"):
        release.check_profile_links(chart, PROFILES)
    readme.write_text(
        readme.read_text() + "[gpu](../../values/gpu.yaml) [off](../../values/off.yaml)\n"
    )
    with pytest.raises(release.ReleaseError, match=r"links off, which configure\(s\) no block"):
        release.check_profile_links(chart, PROFILES)


def test_repository_chart_readmes_link_their_profiles() -> None:
    profiles = charts.profiles()
    for chart in release.discover():
        release.check_profile_links(chart, profiles)
    linked = release.profile_links((release.CHARTS_DIR / "slurm-cluster" / "README.md").read_text())
    assert "kind" in linked
