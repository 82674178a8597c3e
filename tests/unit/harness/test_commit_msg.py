"""The commit rule's checker (the ``commit-msg`` hook of .pre-commit-config.yaml)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from slinky_harness.apps import commit_msg

if TYPE_CHECKING:
    from pathlib import Path

SUBJECT_72 = "x" * 72


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("harness: one sbatch --test-only\n", id="subject-only"),
        pytest.param(f"{SUBJECT_72}\n\nWhy: the body.\nMore.\n", id="72-and-body"),
        pytest.param(
            "docs: move\n\nWhy.\n# Please enter the commit message\n#\n", id="git-comments"
        ),
        pytest.param(
            f"docs: move\n\nWhy.\n{commit_msg.SCISSORS}\ndiff --git a/x b/x\n" + "y" * 200 + "\n",
            id="scissors",
        ),
        pytest.param("\n\ndocs: move\n\n\n", id="blank-lines-around"),
    ],
)
def test_messages_that_keep_the_rule(text: str) -> None:
    assert commit_msg.problems(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            SUBJECT_72 + "y\n",
            [
                "the subject is 73 characters, more than 72: shorten it and move the detail to the body"
            ],
            id="73",
        ),
        pytest.param(
            "docs: move\nWhy, straight below.\n",
            ["line 2 is not blank: leave one blank line between the subject and the body"],
            id="no-blank-line",
        ),
        pytest.param(
            "# only a comment\n\n",
            ["the message is empty: write a subject of at most 72 characters"],
            id="empty",
        ),
    ],
)
def test_messages_that_break_the_rule(text: str, expected: list[str]) -> None:
    assert commit_msg.problems(text) == expected


def test_main_prints_each_problem_once_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = tmp_path / "COMMIT_EDITMSG"
    message.write_text("z" * 80 + "\nbody\n", encoding="utf-8")
    assert commit_msg.main([str(message)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert err[0].startswith("commit message: the subject is 80 characters")
    assert err[1].startswith("commit message: line 2 is not blank")


def test_main_exits_0_on_a_good_message_and_2_without_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = tmp_path / "COMMIT_EDITMSG"
    message.write_text("docs: move\n\nWhy.\n", encoding="utf-8")
    assert commit_msg.main([str(message)]) == 0
    assert commit_msg.main([str(tmp_path / "missing")]) == 2
    assert "missing" in capsys.readouterr().err
