"""Unit tests of slinky_topology.hostlist (Slurm hostlist semantics)."""

from __future__ import annotations

import pytest

from slinky_topology import hostlist
from slinky_topology.errors import InputError


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        pytest.param("", [], id="empty"),
        pytest.param("login", ["login"], id="no-digits"),
        pytest.param("gpu[0001-0003]", ["gpu0001", "gpu0002", "gpu0003"], id="padded-range"),
        pytest.param("n[8-010]", ["n8", "n9", "n10"], id="width-from-lower-bound"),
        pytest.param("n[08-10]", ["n08", "n09", "n10"], id="padded-lower-bound"),
        pytest.param("n[1,3,5-6]", ["n1", "n3", "n5", "n6"], id="several-ranges"),
        pytest.param("n[1-2]-ib", ["n1-ib", "n2-ib"], id="suffix"),
        pytest.param("r[1-2]n[01-02]", ["r1n01", "r1n02", "r2n01", "r2n02"], id="two-groups"),
        pytest.param("a,b[1-2],,c", ["a", "b1", "b2", "c"], id="list-and-empty-item"),
    ],
)
def test_expand(text: str, hosts: list[str]) -> None:
    assert hostlist.expand(text) == hosts


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("n[1-2", "unclosed", id="unclosed"),
        pytest.param("n1-2]", "unmatched", id="unmatched"),
        pytest.param("n[[1]]", "nested", id="nested"),
        pytest.param("n[3-1]", "backwards", id="backwards"),
        pytest.param("n[a-b]", "bad range", id="letters"),
        pytest.param("n[1-]", "bad range", id="open-range"),
        pytest.param("n[]", "bad range", id="empty-brackets"),
        pytest.param("n1 n2", "whitespace", id="whitespace"),
        pytest.param("n[0-99999999]", "too large", id="huge-range"),
    ],
)
def test_expand_rejects(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        hostlist.expand(text)


@pytest.mark.parametrize(
    ("hosts", "text"),
    [
        pytest.param(["n8", "n9", "n010"], "n[8-9,010]", id="never-merge-n9-n010"),
        pytest.param(["n9", "n10", "n11"], "n[9-11]", id="natural-widths-merge"),
        pytest.param(["n08", "n09", "n10"], "n[08-10]", id="padded-then-natural"),
        pytest.param(["n08", "n9", "n10"], "n[08,9-10]", id="padded-vs-unpadded"),
        pytest.param(["n010", "n10"], "n[10,010]", id="same-number-two-widths"),
        pytest.param(["gpu3", "gpu1", "gpu2", "gpu1"], "gpu[1-3]", id="unsorted-duplicates"),
        pytest.param(["b", "a1", "a2", "a"], "a,a[1-2],b", id="literals-and-ranges"),
        pytest.param(["n1a", "n2a"], "n1a,n2a", id="suffixes-kept-literal"),
        pytest.param(["x7"], "x7", id="single-no-brackets"),
        pytest.param(
            ["n" + "1" * 19, "n" + "1" * 18 + "2"],
            "n1111111111111111111,n1111111111111111112",
            id="long-numbers-literal",
        ),
    ],
)
def test_compress(hosts: list[str], text: str) -> None:
    assert hostlist.compress(hosts) == text
    assert set(hostlist.expand(text)) == set(hosts)


@pytest.mark.parametrize("bad", ["a,b", "a[1]", "a b", ""])
def test_compress_rejects_unsafe_names(bad: str) -> None:
    with pytest.raises(InputError, match="cannot appear"):
        hostlist.compress([bad])


def test_sort_hosts_is_canonical_order() -> None:
    assert hostlist.sort_hosts(["n10", "n9", "n010", "m"]) == ("m", "n9", "n10", "n010")
    assert hostlist.is_valid("n[1-2]") and not hostlist.is_valid("n[2-1]")
