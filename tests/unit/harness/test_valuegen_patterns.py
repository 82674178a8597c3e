"""Values drawn for a schema ``pattern`` are the ones Helm accepts: Helm checks patterns with Go's
regexp, whose ``$`` matches only at the very end of the text; Python's matches before a trailing
newline too, so a drawn ``"\\n"`` once passed for ``^$`` and Helm refused it (tests/props)."""

from __future__ import annotations

import re

import pytest

from slinky_harness.helm.valuegen import go_pattern

# (pattern, text, does Go's regexp match it): Go's answers, read from its documentation of `$`
# ("at end of text ... or line (flag m=true)"), not from this module.
CASES = [
    pytest.param(r"^$|^[a-z0-9][-_a-z0-9]*$", "\n", False, id="empty-or-name-newline"),
    pytest.param(r"^$|^[a-z0-9][-_a-z0-9]*$", "", True, id="empty"),
    pytest.param(r"^$|^[a-z0-9][-_a-z0-9]*$", "ab-1", True, id="name"),
    pytest.param(r"^[0-9]+$", "10\n", False, id="digits-newline"),
    pytest.param(r"^[$a]*$", "a$a", True, id="dollar-in-class-is-literal"),
    pytest.param(r"^a\$$", "a$", True, id="escaped-dollar-is-literal"),
    pytest.param(r"^a\$$", "a$\n", False, id="escaped-dollar-then-newline"),
]


@pytest.mark.parametrize(("pattern", "text", "go_matches"), CASES)
def test_rewritten_pattern_matches_as_go_does(pattern: str, text: str, go_matches: bool) -> None:
    assert bool(re.search(go_pattern(pattern), text)) is go_matches


def test_python_alone_disagrees_with_go_on_a_trailing_newline() -> None:
    """The reason for the rewrite: without it Python accepts what Go refuses."""
    assert re.search(r"^[0-9]+$", "10\n")
