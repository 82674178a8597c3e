"""The wheel ships the product package and nothing else.

The wheel is built from a copy of this checkout's files (tracked, and untracked ones git does not
ignore), with the setuptools backend of the test environment and no network: no build folder or
egg-info is left in the checkout, and a stale local build cannot hide a leak.
"""

from __future__ import annotations

import configparser
import email.parser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = "scripts/slinky_topology"
"""The product package's folder; the wheel holds it as ``slinky_topology/``."""

BUILD = "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
"""A PEP 517 ``build_wheel`` call (the project's own backend), run in the copy."""


def checkout_files() -> list[str]:
    """Paths (relative, POSIX) of the files a commit of this checkout would hold."""
    proc = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"git ls-files failed in {ROOT}: {proc.stderr.decode(errors='replace')}")
    return sorted(p for p in proc.stdout.decode().split("\0") if p and (ROOT / p).is_file())


def product_files(files: list[str]) -> set[str]:
    """What the wheel must hold of the product package: its modules, ``py.typed`` and the
    files under ``data/``, as paths inside the wheel. Documentation (README.md) is not shipped."""
    out: set[str] = set()
    for path in files:
        if not path.startswith(f"{PRODUCT}/"):
            continue
        inner = PurePosixPath(path).relative_to("scripts")
        if inner.suffix == ".py" or inner.name == "py.typed" or inner.parts[1] == "data":
            out.add(str(inner))
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel, built from a copy of the checkout (about 3 s)."""
    base = tmp_path_factory.mktemp("wheel")
    src, out = base / "src", base / "dist"
    out.mkdir()
    for path in checkout_files():
        target = src / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, target)
    proc = subprocess.run(
        [sys.executable, "-c", BUILD, str(out)],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"building the wheel failed:\n{proc.stdout}\n{proc.stderr}"
    (built,) = out.glob("*.whl")
    return zipfile.ZipFile(built)


def _dist_info(wheel: zipfile.ZipFile) -> str:
    (folder,) = {n.split("/", 1)[0] for n in wheel.namelist() if ".dist-info/" in n}
    return folder


def test_the_wheel_holds_exactly_the_product_package(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    info = _dist_info(wheel)
    package = {n for n in names if not n.startswith(f"{info}/")}
    expected = product_files(checkout_files())
    assert "slinky_topology/py.typed" in expected and "slinky_topology/cli.py" in expected
    assert sorted(package - expected) == [], "files the wheel must not ship"
    assert sorted(expected - package) == [], "product files missing from the wheel"
    roots = {n.split("/", 1)[0] for n in package}
    assert roots == {"slinky_topology"}, "no harness, CRD generator, tests or charts"
    assert sorted(n.removeprefix(f"{info}/") for n in names - package) == [
        "METADATA",
        "RECORD",
        "WHEEL",
        "entry_points.txt",
        "licenses/LICENSE",
        "top_level.txt",
    ]
    assert wheel.read(f"{info}/top_level.txt").decode().split() == ["slinky_topology"]


def test_the_kubernetes_and_prometheus_clients_are_in_the_labeler_extra_only(
    wheel: zipfile.ZipFile,
) -> None:
    metadata = email.parser.Parser().parsestr(wheel.read(f"{_dist_info(wheel)}/METADATA").decode())
    extras_of: dict[str, set[str]] = {}
    for line in metadata.get_all("Requires-Dist") or []:
        req = Requirement(line)
        extras = {
            extra
            for extra in metadata.get_all("Provides-Extra") or []
            if req.marker is not None and req.marker.evaluate({"extra": extra})
        }
        if req.marker is None or not extras:
            extras = {""}  # unconditional
        extras_of.setdefault(req.name, set()).update(extras)
    assert extras_of["kubernetes"] == {"labeler"}
    assert extras_of["prometheus-client"] == {"labeler"}
    unconditional = sorted(name for name, extras in extras_of.items() if "" in extras)
    assert unconditional == ["jsonschema", "pyyaml"], "the topology CLI needs only these"
    entry_points = configparser.ConfigParser()
    entry_points.read_string(wheel.read(f"{_dist_info(wheel)}/entry_points.txt").decode())
    assert dict(entry_points["console_scripts"]) == {"slinky-topology": "slinky_topology.cli:main"}
