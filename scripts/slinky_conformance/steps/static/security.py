"""Conformance, static phase: the render invariants (``invariants``), the Pod Security level of
each namespace (``pod-security``), what is exposed (``exposure``) and what RBAC grants
(``rbac``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from slinky_conformance.context import Context, Outcome
from slinky_conformance.report import Finding
from slinky_conformance.steps.static.objects import first_path
from slinky_harness.k8s import manifests, podsecurity, rbac

if TYPE_CHECKING:
    from collections.abc import Sequence

    from slinky_conformance.target import Target


def check_invariants(ctx: Context) -> Outcome:
    values = ctx.target.values
    registry = str((values.get("global") or {}).get("imageRegistry") or "") or None
    problems = manifests.all_invariants(
        ctx.rendered, namespace=ctx.target.namespace, values=values, registry=registry
    )
    if ctx.notes:
        problems += manifests.check_notes(ctx.notes, ctx.rendered)
    findings = [
        Finding("", p, "change the value that renders it, or report a chart bug") for p in problems
    ]
    return Outcome(f"the render invariants hold for {len(ctx.rendered)} objects", findings)


# -- Pod Security ---------------------------------------------------------------------------------


def _namespace_labels(docs: list[dict[str, Any]]) -> dict[str, str]:
    return {
        str(d["metadata"]["name"]): str(labels[podsecurity.ENFORCE_LABEL])
        for d in docs
        if d.get("kind") == "Namespace"
        and podsecurity.ENFORCE_LABEL in (labels := (d.get("metadata") or {}).get("labels") or {})
    }


def check_pod_security(ctx: Context) -> Outcome:
    needed: dict[str, list[tuple[str, podsecurity.Verdict]]] = defaultdict(list)
    for doc, spec in podsecurity.workload_pods(ctx.rendered):
        namespace = str((doc.get("metadata") or {}).get("namespace") or ctx.target.namespace)
        needed[namespace].append((manifests.ident(doc), podsecurity.level(spec)))
    enforced = _namespace_labels(ctx.rendered)
    details, findings = [], []
    for namespace, pods in sorted(needed.items()):
        top = max((v.level for _, v in pods), key=podsecurity.rank)
        why = [f"{who}: {v.reasons[0]}" for who, v in pods if v.level == top and v.reasons]
        details.append(
            f"namespace {namespace}: {top}"
            + (f" ({'; '.join(why[:4])}{', ...' if len(why) > 4 else ''})" if why else "")
            + f" -> label it {podsecurity.ENFORCE_LABEL}={top}"
        )
        label = enforced.get(namespace)
        if label is not None and podsecurity.rank(top) > podsecurity.rank(label):
            paths = [p for p in ctx.target.where(label) if podsecurity.ENFORCE_LABEL in p]
            findings.append(
                Finding(
                    paths[0] if paths else "",
                    f"namespace {namespace} enforces Pod Security {label!r} but its pods need {top!r}",
                    f"set {podsecurity.ENFORCE_LABEL}={top} on namespace {namespace}",
                )
            )
    if not needed:
        return Outcome("the render makes no pods", findings, details)
    return Outcome("Pod Security level per namespace (see details)", findings, details)


# -- RBAC -----------------------------------------------------------------------------------------


_RBAC_KEYS = re.compile(r"rules|verbs|resources|apiGroups")


def exposure_warnings(target: Target, docs: Sequence[dict[str, Any]]) -> list[str]:
    """A warning for each LoadBalancer Service spec any network may reach (see
    :func:`manifests.open_load_balancers`): a login Service opens sshd to the internet. A warning,
    not a finding: some sites mean it; the API server accepts it."""
    warnings = []
    for doc, path in manifests.open_load_balancers(docs):
        hint = "loginsets" if doc.get("kind") == "LoginSet" else ""
        where = first_path(target, "LoadBalancer", hint) or f"{manifests.ident(doc)}{path}"
        warnings.append(
            f"warning: {where}: {manifests.ident(doc)}{path} is a LoadBalancer that any network "
            "can reach (no loadBalancerSourceRanges, no internal-load-balancer annotation): list "
            "the networks that may connect in its spec.loadBalancerSourceRanges, ask your cloud "
            "for an internal load balancer, or use type ClusterIP"
        )
    return warnings


def check_exposure(ctx: Context) -> Outcome:
    warnings = exposure_warnings(ctx.target, ctx.rendered)
    if warnings:
        return Outcome(f"{len(warnings)} Service(s) open to any network (warning)", [], warnings)
    return Outcome("no LoadBalancer Service is open to any network")


def check_rbac(ctx: Context) -> Outcome:
    grants, notes = rbac.grants(ctx.rendered, ctx.target.namespace)
    by_account: dict[str, list[rbac.Grant]] = defaultdict(list)
    for grant in grants:
        by_account[grant.account].append(grant)
    details, findings = [], []
    for account, mine in sorted(by_account.items()):
        details.append(f"ServiceAccount {account}:")
        for scope in sorted({g.scope for g in mine}, key=lambda s: (s != "cluster", s)):
            what = "; ".join(g.what() for g in mine if g.scope == scope)
            where = "cluster-wide" if scope == "cluster" else f"in namespace {scope}"
            details.append(f"  {where}: {what}")
        secrets = sorted({g.scope for g in mine if rbac.secret_access(g)})
        if secrets:
            details.append(f"  ! Secrets access: {', '.join(secrets)}")
        for grant in mine:
            wild = rbac.wildcards(grant)
            if wild:
                paths = [p for p in ctx.target.where("*") if _RBAC_KEYS.search(p)]
                findings.append(
                    Finding(
                        paths[0] if paths else "",
                        f"{account} is granted wildcard {', '.join(wild)} ({grant.what()}, "
                        f"{grant.scope}) by {grant.binding}",
                        "list the verbs and resources the component needs instead of '*'",
                    )
                )
    details += [f"note: {n}" for n in notes]
    details += [f"unbound (for you to bind): {r}" for r in rbac.unbound_roles(ctx.rendered)]
    return Outcome(
        f"{len(by_account)} ServiceAccounts granted {len(grants)} rules", findings, details
    )
