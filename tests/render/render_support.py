"""What the render tier's per-chart tests share: one chart rendered against the newest Kubernetes,
and the objects looked up in its output.

Each chart's tests live in ``tests/render/<chart>/``; tests that span charts (the umbrella, the
message table, the docs, upstream conformance) stay in ``tests/render/``.
"""

from __future__ import annotations

from typing import Any

from slinky_harness.helm import charts
from slinky_harness.helm import client as helm
from slinky_harness.k8s import schemas as kubeschema

CHARTS = {c.name: c for c in charts.discover_charts()}
NEWEST = kubeschema.newest_version()

Doc = dict[str, Any]


def template(
    chart: str,
    values: dict[str, Any],
    *,
    release: str = helm.DEFAULT_RELEASE,
    namespace: str = helm.DEFAULT_NAMESPACE,
) -> helm.HelmResult:
    """``helm template`` of the suite's chart ``chart`` with ``values``, for the newest
    Kubernetes; the caller decides whether it must succeed."""
    return helm.template(
        CHARTS[chart].path, values, release=release, namespace=namespace, kube_version=NEWEST
    )


def render(
    chart: str,
    values: dict[str, Any],
    *,
    release: str = helm.DEFAULT_RELEASE,
    namespace: str = helm.DEFAULT_NAMESPACE,
) -> list[Doc]:
    """The objects of :func:`template`, which must succeed."""
    result = template(chart, values, release=release, namespace=namespace)
    assert result.ok, result.describe()
    return result.docs


def find(docs: list[Doc], kind: str, name: str | None = None) -> list[Doc]:
    """The objects of ``kind`` (named ``name`` when given)."""
    return [
        d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]


def one(docs: list[Doc], kind: str, name: str | None = None) -> Doc:
    """The one object of ``kind`` (named ``name`` when given); fails naming what it found."""
    found = find(docs, kind, name)
    assert len(found) == 1, f"{len(found)} {kind}/{name}: {[d['metadata']['name'] for d in found]}"
    return found[0]


def docs_of(result: helm.HelmResult, kind: str) -> list[Doc]:
    """The objects of ``kind`` in a successful render."""
    return [d for d in result.docs if d.get("kind") == kind]


def names_path(stderr: str, path: str) -> bool:
    """Whether ``stderr`` names ``path`` (dotted) as a schema pointer or a dotted value path."""
    pointer = "/" + path.replace(".", "/")
    return f"'{pointer}'" in stderr or f"'{pointer}/" in stderr or path in stderr


def assert_rejected(chart: str, values: dict[str, Any], path: str) -> str:
    """Helm refuses ``values``; the message names ``path`` and no schema location elsewhere."""
    result = template(chart, values)
    assert not result.ok, f"{chart} accepted {values!r}:\n{result.stdout[-2000:]}"
    assert names_path(result.stderr, path), f"the error does not name {path!r}:\n{result.stderr}"
    pointer = "/" + path.replace(".", "/")
    elsewhere = [
        loc
        for loc in (error.pointer for error in result.schema_errors(groups=True))
        if loc and not (loc.startswith(pointer) or pointer.startswith(loc))
    ]
    assert not elsewhere, f"the error names unrelated keys {elsewhere}:\n{result.stderr}"
    return result.stderr


def policies(result: helm.HelmResult) -> dict[str, Doc]:
    """NetworkPolicies by the component they fence: the component label of their pod selector,
    else of their own labels (slurm-bridge selects pods by name and instance only, as upstream),
    else their name."""
    key = "app.kubernetes.io/component"
    return {
        d["spec"]["podSelector"]["matchLabels"].get(
            key, (d["metadata"].get("labels") or {}).get(key, d["metadata"]["name"])
        ): d
        for d in docs_of(result, "NetworkPolicy")
    }


def egress_ports(policy: Doc) -> dict[int, list[Any]]:
    """Port -> the `to` peers of the rule (an empty list means any destination)."""
    found: dict[int, list[Any]] = {}
    for rule in policy["spec"].get("egress", []):
        for port in rule.get("ports", []):
            found.setdefault(int(port["port"]), []).extend(rule.get("to", []))
    return found


def ingress_ports(policy: Doc) -> dict[int, list[Any]]:
    """Port -> the `from` peers of the rule (an empty list means any source)."""
    found: dict[int, list[Any]] = {}
    for rule in policy["spec"].get("ingress", []):
        for port in rule.get("ports", []):
            found.setdefault(int(port["port"]), []).extend(rule.get("from", []))
    return found
