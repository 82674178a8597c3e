"""Build a fabric from Kubernetes Node labels, through a label preset.

Input is a ``kubectl get nodes -o json`` document (a ``List``), a single Node, or a list of Node
dicts; :func:`read_cluster_nodes` fetches the same from a live API server (the ``kubernetes``
client is imported lazily, only there).

A :class:`LabelPreset` names the label keys of the switch tiers (closest to the node first) and
of the NVLink domain. Presets (topology.md c and f.1): ``gfd``, ``topograph``, ``gke``, ``eks``,
``nebius``, ``coreweave``, ``crusoe``, ``oci``; ``auto`` picks the one whose keys are present;
:func:`preset_from_label_map` builds a custom one from ``accelerator=KEY,leaf=KEY,spine=KEY,...``.

Switch names are the label values; when one value names two different switches (for instance
CoreWeave leafgroup ``1`` under two superpods) it is qualified by its ancestors' values, root
first (``superpod2-1``). ``nvidia.com/gpu.clique`` values ``<ClusterUUID>.<CliqueId>`` give the
domain (ClusterUUID: the physical NVLink domain) and sub-domain (clique).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from slinky_topology.build import with_block_options
from slinky_topology.errors import Finding, InputError
from slinky_topology.limits import MAX_HOSTS
from slinky_topology.model import BlockOptions, Fabric, Node, Switch, is_safe_name
from slinky_topology.validate import Findings

__all__ = [
    "CLUSTER_TIMEOUT",
    "GFD_CLIQUE",
    "PRESETS",
    "LabelPreset",
    "detect_preset",
    "fabric_from_nodes",
    "node_items",
    "preset_from_label_map",
    "read_cluster_nodes",
    "resolve_preset",
]

GFD_CLIQUE = "nvidia.com/gpu.clique"


@dataclass(frozen=True, slots=True)
class LabelPreset:
    """Label keys of one provider.

    ``tiers``: switch tier keys, closest first (missing keys on a node are skipped).
    ``domains``: NVLink domain keys, first present wins; keys in ``clique_keys`` hold
    ``<domain>.<subdomain>`` values. ``subdomains``: keys of the sub-domain (clique) of the
    node's domain, first present wins (a value starting with ``<domain>.`` loses that prefix).
    """

    name: str
    tiers: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    clique_keys: tuple[str, ...] = ()
    subdomains: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """Every label key this preset reads."""
        return (*self.tiers, *self.domains, *self.subdomains)

    @property
    def signature(self) -> tuple[str, ...]:
        """Keys that identify this preset in ``auto`` mode (the generic GFD key excluded)."""
        return tuple(k for k in self.keys if k != GFD_CLIQUE)

    def describe(self) -> str:
        """The keys for a message, numbered series shortened (``fabric.topograph.run/tier-0..7``)."""
        series: dict[tuple[str, bool], list[str]] = {}
        for key in dict.fromkeys(self.keys):
            found = _NUMBERED.fullmatch(key)
            prefix, number = (found.group(1), found.group(2)) if found else (key, "")
            series.setdefault((prefix, found is not None), []).append(number)
        return ", ".join(
            f"{prefix}{nums[0]}..{nums[-1]}" if len(nums) > 1 else prefix + nums[0]
            for (prefix, _), nums in series.items()
        )


_NUMBERED = re.compile(r"(.*?)(\d+)")


PRESETS: dict[str, LabelPreset] = {
    p.name: p
    for p in (
        LabelPreset("gfd", domains=(GFD_CLIQUE,), clique_keys=(GFD_CLIQUE,)),
        LabelPreset(
            "topograph",
            tiers=tuple(f"fabric.topograph.run/tier-{i}" for i in range(8)),
            domains=("accelerator.topograph.run/domain",),
            subdomains=("accelerator.topograph.run/sub-domain",),
        ),
        LabelPreset(
            "gke",
            tiers=("cloud.google.com/gce-topology-subblock", "cloud.google.com/gce-topology-block"),
            domains=("cloud.google.com/gce-topology-subblock",),
        ),
        LabelPreset(
            "eks",
            tiers=tuple(f"topology.k8s.aws/network-node-layer-{i}" for i in (4, 3, 2, 1)),
            domains=("topology.k8s.aws/ultraserver-id", GFD_CLIQUE),
            clique_keys=(GFD_CLIQUE,),
        ),
        LabelPreset(
            "nebius",
            tiers=("topology.nebius.com/tier-1", "topology.nebius.com/tier-2"),
            domains=("topology.nebius.com/tier-0",),
        ),
        LabelPreset(
            "coreweave",
            tiers=(
                "ib.coreweave.cloud/leafgroup",
                "ib.coreweave.cloud/superpod",
                "ib.coreweave.cloud/fabric",
            ),
            domains=("ds.coreweave.com/nvlink.domain",),
        ),
        LabelPreset(
            "crusoe",
            tiers=("crusoe.ai/pod.id", "crusoe.ai/ib.partition.id"),
            domains=(GFD_CLIQUE,),
            clique_keys=(GFD_CLIQUE,),
        ),
        LabelPreset(
            "oci",
            tiers=("oci.oraclecloud.com/host.rack_id", "oci.oraclecloud.com/host.network_block_id"),
            domains=("oci.oraclecloud.com/host.gpu_memory_fabric_id",),
        ),
    )
}

_TIER_ORDER = {"leaf": 0, "spine": 1, "core": 2}


def preset_from_label_map(text: str) -> LabelPreset:
    """Parse ``accelerator=KEY,leaf=KEY,spine=KEY,core=KEY`` (also ``tierN=KEY``, ``domain=``,
    ``subdomain=KEY``).

    Tiers order: ``leaf`` < ``spine`` < ``core``, or ``tier0`` < ``tier1`` < ...
    """
    tiers: list[tuple[int, str]] = []
    domains: list[str] = []
    subdomains: list[str] = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        role, sep, key = item.partition("=")
        role = role.strip().lower()
        key = key.strip()
        if not sep or not key:
            raise InputError(f"label map item {item!r} is not ROLE=LABEL_KEY")
        if role in ("accelerator", "domain", "nvlink"):
            domains.append(key)
        elif role in ("subdomain", "sub-domain", "clique"):
            subdomains.append(key)
        elif role in _TIER_ORDER:
            tiers.append((_TIER_ORDER[role], key))
        elif role.startswith("tier") and role[4:].isdigit():
            tiers.append((int(role[4:]), key))
        else:
            raise InputError(
                f"label map role {role!r} is unknown "
                "(use accelerator, subdomain, leaf, spine, core, tierN)"
            )
    if not tiers and not domains:
        raise InputError("label map is empty")
    orders = [o for o, _ in tiers]
    if len(set(orders)) != len(orders):
        raise InputError("label map names one tier twice")
    keys = tuple(k for _, k in sorted(tiers))
    clique = tuple(k for k in domains if k == GFD_CLIQUE)
    return LabelPreset("custom", keys, tuple(domains), clique, tuple(subdomains))


def _at(location: str | None, path: str) -> str:
    return f"{location}::{path}" if location else path


def _string_map(value: Any, what: str, where: str) -> None:
    """Refuse ``value`` unless it is absent or a mapping of strings to strings."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise InputError(f"{what} must be a mapping of strings", location=where)
    for key, text in value.items():
        if not isinstance(key, str) or not isinstance(text, str):
            raise InputError(
                f"{what} {str(key)[:60]!r} must map a string to a string, not "
                f"{type(text).__name__} (quote the value)",
                location=where,
            )


def node_items(document: Any, location: str | None = None) -> list[Mapping[str, Any]]:
    """The Node objects of a ``kubectl get nodes -o json`` document, a Node, or a list.

    Each Node needs a string ``metadata.name``; ``metadata.labels`` and ``metadata.annotations``
    must be string maps when present. ``location`` (the file) prefixes the ``$.items[i]`` path
    of an error.
    """
    if isinstance(document, Mapping):
        if "items" in document:
            items = document["items"]
            if not isinstance(items, list):
                raise InputError(
                    f"items must be a list of Nodes, not {type(items).__name__}",
                    location=_at(location, "$.items"),
                )
        elif document.get("kind") == "Node":
            items = [document]
        else:
            raise InputError(
                "expected a NodeList (kubectl get nodes -o json) or a Node", location=location
            )
    elif isinstance(document, Sequence) and not isinstance(document, str | bytes):
        items = document
    else:
        raise InputError("expected a NodeList, a Node or a list of Nodes", location=location)
    out: list[Mapping[str, Any]] = []
    for i, item in enumerate(items):
        meta = item.get("metadata") if isinstance(item, Mapping) else None
        if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str):
            raise InputError(
                f"node {i} has no metadata.name", location=_at(location, f"$.items[{i}]")
            )
        where = f"$.items[{i}].metadata"
        _string_map(meta.get("labels"), "label", _at(location, f"{where}.labels"))
        _string_map(meta.get("annotations"), "annotation", _at(location, f"{where}.annotations"))
        out.append(item)
    return out


def _labels(item: Mapping[str, Any]) -> Mapping[str, str]:
    labels = item["metadata"].get("labels") or {}
    return labels if isinstance(labels, Mapping) else {}


def _count_bound(items: Sequence[Any], location: str | None) -> None:
    if len(items) > MAX_HOSTS:
        raise InputError(
            f"{len(items):,} Nodes, more than Slurm's {MAX_HOSTS:,}; select fewer "
            "(--node-selector)",
            location=location,
        )


class _Empty(InputError):
    """The input places no node at all (an error unless ``allow_empty``)."""


def detect_preset(items: Sequence[Mapping[str, Any]]) -> LabelPreset:
    """Pick the preset whose label keys appear on the nodes (``auto``)."""
    present: set[str] = set()
    for item in items:
        present.update(_labels(item))
    found = [
        p for p in PRESETS.values() if p.name != "gfd" and any(k in present for k in p.signature)
    ]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        names = ", ".join(sorted(p.name for p in found))
        raise InputError(
            f"labels of several presets found ({names}); choose one with --preset "
            "or give --label-map"
        )
    if GFD_CLIQUE in present:
        return PRESETS["gfd"]
    known = ", ".join(sorted(PRESETS))
    raise _Empty(
        f"no known topology labels on the nodes (presets: {known}); give --preset or --label-map"
    )


def resolve_preset(
    items: Sequence[Mapping[str, Any]], preset: str = "auto", label_map: str | None = None
) -> LabelPreset:
    """The preset to use: a custom label map, a named preset, or ``auto`` detection."""
    if label_map:
        return preset_from_label_map(label_map)
    if preset == "auto":
        return detect_preset(items)
    if preset not in PRESETS:
        raise InputError(f"unknown preset {preset!r} (known: auto, {', '.join(sorted(PRESETS))})")
    return PRESETS[preset]


def _switch_name(chain: tuple[str, ...], i: int, taken: Counter[str]) -> str:
    value = chain[i]
    if taken[value] == 1 and is_safe_name(value):
        return value
    qualified = "-".join(reversed(chain[i:]))
    if is_safe_name(qualified) and taken[qualified] == 0:
        return qualified
    return "sw-" + hashlib.sha256("\0".join(chain[i:]).encode()).hexdigest()[:16]


def _value(*maps: Mapping[str, str], key: str) -> str | None:
    """The first non-blank value of ``key`` in ``maps``, trimmed (``None`` when absent)."""
    for m in maps:
        value = m.get(key)
        if value and (value := value.strip()):
            return value
    return None


def _slurm_names(
    items: Sequence[Mapping[str, Any]], key: str | None
) -> tuple[list[tuple[Mapping[str, Any], str]], list[str]]:
    """(Node, Slurm name) pairs and the Nodes skipped for having no ``key``."""
    named: list[tuple[Mapping[str, Any], str]] = []
    skipped: list[str] = []
    for item in items:
        meta = item["metadata"]
        if key is None:
            named.append((item, meta["name"]))
            continue
        value = _value(_labels(item), meta.get("annotations") or {}, key=key)
        if value is None:
            skipped.append(meta["name"])
        else:
            named.append((item, value))
    return named, skipped


_Row = tuple[str, str, tuple[str, ...], str | None, str | None]


def _row(item: Mapping[str, Any], slurm: str, chosen: LabelPreset) -> _Row:
    """(Slurm name, Kubernetes name, tier values closest first, domain, sub-domain)."""
    labels = _labels(item)
    chain = tuple(t for v in map(labels.get, chosen.tiers) if v and (t := v.strip()))
    domain: str | None = None
    sub: str | None = None
    for key in chosen.domains:
        value = labels.get(key)
        if value and (value := value.strip()):
            if key in chosen.clique_keys and "." in value:
                domain, _, sub = value.rpartition(".")
            else:
                domain = value
            break
    if domain is not None and sub is None and chosen.subdomains:
        sub = next((t for v in map(labels.get, chosen.subdomains) if v and (t := v.strip())), None)
        if sub is not None:
            sub = sub.removeprefix(domain + ".") or None
    return slurm, item["metadata"]["name"], chain, domain, sub


def _choose(
    named: list[tuple[Mapping[str, Any], str]],
    preset: str,
    label_map: str | None,
    location: str | None,
) -> LabelPreset:
    try:
        return resolve_preset([item for item, _ in named], preset, label_map)
    except InputError as exc:
        if exc.location is None and label_map is None:
            raise type(exc)(exc.message, location=location) from None
        raise


def _require_some(
    items: Sequence[Mapping[str, Any]],
    named: list[tuple[Mapping[str, Any], str]],
    slurm_name_key: str | None,
    node_selector: Mapping[str, str] | None,
    location: str | None,
) -> None:
    if not items:
        chosen = ",".join(f"{k}={v}" for k, v in (node_selector or {}).items())
        which = f" match --node-selector {chosen}" if chosen else " are in the input"
        raise _Empty(f"no Nodes{which}; pass --allow-empty if that is expected", location=location)
    if not named:
        raise _Empty(
            f"none of the {len(items)} Nodes has the label or annotation {slurm_name_key} "
            "(the Slurm node name; no slurmd on them?); check --slurm-name-key, or pass "
            "--allow-empty if that is expected",
            location=location,
        )


def _skipped_warning(skipped: list[str], key: str, location: str | None) -> Finding:
    out = Findings()
    sample = ", ".join(skipped[:5]) + (", ..." if len(skipped) > 5 else "")
    out.add(
        "warning",
        f"{len(skipped)} Kubernetes Node{'' if len(skipped) == 1 else 's'}",
        f"skipped: no label or annotation {key} (the Slurm node name; no slurmd on them?): "
        f"{sample}",
        "run slurmd there, or select only Slurm nodes (--node-selector)",
        location=location,
    )
    return out.items[0]


def _assemble(rows: list[_Row], name: str) -> Fabric:
    identities = {chain[i:] for _, _, chain, _, _ in rows for i in range(len(chain))}
    taken: Counter[str] = Counter(ident[0] for ident in identities)
    names = {ident: _switch_name(ident, 0, taken) for ident in sorted(identities)}
    switches = [
        Switch(names[ident], names[ident[1:]] if len(ident) > 1 else None)
        for ident in sorted(identities)
    ]
    nodes = [
        Node(
            name=slurm,
            k8s_name=None if kube == slurm else kube,
            leaf=names[chain] if chain else None,
            domain=domain,
            subdomain=sub,
        )
        for slurm, kube, chain, domain, sub in rows
    ]
    return Fabric(name=name, switches=tuple(switches), nodes=tuple(nodes))


def fabric_from_nodes(
    document: Any,
    *,
    preset: str = "auto",
    label_map: str | None = None,
    slurm_name_key: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    name: str = "cluster",
    location: str | None = None,
    block_options: BlockOptions | None = None,
    allow_empty: bool = True,
) -> Fabric:
    """Build a fabric from Node objects (see module doc).

    ``slurm_name_key``: label or annotation holding the Slurm node name (default: the Node name);
    Nodes without it (no slurmd there) are skipped, counted in ``Fabric.skipped`` and named in a
    warning. Label values are trimmed; blank ones count as absent.
    ``node_selector``: only Nodes whose labels match every ``key: value``.
    ``location``: where the Nodes come from (a file), named in errors about them.
    ``block_options``: BlockSizes, block source and oversized-domain policy of the ``nvlink``
    block topology (default: inferred sizes, one block per domain, oversized domains split).
    ``allow_empty``: no Node at all, no Node with a Slurm name, or no Node with a label of the
    preset gives a flat topology; ``False`` (the CLI without ``--allow-empty``) makes each an
    :class:`InputError` naming what was looked for. The library default stays lenient for
    callers that refuse an empty result themselves (the labeler keeps its last good state).
    """
    items = node_items(document, location)
    if node_selector:
        items = [
            it for it in items if all(_labels(it).get(k) == v for k, v in node_selector.items())
        ]
    _count_bound(items, location)
    named, skipped = _slurm_names(items, slurm_name_key)
    try:
        _require_some(items, named, slurm_name_key, node_selector, location)
        chosen = _choose(named, preset, label_map, location)
        rows = [_row(item, slurm, chosen) for item, slurm in named]
        if not any(chain or domain for _, _, chain, domain, _ in rows):
            raise _Empty(
                f"no Node has a label of preset {chosen.name} (looked for {chosen.describe()}); "
                "check --preset/--label-map and --node-selector, or pass --allow-empty if that "
                "is expected",
                location=location,
            )
    except _Empty:
        if not allow_empty:
            raise
        rows = [(slurm, item["metadata"]["name"], (), None, None) for item, slurm in named]
    fabric = _assemble(rows, name)
    if skipped:
        warning = _skipped_warning(skipped, str(slurm_name_key), location)
        fabric = dataclasses.replace(fabric, skipped=tuple(skipped), warnings=(warning,))
    return with_block_options(fabric, block_options) if block_options else fabric


CLUSTER_TIMEOUT = 30.0
"""Seconds one request of :func:`read_cluster_nodes` may take, connection included."""


def _default_api() -> Any:
    """A CoreV1Api from in-cluster config or kubeconfig, urllib3 retries off."""
    try:
        from kubernetes import client, config  # noqa: PLC0415 - optional, lazy
    except ImportError:  # the labeler extra is not installed
        raise InputError(
            "--from-cluster needs the Kubernetes client of the labeler extra: "
            "pip install 'slinky-suite[labeler]' (or read `kubectl get nodes -o json` "
            "with --from-nodes FILE)"
        ) from None
    try:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    except config.ConfigException:
        try:
            config.load_kube_config()  # type: ignore[no-untyped-call]
        except (config.ConfigException, OSError) as exc:
            raise InputError(f"no Kubernetes configuration found: {exc}") from None
    configuration = client.Configuration.get_default_copy()
    configuration.retries = False  # urllib3 would try a timed-out GET four times
    return client.CoreV1Api(client.ApiClient(configuration))


def read_cluster_nodes(
    api: Any | None = None, label_selector: str | None = None, *, timeout: float | None = None
) -> list[Any]:
    """List Nodes from the API server as plain dicts (needs the ``kubernetes`` package).

    ``api``: a ``kubernetes.client.CoreV1Api``; default: built from in-cluster config or
    kubeconfig, with urllib3 retries off and every request limited to ``timeout`` seconds
    (default :data:`CLUSTER_TIMEOUT`), so a silent API server is an error, not a hang.
    ``timeout`` applies to a given ``api`` too when set.
    """
    if api is None:
        api = _default_api()
        if timeout is None:
            timeout = CLUSTER_TIMEOUT
    out: list[Any] = []
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"limit": 500}
        if label_selector:
            kwargs["label_selector"] = label_selector
        if token:
            kwargs["_continue"] = token
        if timeout is not None:
            kwargs["_request_timeout"] = timeout
        try:
            page = api.list_node(**kwargs)
        except Exception as exc:  # the client raises ApiException, urllib3 and socket errors
            raise InputError(f"listing Nodes failed: {exc}") from None
        out.extend(api.api_client.sanitize_for_serialization(i) for i in page.items)
        _count_bound(out, "the Kubernetes API")
        token = getattr(page.metadata, "_continue", None)
        if not token:
            return out
