"""Every chart's Chart.yaml version has a Keep a Changelog entry, and nothing newer is listed."""

from __future__ import annotations

import pytest
import yaml

from slinky_harness.apps import release
from slinky_harness.helm import charts

CHARTS = charts.discover_charts()


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_chart_version_has_a_changelog_entry(chart: charts.Chart) -> None:
    """The release check passes: a dated, non-empty entry for the version, newest first."""
    try:
        entry = release.check_changelog(release.load_chart(chart.path))
    except release.ReleaseError as exc:
        pytest.fail(str(exc))
    assert entry.version == chart.version


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_changelog_is_keep_a_changelog(chart: charts.Chart) -> None:
    """Title, an [Unreleased] block on top, released entries each with a date and known sections."""
    text = (chart.path / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog\n"), "the first line is '# Changelog'"
    entries = release.parse_changelog(text, str(chart.path / "CHANGELOG.md"))
    assert entries, "no '## [version]' entry"
    assert entries[0].version == "Unreleased", "keep an empty '## [Unreleased]' block on top"
    assert all(e.date for e in entries[1:])


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_artifacthub_changes_match_the_changelog_kinds(chart: charts.Chart) -> None:
    """Every kind in artifacthub.io/changes has a matching section in the version's entry."""
    changes = yaml.safe_load(chart.meta["annotations"]["artifacthub.io/changes"]) or []
    entry = release.check_changelog(release.load_chart(chart.path))
    sections = {name.lower() for name, items in entry.changes.items() if items}
    kinds = {str(change["kind"]) for change in changes}
    assert kinds <= sections, (
        f"artifacthub.io/changes lists {sorted(kinds - sections)} but the {chart.version} entry "
        f"of CHANGELOG.md has no such section (has {sorted(sections)})"
    )
