"""Hostile input to the conformance command (issue 29, section 3): each input it cannot use is
refused before anything runs, on one line naming the file or flag, exit status 2, with no
traceback and nothing written (no JUnit file, no work folder); a report written onto a symlink
goes through it to the link's target."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from junitparser import JUnitXml

from slinky_conformance import cli
from slinky_conformance.target import load_values

if TYPE_CHECKING:
    from collections.abc import Callable


def _refused(
    capsys: pytest.CaptureFixture[str], argv: list[str], *, names: str, junit: Path | None = None
) -> str:
    """Run the command; assert it refused on one line naming ``names`` and wrote no report."""
    code = cli.main(argv)
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert code == 2, captured
    assert len(lines) == 1, lines
    assert lines[0].startswith("slinky-conformance: error: "), lines
    assert names in lines[0], lines
    assert "Traceback" not in captured.err and not captured.out
    if junit is not None:
        assert not os.path.lexists(junit) or junit.is_dir(), "a report was written"
    return lines[0]


def _values(tmp_path: Path, data: bytes | str) -> Path:
    path = tmp_path / "values.yaml"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"nodesets:\n  a: \xff\xfe\n", "not UTF-8 text (byte 0xff at offset 15)"),
        (bytes(range(256)) * 8, "not UTF-8 text"),
        (b"clusterName: a\x00b\n", "not valid YAML (character '\\x00' at offset 14"),
        ("nodesets:\n  1: {}\n", "key 1 under nodesets is a int, not a string"),
        ("true: x\n", "key True is a bool, not a string"),
        ("? [a, b]\n: c\n", "not valid YAML"),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nesting depth"),
        ("a: " + "{b: " * 5000 + "1" + "}" * 5000 + "\n", "nesting depth"),
        ("a: " + "{b: " * 200 + "1" + "}" * 200 + "\n", "nested deeper than 100 levels (at a.b.b"),
        ("a:\n" + "".join(" " * i + "- \n" for i in range(1, 300)), "nested deeper than 100"),
        ("- a\n- b\n", "a values file is a mapping, not a list"),
    ],
    ids=["not-utf8", "binary", "nul", "int-key", "bool-key", "list-key", "deep-list", "deep-map",
         "200-deep-map", "300-deep-block", "list"],
)  # fmt: skip
def test_a_values_file_that_cannot_be_values_is_refused_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes | str, says: str
) -> None:
    values = _values(tmp_path, data)
    junit = tmp_path / "report.xml"
    argv = ["-f", str(values), "--chart", "slurm-cluster", "--junit", str(junit)]
    line = _refused(capsys, argv, names=str(values), junit=junit)
    assert says in line


def test_a_huge_values_file_is_refused_by_its_size_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 50 MB file is refused by the size bound: the message names the bound, not a YAML error
    deep inside it (the file is sparse zeros, which no YAML parser would accept either)."""
    values = tmp_path / "values.yaml"
    with values.open("wb") as fh:
        fh.truncate(50 * 1000 * 1000)
    line = _refused(capsys, ["-f", str(values), "--chart", "slurm-cluster"], names=str(values))
    assert "larger than 8 MiB" in line


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("kind: List\nitems: 5\n", "document 1 is a List whose items is a int"),
        ("kind: List\nitems:\n  - 5\n", "document 1 is not a Kubernetes object"),
        ("kind: Secret\nmetadata: {name: [a]}\n", "document 1 is not a Kubernetes object"),
        ("---\nkind: Secret\nmetadata: {name: a}\n---\n- 1\n", "document 2 is not a Kubernetes"),
        ("kind: Secret\nmetadata:\n  name: a\n  7: b\n", "key 7 under metadata is a int"),
    ],
)
def test_existing_objects_that_are_not_objects_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    existing = tmp_path / "existing.yaml"
    existing.write_text(text)
    argv = ["--chart", "slurm-cluster", "--existing", str(existing)]
    assert says in _refused(capsys, argv, names=str(existing))


def _a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("x")
    return path


@pytest.mark.parametrize(
    "case",
    [
        ("--out", _a_file, "is a file, not a folder"),
        ("--out", lambda t: _a_file(t) / "work", "is not a folder"),
        ("--out", lambda _: Path("/proc/slinky-conformance-work"), "cannot"),
        ("--junit", lambda t: t, "is a folder"),
        ("--junit", lambda t: _a_file(t) / "report.xml", "is not a folder"),
        ("--junit", lambda t: _a_file(t) / "deeper" / "report.xml", "is not a folder"),
        ("--junit", lambda _: Path("/proc/slinky-conformance.xml"), "cannot write in /proc"),
    ],
    ids=["out-file", "out-under-file", "out-proc", "junit-folder", "junit-under-file",
         "junit-deep-under-file", "junit-proc"],
)  # fmt: skip
def test_an_output_path_that_cannot_be_written_is_refused_before_the_run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    case: tuple[str, Callable[[Path], Path], str],
) -> None:
    """Refused before any step: the steps are replaced by one that fails the test if run."""
    flag, where, says = case

    def never(_: object) -> object:
        raise AssertionError("a step ran before the output path was checked")

    target = where(tmp_path)
    monkeypatch.setattr(cli, "run_steps", never)
    line = _refused(capsys, ["--chart", "slurm-cluster", flag, str(target)], names=str(target))
    assert says in line


def test_a_namespace_kubernetes_refuses_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for namespace in ("Slurm", "slurm_ns", "-slurm", "s" * 64):
        line = _refused(capsys, ["--chart", "slurm-cluster", f"--namespace={namespace}"],
                        names=namespace)  # fmt: skip
        assert "not a DNS-1123 label" in line


def test_the_junit_report_is_written_through_a_symlink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The link stays a link and its target gets the report (the slurm phase alone runs no
    step: its steps need the live phase's, so the run is quick and does not pass)."""
    real = tmp_path / "reports" / "conformance.xml"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "report.xml"
    link.symlink_to(real)
    code = cli.main(["--chart", "slurm-cluster", "--phases", "slurm", "--junit", str(link)])
    capsys.readouterr()
    assert code == 1
    assert link.is_symlink() and link.resolve() == real.resolve()
    xml = JUnitXml.fromfile(str(real))
    assert xml.tests >= 3 and xml.failures == 0


def test_a_date_is_a_string_as_helm_reads_it(tmp_path: Path) -> None:
    """Helm's YAML library keeps a date-like plain scalar a string; so does the values loader
    (PyYAML's safe loader makes it a datetime.date)."""
    values = _values(tmp_path, "clusterName: 2024-01-01\nstamp: 2001-12-14t21:59:43.10-05:00\n")
    assert load_values(values) == {
        "clusterName": "2024-01-01",
        "stamp": "2001-12-14t21:59:43.10-05:00",
    }


@pytest.mark.parametrize(
    ("flag", "data", "says"),
    [
        ("--nodes", b"\xff\xfe\x00binary", "not UTF-8 text"),
        ("--nodes", b"- 1\n- 2\n", "--nodes"),
        ("--nodes", b'{"kind": "List", "items": 5}', "--nodes"),
        ("--fabric", b"\xff\xfe\x00binary", "not UTF-8 text"),
        ("--fabric", b"fabric: [\n", "--fabric"),
    ],
    ids=["nodes-binary", "nodes-list", "nodes-items-5", "fabric-binary", "fabric-yaml"],
)
def test_a_fleet_file_that_cannot_be_read_is_refused_before_the_run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    data: bytes,
    says: str,
) -> None:
    path = tmp_path / "fleet.json"
    path.write_bytes(data)
    line = _refused(capsys, ["--chart", "slurm-cluster", flag, str(path)], names=str(path))
    assert says in line
