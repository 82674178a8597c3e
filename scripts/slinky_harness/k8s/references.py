"""The Secrets (and key ConfigMaps) a render refers to, and those it makes.

A render refers to a Secret from a Slinky object's ``*KeyRef`` (:func:`key_refs`: the keys its
daemons read) and from any pod spec (volumes, projected sources, ``envFrom``, ``env[].valueFrom``,
``imagePullSecrets``); :func:`secret_refs` lists them all with the object and field. A render makes
a Secret by holding it, or through an object that writes one: a cert-manager ``Certificate``
(``spec.secretName``) or a Slinky ``Token`` (``spec.secretRef``, by default
``<name>-jwt-<username>``) — :func:`made_secrets`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slinky_harness.k8s.manifests import ident, pod_specs

if TYPE_CHECKING:
    from collections.abc import Iterator

Doc = dict[str, Any]

CONFIGMAP_KEY_REFS = frozenset({"jwksKeyRef"})
"""``*KeyRef`` fields of the Slinky CRDs that select a ConfigMap key (the JWKS); the others a
Secret's."""


def key_refs(value: Any, path: str = "spec") -> list[tuple[str, str, str]]:
    """(path, kind, name) of every ``*KeyRef`` of a Slinky object's spec: the Secrets (slurmKeyRef,
    jwtKeyRef, jwtHs256KeyRef, passwordKeyRef) and ConfigMaps (jwksKeyRef) its daemons read
    their keys from."""
    found: list[tuple[str, str, str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}"
            if key.endswith("KeyRef") and isinstance(item, dict) and item.get("name"):
                kind = "ConfigMap" if key in CONFIGMAP_KEY_REFS else "Secret"
                found.append((where, kind, str(item["name"])))
            else:
                found += key_refs(item, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += key_refs(item, f"{path}[{index}]")
    return found


@dataclass(frozen=True)
class Reference:
    """``kind`` ``name`` in ``namespace``, named by ``field`` of the object ``owner``."""

    kind: str
    name: str
    namespace: str
    owner: str
    field: str


def _volume_refs(spec: Doc) -> Iterator[tuple[str, str]]:
    for i, volume in enumerate(spec.get("volumes") or []):
        secret = volume.get("secret") or {}
        name = secret.get("secretName")
        if name and not secret.get("optional"):
            yield f"volumes[{i}].secret.secretName", str(name)
        for j, source in enumerate((volume.get("projected") or {}).get("sources") or []):
            name = (source.get("secret") or {}).get("name")
            if name:
                yield f"volumes[{i}].projected.sources[{j}].secret.name", str(name)


def _container_refs(group: str, container: Doc) -> Iterator[tuple[str, str]]:
    cname = container.get("name")
    for i, source in enumerate(container.get("envFrom") or []):
        ref = source.get("secretRef") or {}
        if ref.get("name") and not ref.get("optional"):
            yield f"{group}[{cname}].envFrom[{i}].secretRef.name", str(ref["name"])
    for env in container.get("env") or []:
        ref = (env.get("valueFrom") or {}).get("secretKeyRef") or {}
        if ref.get("name") and not ref.get("optional"):
            field = f"{group}[{cname}].env[{env.get('name')}].valueFrom.secretKeyRef.name"
            yield field, str(ref["name"])


def _pod_refs(spec: Doc) -> Iterator[tuple[str, str]]:
    """(field, Secret name) of one pod spec (optional references left out)."""
    yield from _volume_refs(spec)
    for i, pull in enumerate(spec.get("imagePullSecrets") or []):
        if isinstance(pull, dict) and pull.get("name"):
            yield f"imagePullSecrets[{i}].name", str(pull["name"])
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            yield from _container_refs(group, container)


def secret_refs(docs: list[Doc], default_namespace: str) -> list[Reference]:
    """Every Secret (and key ConfigMap) the render's objects refer to."""
    out: list[Reference] = []
    for doc in docs:
        namespace = str((doc.get("metadata") or {}).get("namespace") or default_namespace)
        owner = ident(doc)
        if str(doc.get("apiVersion", "")).startswith("slinky.slurm.net/"):
            for field, kind, name in key_refs(doc.get("spec")):
                out.append(Reference(kind, name, namespace, owner, field))
        if doc.get("kind") == "CustomResourceDefinition":
            continue
        for path, spec in pod_specs(doc):
            for field, name in _pod_refs(spec):
                out.append(Reference("Secret", name, namespace, owner, f"{path[1:]}.{field}"))
    return out


def made_secrets(docs: list[Doc], default_namespace: str) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of every Secret and ConfigMap the render makes or has made."""
    out: set[tuple[str, str, str]] = set()
    for doc in docs:
        meta = doc.get("metadata") or {}
        namespace = str(meta.get("namespace") or default_namespace)
        spec = doc.get("spec") or {}
        kind = doc.get("kind")
        if kind in ("Secret", "ConfigMap"):
            out.add((str(kind), namespace, str(meta.get("name"))))
        elif kind == "Certificate" and spec.get("secretName"):
            out.add(("Secret", namespace, str(spec["secretName"])))
        elif kind == "Token" and str(doc.get("apiVersion", "")).startswith("slinky.slurm.net/"):
            name = (spec.get("secretRef") or {}).get("name") or (
                f"{meta.get('name')}-jwt-{spec.get('username')}"
            )
            out.add(("Secret", namespace, str(name)))
    return out
