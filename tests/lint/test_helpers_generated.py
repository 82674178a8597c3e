"""The charts' shared helpers have one source, and every chart's copy is that source.

``scripts/slinky_schemagen/helpers.tpl`` holds the helpers the charts share (names, namespace,
image reference, pull secrets, ...); ``python -m slinky_schemagen.helpers`` (``nox -s docs``)
writes each chart's ``templates/_common.tpl`` from it. A copy edited by hand, a chart that defines
a shared helper again in its own templates, or an exception without its reason fails here.
"""

from __future__ import annotations

import re
import shutil
from typing import TYPE_CHECKING

import pytest

from slinky_harness.helm import charts
from slinky_schemagen import helpers
from slinky_schemagen.errors import SchemaGenError

if TYPE_CHECKING:
    from pathlib import Path

CHARTS = charts.discover_charts()
SOURCE = helpers.parse(helpers.SOURCE.read_text())


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_each_charts_copy_is_the_source(chart: charts.Chart, tmp_path: Path) -> None:
    """Regenerating into a copy of the chart reproduces the committed templates/_common.tpl."""
    copy = tmp_path / chart.path.name
    shutil.copytree(chart.path, copy, symlinks=True)
    assert helpers.main([str(copy)]) == 0, f"the generator failed on {chart.path}"
    committed = chart.path / helpers.TARGET
    assert committed.is_file(), f"{committed} is missing: run `python -m slinky_schemagen.helpers`"
    assert (copy / helpers.TARGET).read_text() == committed.read_text(), (
        f"charts/{chart.name}/{helpers.TARGET} differs from scripts/slinky_schemagen/helpers.tpl: "
        "run `python -m slinky_schemagen.helpers` (or `nox -s docs`) and commit the result"
    )


def test_no_chart_defines_a_shared_helper_twice() -> None:
    """A helper of the source is defined in a chart's templates only where OWN says why."""
    shared = {h.name for h in SOURCE}
    for chart in CHARTS:
        own = helpers.OWN.get(chart.name, {})
        for path in (chart.path / "templates").rglob("*"):
            if not path.is_file() or path.name == helpers.TARGET.name:
                continue
            defined = re.findall(rf'define "{re.escape(chart.name)}\.([\w.]+)"', path.read_text())
            twins = sorted((set(defined) & shared) - set(own))
            assert not twins, f"{path} defines shared helpers {twins} again"


def test_the_image_rule_is_shared_by_every_chart() -> None:
    """Every chart renders images through the one shared `<chart>.image`, none its own."""
    for chart in CHARTS:
        assert "image" not in helpers.OWN.get(chart.name, {})
        text = (chart.path / helpers.TARGET).read_text()
        assert f'define "{chart.name}.image"' in text, f"{chart.name} lacks the shared image helper"


def test_a_forked_helper_is_refused_naming_the_fix(tmp_path: Path) -> None:
    chart = next(c for c in CHARTS if c.name == "gpu-topology-labeler")
    copy = tmp_path / chart.name
    shutil.copytree(chart.path, copy)
    (copy / "templates" / "_fork.tpl").write_text(
        '{{- define "gpu-topology-labeler.image" -}}\n{{- .image.repository }}\n{{- end }}\n'
    )
    with pytest.raises(SchemaGenError, match=r"gpu-topology-labeler\.image.*OWN"):
        helpers.expected(copy, SOURCE)


def test_a_stale_exception_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chart = next(c for c in CHARTS if c.name == "gpu-topology-labeler")
    monkeypatch.setitem(helpers.OWN, chart.name, {"fullname": "no longer true"})
    with pytest.raises(SchemaGenError, match="remove the entry"):
        helpers.expected(chart.path, SOURCE)


def test_a_block_that_is_not_a_helper_names_its_line() -> None:
    text = helpers.SOURCE.read_text() + '\n{{- define "<chart>.x" -}}\n{{- end }}\n'
    line = text[: text.rindex("{{- define")].count("\n") + 1
    with pytest.raises(SchemaGenError, match=rf"helpers\.tpl:{line}: expected a helper"):
        helpers.parse(text, "helpers.tpl")


def test_a_chart_gets_only_the_helpers_it_uses() -> None:
    """slurm-operator-crds uses no component names, so its copy holds none."""
    crds = next(c for c in CHARTS if c.name == "slurm-operator-crds")
    text = (crds.path / helpers.TARGET).read_text()
    assert "componentName" not in text and "rbacRules" not in text
