"""``python -m slinky_crdgen``: write or check the Slinky CRD files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from slinky_crdgen.dsl import load_model
from slinky_crdgen.errors import CrdGenError, StaleOutputError
from slinky_crdgen.render import diff_outputs, render_yaml, write_outputs
from slinky_crdgen.schema import build_crds

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["DEFAULT_OUTPUT", "default_output", "generate", "main"]

#: Output folder, relative to the repository root.
DEFAULT_OUTPUT = Path("charts/slurm-operator-crds/files/crds")


def default_output() -> Path:
    """``charts/slurm-operator-crds/files/crds`` of the checkout this package lives in.

    Falls back to the path relative to the working directory when the package is
    installed outside a checkout.
    """
    for parent in Path(__file__).resolve().parents:
        if (parent / "charts").is_dir() and (parent / "pyproject.toml").is_file():
            return parent / DEFAULT_OUTPUT
    return DEFAULT_OUTPUT


def generate(model_path: Path | None = None) -> dict[str, str]:
    """File name -> YAML text of every CRD of the model."""
    model = load_model(model_path)
    return {name: render_yaml(model, crd) for name, crd in build_crds(model).items()}


def check(folder: Path, model_path: Path | None = None) -> None:
    """Raise :class:`StaleOutputError` when ``folder`` differs from the generated files."""
    diff = diff_outputs(generate(model_path), folder)
    if diff:
        raise StaleOutputError(f"{folder} is stale; regenerate with: python -m slinky_crdgen", diff)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m slinky_crdgen",
        description="Generate the slinky.slurm.net CRDs from the compact API model.",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help=f"output folder (default: {DEFAULT_OUTPUT} of this checkout)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 with a diff when the files in the output folder are stale",
    )
    parser.add_argument(
        "--model", type=Path, default=None, help="model file (default: the packaged v1beta1)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns 0 (done / current), 1 (stale or bad input), 2 (usage)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    folder: Path = args.output or default_output()
    try:
        if args.check:
            check(folder, args.model)
            return 0
        changed = write_outputs(generate(args.model), folder)
    except StaleOutputError as exc:
        sys.stderr.write(f"{exc.diff}\ncrdgen: {exc}\n")
        return 1
    except CrdGenError as exc:
        sys.stderr.write(f"crdgen: {exc}\n")
        return 1
    if changed:
        sys.stderr.write(f"crdgen: wrote {len(changed)} file(s) under {folder}\n")
    return 0
