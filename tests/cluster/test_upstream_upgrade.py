"""An upstream Slinky release upgrades in place to our chart (issue 15, items 3 and 5).

Upstream's chart v1.2.1 (``SLINKY_UPSTREAM_CHARTS``, as the render tier's conformance test takes
it) is installed with its defaults, then ``helm upgrade`` of the same release to ours with the
same values plus what MIGRATING.md says to set. The upgrade must succeed (Kubernetes refuses a
changed Deployment selector, Helm refuses objects another release owns), and every object both
charts render keeps its UID: Helm patched it in place, nothing was deleted and recreated, so pods,
Secrets and the webhook configurations an upstream user has stay. For upstream's ``slurm`` chart
(to slurm-cluster) the Controller, RestApi and key Secrets must be among them, and the key Secrets
keep their data: the cluster's slurm.key and jwt.key do not change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.cluster import charts_support as support

from slinky_harness import parity

if TYPE_CHECKING:
    from slinky_harness.helm.client import Helm
    from slinky_harness.k8s.cluster import Cluster


@dataclass(frozen=True)
class Move:
    """One upstream chart and the settings MIGRATING.md gives for moving its release to ours."""

    upstream: str
    ours: str
    release: str
    sets: tuple[str, ...]
    keep: frozenset[str] = frozenset({"Deployment", "ServiceAccount"})
    """Kinds of upstream's release that ours must keep, every one of them, under the same UID."""
    same_data: frozenset[str] = frozenset()
    """Kinds whose ``data`` must be the same after the upgrade."""


MOVES = (
    Move("slurm-operator", "slurm-operator", "slurm-operator", ()),
    Move("slurm-bridge", "slurm-bridge", "slurm-bridge", ()),
    Move(
        "slurm",
        "slurm-cluster",
        "slurm",
        ("scheduling.preset=none",),
        keep=frozenset({"Controller", "RestApi", "Secret"}),
        same_data=frozenset({"Secret"}),
    ),
)


Object = tuple[str, str, str]
"""Kind, name and namespace (the release's unless the manifest names another)."""


def _objects(helm: Helm, release: str, namespace: str) -> set[Object]:
    manifest = helm.run("get", "manifest", release, namespace=namespace).stdout
    return {
        (str(d["kind"]), str(d["metadata"]["name"]), str(d["metadata"].get("namespace", namespace)))
        for d in yaml.safe_load_all(manifest)
        if isinstance(d, dict)
    }


def _live(cluster: Cluster, objects: set[Object]) -> dict[Object, dict[str, Any]]:
    """Each object that exists, as the API server has it (cluster-scoped kinds ignore the
    namespace)."""
    live: dict[Object, dict[str, Any]] = {}
    for ns in sorted({o[2] for o in objects}):
        refs = sorted(f"{kind.lower()}/{name}" for kind, name, where in objects if where == ns)
        text = cluster.kubectl("get", *refs, "-n", ns, "-o", "json", "--ignore-not-found")
        items = json.loads(text).get("items", []) if text.strip() else []
        for item in items:
            live[(item["kind"], item["metadata"]["name"], ns)] = item
    return live


def uid(live: dict[Object, dict[str, Any]], obj: Object) -> str | None:
    item = live.get(obj)
    return None if item is None else str(item["metadata"]["uid"])


def _data(live: dict[Object, dict[str, Any]], obj: Object) -> Any:
    return (live.get(obj) or {}).get("data")


@pytest.mark.parametrize("move", MOVES, ids=lambda m: m.upstream)
def test_an_upstream_release_upgrades_in_place(
    cluster: Cluster, helm4: Helm, crds: None, namespace: str, move: Move
) -> None:
    """The Slinky CRDs come from outside the release (``crds``), as upstream's guide installs them."""
    chart = parity.upstream_chart(move.upstream)
    wait = ["--wait", "--timeout", support.HELM_TIMEOUT]
    try:
        helm4.run("install", move.release, str(chart), *wait, namespace=namespace)
        before_objects = _objects(helm4, move.release, namespace)
        before = _live(cluster, before_objects)
        assert before, "upstream's release created nothing"
        sets = [arg for value in move.sets for arg in ("--set", value)]
        ours = str(support.CHARTS[move.ours].path)
        helm4.run("upgrade", move.release, ours, *sets, *wait, namespace=namespace)
        after_objects = _objects(helm4, move.release, namespace)
        after = _live(cluster, before_objects & after_objects)
        dropped = sorted(o for o in before_objects - after_objects if o[0] in move.keep)
        assert not dropped, f"our chart no longer renders these objects of upstream's: {dropped}"
        assert {o[0] for o in before_objects} >= move.keep, sorted(before_objects)
        replaced = sorted(
            o for o in before_objects & after_objects if uid(before, o) != uid(after, o)
        )
        assert not replaced, f"deleted and recreated by the upgrade, not patched: {replaced}"
        changed = sorted(
            o
            for o in before_objects & after_objects
            if o[0] in move.same_data and _data(before, o) != _data(after, o)
        )
        assert not changed, f"data changed by the upgrade: {changed}"
        history = json.loads(
            helm4.run("history", move.release, "-o", "json", namespace=namespace).stdout
        )
        assert [h["status"] for h in history] == ["superseded", "deployed"], history
    finally:
        helm4.run("uninstall", move.release, "--wait", namespace=namespace, check=False)
