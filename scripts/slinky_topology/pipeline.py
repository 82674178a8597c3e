"""From a :class:`~slinky_topology.build.Plan` to checked output text (pure, no I/O).

Every output is validated before it is returned (f.4 item 16): the topology file against the Slurm
rules, the annotations against the skeleton they will be applied to, and the 1 MiB ConfigMap
limit. A static file over the limit is replaced by the skeleton (dynamic shape) with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from slinky_topology.emit.annotations import render_annotations
from slinky_topology.emit.topology_conf import render_topology_conf
from slinky_topology.emit.topology_yaml import render_topology_yaml
from slinky_topology.emit.values import render_values
from slinky_topology.validate import (
    CONFIGMAP_LIMIT,
    Findings,
    raise_on_errors,
    size_findings,
    validate_doc,
    validate_specs,
    version_findings,
)

if TYPE_CHECKING:
    from slinky_topology.build import ConfKind, Plan
    from slinky_topology.errors import Finding
    from slinky_topology.model import Shape, TopologyDoc

__all__ = ["FORMATS", "Format", "Output", "render_annotations_output", "render_output"]

Format = Literal["topology.yaml", "topology.conf-tree", "topology.conf-block", "values"]
FORMATS: tuple[Format, ...] = (
    "topology.yaml",
    "topology.conf-tree",
    "topology.conf-block",
    "values",
)


@dataclass(frozen=True, slots=True)
class Output:
    """Rendered text, the shape actually used, and warnings to show the user."""

    text: str
    shape: Shape
    doc: TopologyDoc
    warnings: tuple[Finding, ...]


def _conf_kind(fmt: Format) -> ConfKind | None:
    if fmt == "topology.conf-tree":
        return "tree"
    if fmt == "topology.conf-block":
        return "block"
    return None


def _render(plan: Plan, fmt: Format, shape: Shape) -> tuple[str, TopologyDoc]:
    kind = _conf_kind(fmt)
    if kind is not None:
        doc = plan.conf_doc(kind, shape)
        return render_topology_conf(doc, plan.hostlists), doc
    doc = plan.doc(shape)
    text = render_topology_yaml(doc, plan.hostlists)
    return (render_values(text) if fmt == "values" else text), doc


def render_output(plan: Plan, fmt: Format, shape: Shape = "static") -> Output:
    """Render ``fmt``; fall back to the skeleton when a static file exceeds 1 MiB.

    Raises ValidationError if the result breaks a rule.
    """
    notes = Findings()
    notes.extend(plan.warnings)
    text, doc = _render(plan, fmt, shape)
    if shape == "static" and len(text.encode()) > CONFIGMAP_LIMIT:
        notes.warning(
            fmt,
            f"static output is {len(text.encode())} bytes, over the 1 MiB ConfigMap limit; "
            "wrote the skeleton (dynamic shape) instead",
            "publish the node annotations too (slinky-topology annotations)",
        )
        shape = "dynamic"
        text, doc = _render(plan, fmt, shape)
    # The plan warned already when the base block exceeds every NVLink domain (by their slots,
    # which partial racks do not lower).
    findings = validate_doc(doc, conf=_conf_kind(fmt) is not None, base_fit=False)
    findings += size_findings(text, fmt)
    findings += version_findings(
        plan.fabric.slurm_version,
        doc,
        yaml_format=_conf_kind(fmt) is None,
        dynamic=shape == "dynamic",
    )
    raise_on_errors(findings, what=f"generated {fmt}")
    notes.extend(f for f in findings if f.severity == "warning")
    return Output(text, shape, doc, tuple(notes.items))


def render_annotations_output(plan: Plan, fmt: Format = "topology.yaml") -> Output:
    """The annotations JSON in the syntax of ``fmt`` (topology.conf: topology ``default``).

    Checked against the skeleton of the same format: every unit must exist there.
    """
    kind = _conf_kind(fmt)
    specs = plan.specs(kind)
    doc = plan.conf_doc(kind, "dynamic") if kind is not None else plan.doc("dynamic")
    findings = validate_specs(doc, specs)
    findings += version_findings(plan.fabric.slurm_version, doc, yaml_format=False, dynamic=True)
    raise_on_errors(findings, what="generated annotations")
    return Output(render_annotations(specs), "dynamic", doc, plan.warnings)
