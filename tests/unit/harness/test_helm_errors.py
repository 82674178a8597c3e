"""HelmResult reads Helm's error text: schema refusals, template ``fail`` lists and ``required``,
over the real text of Helm v4 and v3 (``tests/data/helm_errors/README.md`` says how it was made)."""

from __future__ import annotations

import pytest

from slinky_harness.core.paths import REPO_ROOT
from slinky_harness.helm.client import HelmResult, SchemaError

DATA = REPO_ROOT / "tests" / "data" / "helm_errors"
HELMS = ("helm4", "helm3")
LABELER_MESSAGE = (
    "controller.replicas is 2 but controller.leaderElection.enabled is false: several controllers "
    "would write at once. Set `controller.leaderElection.enabled: true` or `controller.replicas: 1`."
)


def _result(case: str, helm: str) -> HelmResult:
    return HelmResult.failed((DATA / f"{case}.{helm}.txt").read_text(encoding="utf-8"))


@pytest.mark.parametrize("helm", HELMS)
def test_a_schema_refusal_names_each_value_and_its_chart(helm: str) -> None:
    """Every error line with the chart above it, the grouping line only when asked for; the
    order is Helm's own, which differs between v4 and v3, so it is compared as a set."""
    result = _result("schema", helm)
    assert result.schema_refused
    assert result.template_failure() is None
    assert set(result.schema_errors()) == {
        SchemaError("slurm-cluster", "/scheduling/preset", "value must be one of 'fairshare', 'fifo', 'none'"),
        SchemaError("slurm-cluster", "/nodesets/compute/gpu/count", "got string, want integer", True),
        SchemaError("slurm-cluster", "/nodesets/compute/partition/enabled", "got string, want boolean", True),
    }  # fmt: skip
    grouping = [e for e in result.schema_errors(groups=True) if e.groups]
    assert grouping == [SchemaError("slurm-cluster", "/nodesets/compute", "validation failed")]
    assert result.refusals() == [
        "schema: at '/nodesets/compute/gpu/count': got string, want integer",
        "schema: at '/nodesets/compute/partition/enabled': got string, want boolean",
        "schema: at '/scheduling/preset': value must be one of 'fairshare', 'fifo', 'none'",
    ]


@pytest.mark.parametrize("helm", HELMS)
def test_a_validate_list_gives_its_chart_and_each_message(helm: str) -> None:
    result = _result("validate", helm)
    failure = result.template_failure()
    assert failure is not None
    assert not result.schema_refused and result.schema_errors() == []
    assert failure.where == "gpu-topology-labeler/templates/validate.yaml:114:4"
    assert failure.chart == "gpu-topology-labeler"
    assert failure.listed
    assert failure.messages == [LABELER_MESSAGE]
    assert failure.text == f"\n\ngpu-topology-labeler: invalid values (1):\n  - {LABELER_MESSAGE}\n"


@pytest.mark.parametrize("helm", HELMS)
def test_a_required_gives_its_one_message(helm: str) -> None:
    result = _result("required", helm)
    failure = result.template_failure()
    assert failure is not None
    assert failure.chart == "slurm-cluster"
    assert failure.where.startswith("slurm-cluster/templates/nodeset/")
    assert not failure.listed
    assert failure.messages == [
        "nodesets.compute.slurmd.image.repository is required: the image's repository, with or"
        " without its registry host (e.g. ghcr.io/slinkyproject/slurmctld)"
    ]
    assert result.refusals() == [f"execution error at ({failure.where}): {failure.messages[0]}"]


def test_a_subchart_failure_names_the_innermost_chart_and_keeps_multiline_messages() -> None:
    """An umbrella's subchart fails under ``<umbrella>/charts/<chart>/templates/``; a list item
    that spans lines stays one message."""
    result = HelmResult.failed(
        "Error: execution error at (suite/charts/slurm-cluster/templates/validate.yaml:3:4): \n\n"
        "slurm-cluster: invalid values (2):\n  - first\n    continued\n  - second\n\n\n"
        "Use --debug flag to render out invalid YAML\n"
    )
    failure = result.template_failure()
    assert failure is not None and failure.chart == "slurm-cluster"
    assert failure.messages == ["first\n    continued", "second"]


def test_a_pointer_decodes_to_keys_and_indices() -> None:
    error = SchemaError("c", "/nodesets/a~1b/list/0/x~0y", "t")
    assert error.steps() == ["nodesets", "a/b", "list", 0, "x~y"]
    assert SchemaError("c", "", "t").steps() == []


def test_text_that_is_no_helm_error_reads_as_none() -> None:
    result = HelmResult.failed("Error: INSTALLATION FAILED: context deadline exceeded\n")
    assert result.template_failure() is None
    assert result.schema_errors() == []
    assert not result.schema_refused
    assert result.refusals() == ["INSTALLATION FAILED: context deadline exceeded"]
