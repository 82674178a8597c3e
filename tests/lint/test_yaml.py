"""yamllint over every hand-written YAML file (Go templates excluded, see .yamllint.yaml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from slinky_harness.core.paths import REPO_ROOT


def test_yamllint() -> None:
    """yamllint reports no error anywhere in the repository."""
    yamllint = Path(sys.executable).parent / "yamllint"
    proc = subprocess.run(
        [str(yamllint), "--format", "parsable", "-c", str(REPO_ROOT / ".yamllint.yaml"), "."],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    errors = [line for line in proc.stdout.splitlines() if "[error]" in line]
    assert proc.returncode == 0 and not errors, "\n".join(errors) or proc.stderr
