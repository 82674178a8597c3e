"""The Markdown command-block reader and runner behind the documents' cluster-tier checks."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from slinky_harness.core import doc_commands

if TYPE_CHECKING:
    from pathlib import Path

DOC = """# Title

<!-- cluster-tier: runs -->
```sh
helm install a ./charts/a \\
  --set x=1
```

Some text, then an unmarked block:

```console
$ kubectl get pods
```

<!-- cluster-tier: not run: needs a registry -->

````sh
helm push x oci://example
```
still inside: a shorter fence does not close it
````

```yaml
helm: not a command, a YAML key
```

<!-- cluster-tier: not run -->
~~~
kubectl apply -f x.yaml
~~~
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "README.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_blocks_marks_and_fences(tmp_path: Path) -> None:
    """Each fence's block, its info string and mark (the last non-blank line above it); a longer
    fence is closed only by one as long; a YAML key named helm is no command."""
    found = doc_commands.blocks(_write(tmp_path, DOC))
    assert [(b.line, b.info, b.mark, b.is_command) for b in found] == [
        (4, "sh", "runs", True),
        (11, "console", None, True),
        (17, "sh", "not run", True),
        (23, "yaml", None, False),
        (28, "", "not run", True),
    ]
    assert found[0].text == "helm install a ./charts/a \\\n  --set x=1\n"
    assert found[2].reason == "needs a registry"
    assert "still inside" in found[2].text


def test_unmarked_names_the_line_and_the_fix(tmp_path: Path) -> None:
    problems = doc_commands.unmarked(_write(tmp_path, DOC))
    assert len(problems) == 2
    assert problems[0].endswith(
        "README.md:11: a helm/kubectl block without a mark; put <!-- cluster-tier: runs --> "
        "(the cluster tier runs it as written) or <!-- cluster-tier: not run: <why> --> on the "
        "line above its fence"
    )
    assert problems[1].endswith("README.md:28: 'not run' needs its reason after a colon")
    assert [b.line for b in doc_commands.runnable(_write(tmp_path, DOC))] == [4]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<!-- cluster-tier: sometimes -->\n```sh\nhelm x\n```\n", ":2: unknown mark"),
        ("```sh\nhelm x\n", ":1: code fence never closed"),
    ],
)
def test_bad_documents_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(doc_commands.DocCommandError, match=message):
        doc_commands.blocks(_write(tmp_path, text))


def test_run_is_bash_strict_and_a_failure_shows_the_block(tmp_path: Path) -> None:
    """Blocks run with ``-euo pipefail``: the first failing command stops the block (the next
    line never runs), and the error names the document line, the commands and their output."""
    ok = doc_commands.Block(tmp_path / "R.md", 3, "sh", "echo one\necho two >&2\n")
    ran = doc_commands.run(ok, tmp_path, dict(os.environ))
    assert ran.output == "one\ntwo\n"
    bad = doc_commands.Block(tmp_path / "R.md", 7, "sh", "echo before\nfalse | cat\ntouch after\n")
    with pytest.raises(doc_commands.DocCommandError) as err:
        doc_commands.run(bad, tmp_path, dict(os.environ))
    assert str(err.value).startswith(f"{tmp_path / 'R.md'}:7: exit 1;")
    assert "false | cat\n" in str(err.value)
    assert str(err.value).endswith("before\n")
    assert not (tmp_path / "after").exists()


def test_workspace_copies_what_commands_name_with_links_kept(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "charts" / "a" / "charts").mkdir(parents=True)
    (root / "charts" / "b").mkdir()
    (root / "charts" / "a" / "charts" / "b").symlink_to("../../b")
    (root / "values").mkdir()
    (root / "values" / "p.yaml").write_text("x: 1\n", encoding="utf-8")
    (root / "secret.txt").write_text("no\n", encoding="utf-8")
    dest = doc_commands.workspace(tmp_path / "ws", root)
    assert (dest / "charts" / "a" / "charts" / "b").is_symlink()
    assert (dest / "values" / "p.yaml").read_text(encoding="utf-8") == "x: 1\n"
    assert not (dest / "secret.txt").exists()
    assert not (dest / "examples").exists()
