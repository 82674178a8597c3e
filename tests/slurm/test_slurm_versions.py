"""The generator's Slurm-version rules, held against the real slurmctld of every proven version.

For each rule of ``slinky_topology.validate.version.VERSION_RULES`` one fabric makes the generator
write output that uses that feature (and only features every proven Slurm loads besides). Each
output is loaded into the slurmctld of Debian trixie (Slurm 24.11) and of Debian sid (Slurm 26.05),
each in its cached chroot. Whether a daemon *loads* it is read from that daemon: it starts and
``scontrol show topology`` lists exactly what the file says (the harness's own reading of the file,
``slinky_harness.slurm.topology``), or, for node topology strings, ``scontrol update`` places the
node where the string says. The test then requires, per version, that the rule table says "loads"
and ``generate``/``annotations`` with that ``slurmVersion`` succeed exactly when the daemon loaded
it. Nothing here states what a version supports: only the daemons do.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from slinky_harness.build.slurm_chroot import RECIPES, chroot_info, ensure_chroot
from slinky_harness.slurm.ctld import SlurmCommandError, SlurmctldStartError, slurmctld
from slinky_harness.slurm.topology import (
    BlockTopology,
    TreeTopology,
    assert_blocks_match,
    assert_tree_matches,
    parse_topology_conf,
    parse_topology_yaml,
    read_tree,
)
from slinky_topology import cli
from slinky_topology.parse import parse_topology_conf as product_parse_conf
from slinky_topology.parse import parse_topology_yaml as product_parse_yaml
from slinky_topology.validate.version import (
    PROVEN_SLURM_VERSIONS,
    VERSION_RULES,
    features_used,
    loads,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from slinky_harness.slurm.ctld import SlurmCtld

HEAD = "apiVersion: fabric.example.org/v1alpha1\nkind: Fabric\nmetadata: {name: versions}\nspec:\n"
TWO_LEAVES = """\
  switches: [{name: spine1}, {name: leaf1, parent: spine1}, {name: leaf2, parent: spine1}]
"""


@dataclass(frozen=True)
class Case:
    """One generated output and the version-dependent features it uses."""

    fabric: str
    """``spec`` body of the fabric file (indented two spaces), without ``slurmVersion``."""
    fmt: str
    """``generate --format``; ``annotations`` cases write node topology strings instead."""
    features: frozenset[str]
    shows: Callable[[TreeTopology | BlockTopology], bool]
    """Independent check (the harness's reading of the output) that the feature is there."""
    annotations: bool = False


def _empty_leaf(model: TreeTopology | BlockTopology) -> bool:
    return isinstance(model, TreeTopology) and any(
        not model.children.get(s) and not model.nodes.get(s) for s in model.children
    )


def _blocks(model: TreeTopology | BlockTopology) -> list[list[str]]:
    return list(model.blocks.values()) if isinstance(model, BlockTopology) else []


def _base(model: TreeTopology | BlockTopology) -> int:
    return model.sizes[0] if isinstance(model, BlockTopology) and model.sizes else 0


CASES: Mapping[str, Case] = {
    "full blocks with BlockSizes": Case(
        "  nvlinkDomains: [{name: rack1, slots: 4}, {name: rack2, slots: 4}]\n"
        "  nodes:\n"
        "    - {name: 'gpu[01-04]', nvlinkDomain: rack1}\n"
        "    - {name: 'gpu[05-08]', nvlinkDomain: rack2}\n"
        "  topologies: [{name: nvl, type: block, blockSizes: [4, 8]}]\n",
        "topology.conf-block",
        frozenset({"block", "block-sizes"}),
        lambda m: bool(_blocks(m)) and all(len(b) == _base(m) for b in _blocks(m)),
    ),
    "block smaller than the base": Case(
        "  nvlinkDomains: [{name: rack1, slots: 4}, {name: rack2, slots: 4}]\n"
        "  nodes:\n"
        "    - {name: 'gpu[01-04]', nvlinkDomain: rack1}\n"
        "    - {name: 'gpu[05-06]', nvlinkDomain: rack2}\n"
        "  topologies: [{name: nvl, type: block, blockSizes: [4, 8]}]\n",
        "topology.conf-block",
        frozenset({"block", "block-sizes", "small-block"}),
        lambda m: any(0 < len(b) < _base(m) for b in _blocks(m)),
    ),
    "node-less placeholder block": Case(
        "  nvlinkDomains: [{name: rack1, slots: 4}, {name: rack2, slots: 4}]\n"
        "  nodes:\n"
        "    - {name: 'gpu[01-04]', nvlinkDomain: rack1}\n"
        "    - {name: 'gpu[05-08]', nvlinkDomain: rack2, state: absent}\n"
        "  topologies: [{name: nvl, type: block, blockSizes: [4, 8]}]\n",
        "topology.conf-block",
        frozenset({"block", "block-sizes", "empty-block"}),
        lambda m: any(not b for b in _blocks(m)),
    ),
    "empty leaf switch": Case(
        TWO_LEAVES + "  nodes: [{name: 'gpu[01-04]', leaf: leaf1}]\n",
        "topology.conf-tree",
        frozenset({"empty-leaf"}),
        _empty_leaf,
    ),
    "topology.yaml": Case(
        TWO_LEAVES
        + "  nodes: [{name: 'gpu[01-04]', leaf: leaf1}, {name: 'gpu[05-08]', leaf: leaf2}]\n",
        "topology.yaml",
        frozenset({"topology.yaml"}),
        lambda m: isinstance(m, TreeTopology) and not _empty_leaf(m),
    ),
    "node topology strings": Case(
        TWO_LEAVES
        + "  nodes: [{name: 'gpu[01-04]', leaf: leaf1}, {name: 'gpu[05-08]', leaf: leaf2}]\n",
        "topology.conf-tree",
        frozenset({"dynamic"}),
        lambda m: isinstance(m, TreeTopology) and not _empty_leaf(m),
        annotations=True,
    ),
}
"""Case -> fabric. Each uses its feature plus only features of the first case (which every proven
version is required to load: ``test_every_proven_version_loads_plain_blocks``)."""


@pytest.fixture(scope="module")
def chroots(slurm_root: Path) -> dict[str, Path]:
    """Slurm series -> its chroot: sid's (the tier's own) and every other recipe's, built on first
    use (trixie: about 1.5 min cold, its progress lines on stderr)."""
    out = {chroot_info(slurm_root).slurm_version[:5]: slurm_root}
    for suite in RECIPES:
        root = ensure_chroot(suite=suite)
        out[chroot_info(root).slurm_version[:5]] = root
    return out


def _write_fabric(tmp_path: Path, case: Case, version: str | None) -> Path:
    line = f'  slurmVersion: "{version}"\n' if version is not None else ""
    path = tmp_path / f"fabric-{version or 'any'}.yaml"
    path.write_text(HEAD + line + case.fabric, encoding="utf-8")
    return path


def _generate(case: Case, fabric: Path, out: Path) -> int:
    return cli.main(["generate", "--fabric", str(fabric), "--format", case.fmt, "-o", str(out)])


def _model(case: Case, text: str) -> TreeTopology | BlockTopology:
    if case.fmt == "topology.yaml":
        (only,) = parse_topology_yaml(text)
        assert only.model is not None, text
        return only.model
    return parse_topology_conf(text)


def _slurm_conf(case: Case, model: TreeTopology | BlockTopology) -> str:
    plugin = {"topology.conf-tree": "tree", "topology.conf-block": "block"}.get(case.fmt)
    nodes = ",".join(sorted(model.all_nodes()))
    lines = [f"TopologyPlugin=topology/{plugin}"] if plugin else []
    lines += [f"NodeName={nodes} CPUs=4 State=CLOUD", "PartitionName=all Nodes=ALL Default=YES"]
    return "\n".join(lines) + "\n"


def _shows_file(ctld: SlurmCtld, model: TreeTopology | BlockTopology) -> str | None:
    """``None`` when ``scontrol show topology`` lists exactly the file's model, else why not."""
    try:
        shown = ctld.show_topology()
        if isinstance(model, TreeTopology):
            assert_tree_matches(shown, model)
        else:
            assert_blocks_match(shown, model)
    except (AssertionError, SlurmCommandError) as exc:
        return f"scontrol show topology differs from the file: {exc}"
    return None


def _places_strings(ctld: SlurmCtld, strings: Mapping[str, str]) -> str | None:
    """Give the first node the string of a node on another leaf: ``None`` when slurmctld accepts
    it and lists the node under that leaf, else why not."""
    first = min(strings)
    other = next(n for n in sorted(strings) if strings[n] != strings[first])
    leaf = strings[other].rsplit(":", 1)[1]
    try:
        ctld.set_node_topology(first, strings[other])
        placed = read_tree(ctld.show_topology())[leaf].nodes
    except SlurmCommandError as exc:
        return str(exc)
    return None if first in placed else f"{first} is not under {leaf} after the update"


def _daemon_loads(
    root: Path, workdir: Path, case: Case, text: str, strings: Mapping[str, str]
) -> tuple[bool, str]:
    """(loaded, why not / log errors) for ``text`` in the slurmctld of ``root``."""
    model = _model(case, text)
    name = "topology.yaml" if case.fmt == "topology.yaml" else "topology.conf"
    files = {"slurm.conf": _slurm_conf(case, model), name: text}
    try:
        with slurmctld(files, root=root, workdir=workdir) as ctld:
            why = _shows_file(ctld, model)
            if why is None and case.annotations:
                why = _places_strings(ctld, strings)
            log = ctld.log()
    except SlurmctldStartError as exc:
        fatal = [ln for ln in exc.log.splitlines() if "fatal" in ln or "error:" in ln]
        return False, f"slurmctld does not start: {'; '.join(fatal[-2:]) or exc}"
    errors = [ln for ln in log.splitlines() if "fatal" in ln or "error:" in ln]
    return why is None, why or "; ".join(errors[-3:])


def test_proven_versions_are_the_chroots_this_tier_runs(chroots: dict[str, Path]) -> None:
    assert sorted(chroots) == sorted(PROVEN_SLURM_VERSIONS)
    assert sorted(r.series for r in RECIPES.values()) == sorted(PROVEN_SLURM_VERSIONS)


def test_every_rule_has_a_case() -> None:
    used = frozenset().union(*(c.features for c in CASES.values()))
    assert used == set(VERSION_RULES)


@pytest.mark.parametrize("name", list(CASES))
def test_generator_rules_match_what_each_slurmctld_loads(
    name: str, chroots: dict[str, Path], tmp_path: Path
) -> None:
    case = CASES[name]
    out = tmp_path / "out"
    assert _generate(case, _write_fabric(tmp_path, case, None), out) == 0
    text = out.read_text(encoding="utf-8")
    model = _model(case, text)
    assert case.shows(model), f"the generated output does not show the case:\n{text}"
    doc = product_parse_yaml(text) if case.fmt == "topology.yaml" else product_parse_conf(text)
    used = {
        f for f, _ in features_used(doc, yaml_format=case.fmt == "topology.yaml", dynamic=False)
    }
    strings: dict[str, str] = {}
    if case.annotations:
        used.add("dynamic")
        ann = tmp_path / "annotations.json"
        argv = ["annotations", "--fabric", str(_write_fabric(tmp_path, case, None))]
        assert cli.main([*argv, "--format", case.fmt, "-o", str(ann)]) == 0
        strings = json.loads(ann.read_text(encoding="utf-8"))
    assert used == case.features, "the case must use exactly its features"

    for series, root in sorted(chroots.items()):
        started = time.monotonic()
        loaded, why = _daemon_loads(root, tmp_path / f"ctld-{series}", case, text, strings)
        table = all(loads(series, f) for f in case.features)
        fabric = _write_fabric(tmp_path, case, series)
        command = "annotations" if case.annotations else "generate"
        argv = [command, "--fabric", str(fabric), "--format", case.fmt]
        accepts = cli.main([*argv, "-o", str(tmp_path / f"gated-{series}")]) == 0
        print(f"{name}: Slurm {series} {'loads' if loaded else 'does not load'} it "
              f"({time.monotonic() - started:.1f} s){'' if loaded else ': ' + why}")  # fmt: skip
        assert table == loaded, f"rule table says {table} for {series}, slurmctld: {why}"
        assert accepts == loaded, f"{command} with slurmVersion {series} exit differs: {why}"


def test_every_proven_version_loads_plain_blocks(chroots: dict[str, Path], tmp_path: Path) -> None:
    """The features of the first case are the base the other cases build on."""
    case = CASES["full blocks with BlockSizes"]
    out = tmp_path / "out"
    assert _generate(case, _write_fabric(tmp_path, case, None), out) == 0
    text = out.read_text(encoding="utf-8")
    for series, root in sorted(chroots.items()):
        loaded, why = _daemon_loads(root, tmp_path / f"ctld-{series}", case, text, {})
        assert loaded, f"Slurm {series}: {why}"
