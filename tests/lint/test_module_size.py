"""No Python module of scripts/ is over 600 lines: a longer one holds more than one concern.

Split it by concern (see CONTRIBUTING's layout), never by line count alone.
"""

from __future__ import annotations

from slinky_harness.core.paths import REPO_ROOT

MAX_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    sizes = {
        str(path.relative_to(REPO_ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in (REPO_ROOT / "scripts").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    long = sorted(f"{p}: {n} lines" for p, n in sizes.items() if n > MAX_LINES)
    assert long == [], f"split by concern to at most {MAX_LINES} lines: {long}"
