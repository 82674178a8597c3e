"""apps/parity: the table, the verbose reasons, the JSON and the floor gate, over a
measurement stood in for (the real one renders charts: tests/render/test_parity.py)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from slinky_harness import parity
from slinky_harness.apps import parity as parity_app

if TYPE_CHECKING:
    from pathlib import Path


def _report(chart: str) -> parity.ChartReport:
    report = parity.ChartReport(chart, parity.CHARTS[chart].ours)
    report.outcomes = [
        parity.Outcome("defaults", "different", differences=["Controller/c spec.x: upstream 1"]),
        parity.Outcome("t.yaml#0 a", "equal", intentional=["Token/*"]),
        parity.Outcome("t.yaml#1 b", "not accepted", ["schema: at '': 'vendor' not allowed"]),
        parity.Outcome("t.yaml#2 c", "not accepted", ["schema: at '': 'vendor' not allowed"]),
        parity.Outcome("t.yaml#3 d", "upstream refuses", ["image tag is required"]),
    ]
    return report


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(parity, "upstream_chart", lambda chart: tmp_path / f"{chart}.tgz")
    monkeypatch.setattr(parity, "all_cases", lambda chart: [])
    monkeypatch.setattr(
        parity, "measure", lambda chart, workers=None, intentional=None: _report(chart)
    )


@pytest.mark.usefixtures("measured")
def test_it_prints_the_counts_the_reasons_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    assert parity_app.main(["--chart", "slurm", "--verbose", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    row = next(line for line in printed.splitlines() if line.startswith("slurm -> slurm-cluster"))
    assert row.split()[3:] == ["5", "4", "2", "1", "1"]
    assert "     2  schema: at '': 'vendor' not allowed" in printed
    assert "slurm t.yaml#1 b: NOT ACCEPTED\n    schema: at '': 'vendor' not allowed" in printed
    assert "slurm defaults: DIFFERENT\n    Controller/c spec.x: upstream 1" in printed
    assert "t.yaml#0 a" not in printed
    assert "slurm: 1 of 1 equal cases are equal less these intentional" in printed
    assert "\n     1  Token/*\n" in printed
    document = json.loads(out.read_text())
    assert [c["chart"] for c in document["charts"]] == ["slurm"]
    assert document["charts"][0]["accepted"] == 2
    assert len(document["charts"][0]["outcomes"]) == 5


@pytest.mark.usefixtures("measured")
def test_below_the_floor_file_it_exits_1_and_says_what_fell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    floor = tmp_path / "floor.yaml"
    floor.write_text("slurm: {accepted: 2, equal: 1}\nslurm-bridge: {accepted: 3, equal: 0}\n")
    assert parity_app.main(["--min-accepted-file", str(floor)]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert errors == [f"error: below the floor of {floor}: slurm-bridge: accepted 2 < floor 3"]
    floor.write_text("slurm: {accepted: 2, equal: 1}\n")
    assert parity_app.main(["--min-accepted-file", str(floor)]) == 0


def test_a_harness_failure_is_printed_once_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(chart: str) -> Path:
        raise parity.UpstreamError(f"no {chart} here; set {parity.REFERENCE_ENV}")

    monkeypatch.setattr(parity, "upstream_chart", refuse)
    assert parity_app.main(["--chart", "slurm-bridge"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        captured.err.splitlines()[-1] == "error: no slurm-bridge here; set SLINKY_UPSTREAM_CHARTS"
    )
