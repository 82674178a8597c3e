"""Package boundaries: what each package of scripts/ may import, and the topology CLI without the
``labeler`` extra.

The extra's absence is simulated in a child interpreter whose import system refuses
``kubernetes`` and ``prometheus_client`` (as an environment without them would).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.unit.labeler.labeler_support import gfd_fleet

ROOT = Path(__file__).resolve().parents[3]
SCRIPTS = ROOT / "scripts"
EXTRA = "pip install 'slinky-suite[labeler]'"

WITHOUT_EXTRA = """
import runpy, sys

class NoExtra:
    BLOCKED = {"kubernetes", "prometheus_client"}

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoExtra())
module, *sys.argv[1:] = sys.argv[1:]
sys.argv[0] = module
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
finally:
    tools = {"slinky_harness", "slinky_crdgen", "slinky_schemagen"}
    loaded = sorted({m.partition(".")[0] for m in sys.modules} & tools)
    print("loaded:", ",".join(loaded), file=sys.stderr)
"""
"""``python -c WITHOUT_EXTRA MODULE ARGS...``: ``python -m MODULE ARGS...`` without the extra."""


def imported_roots(package: str) -> dict[str, set[str]]:
    """Top-level names each module of ``scripts/<package>`` imports (lazily or not)."""
    out: dict[str, set[str]] = {}
    for path in sorted((SCRIPTS / package).rglob("*.py")):
        roots: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                roots.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots.add(node.module.partition(".")[0])
        out[str(path.relative_to(ROOT))] = roots
    return out


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        pytest.param("slinky_topology", {"slinky_harness", "slinky_crdgen", "tests"}, id="product"),
        pytest.param("slinky_crdgen", {"slinky_harness", "slinky_topology", "tests"}, id="crdgen"),
        pytest.param(
            "slinky_schemagen",
            {"slinky_harness", "slinky_topology", "slinky_crdgen", "tests"},
            id="schemagen",
        ),
    ],
)
def test_packages_import_only_what_they_may(package: str, forbidden: set[str]) -> None:
    found = {path: sorted(roots & forbidden) for path, roots in imported_roots(package).items()}
    assert len(found) > 5, f"scripts/{package} has its modules"
    assert {path: names for path, names in found.items() if names} == {}


def _run(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRA, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_topology_cli_works_without_the_labeler_extra(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": gfd_fleet()}))
    built_in = _run("slinky_topology.cli", "generate", "--fabric", "default")
    assert built_in.returncode == 0, built_in.stderr
    assert "topology:" in built_in.stdout
    from_nodes = _run("slinky_topology.cli", "annotations", "--from-nodes", str(nodes))
    assert from_nodes.returncode == 0, from_nodes.stderr
    assert "gpu0001" in from_nodes.stdout
    for proc in (built_in, from_nodes):
        assert proc.stderr.strip().splitlines()[-1] == "loaded:", "no harness, no generators"


def test_from_cluster_without_the_labeler_extra_names_it() -> None:
    proc = _run("slinky_topology.cli", "generate", "--from-cluster")
    assert proc.returncode == 1
    (error,) = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert EXTRA in error and "--from-cluster" in error
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(("--once",), id="controller"),
        pytest.param(("--from-nodes", "nodes.json"), id="offline"),
        pytest.param(("discover", "--node-name", "n1", "--once"), id="discover"),
    ],
)
def test_the_labeler_without_its_extra_names_it(argv: tuple[str, ...]) -> None:
    proc = _run("slinky_topology.labeler", *argv)
    assert proc.returncode == 1, proc.stderr
    (error,) = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert EXTRA in error
    assert "Traceback" not in proc.stderr
