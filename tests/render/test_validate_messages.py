"""Every message a chart can fail with, one table row each, asserted through the real Helm.

A chart refuses values in three ways: a message appended to ``$errors`` in
``templates/validate.yaml`` (printed by its one ``fail``, as a list under "<chart>: invalid values
(N):"), a direct ``fail`` or ``required`` in another template, and ``values.schema.json``, which
Helm checks before any template runs. Each row of :data:`ROWS` names a chart, the smallest values
overlay (and, for a check of the chart's own files, the files added to a copy of the chart) that
trips exactly one message, and that message as the user reads it, written out in full with the
value path it names. The test renders the row with the pinned Helm and requires a non-zero exit
with exactly that text.

A check that ``values.schema.json`` makes unreachable (the schema refuses the input first) keeps
its row with ``schema=``: one test proves the schema's error for the row's values, another renders
them with ``--skip-schema-validation`` (which a user can pass) and proves the template's message.

The completeness check reads every template of every chart, takes each ``fail``, ``required``
and ``append $errors`` message format, and requires a row whose message it produces: a new
message without a row fails the tier.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.chart_messages import CHARTS, NEWEST, ROWS, Message, Row, template_messages

from slinky_harness.helm import client as helm

# -- rendering -------------------------------------------------------------------------------------


def _aggregate(chart: str, messages: list[str]) -> str:
    """The text of validate.yaml's one ``fail`` for ``messages``."""
    return f"\n\n{chart}: invalid values ({len(messages)}):\n  - " + "\n  - ".join(messages) + "\n"


def _messages(chart: str, failure: helm.TemplateFailure) -> list[str]:
    """The messages of a failure: validate.yaml's list, or the one direct message; a list must
    be exactly validate.yaml's (its chart, its count, its layout)."""
    if failure.listed:
        expected = _aggregate(chart, failure.messages)
        assert failure.text == expected, f"not validate.yaml's list: {failure.text!r}"
    return failure.messages


def _render(row: Row, tmp: Path, *extra: str) -> helm.HelmResult:
    chart = CHARTS[row.chart].path
    if row.files:
        chart = Path(shutil.copytree(chart, tmp / row.chart))
        for rel, text in row.files.items():
            (chart / rel).write_text(text, encoding="utf-8")
    return helm.template(
        chart, row.values, release=row.release, kube_version=NEWEST, extra_args=extra
    )


def _template_failure(row: Row, result: helm.HelmResult) -> list[str]:
    """The messages of the template failure in ``result``."""
    assert not result.ok, f"{row.chart} accepted {row.values!r}"
    failure = result.template_failure()
    assert failure is not None, f"not a template failure:\n{result.describe()}"
    assert failure.where.startswith(f"{row.chart}/templates/"), failure.where
    return _messages(row.chart, failure)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.chart}:{r.id}")
def test_message(row: Row, tmp_path: Path) -> None:
    """Helm refuses the row's values with exactly the row's message and no other (a schema row
    renders with ``--skip-schema-validation``, which a user can pass too)."""
    skip = ("--skip-schema-validation",) if row.schema else ()
    assert _template_failure(row, _render(row, tmp_path, *skip)) == [row.message]


SCHEMA_ROWS = [row for row in ROWS if row.schema]


@pytest.mark.parametrize("row", SCHEMA_ROWS, ids=lambda r: f"{r.chart}:{r.id}")
def test_schema_refuses_first(row: Row, tmp_path: Path) -> None:
    """values.schema.json refuses a schema row's values before any template runs, with the row's
    schema error and only errors on the same value path."""
    assert row.schema is not None and row.why, (
        f"row {row.id}: say why the template's check is unreachable"
    )
    result = _render(row, tmp_path)
    assert not result.ok, f"{row.chart} accepted {row.values!r}"
    assert result.schema_refused, result.describe()
    errors = [(e.pointer, e.text) for e in result.schema_errors(groups=True)]
    pointer, text = row.schema
    assert (pointer, text) in errors, result.describe()
    elsewhere = [w for w, _ in errors if not (w.startswith(pointer) or pointer.startswith(w))]
    assert not elsewhere, f"schema errors on other values {elsewhere}:\n{result.describe()}"


# -- completeness ----------------------------------------------------------------------------------


def _unmatched(messages: list[Message], rows: list[Row]) -> list[Message]:
    """The messages left without a row of their own when each row may stand for one message only
    (a row can fit two formats, ``%s sets %s`` and ``%s sets %q``, but proves one of them)."""
    fits = [
        [j for j, row in enumerate(rows) if m.pattern().fullmatch(row.message)] for m in messages
    ]
    owner: dict[int, int] = {}

    def claim(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j not in seen:
                seen.add(j)
                if j not in owner or claim(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return [m for i, m in enumerate(messages) if not claim(i, set())]


@pytest.mark.parametrize("chart", sorted(CHARTS))
def test_every_template_message_has_a_row(chart: str) -> None:
    """Each message format in the chart's templates has a row of its own whose message it prints
    (validate.yaml's one ``fail`` is proven by every row of its list), and each row's message comes
    from a format of its chart (no stale row)."""
    messages, unread = template_messages(CHARTS[chart])
    assert not unread, (
        f"a fail/required/append $errors whose message is not a literal format: {unread}"
    )
    assert messages, f"no message found in {chart}'s templates: the parser is broken"
    rows = [row for row in ROWS if row.chart == chart]
    lists = [_aggregate(chart, [row.message]) for row in rows]
    aggregates = [m for m in messages if any(m.pattern().fullmatch(text) for text in lists)]
    assert len(aggregates) <= 1, f"more than one validate.yaml list in {chart}: {aggregates}"
    missing = _unmatched([m for m in messages if m not in aggregates], rows)
    assert not missing, "messages without a row in ROWS (add one):\n" + "\n".join(
        f"{m.where}: {m.format!r}" for m in missing
    )
    stale = [
        row.id for row in rows if not any(m.pattern().fullmatch(row.message) for m in messages)
    ]
    assert not stale, f"rows whose message no template of {chart} prints: {stale}"


def test_row_ids_are_unique() -> None:
    """Row ids name the test cases; two rows of one chart with one id would hide one."""
    ids = [f"{row.chart}:{row.id}" for row in ROWS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
