"""Parse an ``ibnetdiscover`` dump (default text format) into switch tiers.

Records are ``Switch <ports> "S-<guid>" # "<NodeDescription>" ...`` or ``Ca <ports> "H-<guid>"
# "<host> <hca>"`` followed by one ``[<port>]... "<S-|H-><guid>"[<remote port>]`` line per
connected port (topology.md Appendix A). Rules, as topograph's ``pkg/ib`` reads them:

* a switch with an HCA neighbour is a leaf (tier 0); switches linked to tier-k switches and not
  yet placed are tier k+1;
* the node name is the first word of the HCA description (``"gpu0001 mlx5_0"`` -> ``gpu0001``);
  a node with HCAs on several leaves (rail-optimised wiring) is placed under the leaf of its
  first HCA in natural order;
* the switch name is the description part between ``;`` and ``:`` (``"MF0;leaf01:MQM9700/U1"``
  -> ``leaf01``), else the whole description, made name-safe; duplicates get a GUID suffix;
* switches of one tier that see exactly the same children (Clos spines) merge into one switch
  named after the first member; a child that still sees several parents keeps the parent with the
  most children (ties: first name).
"""

from __future__ import annotations

import re
from collections import defaultdict

from slinky_topology.errors import InputError
from slinky_topology.limits import MAX_HOSTS
from slinky_topology.model import Fabric, Node, Switch, is_safe_name, natural_key

__all__ = ["compile_node_regex", "fabric_from_ibnetdiscover", "parse_ibnetdiscover"]

_RECORD = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR]-[0-9A-Fa-f]+)"\s*#\s*"([^"]*)"')
_PORT = re.compile(r'^\[(\d+)\](?:\([0-9A-Fa-f]+\))?\s*"([SHR]-[0-9A-Fa-f]+)"\[(\d+)\]')
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def parse_ibnetdiscover(
    text: str, location: str | None = None
) -> tuple[dict[str, tuple[str, str]], dict[str, set[str]]]:
    """Return ``(records, links)``: guid -> (type, description); guid -> neighbour guids."""
    records: dict[str, tuple[str, str]] = {}
    links: dict[str, set[str]] = defaultdict(set)
    current: str | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _RECORD.match(line)
        if m:
            kind, _, guid, desc = m.groups()
            current = guid
            records[guid] = (kind, desc)
            continue
        p = _PORT.match(line)
        if p:
            if current is None:
                where = f"{location}:{lineno}" if location else f"line {lineno}"
                raise InputError("port line before any Switch/Ca record", location=where)
            remote = p.group(2)
            links[current].add(remote)
            links[remote].add(current)
            continue
        if "=" in line:  # vendid=, devid=, sysimgguid=, switchguid=, caguid=
            continue
        where = f"{location}:{lineno}" if location else f"line {lineno}"
        raise InputError(f"unrecognised ibnetdiscover line {line[:60]!r}", location=where)
    if not records:
        raise InputError(
            "no Switch or Ca records found (is this ibnetdiscover output?)", location=location
        )
    return records, links


def _switch_label(desc: str, guid: str) -> str:
    if ";" in desc and ":" in desc.split(";", 1)[1]:
        desc = desc.split(";", 1)[1].split(":", 1)[0]
    name = _UNSAFE.sub("-", desc.strip()).strip("-._")[:64]
    return name if name and is_safe_name(name) else f"sw-{guid[2:].lower()}"


def compile_node_regex(node_regex: str) -> re.Pattern[str]:
    """``node_regex`` compiled; InputError saying what is wrong with it."""
    try:
        return re.compile(node_regex)
    except re.error as exc:
        raise InputError(
            f"node regex {node_regex!r} is not a valid regular expression: {exc}"
        ) from None


_Records = dict[str, tuple[str, str]]
_Links = dict[str, set[str]]


def _hcas(records: _Records, pattern: re.Pattern[str] | None) -> dict[str, tuple[str, str]]:
    """HCA guid -> (host, rest of its description), for hosts ``pattern`` keeps."""
    hcas: dict[str, tuple[str, str]] = {}
    for guid, (kind, desc) in records.items():
        words = desc.split() if kind == "Ca" else []
        if words and (pattern is None or pattern.search(words[0])):
            hcas[guid] = (words[0], " ".join(words[1:]))
    return hcas


def _labels(records: _Records, switches: list[str]) -> dict[str, str]:
    """Switch guid -> unique display name (a repeated name gets a guid suffix)."""
    used: dict[str, int] = defaultdict(int)
    for guid in switches:
        used[_switch_label(records[guid][1], guid)] += 1
    labels: dict[str, str] = {}
    for guid in switches:
        label = _switch_label(records[guid][1], guid)
        if used[label] > 1:
            label = f"{label[:50]}-{guid[2:].lower()[-8:]}"
        labels[guid] = label
    return labels


def _node_leaves(
    hcas: dict[str, tuple[str, str]], links: _Links, labels: dict[str, str]
) -> dict[str, str]:
    """Host -> leaf guid: its first HCA (natural order of the description) that reaches a switch."""
    node_leaf: dict[str, str] = {}
    hca_order = sorted(hcas.items(), key=lambda kv: (natural_key(kv[1][0]), natural_key(kv[1][1])))
    for guid, (host, _) in hca_order:
        leafs = sorted((s for s in links.get(guid, ()) if s in labels), key=lambda g: labels[g])
        if leafs and host not in node_leaf:
            node_leaf[host] = leafs[0]
    return node_leaf


class _Tiers:
    """Tier by tier above the leaves: merge same-children switches, one parent per child."""

    def __init__(self, switches: list[str], links: _Links, labels: dict[str, str]) -> None:
        self.switches = switches
        self.links = links
        self.labels = labels
        self.rep: dict[str, str] = {}  # switch guid -> representative guid
        self.parent: dict[str, str] = {}
        self.placed: set[str] = set()

    def build(self, leaves: set[str]) -> set[str]:
        """Walk up from ``leaves``; return the representatives kept."""
        self.rep.update({g: g for g in leaves})
        tier = set(leaves)
        self.placed = set(leaves)
        while tier:
            above = self._above(tier)
            if not above:
                break
            self._link(tier, self._merge(above))
            self.placed.update(above)
            tier = set(above)
        return {self.rep[g] for g in self.placed}

    def _above(self, tier: set[str]) -> dict[str, frozenset[str]]:
        above: dict[str, frozenset[str]] = {}
        for g in self.switches:
            if g not in self.placed:
                kids = frozenset(self.rep[s] for s in self.links.get(g, ()) if s in tier)
                if kids:
                    above[g] = kids
        return above

    def _merge(self, above: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
        groups: dict[frozenset[str], list[str]] = defaultdict(list)
        for g, kids in above.items():
            groups[kids].append(g)
        reps: dict[str, frozenset[str]] = {}
        for kids, members in groups.items():
            members.sort(key=lambda g: natural_key(self.labels[g]))
            for m in members:
                self.rep[m] = members[0]
            reps[members[0]] = kids
        return reps

    def _link(self, tier: set[str], reps: dict[str, frozenset[str]]) -> None:
        for child in {self.rep[g] for g in tier}:
            options = [h for h, kids in reps.items() if child in kids]
            if options:
                options.sort(key=lambda h: (-len(reps[h]), natural_key(self.labels[h])))
                self.parent[child] = options[0]


def fabric_from_ibnetdiscover(
    text: str, location: str | None = None, node_regex: str | None = None
) -> Fabric:
    """Build a tree-only fabric from an ibnetdiscover dump.

    ``node_regex``: keep only HCAs whose host name matches (e.g. to drop storage servers).
    """
    pattern = compile_node_regex(node_regex) if node_regex else None
    records, links = parse_ibnetdiscover(text, location)
    switches = sorted(g for g, (k, _) in records.items() if k == "Switch")
    labels = _labels(records, switches)
    node_leaf = _node_leaves(_hcas(records, pattern), links, labels)
    if len(node_leaf) > MAX_HOSTS:
        raise InputError(
            f"{len(node_leaf):,} hosts, more than Slurm's {MAX_HOSTS:,}; keep fewer "
            "(--ib-node-regex)",
            location=location,
        )
    leaves = set(node_leaf.values())
    if not leaves:
        raise InputError("no HCA is connected to a switch", location=location)
    tiers = _Tiers(switches, links, labels)
    kept = tiers.build(leaves)
    fabric_switches = tuple(
        Switch(labels[g], labels[tiers.parent[g]] if g in tiers.parent else None)
        for g in sorted(kept, key=lambda g: natural_key(labels[g]))
    )
    nodes = tuple(
        Node(name=host, leaf=labels[leaf])
        for host, leaf in sorted(node_leaf.items(), key=lambda kv: natural_key(kv[0]))
    )
    return Fabric(name="infiniband", switches=fabric_switches, nodes=nodes)
