"""The Helm error texts the unit tests read (``tests/data/helm_errors``) are what the pinned Helm
v4 and v3 print today: each case rendered again reads the same (schema errors compared as a set,
Helm lists them in no fixed order)."""

from __future__ import annotations

import pytest

from slinky_harness.core.paths import REPO_ROOT
from slinky_harness.helm import client

DATA = REPO_ROOT / "tests" / "data" / "helm_errors"
CASES = {
    "schema": ("slurm-cluster", ()),
    "validate": ("gpu-topology-labeler", ()),
    "required": ("slurm-cluster", ("--skip-schema-validation",)),
}
HELMS = {"helm4": "helm", "helm3": "helm3"}


@pytest.mark.parametrize("helm", HELMS)
@pytest.mark.parametrize("case", CASES)
def test_the_stored_error_text_is_what_helm_prints(case: str, helm: str) -> None:
    chart, flags = CASES[case]
    args = ["template", "rel", str(REPO_ROOT / "charts" / chart)]
    args += ["-f", str(DATA / f"{case}.values.json"), "--kube-version", "1.35.0", *flags]
    live = client.run(args, helm=HELMS[helm])
    stored = client.HelmResult.failed((DATA / f"{case}.{helm}.txt").read_text(encoding="utf-8"))
    assert not live.ok, live.describe()
    assert live.template_failure() == stored.template_failure()
    assert set(live.schema_errors(groups=True)) == set(stored.schema_errors(groups=True))
    assert live.refusals() == stored.refusals()
