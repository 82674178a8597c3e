"""``slinky-topology``: generate, check and explain Slurm topology for Slinky clusters.

Subcommands (inputs: ``--fabric FILE|default``, ``--from-nodes FILE``, ``--from-cluster``,
``--ibnetdiscover FILE``):

* ``generate`` writes topology.yaml, topology.conf (tree or block) or slurm-cluster values;
  ``--check`` exits 1 with a unified diff when the file on disk is stale;
* ``annotations`` writes the JSON map Kubernetes node -> ``topology.slinky.slurm.net/spec``;
* ``check FILE`` validates a topology.yaml or topology.conf;
* ``explain NODE`` shows where one node lands.

Exit status: 0 ok, 1 invalid input or stale file, 2 usage (130 on Ctrl-C). This is the only
module that prints: results to stdout, ``warning: ...`` and ``error: ...`` lines to stderr. Each
``error:`` line is one problem and names the input it is about (``path:line:col``,
``path::$.json.path`` or the path alone); a bad input never ends in a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

from slinky_topology import __version__
from slinky_topology.build import Plan, plan, with_block_options
from slinky_topology.emit.annotations import ANNOTATION_KEY
from slinky_topology.errors import Finding, InputError, TopologyError, ValidationError
from slinky_topology.flags import add_block_arguments
from slinky_topology.model import BlockOptions, catch_all_switch
from slinky_topology.parse import parse_topology_file
from slinky_topology.pipeline import (
    FORMATS,
    Format,
    Output,
    render_annotations_output,
    render_output,
)
from slinky_topology.sources import fabric_file, ibnetdiscover, k8s_nodes
from slinky_topology.sources.files import read_structured, read_text
from slinky_topology.validate import (
    parse_block_sizes,
    size_findings,
    validate_doc,
    validate_specs,
)
from slinky_topology.writer import STDOUT, drop_stream, write_output

if TYPE_CHECKING:
    from collections.abc import Sequence

    from slinky_topology.model import Fabric, Shape

__all__ = ["build_parser", "main", "write_atomic"]


#: Most ``error:`` lines one run prints; the rest are counted on one more line.
MAX_ERROR_LINES = 100


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path``: see :func:`slinky_topology.writer.write_output`."""
    write_output(path, text)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors: ``PROG: error: MESSAGE; see PROG --help`` (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)}; see {self.prog} --help\n")


def _add_inputs(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("input (exactly one)")
    one = src.add_mutually_exclusive_group(required=True)
    one.add_argument(
        "--fabric",
        metavar="FILE",
        help="fabric description (YAML/JSON); 'default' is the built-in demo fabric",
    )
    one.add_argument(
        "--from-nodes",
        metavar="FILE",
        help="'kubectl get nodes -o json' output (or a JSON/YAML list of Nodes)",
    )
    one.add_argument(
        "--from-cluster",
        action="store_true",
        help="read Nodes from the Kubernetes API (kubeconfig or in-cluster)",
    )
    one.add_argument("--ibnetdiscover", metavar="FILE", help="an ibnetdiscover dump")
    lab = p.add_argument_group("Kubernetes node labels")
    lab.add_argument(
        "--preset",
        default="auto",
        choices=["auto", *sorted(k8s_nodes.PRESETS)],
        help="label preset (default: auto-detect)",
    )
    lab.add_argument(
        "--label-map",
        metavar="MAP",
        help="custom labels: accelerator=KEY,subdomain=KEY,leaf=KEY,spine=KEY,core=KEY",
    )
    lab.add_argument(
        "--slurm-name-key",
        metavar="KEY",
        help="label/annotation holding the Slurm node name (default: Node name)",
    )
    lab.add_argument(
        "--node-selector",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="only Nodes with this label (repeatable)",
    )
    lab.add_argument(
        "--allow-empty",
        action="store_true",
        help="no Node, or none with a preset label, is expected: write a flat topology "
        "instead of failing",
    )
    blk = p.add_argument_group(
        "block topology of Kubernetes / ibnetdiscover inputs (a fabric file sets these per "
        "topology: blockSizes, source, oversizedDomains)"
    )
    add_block_arguments(blk)
    ib = p.add_argument_group("InfiniBand")
    ib.add_argument(
        "--ib-node-regex",
        metavar="REGEX",
        help="keep only HCAs whose host name matches (drop storage servers)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``slinky-topology``."""
    parser = _Parser(
        prog="slinky-topology",
        description="Generate, check and explain Slurm topology (topology.yaml / topology.conf "
        "and Slinky node annotations).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    gen = sub.add_parser("generate", help="write a topology file or chart values")
    _add_inputs(gen)
    out = gen.add_argument_group("output")
    out.add_argument(
        "--format",
        choices=FORMATS,
        default="topology.yaml",
        help="what to write (default: topology.yaml)",
    )
    out.add_argument(
        "--shape",
        choices=["static", "dynamic"],
        help="static lists nodes; dynamic is a skeleton placed by annotations "
        "(default: dynamic for Kubernetes inputs, else static)",
    )
    out.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="file to write, through symlinks; a FIFO or device is written as is "
        "(default or '-': stdout)",
    )
    out.add_argument(
        "--check", action="store_true", help="do not write; exit 1 with a diff if FILE is stale"
    )

    ann = sub.add_parser("annotations", help="write node -> Topology= annotation values (JSON)")
    _add_inputs(ann)
    aout = ann.add_argument_group("output")
    aout.add_argument(
        "--format",
        choices=FORMATS[:3],
        default="topology.yaml",
        help="topology file the annotations refer to (default: topology.yaml)",
    )
    aout.add_argument(
        "-o", "--output", metavar="FILE", help="file to write (default or '-': stdout)"
    )
    aout.add_argument(
        "--check", action="store_true", help="do not write; exit 1 with a diff if FILE is stale"
    )

    chk = sub.add_parser("check", help="validate a topology.yaml or topology.conf")
    chk.add_argument("file", metavar="FILE")
    chk.add_argument(
        "--annotations", metavar="JSON", help="also check these node annotations against FILE"
    )

    exp = sub.add_parser("explain", help="show where one node lands")
    exp.add_argument("node", metavar="NODE", help="Slurm or Kubernetes node name")
    _add_inputs(exp)
    return parser


def _selector(items: list[str], parser: argparse.ArgumentParser) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--node-selector {item!r} is not KEY=VALUE")
        out[key] = value
    return out


def _source(args: argparse.Namespace) -> str | None:
    """The input a run reads, as its errors name it."""
    if getattr(args, "fabric", None) is not None:
        name: str = args.fabric
        return "builtin:default-fabric.yaml" if name == fabric_file.BUILTIN_DEFAULT else name
    for attr in ("ibnetdiscover", "from_nodes", "file"):
        value = getattr(args, attr, None)
        if value is not None:
            return str(value)
    return "the Kubernetes API" if getattr(args, "from_cluster", False) else None


def _check_flags(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Usage errors (exit 2) that argparse cannot see, found before any input is read."""
    if getattr(args, "check", False):
        if not args.output:
            parser.error("--check needs -o FILE (the file to compare)")
        if args.output == STDOUT:
            parser.error("--check needs -o FILE, not '-' (stdout cannot be compared)")
    if not hasattr(args, "preset"):
        return
    _block_options(args, parser)
    if args.label_map and args.preset != "auto":
        parser.error("--label-map replaces --preset; give only one")
    if args.label_map:
        try:
            k8s_nodes.preset_from_label_map(args.label_map)
        except InputError as exc:
            parser.error(f"--label-map {args.label_map!r}: {exc.message}")
    if args.ib_node_regex is not None:
        try:
            ibnetdiscover.compile_node_regex(args.ib_node_regex)
        except InputError as exc:
            parser.error(f"--ib-node-regex: {exc.message}")
    _selector(args.node_selector, parser)


def _block_sizes(text: str, parser: argparse.ArgumentParser) -> tuple[int, ...]:
    try:
        return parse_block_sizes(text)
    except InputError as exc:
        parser.error(exc.message)


def _block_options(
    args: argparse.Namespace, parser: argparse.ArgumentParser
) -> BlockOptions | None:
    """The block flags as options; ``None`` when none is given. Refused with ``--fabric``."""
    given = {
        "--block-sizes": args.block_sizes,
        "--block-source": args.block_source,
        "--oversized-domains": args.oversized_domains,
    }
    named = [flag for flag, value in given.items() if value is not None]
    if not named:
        return None
    if args.fabric is not None:
        parser.error(
            f"{named[0]} applies to Kubernetes and ibnetdiscover inputs; a fabric file sets "
            "blockSizes, source and oversizedDomains on each of its spec.topologies"
        )
    return BlockOptions(
        block_sizes=_block_sizes(args.block_sizes, parser) if args.block_sizes else None,
        source=args.block_source or "domain",
        oversized=args.oversized_domains or "split",
    )


def _fabric(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple[Fabric, bool]:
    """Load the selected input; return (fabric, from_kubernetes)."""
    if args.fabric is not None:
        return fabric_file.load_fabric(args.fabric), False
    options = _block_options(args, parser)
    if args.ibnetdiscover is not None:
        text = read_text(args.ibnetdiscover)
        fabric = ibnetdiscover.fabric_from_ibnetdiscover(
            text, args.ibnetdiscover, node_regex=args.ib_node_regex
        )
        return (with_block_options(fabric, options) if options else fabric), False
    selector = _selector(args.node_selector, parser)
    if args.from_nodes is not None:
        document: Any = read_structured(args.from_nodes)
    else:
        label_selector = ",".join(f"{k}={v}" for k, v in selector.items()) or None
        document = k8s_nodes.read_cluster_nodes(label_selector=label_selector)
    fabric = k8s_nodes.fabric_from_nodes(
        document,
        preset=args.preset,
        label_map=args.label_map,
        slurm_name_key=args.slurm_name_key,
        node_selector=selector,
        location=_source(args),
        block_options=options,
        allow_empty=args.allow_empty,
    )
    return fabric, True


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


def _warn(findings: Sequence[Finding]) -> None:
    for f in findings:
        print(f"warning: {_one_line(str(f))}", file=sys.stderr)


def _print_errors(findings: Sequence[Finding], source: str | None, what: str = "") -> None:
    """One ``error:`` line per finding, each naming the input (at most MAX_ERROR_LINES)."""
    head = f"{what}: " if what else ""
    for f in findings[:MAX_ERROR_LINES]:
        where = f.location or source
        line = str(dataclasses.replace(f, location=None))
        print(f"error: {where + ': ' if where else ''}{head}{_one_line(line)}", file=sys.stderr)
    if len(findings) > MAX_ERROR_LINES:
        rest = len(findings) - MAX_ERROR_LINES
        where = f"{source}: " if source else ""
        print(f"error: {where}{rest} more problems not shown", file=sys.stderr)


def _emit(output: Output, args: argparse.Namespace, fresh_hint: str) -> int:
    _warn(output.warnings)
    if args.check:
        target = Path(args.output)
        current = read_text(args.output) if target.exists() else ""
        if current == output.text:
            return 0
        diff = difflib.unified_diff(
            current.splitlines(keepends=True),
            output.text.splitlines(keepends=True),
            fromfile=f"{args.output} (on disk)",
            tofile=f"{args.output} (generated)",
        )
        sys.stdout.writelines(diff)
        state = "is stale" if target.exists() else "does not exist"
        print(f"error: {args.output} {state}; regenerate it with: {fresh_hint}", file=sys.stderr)
        return 1
    write_output(args.output or STDOUT, output.text)
    return 0


def _hint(argv: Sequence[str]) -> str:
    parts = [a for a in argv if a != "--check"]
    return "slinky-topology " + " ".join(parts)


def _cmd_generate(
    args: argparse.Namespace, parser: argparse.ArgumentParser, argv: Sequence[str]
) -> int:
    fabric, from_k8s = _fabric(args, parser)
    shape: Shape = args.shape or ("dynamic" if from_k8s else "static")
    output = render_output(plan(fabric), cast("Format", args.format), shape)
    return _emit(output, args, _hint(argv))


def _cmd_annotations(
    args: argparse.Namespace, parser: argparse.ArgumentParser, argv: Sequence[str]
) -> int:
    fabric, _ = _fabric(args, parser)
    output = render_annotations_output(plan(fabric), cast("Format", args.format))
    return _emit(output, args, _hint(argv))


def _cmd_check(args: argparse.Namespace) -> int:
    text = read_text(args.file)
    doc, is_conf = parse_topology_file(text, args.file)
    findings = validate_doc(doc, conf=is_conf, location=args.file, require_default=False)
    findings += size_findings(text, "file", args.file)
    if args.annotations:
        data = read_structured(args.annotations)
        if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in data.items()
        ):
            raise InputError(
                "expected a JSON object of node name -> string", location=args.annotations
            )
        findings += validate_specs(doc, data, location=args.annotations)
    errors = [f for f in findings if f.severity == "error"]
    _warn([f for f in findings if f.severity == "warning"])
    _print_errors(errors, args.file)
    if errors:
        return 1
    kinds = ", ".join(f"{t.name} ({t.kind})" for t in doc.topologies)
    print(f"ok: {args.file}: {kinds}")
    return 0


def _cmd_explain(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    fabric, _ = _fabric(args, parser)
    p: Plan = plan(fabric)
    node = next((n for n in fabric.nodes if args.node in (n.name, n.kube_name)), None)
    if node is None:
        raise InputError(f"node {args.node} is not in the input", location=_source(args))
    lines = [f"node {node.name} (Kubernetes node {node.kube_name}, state {node.state})"]
    if node.leaf:
        chain: list[str] = []
        parents = {s.name: s.parent for s in fabric.switches}
        cur: str | None = node.leaf
        while cur is not None and cur not in chain:  # plan() refuses loops; stay finite anyway
            chain.append(cur)
            cur = parents.get(cur)
        lines.append(f"  switches (leaf first): {' > '.join(chain)}")
    else:
        lines.append(
            "  switches: none (node has no leaf switch; tree topologies hold it under the "
            f"catch-all switch {catch_all_switch({s.name for s in fabric.switches})})"
        )
    dom = node.domain or "none"
    if node.subdomain:
        dom += f" (partition {node.subdomain})"
    lines.append(f"  NVLink domain: {dom}")
    for planned in p.topologies:
        topo = planned.topology
        unit = planned.units.get(node.name)
        if topo.kind == "flat":
            lines.append(f"  topology {topo.name} (flat): every node")
        elif unit is None:
            lines.append(f"  topology {topo.name} ({topo.kind}): not placed")
        elif topo.kind == "block":
            blocks = [b.name for b in getattr(topo.spec, "blocks", ())]
            lines.append(
                f"  topology {topo.name} (block): block {unit} "
                f"(position {blocks.index(unit)} of {len(blocks)})"
            )
        else:
            lines.append(f"  topology {topo.name} (tree): path {unit}")
    spec = p.specs().get(node.kube_name, "")
    lines.append(f"  annotation {ANNOTATION_KEY}={spec}")
    print("\n".join(lines))
    return 0


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser, arglist: list[str]) -> int:
    _check_flags(args, parser)
    if args.command == "generate":
        return _cmd_generate(args, parser, arglist)
    if args.command == "annotations":
        return _cmd_annotations(args, parser, arglist)
    if args.command == "check":
        return _cmd_check(args)
    return _cmd_explain(args, parser)


def _report(exc: TopologyError | OSError, source: str | None) -> int:
    """Print ``exc`` once, as ``error:`` lines naming the input; return 1."""
    if isinstance(exc, ValidationError):
        _print_errors([f for f in exc.findings if f.severity == "error"], source, exc.what)
    elif isinstance(exc, InputError):
        if exc.location is None and source is not None:
            exc = InputError(exc.message, location=source)
        print(f"error: {_one_line(str(exc))}", file=sys.stderr)
    elif isinstance(exc, TopologyError):
        print(f"error: {_one_line(str(exc))}", file=sys.stderr)
    elif isinstance(exc, BrokenPipeError):
        drop_stream(sys.stdout)
        print("error: -: cannot write: the reader of stdout is gone", file=sys.stderr)
    else:
        where = exc.filename if exc.filename is not None else source
        print(f"error: {where}: {exc.strerror or exc}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 1 invalid input or stale file, 2 usage)."""
    arglist = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    source: str | None = None
    try:
        args = parser.parse_args(arglist)
        source = _source(args)
        return _run(args, parser, arglist)
    except SystemExit as exc:  # argparse: --help (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else 2
    except (TopologyError, OSError) as exc:
        return _report(exc, source)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
