"""Slurm hostlist expressions: expand and compress with Slurm's semantics.

A hostlist is a comma-separated list of host expressions; each expression is literal text with
zero or more bracket groups (``gpu[0001-0018]``, ``r[1-2]n[01-04]``, ``n[1,3,5-7]x``). Several
bracket groups expand as a cartesian product, leftmost group outermost.

Zero padding is significant, as in Slurm's ``src/common/hostlist.c``: the width of a range is the
length of its lower bound as written (``n[08-10]`` is ``n08,n09,n10``; ``n[8-010]`` is
``n8,n9,n10``), and compression only joins two hosts into one range when one width prints both:
``n8,n9,n010`` compresses to ``n[8-9,010]``, never ``n[8-010]``.

Compression follows Slurm's hostname model: the numeric part is the run of trailing digits; a
name whose trailing digit run is longer than 18 digits is kept literally (Slurm keeps such numbers
in an ``unsigned long``). Output is sorted and de-duplicated, so it does not depend on input order.

Size: :func:`count` tells how many hosts an expression names without expanding it, and
:func:`expand` refuses one naming more than Slurm's 65,536 hosts (all ranges together) before it
builds a single name, so ``n[0-999999][0-999999]`` costs microseconds, not gigabytes.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import TYPE_CHECKING

from slinky_topology.errors import InputError
from slinky_topology.limits import MAX_HOSTS

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "MAX_HOSTS",
    "MAX_NUM_DIGITS",
    "MAX_RANGE_HOSTS",
    "canonical",
    "compress",
    "count",
    "expand",
    "is_valid",
    "sort_hosts",
]

MAX_NUM_DIGITS = 18
#: Most hosts one hostlist may name, across all its ranges (Slurm's node limit).
MAX_RANGE_HOSTS = MAX_HOSTS
_FORBIDDEN = frozenset("[], \t\n\r")
_DIGITS = frozenset("0123456789")
_MAX_RANGE_DIGITS = 64  # a host name is at most 64 characters; int() of 4301 digits fails

# One bracket group: its ranges as (lo, hi, width); a literal piece is a str.
_Range = tuple[int, int, int]
_Piece = str | list[_Range]


def _split_top(text: str) -> list[str]:
    """Split ``text`` on commas outside brackets; raise on unbalanced brackets."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise InputError(f"nested '[' at offset {i} in hostlist {text!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise InputError(f"unmatched ']' at offset {i} in hostlist {text!r}")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise InputError(f"unclosed '[' in hostlist {text!r}")
    parts.append(text[start:])
    return parts


def _ranges(body: str, text: str) -> list[_Range]:
    """Parse the inside of one bracket group (``1,3,05-07``) without expanding it."""
    out: list[_Range] = []
    for item in body.split(","):
        lo_s, sep, hi_s = item.partition("-")
        if not lo_s or not set(lo_s) <= _DIGITS or (sep and (not hi_s or not set(hi_s) <= _DIGITS)):
            raise InputError(f"bad range {item!r} in hostlist {text!r} (use N or N-M, digits only)")
        if max(len(lo_s), len(hi_s)) > _MAX_RANGE_DIGITS:
            raise InputError(
                f"range {item[:20]!r}... in hostlist {text[:40]!r}... has numbers of more than "
                f"{_MAX_RANGE_DIGITS} digits"
            )
        lo = int(lo_s)
        hi = int(hi_s) if sep else lo
        if hi < lo:
            raise InputError(f"range {item!r} in hostlist {text!r} goes backwards")
        out.append((lo, hi, len(lo_s)))
    return out


def _parse(text: str) -> list[list[_Piece]]:
    """Each top-level expression of ``text`` as literal pieces and bracket groups."""
    if any(c in " \t\n\r" for c in text):
        raise InputError(f"whitespace in hostlist {text!r}")
    exprs: list[list[_Piece]] = []
    for expr in _split_top(text):
        if not expr:
            continue
        pieces: list[_Piece] = []
        i = 0
        while i < len(expr):
            j = expr.find("[", i)
            if j < 0:
                pieces.append(expr[i:])
                break
            if j > i:
                pieces.append(expr[i:j])
            k = expr.index("]", j)
            pieces.append(_ranges(expr[j + 1 : k], text))
            i = k + 1
        exprs.append(pieces)
    return exprs


def _count(exprs: list[list[_Piece]]) -> int:
    total = 0
    for pieces in exprs:
        n = 1
        for piece in pieces:
            if not isinstance(piece, str):
                n *= sum(hi - lo + 1 for lo, hi, _ in piece)
        total += n
    return total


def count(text: str) -> int:
    """How many host names ``text`` expands to, computed without expanding it.

    Raises :class:`InputError` for malformed input, like :func:`expand`.
    """
    return _count(_parse(text))


def expand(text: str, limit: int | None = MAX_HOSTS) -> list[str]:
    """Expand a Slurm hostlist expression into host names, in written order.

    Raises :class:`InputError` for malformed input (unbalanced or nested brackets, bad or
    backwards ranges, whitespace) and, before expanding anything, when the expression names more
    than ``limit`` hosts in all (default: Slurm's 65,536; ``None``: no limit). Empty list
    elements are skipped, as Slurm does.
    """
    exprs = _parse(text)
    if limit is not None:
        total = _count(exprs)
        if total > limit:
            shown = text if len(text) <= 60 else text[:57] + "..."
            raise InputError(
                f"hostlist {shown!r} names {total:,} hosts, too large: at most {limit:,} "
                "(fix the ranges or split the nodes)"
            )
    hosts: list[str] = []
    for pieces in exprs:
        groups = [
            [piece]
            if isinstance(piece, str)
            else [f"{n:0{w}d}" for lo, hi, w in piece for n in range(lo, hi + 1)]
            for piece in pieces
        ]
        if len(groups) == 1:
            hosts.extend(groups[0])
        else:
            hosts.extend("".join(p) for p in itertools.product(*groups))
    return hosts


def is_valid(text: str) -> bool:
    """Return whether ``text`` parses as a hostlist."""
    try:
        expand(text)
    except InputError:
        return False
    return True


def _widths(digits: str) -> tuple[int, int]:
    """Widths that print the number exactly as ``digits`` (Slurm's width equivalence)."""
    if len(digits) > 1 and digits[0] == "0":
        return len(digits), len(digits)
    return 1, len(digits)


def _group(hosts: Iterable[str]) -> tuple[set[str], dict[str, set[str]]]:
    """Literal names, and prefix -> trailing digit strings of the numbered ones.

    A name's numeric part is its run of trailing ASCII digits, unless that run is longer than
    :data:`MAX_NUM_DIGITS` (then the name is literal). Raises :class:`InputError` for a name that
    cannot appear in a hostlist.
    """
    names = hosts if isinstance(hosts, (list, tuple)) else list(hosts)
    if "" in names or not _FORBIDDEN.isdisjoint("".join(names)):
        for name in names:  # one check of all names found a bad one: name it
            if not name or not _FORBIDDEN.isdisjoint(name):
                raise InputError(f"host name {name!r} cannot appear in a hostlist")
    literals: set[str] = set()
    numbered: dict[str, set[str]] = defaultdict(set)
    for name in names:
        prefix = name.rstrip("0123456789")
        cut = len(prefix)
        if cut == len(name) or len(name) - cut > MAX_NUM_DIGITS:
            literals.add(name)
        else:
            numbered[prefix].add(name[cut:])
    return literals, numbered


def _pieces(hosts: Iterable[str]) -> list[tuple[str, int, str | list[list[int]]]]:
    """Sorted (sort name, kind, literal name or ranges) of ``hosts``; kind 0 literal, 1 numbered.

    Each range is ``[lo, hi, width, wmax]``: the numbers lo..hi printed ``width`` wide give
    exactly the names they stand for (see :func:`_runs`).
    """
    literals, numbered = _group(hosts)
    pieces: list[tuple[str, int, str | list[list[int]]]] = [(n, 0, n) for n in literals]
    for prefix, digits in numbered.items():
        pieces.append((prefix, 1, _runs(digits)))
    pieces.sort(key=lambda p: (p[0], p[1]))
    return pieces


def compress(hosts: Iterable[str]) -> str:
    """Compress host names into a sorted, de-duplicated Slurm hostlist expression.

    ``expand(compress(s))`` has exactly the hosts of ``s`` once each. Raises :class:`InputError`
    for a name that is empty or holds ``[``, ``]``, ``,`` or whitespace.
    """
    return _compressed(_pieces(hosts))


def _compressed(pieces: list[tuple[str, int, str | list[list[int]]]]) -> str:
    return ",".join(
        body if isinstance(body, str) else _ranged(name, body) for name, _, body in pieces
    )


def _runs(digits: set[str]) -> list[list[int]]:
    """The ranges of one prefix's numbers, sorted by (lo, width)."""
    lengths = {len(d) for d in digits}
    if len(lengths) == 1:
        # One length (the usual case): every number prints at that width, so consecutive
        # numbers always join and the width constraint never splits a run.
        (width,) = lengths
        nums = sorted(map(int, digits))
        runs: list[list[int]] = []
        lo = prev = nums[0]
        for num in nums[1:]:
            if num != prev + 1:
                runs.append([lo, prev, width, width])
                lo = num
            prev = num
        runs.append([lo, prev, width, width])
        return runs
    return _runs_mixed(digits)


def _runs_mixed(digits: set[str]) -> list[list[int]]:
    # Each open range is [lo, hi, wmin, wmax]; ranges are keyed by their current upper bound.
    ranges: list[list[int]] = []
    open_by_hi: dict[int, list[list[int]]] = defaultdict(list)
    for num, _len, text in sorted((int(d), len(d), d) for d in digits):
        a, b = _widths(text)
        placed = False
        candidates = open_by_hi.get(num - 1)
        if candidates:
            for idx, rng in enumerate(candidates):
                lo_w, hi_w = max(rng[2], a), min(rng[3], b)
                if lo_w <= hi_w:
                    del candidates[idx]
                    rng[1], rng[2], rng[3] = num, lo_w, hi_w
                    open_by_hi[num].append(rng)
                    placed = True
                    break
        if not placed:
            rng = [num, num, a, b]
            ranges.append(rng)
            open_by_hi[num].append(rng)
    ranges.sort(key=lambda r: (r[0], r[2]))
    return ranges


def _ranged(prefix: str, ranges: list[list[int]]) -> str:
    texts = []
    for lo, hi, w, _ in ranges:
        texts.append(f"{lo:0{w}d}" if lo == hi else f"{lo:0{w}d}-{hi:0{w}d}")
    if len(texts) == 1 and ranges[0][0] == ranges[0][1]:
        return prefix + texts[0]
    return f"{prefix}[{','.join(texts)}]"


def sort_hosts(hosts: Iterable[str]) -> tuple[str, ...]:
    """The hosts de-duplicated, in canonical order (that of ``expand(compress(hosts))``)."""
    return _expanded(_pieces(hosts))


def canonical(hosts: Iterable[str]) -> tuple[tuple[str, ...], str]:
    """``(sort_hosts(hosts), compress(hosts))`` from one pass over the names."""
    pieces = _pieces(hosts)
    return _expanded(pieces), _compressed(pieces)


def _expanded(pieces: list[tuple[str, int, str | list[list[int]]]]) -> tuple[str, ...]:
    out: list[str] = []
    for name, _kind, body in pieces:
        if isinstance(body, str):
            out.append(body)
            continue
        for lo, hi, w, _ in body:
            out.extend(f"{name}{n:0{w}d}" for n in range(lo, hi + 1))
    return tuple(out)
