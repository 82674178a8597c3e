"""Chroot recipes and their cache: which chroot a marker belongs to, without building one."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from slinky_harness.build.slurm_chroot import RECIPES, SlurmChrootError, ensure_chroot

if TYPE_CHECKING:
    from pathlib import Path


def _marker(root: Path, suite: str, recipe: int) -> Path:
    root.mkdir(parents=True)
    data = {
        "recipe": recipe, "suite": suite, "slurm_version": "x", "emulator": False,
        "accounting": False, "mirror": "m", "build_seconds": 1.0, "slurm_uid": 1, "slurm_gid": 1,
    }  # fmt: skip
    (root / ".slinky-chroot.json").write_text(json.dumps(data), encoding="utf-8")
    return root


def test_sid_keeps_its_cache_folder_and_recipe() -> None:
    """The sid chroot CI has cached stays valid: same folder name, same recipe number."""
    sid = RECIPES["sid"]
    assert (sid.suite, sid.series, sid.recipe) == ("sid", "26.05", 3)


@pytest.mark.parametrize("suite", sorted(RECIPES))
def test_a_current_marker_is_reused_without_root(
    suite: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = RECIPES[suite]
    root = _marker(tmp_path / f"{suite}-{spec.series}", suite, spec.recipe)
    monkeypatch.setattr("os.geteuid", lambda: 1000)  # a build would need root
    assert ensure_chroot(suite=suite, cache=tmp_path) == root


def test_a_marker_of_another_recipe_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = RECIPES["trixie"]
    _marker(tmp_path / f"trixie-{spec.series}", "trixie", spec.recipe + 1)
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(SlurmChrootError, match="needs root"):
        ensure_chroot(suite="trixie", cache=tmp_path)


def test_unknown_suite_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(SlurmChrootError, match=r"'bookworm'.*sid, trixie"):
        ensure_chroot(suite="bookworm", cache=tmp_path)
