"""What must change: a pure function of (desired, current). No I/O, no clock.

* :func:`desired_state` runs the slinky_topology pipeline (source -> :func:`build.plan` ->
  :func:`pipeline.render_output` in the dynamic shape, :func:`pipeline.render_annotations_output`)
  and turns it into the owned keys of every Node plus the ConfigMap data (``topology.yaml``).
  It raises :class:`~slinky_topology.errors.TopologyError` on bad input, and refuses an empty
  topology (no Node with a label of the preset, no node placed anywhere) unless told
  ``allow_empty``, so a caller keeps the last good state.
* :func:`reconcile` compares that with the cluster and returns a :class:`Plan` holding only the
  writes needed: a second pass over an unchanged cluster plans zero writes. Only keys of
  :data:`~slinky_topology.labeler.keys.OWNED_KEYS` are compared or written; a Node that left the
  fabric loses exactly the owned keys it carries.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from slinky_topology import build, pipeline
from slinky_topology.errors import Finding, ValidationError
from slinky_topology.labeler.keys import (
    DOMAIN_LABEL,
    OWNED_ANNOTATIONS,
    OWNED_LABELS,
    PARTITION_LABEL,
    SPEC_ANNOTATION,
    TIER_LABELS,
    label_value,
)
from slinky_topology.sources.k8s_nodes import fabric_from_nodes

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from slinky_topology.model import BlockOptions, Fabric

__all__ = [
    "CONFIGMAP_KEY",
    "ConfigMapChange",
    "Current",
    "Desired",
    "NodeChange",
    "NodeKeys",
    "Plan",
    "current_from_items",
    "desired_state",
    "node_keys",
    "reconcile",
]

#: The ConfigMap data key holding the generated topology (mounted as /etc/slurm/topology.yaml).
CONFIGMAP_KEY = "topology.yaml"

Action = Literal["add", "change", "remove"]


@dataclass(frozen=True, slots=True)
class NodeKeys:
    """Labels and annotations of one Node (for ``Desired``: only owned keys)."""

    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)

    def owned(self) -> NodeKeys:
        """Only the keys the labeler owns."""
        return NodeKeys(
            {k: v for k, v in self.labels.items() if k in OWNED_LABELS},
            {k: v for k, v in self.annotations.items() if k in OWNED_ANNOTATIONS},
        )

    def empty(self) -> bool:
        return not self.labels and not self.annotations


@dataclass(frozen=True, slots=True)
class Desired:
    """What the cluster should look like: owned keys per Node name, ConfigMap data; the Nodes
    left out for lack of a Slurm node name (``skipped``, also named in a warning)."""

    nodes: Mapping[str, NodeKeys]
    configmap: Mapping[str, str]
    warnings: tuple[Finding, ...] = ()
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Current:
    """What the cluster looks like: every Node's labels/annotations, the ConfigMap data."""

    nodes: Mapping[str, NodeKeys]
    configmap: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class NodeChange:
    """Owned keys to set (a value) or delete (``None``) on one Node, and their old values."""

    name: str
    action: Action
    labels: Mapping[str, str | None]
    annotations: Mapping[str, str | None]
    before: NodeKeys = field(default_factory=NodeKeys)

    def merge_patch(self) -> dict[str, Any]:
        """The JSON merge patch body (RFC 7386): ``null`` deletes a key."""
        meta: dict[str, Any] = {}
        if self.labels:
            meta["labels"] = dict(sorted(self.labels.items()))
        if self.annotations:
            meta["annotations"] = dict(sorted(self.annotations.items()))
        return {"metadata": meta}

    def describe(self) -> list[str]:
        lines = [f"node {self.name} ({self.action}):"]
        for kind, changes, old in (
            ("annotation", self.annotations, self.before.annotations),
            ("label", self.labels, self.before.labels),
        ):
            for key, value in sorted(changes.items()):
                if value is None:
                    lines.append(f"  - {kind} {key}={old.get(key, '')}")
                elif key in old:
                    lines.append(f"  ~ {kind} {key}: {old[key]} -> {value}")
                else:
                    lines.append(f"  + {kind} {key}={value}")
        return lines


@dataclass(frozen=True, slots=True)
class ConfigMapChange:
    """Create or replace the labeler's ConfigMap with ``data``."""

    action: Literal["create", "replace"]
    data: Mapping[str, str]
    previous: Mapping[str, str] | None = None

    def describe(self, name: str = "configmap") -> list[str]:
        lines = [f"configmap {name} ({self.action}):"]
        for key in sorted(set(self.data) | set(self.previous or {})):
            old = (self.previous or {}).get(key, "")
            new = self.data.get(key, "")
            if old == new:
                continue
            lines.extend(
                "  " + line.rstrip("\n")
                for line in difflib.unified_diff(
                    old.splitlines(keepends=True),
                    new.splitlines(keepends=True),
                    fromfile=f"a/{key}",
                    tofile=f"b/{key}",
                )
            )
        return lines


@dataclass(frozen=True, slots=True)
class Plan:
    """Every write one pass needs; empty when the cluster already matches."""

    nodes: tuple[NodeChange, ...] = ()
    configmap: ConfigMapChange | None = None

    @property
    def writes(self) -> int:
        """Number of API writes the plan makes (one per Node patch, one for the ConfigMap)."""
        return len(self.nodes) + (1 if self.configmap is not None else 0)

    def describe(self, configmap_name: str = "configmap") -> str:
        """Human-readable diff (``--dry-run`` output)."""
        lines: list[str] = []
        if self.configmap is not None:
            lines.extend(self.configmap.describe(configmap_name))
        for change in self.nodes:
            lines.extend(change.describe())
        actions = {
            a: sum(1 for c in self.nodes if c.action == a) for a in ("add", "change", "remove")
        }
        cm = self.configmap.action if self.configmap is not None else "unchanged"
        lines.append(
            f"{self.writes} write(s): configmap {cm}; nodes "
            + ", ".join(f"{n} {a}" for a, n in actions.items())
        )
        return "\n".join(lines) + "\n"


def node_keys(fabric_plan: build.Plan) -> dict[str, NodeKeys]:
    """Owned keys of every present node of a planned fabric, by Kubernetes Node name.

    The annotation is the node's ``Topology=`` string (omitted when empty); tier labels follow
    the node's switch path closest first; domain and partition labels come from the node.
    """
    fabric = fabric_plan.fabric
    parent = {s.name: s.parent for s in fabric.switches}
    specs = fabric_plan.specs()
    out: dict[str, NodeKeys] = {}
    for node in fabric.nodes:
        if node.state == "absent":
            continue
        labels: dict[str, str] = {}
        switch = node.leaf
        for key in TIER_LABELS:
            if switch is None:
                break
            labels[key] = label_value(switch)
            switch = parent.get(switch)
        if node.domain:
            labels[DOMAIN_LABEL] = label_value(node.domain)
        if node.subdomain:
            labels[PARTITION_LABEL] = label_value(node.subdomain)
        annotations: dict[str, str] = {}
        spec = specs.get(node.kube_name, "")
        if spec:
            annotations[SPEC_ANNOTATION] = spec
        out[node.kube_name] = NodeKeys(labels, annotations)
    return out


def desired_state(
    items: Sequence[Mapping[str, Any]],
    *,
    preset: str = "auto",
    label_map: str | None = None,
    fabric: Fabric | None = None,
    node_selector: Mapping[str, str] | None = None,
    slurm_name_key: str | None = None,
    block_options: BlockOptions | None = None,
    allow_empty: bool = False,
) -> Desired:
    """The desired owned keys and ConfigMap data, from Nodes (through a preset) or a fabric.

    ``block_options``: BlockSizes, block source and oversized-domain policy of the block
    topology built from Node labels (``None``: the library defaults; not used with ``fabric``,
    which sets them per topology). Raises :class:`~slinky_topology.errors.TopologyError` when
    the input is bad or, unless ``allow_empty``, when the result would be empty (no Node with a
    label of the preset, or no node placed in any topology); every output is validated by the
    pipeline before it is returned.
    """
    if fabric is None:
        fabric = fabric_from_nodes(
            list(items),
            preset=preset,
            label_map=label_map,
            node_selector=node_selector,
            slurm_name_key=slurm_name_key,
            block_options=block_options,
            allow_empty=allow_empty,
        )
    fabric_plan = build.plan(fabric)
    output = pipeline.render_output(fabric_plan, "topology.yaml", "dynamic")
    annotations = pipeline.render_annotations_output(fabric_plan)
    nodes = node_keys(fabric_plan)
    if not allow_empty and not any(SPEC_ANNOTATION in k.annotations for k in nodes.values()):
        raise ValidationError(
            [
                Finding(
                    "error",
                    f"fabric {fabric.name}",
                    "no node is placed in any tree or block topology; refusing to publish an "
                    "empty topology (the last good one is kept)",
                    fix="check the label preset (--preset/--label-map) or the fabric file",
                )
            ],
            what="desired topology",
        )
    warnings = tuple(dict.fromkeys((*output.warnings, *annotations.warnings)))
    return Desired(nodes, {CONFIGMAP_KEY: output.text}, warnings, tuple(fabric.skipped))


def current_from_items(
    items: Sequence[Mapping[str, Any]], configmap: Mapping[str, str] | None = None
) -> Current:
    """A :class:`Current` from Node dicts (``kubectl get nodes -o json`` items)."""
    nodes: dict[str, NodeKeys] = {}
    for item in items:
        meta = item.get("metadata") or {}
        nodes[str(meta["name"])] = NodeKeys(
            dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})
        )
    return Current(nodes, None if configmap is None else dict(configmap))


def _diff(want: Mapping[str, str], have: Mapping[str, str]) -> dict[str, str | None]:
    changes: dict[str, str | None] = {}
    for key in sorted(set(want) | set(have)):
        if want.get(key) != have.get(key):
            changes[key] = want.get(key)
    return changes


def reconcile(desired: Desired, current: Current) -> Plan:
    """The writes that bring ``current`` to ``desired`` (pure; see module doc).

    Nodes named in ``desired`` but absent from the cluster are skipped (nothing to patch).
    """
    changes: list[NodeChange] = []
    for name in sorted(current.nodes):
        have = current.nodes[name].owned()
        want = desired.nodes.get(name, NodeKeys()).owned()
        labels = _diff(want.labels, have.labels)
        annotations = _diff(want.annotations, have.annotations)
        if not labels and not annotations:
            continue
        action: Action
        if want.empty():
            action = "remove"
        elif have.empty():
            action = "add"
        else:
            action = "change"
        changes.append(NodeChange(name, action, labels, annotations, have))
    cm: ConfigMapChange | None = None
    if current.configmap is None:
        cm = ConfigMapChange("create", dict(desired.configmap))
    elif dict(current.configmap) != dict(desired.configmap):
        cm = ConfigMapChange("replace", dict(desired.configmap), dict(current.configmap))
    return Plan(tuple(changes), cm)


def plan_json(plan: Plan) -> str:
    """The plan as JSON (machine-readable dry run)."""
    body = {
        "configmap": None
        if plan.configmap is None
        else {"action": plan.configmap.action, "data": dict(plan.configmap.data)},
        "nodes": [
            {"name": c.name, "action": c.action, "patch": c.merge_patch()} for c in plan.nodes
        ],
    }
    return json.dumps(body, indent=2, sort_keys=True) + "\n"
