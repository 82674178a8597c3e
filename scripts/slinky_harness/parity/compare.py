"""Comparing a render of upstream's chart with ours, field by field.

The Slinky custom resources (group ``slinky.slurm.net``) and, for the operator and bridge charts,
each Deployment's container images, arguments and environment are compared on every field
upstream sets; and for the kinds :attr:`~slinky_harness.parity.source.UpstreamChart.kept` names
(``"*"``: all), every object upstream renders must exist in ours under the same kind and name,
with the same namespace, Deployment selector, ServiceAccount and mounted ConfigMaps and Secrets,
and Service selector and ``clusterIP`` (what ``helm upgrade`` of an upstream release needs to
keep).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slinky_harness.parity.source import mapping

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

SLINKY_GROUP = "slinky.slurm.net"


@dataclass(frozen=True)
class Difference:
    """One field where ours differs from upstream: ``kind/name`` (upstream's name) and a path."""

    kind: str
    name: str
    path: str
    upstream: str
    ours: str

    def __str__(self) -> str:
        where = f"{self.kind}/{self.name}" + (f" {self.path}" if self.path else "")
        return f"{where}: upstream {self.upstream}, ours {self.ours}"


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _pruned(value: Any) -> Any:
    """``value`` without ``null``, ``""``, ``{}`` and ``[]`` anywhere: a custom resource's fields
    decode to Go zero values, so the operator cannot tell them from an absent field."""
    if isinstance(value, dict):
        out = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def _diff_fields(upstream: Any, ours: Any, path: str) -> Iterable[tuple[str, str, str]]:
    """``(path, upstream, ours)`` for every field upstream sets that ours does not equal."""
    if isinstance(upstream, dict) and isinstance(ours, dict):
        for key, value in upstream.items():
            if key in ours:
                yield from _diff_fields(value, ours[key], _join(path, key))
            elif isinstance(value, dict):  # name each field ours lacks, down to the leaves
                yield from _diff_fields(value, {}, _join(path, key))
            else:
                yield _join(path, key), _short(value), "unset"
    elif isinstance(upstream, list) and isinstance(ours, list) and len(upstream) == len(ours):
        for index, (up, our) in enumerate(zip(upstream, ours, strict=True)):
            yield from _diff_fields(up, our, _join(path, index))
    elif upstream != ours:
        yield path, _short(upstream), _short(ours)


def _name(doc: Mapping[str, Any]) -> str:
    return str(mapping(doc.get("metadata"), "metadata").get("name", ""))


def _same(up: str, ours: str, by_suffix: bool) -> bool:
    """The same name, or (``by_suffix``) one name a prefixed form of the other."""
    if not by_suffix:
        return up == ours
    return up.endswith(f"-{ours}") or ours.endswith(f"-{up}")


def _pair(
    upstream: Sequence[dict[str, Any]], ours: Sequence[dict[str, Any]]
) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Pair objects of one kind: same name; else one name ending with the other (a release
    prefix); else the one left of each side, if so. Returns pairs, upstream's unpaired, ours unpaired."""
    left, right = list(upstream), list(ours)
    pairs = []
    for by_suffix in (False, True):
        for up in list(left):
            found = next((o for o in right if _same(_name(up), _name(o), by_suffix)), None)
            if found is not None:
                pairs.append((up, found))
                left.remove(up)
                right.remove(found)
    if len(left) == 1 and len(right) == 1:
        pairs.append((left.pop(), right.pop()))
    return pairs, left, right


def _flags(args: Any) -> dict[str, list[str]]:
    """Command-line arguments by flag: ``--a b`` and ``--a=b`` are the same flag and value (to
    Go's ``flag`` and ``pflag`` alike) and flags may come in any order; a flag given twice keeps
    both values, in order; a bare word that follows no flag is listed under ``""``."""
    out: dict[str, list[str]] = {}
    words = [str(word) for word in args or []]
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("-"):
            out.setdefault("", []).append(word)
            continue
        flag, equals, value = word.partition("=")
        if not equals and index < len(words) and not words[index].startswith("-"):
            value = words[index]
            index += 1
        out.setdefault(flag, []).append(value)
    return out


def _env(env: Any) -> dict[str, Any]:
    """Environment variables by name (their order does not matter to the process)."""
    return {
        str(item.get("name")): {k: v for k, v in item.items() if k != "name"} for item in env or []
    }


def _containers(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A Deployment's containers: their name, image, arguments by flag and environment by name."""
    return [
        {
            "name": container.get("name"),
            "image": container.get("image"),
            "args": _flags(container.get("args")),
            "env": _env(container.get("env")),
        }
        for container in _pod_spec(doc).get("containers") or []
    ]


def _compared(up: dict[str, Any], our: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """What is compared of a pair: custom resources whole but their name (compared apart); of
    Deployments, the containers' image, args and env, paired by name (else, when one of each is
    left, with each other) and keyed by upstream's container name."""
    if up.get("kind") != "Deployment":
        fields = []
        for doc in (up, our):
            copy = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")}
            copy["metadata"] = {
                k: v for k, v in mapping(doc.get("metadata"), "metadata").items() if k != "name"
            }
            fields.append(copy)
        return fields[0], fields[1]
    ups, ours = _containers(up), _containers(our)
    up_out: dict[str, Any] = {}
    our_out: dict[str, Any] = {}
    for pairing in ("name", "rest"):
        for container in list(ups):
            if pairing == "name":
                match = next((c for c in ours if c["name"] == container["name"]), None)
            else:
                match = ours[0] if len(ups) == 1 and len(ours) == 1 else None
            if match is not None:
                ups.remove(container)
                ours.remove(match)
                name = str(container.pop("name"))
                match.pop("name")
                up_out[name], our_out[name] = container, match
    for container in ups:
        up_out[str(container.pop("name"))] = container
    return {"containers": up_out}, {"containers": our_out}


def _is_compared(doc: Mapping[str, Any], deployments: bool) -> bool:
    group = str(doc.get("apiVersion", "")).split("/")[0]
    return group == SLINKY_GROUP or (deployments and doc.get("kind") == "Deployment")


def _pod_spec(doc: Mapping[str, Any]) -> dict[str, Any]:
    template = mapping(mapping(doc.get("spec"), "spec").get("template"), "spec.template")
    return mapping(template.get("spec"), "spec.template.spec")


CLUSTER_SCOPED = frozenset(
    {
        "APIService",
        "ClusterIssuer",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "IngressClass",
        "MutatingWebhookConfiguration",
        "Namespace",
        "PersistentVolume",
        "PriorityClass",
        "StorageClass",
        "ValidatingWebhookConfiguration",
    }
)
"""Kinds whose ``metadata.namespace`` the API server ignores (a chart may set one anyway)."""


def _identity(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What of an object an in-place ``helm upgrade`` needs kept: its namespace (unless the kind is
    cluster-scoped); a Deployment's
    (immutable) selector, its ServiceAccount and the ConfigMaps and Secrets its pods mount; a
    Service's selector and (immutable) ``clusterIP``."""
    metadata = mapping(doc.get("metadata"), "metadata")
    spec = mapping(doc.get("spec"), "spec")
    out: dict[str, Any] = {}
    if doc.get("kind") not in CLUSTER_SCOPED:
        out["namespace"] = metadata.get("namespace")
    if doc.get("kind") == "Deployment":
        pod = _pod_spec(doc)
        volumes = [mapping(v, "volume") for v in pod.get("volumes") or []]
        out["selector"] = spec.get("selector")
        out["serviceAccountName"] = pod.get("serviceAccountName")
        out["configMaps"] = sorted(
            str(v["configMap"].get("name")) for v in volumes if isinstance(v.get("configMap"), dict)
        )
        out["secrets"] = sorted(
            str(v["secret"].get("secretName")) for v in volumes if isinstance(v.get("secret"), dict)
        )
    elif doc.get("kind") == "Service":
        out["selector"] = spec.get("selector")
        out["clusterIP"] = spec.get("clusterIP")
    return out


def _kept(
    upstream: Sequence[dict[str, Any]], ours: Sequence[dict[str, Any]], kinds: Sequence[str]
) -> list[Difference]:
    """Every object of ``kinds`` (``"*"``: of any kind) that upstream renders and ours does not
    render under the same kind and name, and where a pair's :func:`_identity` differs
    (``identity.<field>``, a field either side sets). Objects only ours renders (our
    extensions) are no difference."""
    by_key = {(str(d.get("kind")), _name(d)): d for d in ours}
    found: list[Difference] = []
    for up in upstream:
        kind = str(up.get("kind"))
        if "*" not in kinds and kind not in kinds:
            continue
        our = by_key.get((kind, _name(up)))
        if our is None:
            found.append(Difference(kind, _name(up), "", "renders it", "does not"))
            continue
        up_fields, our_fields = _pruned(_identity(up)), _pruned(_identity(our))
        for path, up_value, our_value in _diff_fields(up_fields, our_fields, "identity"):
            found.append(Difference(kind, _name(up), path, up_value, our_value))
        # both ways: a selector label only ours has changes an immutable selector too
        for path, our_value, up_value in _diff_fields(our_fields, up_fields, "identity"):
            if up_value == "unset":
                found.append(Difference(kind, _name(up), path, up_value, our_value))
    return found


def compare(
    upstream: Sequence[dict[str, Any]],
    ours: Sequence[dict[str, Any]],
    *,
    deployments: bool,
    kept: Sequence[str] = (),
) -> list[Difference]:
    """Every difference of ours from upstream on the compared objects (see the module doc), and
    for the ``kept`` kinds each object's name and identity (:func:`_kept`)."""
    by_kind: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for side, docs in enumerate((upstream, ours)):
        for doc in docs:
            if _is_compared(doc, deployments):
                by_kind.setdefault(str(doc.get("kind")), ([], []))[side].append(doc)
    found: list[Difference] = []
    for kind, (ups, ourss) in sorted(by_kind.items()):
        pairs, missing, extra = _pair(ups, ourss)
        found += [Difference(kind, _name(d), "", "renders it", "does not") for d in missing]
        found += [Difference(kind, _name(d), "", "does not render it", "does") for d in extra]
        for up, our in pairs:
            if _name(up) != _name(our):
                found.append(Difference(kind, _name(up), "metadata.name", _name(up), _name(our)))
            up_fields, our_fields = (_pruned(fields) for fields in _compared(up, our))
            for path, up_value, our_value in _diff_fields(up_fields, our_fields, ""):
                found.append(Difference(kind, _name(up), path, up_value, our_value))
    reported = {(d.kind, d.name) for d in found if d.path in ("", "metadata.name")}
    return found + [d for d in _kept(upstream, ours, kept) if (d.kind, d.name) not in reported]
