"""The benchmark's plumbing (table, JSON report, targets, options) on tiny sizes; no timing asserted."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from slinky_harness.apps import bench

if TYPE_CHECKING:
    from pathlib import Path


def test_main_tiny_sizes_prints_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "_run_child", bench.measure_once)  # in-process: fast
    out_json = tmp_path / "out" / "bench.json"
    rc = bench.main(
        ["--sizes", "36,72", "--repeat", "2", "--no-topograph", "--json", str(out_json)]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "gen+val s" in out
    assert "targets" in out
    assert "topograph: skipped (--no-topograph)" in out
    table_rows = [
        line.split() for line in out.splitlines() if line.strip().split(" ")[0] in {"36", "72"}
    ]
    assert [row[0] for row in table_rows[:2]] == ["36", "72"]

    report = json.loads(out_json.read_text())
    assert report["schema"] == "slinky-bench/1"
    assert report["sizes"] == [36, 72]
    assert report["repeat"] == 2
    assert report["topograph"] is None
    assert [row["nodes"] for row in report["ours"]] == [36, 72]
    for row in report["ours"]:
        assert len(row["seconds_runs"]) == 2
        assert row["seconds"] >= row["yaml_seconds"] >= 0
        assert row["cpu_seconds"] >= row["yaml_cpu_seconds"] >= 0
        assert row["peak_rss_mib"] > 0
        assert row["yaml_shape"] == "static"
        assert row["yaml_bytes"] > 0 and row["annotations_bytes"] > 0
    (g,) = report["growth"]
    assert (g["from"], g["to"], g["node_ratio"]) == (36, 72, 2.0)
    assert {t["result"] for t in report["targets"]} == {"n/a"}  # no 10k / 65,536 size run


def test_child_process_reports_all_fields() -> None:
    row = bench._run_child(18)  # a real fresh interpreter, as the benchmark runs it
    assert row["nodes"] == 18
    assert set(row) >= {"seconds", "cpu_seconds", "peak_rss_mib", "yaml_bytes", "annotations_bytes"}
    assert row["peak_rss_mib"] >= row["rss_before_work_mib"] > 0


def _ours(nodes: int, seconds: float, rss: float) -> dict[str, Any]:
    return {
        "nodes": nodes,
        "seconds": seconds,
        "cpu_seconds": seconds,
        "peak_rss_mib": rss,
        "rss_before_work_mib": rss / 2,
        "yaml_bytes": 2048,
        "yaml_shape": "static",
        "annotations_bytes": 4096,
    }


def test_targets_pass_miss_and_missing_size() -> None:
    results = bench.check_targets([_ours(10000, 1.5, 500.0), _ours(65536, 12.0, 900.0)])
    verdicts = {r["target"]: r["result"] for r in results}
    assert verdicts == {
        "10k nodes generate+validate < 2 s": "PASS",
        "10k nodes peak RSS < 300 MiB (f.5)": "MISS",
        "65,536 nodes generate+validate < 10 s": "MISS",
        "65,536 nodes peak RSS < 1 GiB": "PASS",
    }
    cpu = {r["target"]: r.get("cpu_result") for r in results}
    assert cpu["10k nodes generate+validate < 2 s"] == "PASS"
    assert cpu["65,536 nodes peak RSS < 1 GiB"] is None  # memory targets have no CPU verdict
    slow_wall = dict(_ours(10000, 5.0, 50.0), cpu_seconds=1.0)  # a busy machine: waited for a core
    (wall_miss,) = (
        r
        for r in bench.check_targets([slow_wall])
        if r["metric"] == "seconds" and r["nodes"] == 10000
    )
    assert (wall_miss["result"], wall_miss["cpu_result"]) == ("MISS", "PASS")
    assert {r["result"] for r in bench.check_targets([_ours(1000, 0.1, 10.0)])} == {"n/a"}


def test_growth_normalizes_by_node_ratio() -> None:
    (g,) = bench.growth([_ours(1000, 0.2, 20.0), _ours(10000, 4.0, 40.0)])
    assert g["node_ratio"] == 10.0
    assert g["time_ratio"] == pytest.approx(20.0)
    assert g["normalized"] == pytest.approx(2.0)
    assert g["cpu_normalized"] == pytest.approx(2.0)  # the fixture's CPU time equals its wall time
    assert g["rss_ratio"] == pytest.approx(2.0)


def test_render_table_with_topograph_rows_and_errors() -> None:
    report: dict[str, Any] = {
        "repeat": 3,
        "ours": [_ours(1000, 0.2, 20.0), _ours(10000, 2.0, 30.0)],
        "growth": bench.growth([_ours(1000, 0.2, 20.0), _ours(10000, 2.0, 30.0)]),
        "targets": bench.check_targets([_ours(1000, 0.2, 20.0), _ours(10000, 2.0, 30.0)]),
        "topograph": {
            "version": "v0.3.0",
            "status": "partial",
            "sizes": [
                {
                    "nodes": 1000,
                    "seconds": 0.1,
                    "wall_seconds": 0.12,
                    "cpu_seconds": 0.1,
                    "ratio_ours_over_topograph": 2.0,
                    "cpu_ratio_ours_over_topograph": 2.0,
                    "peak_rss_mib": 50.0,
                    "output_bytes": 1024,
                },
                {"nodes": 10000, "error": "no result after 600s"},
            ],
        },
    }
    table = bench.render_table(report)
    assert "NVIDIA topograph v0.3.0 (test provider + slurm engine): partial" in table
    assert "yaml/t" in table
    assert "error: no result after 600s" in table
    assert "MISS 10k nodes generate+validate < 2 s" in table  # 2.0 is not under 2
    topo_part = table.split("NVIDIA topograph", 1)[1]
    row_1000 = next(line for line in topo_part.splitlines() if line.split()[:1] == ["1000"])
    assert row_1000.split()[4] == "2.00"


def test_ratios_ours_over_topograph() -> None:
    mine = dict(_ours(1000, 0.4, 20.0), yaml_seconds=0.1, yaml_cpu_seconds=0.1)
    ratios = bench._ratios(mine, {"seconds": 0.2, "cpu_seconds": 0.05})
    assert ratios == pytest.approx(
        {
            "ratio_ours_over_topograph": 2.0,
            "yaml_ratio_ours_over_topograph": 0.5,
            "cpu_ratio_ours_over_topograph": 8.0,
            "yaml_cpu_ratio_ours_over_topograph": 2.0,
        }
    )
    assert bench._ratios(mine, {"seconds": 0.0, "cpu_seconds": float("nan")}) == {}


def test_topograph_unavailable_is_reported_not_raised() -> None:
    table = bench.render_table(
        {
            "repeat": 1,
            "ours": [],
            "growth": [],
            "targets": [],
            "topograph": {
                "version": "v0.3.0",
                "status": "unavailable",
                "reason": "no go",
                "sizes": [],
            },
        }
    )
    assert "unavailable" in table
    assert "reason: no go" in table


@pytest.mark.parametrize("argv", [["--sizes", "10,x"], ["--sizes", "0"], ["--repeat", "0"]])
def test_bad_options_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.main([*argv, "--no-topograph"])
    assert exc.value.code == 2


def test_topograph_output_summary_records_the_block_sizes_key() -> None:
    text = (
        "- topology: fabric\n  cluster_default: true\n  tree:\n    switches:\n"
        "    - {switch: s1, nodes: 'a,b'}\n"
        "- topology: nvl\n  cluster_default: false\n  block:\n    blockSizes: [10, 20]\n"
        "    blocks: [{block: block1, nodes: 'a,b'}]\n"
    )
    summary = bench._check_topograph_output(text, ["a", "b"])
    assert summary["parsed"] is True
    assert summary["topologies"] == [
        {"topology": "fabric", "switches": 1},
        {"topology": "nvl", "blocks": 1, "block_sizes_key": "blockSizes", "block_sizes": [10, 20]},
    ]
    assert bench._check_topograph_output("{}", [])["parsed"] is False


def test_speed_block_judges_item_7_sizes_at_or_under_one() -> None:
    ours = [
        {"nodes": 1000, "cpu_seconds": 0.5, "yaml_cpu_seconds": 0.4, "peak_rss_mib": 30.0},
        {"nodes": 10000, "cpu_seconds": 0.2, "yaml_cpu_seconds": 0.1, "peak_rss_mib": 35.0},
        {"nodes": 65536, "cpu_seconds": 1.5, "yaml_cpu_seconds": 0.9, "peak_rss_mib": 80.0},
    ]
    sizes = [
        {"nodes": 1000, "cpu_seconds": 0.1, "peak_rss_mib": 40.0},
        {"nodes": 10000, "cpu_seconds": 0.2, "peak_rss_mib": 70.0},
        {"nodes": 65536, "cpu_seconds": 1.2, "peak_rss_mib": 180.0},
    ]
    for mine, topo in zip(ours, sizes, strict=True):
        topo.update(bench._ratios(mine, topo))
    rows = bench.speed_vs_topograph({"ours": ours, "topograph": {"sizes": sizes}})
    by_size = {r["nodes"]: r for r in rows}
    assert by_size[1000]["result"] == "info"  # not an item-7 size, even at 5x
    assert by_size[10000]["cpu_ratio_all"] == pytest.approx(1.0)
    assert by_size[10000]["result"] == "PASS"  # exactly 1.0 is "at most"
    assert by_size[65536]["cpu_ratio_yaml"] == pytest.approx(0.75)
    assert by_size[65536]["result"] == "MISS"  # all outputs 1.25
    assert by_size[65536]["topograph_peak_rss_mib"] == 180.0
    text = bench.render_speed(rows)
    row = next(line for line in text.splitlines() if line.split()[:1] == ["65536"])
    assert row.split()[1:3] == ["1.25", "0.75"]
    assert row.split()[-1] == "MISS"
    assert bench.speed_vs_topograph({"ours": ours, "topograph": None}) == []
