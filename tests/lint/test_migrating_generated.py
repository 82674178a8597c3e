"""MIGRATING.md's "What differs and why, field by field" is what the parity package's
``differences.yaml`` says: regenerating it (``nox -s docs``) changes nothing."""

from __future__ import annotations

import pytest

from slinky_harness.parity import Intentional, load_intentional
from slinky_harness.parity.migrating import BEGIN, END, MIGRATING, MigratingError, rewrite, section


def test_migrating_differences_are_generated_from_the_reasons() -> None:
    """The committed section equals the one made from the current entries, one table row each."""
    text = MIGRATING.read_text(encoding="utf-8")
    entries = load_intentional()
    assert rewrite(text, section(entries)) == text, (
        "MIGRATING.md's field-by-field differences are stale: run "
        "`python -m slinky_harness.parity.migrating` (or `nox -s docs`) and commit the result"
    )
    generated = text.partition(BEGIN)[2].partition(END)[0]
    rows = [line for line in generated.splitlines() if line.startswith("| ")]
    assert entries
    headers = 2 * len({chart for entry in entries for chart in entry.charts})
    assert len(rows) == len(entries) + headers, rows


def test_a_changed_reason_makes_the_committed_section_stale() -> None:
    """The check can fail: one reason edited gives a different section."""
    entries = list(load_intentional())
    first = entries[0]
    entries[0] = Intentional(first.kind, first.path, "a new reason", first.charts, first.name)
    text = MIGRATING.read_text(encoding="utf-8")
    assert rewrite(text, section(entries)) != text


def test_a_chart_without_differences_says_so_and_cells_stay_cells() -> None:
    """A chart with no entry gets a line, not an empty table; a ``|`` in a reason stays inside
    its cell and a ``<placeholder>`` outside code stays visible."""
    entry = Intentional("Secret", "", "a | b, named <fullname>-x or `<kept>`", ("slurm",), "x")
    text = section([entry])
    assert "| `Secret` | `x` | the object (only one side renders it) | " in text
    assert "a \\| b, named &lt;fullname>-x or `<kept>` |" in text
    assert text.count("No field differs on purpose.") == 2


def test_missing_markers_are_an_error_that_names_them() -> None:
    with pytest.raises(MigratingError, match="parity-differences"):
        rewrite("# Moving\n\nno markers here\n", "x\n")
