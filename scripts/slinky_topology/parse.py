"""Parsers for Slurm topology files: ``topology.conf`` and ``topology.yaml``.

They return the same :class:`~slinky_topology.model.TopologyDoc` the generator builds, so
``parse(render(doc)) == doc``. Syntax errors raise :class:`~slinky_topology.errors.InputError`
with ``path:line``; semantic rules are left to :mod:`slinky_topology.validate` (so a parsed file
with duplicate names still loads and is reported in full).

Inputs are bounded before they are expanded: YAML through :mod:`slinky_topology.limits` (nesting,
aliases), and the host names of one file through a budget of
:data:`~slinky_topology.limits.MAX_FILE_HOSTS`, counted before each hostlist is expanded.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from slinky_topology import hostlist
from slinky_topology.errors import InputError
from slinky_topology.limits import MAX_FILE_HOSTS, compose_and_load_yaml
from slinky_topology.model import (
    Block,
    BlockSpec,
    FlatSpec,
    Topology,
    TopologyDoc,
    TreeSpec,
    TreeSwitch,
)

__all__ = ["detect_format", "parse_topology_conf", "parse_topology_file", "parse_topology_yaml"]

_SWITCH_KEYS = {"switchname", "switches", "nodes", "linkspeed"}
_BLOCK_KEYS = {"blockname", "nodes"}
_SIZE_TEXT = re.compile(r"[+-]?[0-9]{1,18}")


def _where(location: str | None, line: int) -> str:
    return f"{location}:{line}" if location else f"line {line}"


class _Budget:
    """Host names one file may still list (counted before each hostlist is expanded)."""

    def __init__(self, left: int = MAX_FILE_HOSTS) -> None:
        self.left = left

    def hosts(self, value: str, where: str) -> tuple[str, ...]:
        try:
            n = hostlist.count(value)
            if self.left < n <= hostlist.MAX_HOSTS:
                raise InputError(
                    f"the file lists more than {MAX_FILE_HOSTS:,} host names by here "
                    "(16 topologies of Slurm's 65,536 nodes); split it or fix the ranges"
                )
            self.left -= n
            return tuple(hostlist.expand(value))
        except InputError as exc:
            raise InputError(exc.message, location=where) from None


def _pairs(content: str, where: str) -> dict[str, str]:
    """``Key=Value`` tokens of one line, keys lower-cased; each key once."""
    pairs: dict[str, str] = {}
    for token in content.split():
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise InputError(f"expected Key=Value, got {token!r}", location=where)
        lkey = key.lower()
        if lkey in pairs:
            raise InputError(f"{key}= given twice on one line", location=where)
        pairs[lkey] = value
    return pairs


class _ConfReader:
    """The lines of one topology.conf, kind by kind."""

    def __init__(self) -> None:
        self.budget = _Budget()
        self.switches: list[TreeSwitch] = []
        self.blocks: list[Block] = []
        self.sizes: tuple[int, ...] | None = None
        self.sizes_line: int | None = None

    def line(self, content: str, lineno: int, where: str) -> None:
        pairs = _pairs(content, where)
        first = content.split("=", 1)[0].lower()
        if first == "switchname":
            self._switch(pairs, lineno, where)
        elif first == "blockname":
            self._block(pairs, lineno, where)
        elif first == "blocksizes":
            self._sizes(pairs, lineno, where)
        else:
            raise InputError(
                f"unknown line starting with {first!r} (expected SwitchName=, BlockName= or "
                "BlockSizes=)",
                location=where,
            )

    def _hosts(self, pairs: dict[str, str], key: str, where: str) -> tuple[str, ...]:
        return self.budget.hosts(pairs[key], where) if key in pairs else ()

    def _switch(self, pairs: dict[str, str], lineno: int, where: str) -> None:
        unknown = set(pairs) - _SWITCH_KEYS
        if unknown:
            raise InputError(f"unknown key {sorted(unknown)[0]} on a switch line", location=where)
        children = self._hosts(pairs, "switches", where)
        nodes = self._hosts(pairs, "nodes", where)
        self.switches.append(TreeSwitch(pairs["switchname"], children, nodes, line=lineno))

    def _block(self, pairs: dict[str, str], lineno: int, where: str) -> None:
        unknown = set(pairs) - _BLOCK_KEYS
        if unknown:
            raise InputError(f"unknown key {sorted(unknown)[0]} on a block line", location=where)
        nodes = self._hosts(pairs, "nodes", where)
        self.blocks.append(Block(pairs["blockname"], nodes, line=lineno))

    def _sizes(self, pairs: dict[str, str], lineno: int, where: str) -> None:
        if len(pairs) != 1:
            raise InputError("BlockSizes= must be alone on its line", location=where)
        if self.sizes is not None:
            raise InputError("BlockSizes= given twice", location=where)
        try:
            self.sizes = tuple(int(v) for v in pairs["blocksizes"].split(","))
        except ValueError:
            raise InputError(
                f"BlockSizes={pairs['blocksizes']} is not a list of integers", location=where
            ) from None
        self.sizes_line = lineno

    def doc(self, location: str | None) -> TopologyDoc:
        if self.switches and (self.blocks or self.sizes is not None):
            raise InputError(
                "file mixes SwitchName= and BlockName=/BlockSizes= lines", location=location
            )
        if self.switches:
            return TopologyDoc((Topology("default", True, TreeSpec(tuple(self.switches))),))
        if self.blocks or self.sizes is not None:
            spec = BlockSpec(self.sizes or (), tuple(self.blocks), line=self.sizes_line)
            return TopologyDoc((Topology("default", True, spec),))
        return TopologyDoc(())


def parse_topology_conf(text: str, location: str | None = None) -> TopologyDoc:
    """Parse topology.conf (tree or block) into a one-topology doc named ``default``."""
    reader = _ConfReader()
    for lineno, raw in enumerate(text.splitlines(), start=1):
        content = raw.split("#", 1)[0].strip()
        if content:
            reader.line(content, lineno, _where(location, lineno))
    return reader.doc(location)


def _mapping_keys(node: yaml.Node) -> list[tuple[str, yaml.Node, yaml.Node]]:
    assert isinstance(node, yaml.MappingNode)
    return [(str(k.value), k, v) for k, v in node.value]


def _str(value: Any, what: str, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    raise InputError(f"{what} must be a string", location=where)


_PLUGINS = ("tree", "block", "flat", "ring", "torus3d")
_ITEM_KEYS = {"topology", "cluster_default", *_PLUGINS}


def parse_topology_yaml(text: str, location: str | None = None) -> TopologyDoc:
    """Parse topology.yaml: a list of ``{topology, cluster_default, tree|block|flat}`` items.

    ``cluster_default`` may be absent (false, as topology.yaml(5) says).
    """
    root, data = compose_and_load_yaml(text, location or "<topology.yaml>")
    budget = _Budget()
    if root is None:
        return TopologyDoc(())
    if not isinstance(root, yaml.SequenceNode) or not isinstance(data, list):
        raise InputError("top level must be a list of topologies", location=location)
    return TopologyDoc(
        tuple(
            _topology(item_node, item, location, budget)
            for item_node, item in zip(root.value, data, strict=True)
        )
    )


def _topology(item_node: yaml.Node, item: Any, location: str | None, budget: _Budget) -> Topology:
    line = item_node.start_mark.line + 1
    where = _where(location, line)
    if not isinstance(item_node, yaml.MappingNode) or not isinstance(item, dict):
        raise InputError("each topology must be a mapping", location=where)
    keys = _mapping_keys(item_node)
    if not keys or keys[0][0] != "topology":
        raise InputError("'topology' must be the first key of each item", location=where)
    name = _str(item["topology"], "topology", where)
    unknown = [k for k, _, _ in keys if k not in _ITEM_KEYS]
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r} in topology {name}", location=where)
    plugins = [k for k, _, _ in keys if k in _PLUGINS]
    if len(plugins) != 1:
        raise InputError(
            f"topology {name} must have exactly one of tree, block, flat", location=where
        )
    default = item.get("cluster_default", False)
    if not isinstance(default, bool):
        raise InputError(f"cluster_default of {name} must be true or false", location=where)
    kind = plugins[0]
    value_node = next(v for k, _, v in keys if k == kind)
    spec = _spec(
        kind, item[kind], value_node, name=name, where=where, location=location, budget=budget
    )
    return Topology(name, default, spec, line=line)


def _spec(
    kind: str,
    value: Any,
    node: yaml.Node,
    *,
    name: str,
    where: str,
    location: str | None,
    budget: _Budget,
) -> TreeSpec | BlockSpec | FlatSpec:
    """The plugin part of one item; errors about the item itself point at ``where``."""
    if kind == "tree":
        return _parse_tree(value, node, location, name, budget)
    if kind == "block":
        return _parse_block(value, node, location, name, budget)
    if kind != "flat":
        raise InputError(f"{kind} topologies (Slurm 26.05) are not supported yet", location=where)
    if value is not True and not (isinstance(value, dict) and set(value) <= {"alpha_step_rank"}):
        raise InputError(
            f"flat of {name} must be true or {{alpha_step_rank: bool}}", location=where
        )
    return FlatSpec()


def _items(
    value: Any, node: yaml.Node, key: str, location: str | None, name: str
) -> list[tuple[dict[str, Any], int]]:
    where = _where(location, node.start_mark.line + 1)
    if not isinstance(value, dict) or not isinstance(node, yaml.MappingNode):
        raise InputError(f"{name}: expected a mapping", location=where)
    lst = value.get(key, [])
    # the last one: with a key given twice, YAML keeps the last value
    lst_node = next((v for k, _, v in reversed(_mapping_keys(node)) if k == key), None)
    if not isinstance(lst, list) or (lst and not isinstance(lst_node, yaml.SequenceNode)):
        raise InputError(f"{name}: {key} must be a list", location=where)
    out: list[tuple[dict[str, Any], int]] = []
    for i, entry in enumerate(lst):
        assert isinstance(lst_node, yaml.SequenceNode)
        line = lst_node.value[i].start_mark.line + 1
        if not isinstance(entry, dict):
            raise InputError(
                f"{name}: each {key} item must be a mapping", location=_where(location, line)
            )
        out.append((entry, line))
    return out


def _parse_tree(
    value: Any, node: yaml.Node, location: str | None, name: str, budget: _Budget
) -> TreeSpec:
    _hosts = budget.hosts
    unknown = set(value) - {"switches"} if isinstance(value, dict) else set()
    if unknown:
        raise InputError(
            f"{name}: unknown tree key {sorted(unknown, key=str)[0]!r}",
            location=_where(location, node.start_mark.line + 1),
        )
    switches: list[TreeSwitch] = []
    for entry, line in _items(value, node, "switches", location, name):
        where = _where(location, line)
        bad = set(entry) - {"switch", "children", "nodes"}
        if bad or "switch" not in entry:
            raise InputError(f"{name}: switch items take switch, children, nodes", location=where)
        children = (
            _hosts(_str(entry["children"], "children", where), where)
            if entry.get("children") is not None
            else ()
        )
        nodes = (
            _hosts(_str(entry["nodes"], "nodes", where), where)
            if entry.get("nodes") is not None
            else ()
        )
        switches.append(
            TreeSwitch(_str(entry["switch"], "switch", where), children, nodes, line=line)
        )
    return TreeSpec(tuple(switches))


def _parse_block(
    value: Any, node: yaml.Node, location: str | None, name: str, budget: _Budget
) -> BlockSpec:
    _hosts = budget.hosts
    where = _where(location, node.start_mark.line + 1)
    unknown = set(value) - {"block_sizes", "blocks"} if isinstance(value, dict) else set()
    if unknown:
        raise InputError(
            f"{name}: unknown block key {sorted(unknown, key=str)[0]!r}", location=where
        )
    blocks: list[Block] = []
    for entry, line in _items(value, node, "blocks", location, name):
        bwhere = _where(location, line)
        bad = set(entry) - {"block", "nodes"}
        if bad or "block" not in entry:
            raise InputError(f"{name}: block items take block, nodes", location=bwhere)
        nodes = (
            _hosts(_str(entry["nodes"], "nodes", bwhere), bwhere)
            if entry.get("nodes") is not None
            else ()
        )
        blocks.append(Block(_str(entry["block"], "block", bwhere), nodes, line=line))
    raw = value.get("block_sizes")
    sizes: tuple[int, ...] = ()
    if raw is not None:
        if isinstance(raw, str):
            raw = raw.split(",")
        if not isinstance(raw, list) or not all(_is_size(v) for v in raw):
            raise InputError(f"{name}: block_sizes must be a list of integers", location=where)
        sizes = tuple(int(v) for v in raw)
    return BlockSpec(sizes, tuple(blocks), line=node.start_mark.line + 1)


def _is_size(value: Any) -> bool:
    """An integer, or text holding one (``block_sizes: 18,36`` splits into strings)."""
    if isinstance(value, str):
        return _SIZE_TEXT.fullmatch(value.strip()) is not None
    return isinstance(value, int) and not isinstance(value, bool)


def detect_format(text: str, path: str | None = None) -> str:
    """``"yaml"`` or ``"conf"``, from the file name, else from the first meaningful line."""
    if path is not None:
        lower = path.lower()
        if lower.endswith((".yaml", ".yml")):
            return "yaml"
        if lower.endswith(".conf"):
            return "conf"
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            return "yaml" if line.startswith("-") else "conf"
    return "conf"


def parse_topology_file(text: str, location: str | None = None) -> tuple[TopologyDoc, bool]:
    """Parse either format; return ``(doc, is_conf)``."""
    if detect_format(text, location) == "yaml":
        return parse_topology_yaml(text, location), False
    return parse_topology_conf(text, location), True
