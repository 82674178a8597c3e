"""``values.schema.json`` of a chart, generated from its annotated ``values.yaml``.

- :mod:`.comments` reads values.yaml with the helm-docs ``# --`` description and the
  ``# @schema`` annotation of every key,
- :mod:`.infer` turns that tree into JSON Schema (types from the defaults, closed objects),
- :mod:`.definitions` holds the shared definitions (``definitions.yaml``: Kubernetes names,
  labels, images, resources, tolerations) that ``$ref`` names,
- :mod:`.chart` adds the chart's hand-written part (``values.schema.extra.yaml``), checks the
  defaults against the result and renders it; :mod:`.cli` is the command.

A build tool beside ``slinky_crdgen``: never packaged in the wheel or the labeler image.
"""

from __future__ import annotations

from slinky_schemagen.chart import EXTRA_FILE, generate_chart, is_generated
from slinky_schemagen.cli import main
from slinky_schemagen.errors import AnnotationError, SchemaGenError, StaleSchemaError

__all__ = [
    "EXTRA_FILE",
    "AnnotationError",
    "SchemaGenError",
    "StaleSchemaError",
    "generate_chart",
    "is_generated",
    "main",
]
