"""What RBAC a render grants, per ServiceAccount, read from its Roles, ClusterRoles and bindings.

:func:`grants` joins every RoleBinding and ClusterRoleBinding of a render to the rules of the role
it names (a role the render does not hold is reported as such) and returns, per ServiceAccount,
each rule with its scope: ``cluster`` (a ClusterRoleBinding) or the namespace of a RoleBinding.
:func:`wildcards` and :func:`secret_access` pick out what a reviewer looks at first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Doc = dict[str, Any]
ROLE_KINDS = frozenset({"Role", "ClusterRole"})
BINDING_KINDS = frozenset({"RoleBinding", "ClusterRoleBinding"})


@dataclass(frozen=True)
class Grant:
    """One rule given to ``account`` (``namespace/name``) in ``scope`` through ``binding``."""

    account: str
    scope: str
    binding: str
    role: str
    verbs: tuple[str, ...]
    resources: tuple[str, ...]
    non_resource_urls: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()

    def what(self) -> str:
        """``get,list secrets (names: a)`` or ``get /metrics``."""
        targets = ",".join(self.resources or self.non_resource_urls) or "(nothing)"
        names = f" (names: {','.join(self.resource_names)})" if self.resource_names else ""
        return f"{','.join(self.verbs)} {targets}{names}"


def _resources(rule: Doc) -> tuple[str, ...]:
    groups = rule.get("apiGroups") or [""]
    out = []
    for group in groups:
        for resource in rule.get("resources") or []:
            out.append(f"{resource}.{group}" if group else str(resource))
    return tuple(out)


def _roles(docs: list[Doc]) -> dict[tuple[str, str, str], Doc]:
    out: dict[tuple[str, str, str], Doc] = {}
    for doc in docs:
        if doc.get("kind") in ROLE_KINDS:
            meta = doc.get("metadata") or {}
            ns = "" if doc["kind"] == "ClusterRole" else str(meta.get("namespace") or "")
            out[(str(doc["kind"]), ns, str(meta.get("name")))] = doc
    return out


def grants(docs: list[Doc], default_namespace: str) -> tuple[list[Grant], list[str]]:
    """Every rule bound to a ServiceAccount, and notes (bindings to roles not in the render)."""
    roles = _roles(docs)
    found: list[Grant] = []
    notes: list[str] = []
    for doc in docs:
        if doc.get("kind") not in BINDING_KINDS:
            continue
        meta = doc.get("metadata") or {}
        namespace = str(meta.get("namespace") or default_namespace)
        ref = doc.get("roleRef") or {}
        role_kind, role_name = str(ref.get("kind")), str(ref.get("name"))
        role_ns = "" if role_kind == "ClusterRole" else namespace
        scope = "cluster" if doc["kind"] == "ClusterRoleBinding" else namespace
        binding = f"{doc['kind']} {meta.get('name')}"
        role = roles.get((role_kind, role_ns, role_name))
        if role is None:
            notes.append(f"{binding} binds {role_kind} {role_name}, which the render does not hold")
            continue
        for subject in doc.get("subjects") or []:
            if subject.get("kind") != "ServiceAccount":
                notes.append(f"{binding} binds {subject.get('kind')} {subject.get('name')}")
                continue
            account = f"{subject.get('namespace') or namespace}/{subject.get('name')}"
            for rule in role.get("rules") or []:
                found.append(
                    Grant(
                        account, scope, binding, f"{role_kind} {role_name}",
                        tuple(rule.get("verbs") or []), _resources(rule),
                        tuple(rule.get("nonResourceURLs") or []),
                        tuple(rule.get("resourceNames") or []),
                    )
                )  # fmt: skip
    return found, notes


def wildcards(grant: Grant) -> list[str]:
    """What of ``grant`` is a wildcard: ``verbs``, ``resources``, ``apiGroups``."""
    out = []
    if "*" in grant.verbs:
        out.append("verbs")
    if any(r == "*" or r.startswith("*.") or r.endswith(".*") for r in grant.resources):
        out.append("resources")
    if "*" in grant.non_resource_urls:
        out.append("nonResourceURLs")
    return out


def secret_access(grant: Grant) -> bool:
    """Whether ``grant`` reads or writes Secrets (by name or all of them)."""
    return any(r in ("secrets", "*") for r in grant.resources)


def unbound_roles(docs: list[Doc]) -> list[str]:
    """Roles and ClusterRoles of the render that no binding of the render names."""
    bound = set()
    for doc in docs:
        if doc.get("kind") in BINDING_KINDS:
            ref = doc.get("roleRef") or {}
            bound.add((str(ref.get("kind")), str(ref.get("name"))))
    return sorted(f"{kind} {name}" for kind, _, name in _roles(docs) if (kind, name) not in bound)
