"""CRDs of the Slinky ``slinky.slurm.net`` API, generated from a compact model.

- :mod:`.dsl` reads ``model/<version>.yaml`` (the API as data),
- :mod:`.k8s` converts embedded Kubernetes types from the OpenAPI definitions,
- :mod:`.schema` builds the CRDs, :mod:`.render` writes them, :mod:`.cli` is the command,
- :mod:`.structural`, :mod:`.jsonschema`, :mod:`.defaulting`, :mod:`.cel` and
  :mod:`.validate` check CRDs and resources against them (used by the tests and the render
  tier: ``ResourceValidator(load_crds(dir)).errors(obj)``).
"""

from __future__ import annotations

from slinky_crdgen.cli import main
from slinky_crdgen.errors import CrdGenError
from slinky_crdgen.jsonschema import crd_to_jsonschema
from slinky_crdgen.loader import load_crds
from slinky_crdgen.validate import ResourceValidator

__all__ = ["CrdGenError", "ResourceValidator", "crd_to_jsonschema", "load_crds", "main"]
