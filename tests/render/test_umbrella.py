"""The example umbrella chart (``examples/umbrella``) and the ``values/`` profiles through it.

The umbrella is built once per session in a temporary copy (``slinky_harness.helm.umbrella.build``).
Every render goes through the same strict checks as the per-chart render tier (Kubernetes OpenAPI
and CRD schemas, every invariant of :mod:`slinky_harness.k8s.manifests`), plus what only a parent chart
can show: the four charts together have no name collisions, every name is scoped to the release,
``global.imageRegistry`` and ``global.imagePullSecrets`` reach every image and pod of every subchart,
and a subchart renders exactly what the chart renders alone with the same values.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import pytest

from slinky_harness.helm import charts, umbrella
from slinky_harness.helm import client as helm
from slinky_harness.helm.values import merge
from slinky_harness.k8s import manifests
from slinky_harness.k8s import schemas as kubeschema

if TYPE_CHECKING:
    from pathlib import Path

    Doc = dict[str, Any]

SENTINEL_REGISTRY = "registry.suite.invalid"
SENTINEL_SECRET = "suite-pull-secret"
NEWEST = kubeschema.newest_version()
SUBCHARTS = [str(d["name"]) for d in umbrella.dependencies()]
CHARTS = {c.name: c for c in charts.discover_charts()}
PROFILES = charts.profiles()
UMBRELLA_DEFAULTS: dict[str, Any] = charts.load_yaml(umbrella.UMBRELLA_DIR / "values.yaml")


def min_kube() -> str:
    """The umbrella's lowest supported Kubernetes (its own kubeVersion bound)."""
    meta = umbrella.meta()
    return charts.Chart(str(meta["name"]), umbrella.UMBRELLA_DIR, meta).min_kube_version


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return umbrella.build(tmp_path_factory.mktemp("umbrella"))


def with_globals(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with the sentinel registry and pull secret as the umbrella's globals."""
    result = copy.deepcopy(values)
    glob = result.setdefault("global", {})
    glob["imageRegistry"] = SENTINEL_REGISTRY
    glob["imagePullSecrets"] = [SENTINEL_SECRET]
    return result


def pull_secret_problems(docs: list[Doc]) -> list[str]:
    """Every object with an image sets the global pull secret on every pod spec it carries."""
    problems = []
    for doc in docs:
        images = [p for p, v in manifests.walk(doc) if p.endswith(".image") and isinstance(v, str)]
        if not images:
            continue
        secrets = [v for p, v in manifests.walk(doc) if p.endswith(".imagePullSecrets")]
        if not secrets:
            problems.append(f"{manifests.ident(doc)}: images {images} but no imagePullSecrets")
        for found in secrets:
            names = [s if isinstance(s, str) else (s or {}).get("name") for s in found or []]
            if SENTINEL_SECRET not in names:
                problems.append(
                    f"{manifests.ident(doc)}: imagePullSecrets {names} lack global {SENTINEL_SECRET!r}"
                )
    return problems


def render(
    chart: Path,
    values: dict[str, Any],
    kube: str = NEWEST,
    *,
    release: str = helm.DEFAULT_RELEASE,
    namespace: str = helm.DEFAULT_NAMESPACE,
) -> helm.HelmResult:
    """``helm template`` that must succeed; renders are shared between tests (read-only copies)."""
    key = (str(chart), json.dumps(values, sort_keys=True), kube, release, namespace)
    if key not in _RENDERS:
        result = helm.template(
            chart, values, kube_version=kube, release=release, namespace=namespace
        )
        assert result.ok, result.describe()
        assert result.docs, "the render is empty"
        _RENDERS[key] = result
    return copy.deepcopy(_RENDERS[key])


_RENDERS: dict[tuple[str, str, str, str, str], helm.HelmResult] = {}


def all_problems(docs: list[Doc], values: dict[str, Any], kube: str) -> list[str]:
    problems = manifests.all_invariants(
        docs, namespace=helm.DEFAULT_NAMESPACE, values=values, registry=SENTINEL_REGISTRY
    )
    problems += pull_secret_problems(docs)
    problems += kubeschema.schema_set(kube).validate_all(docs)
    return problems


VENDORED = charts.dependents(list(CHARTS.values()))
"""Charts that come inside another one (slurm-operator-crds inside slurm-operator)."""


def source_chart(doc: Doc) -> str:
    """The subchart of the umbrella an object comes from (its ``helm.sh/chart`` label, version cut
    off; a chart that comes inside another one counts as that one, as its Chart.yaml says)."""
    label = str((doc.get("metadata") or {}).get("labels", {}).get("helm.sh/chart", ""))
    name = label.rpartition("-")[0]
    return VENDORED.get(name, name)


def enabled_subcharts(values: dict[str, Any]) -> list[str]:
    merged = merge(UMBRELLA_DEFAULTS, values)
    return [name for name in SUBCHARTS if (merged.get(name) or {}).get("enabled", True)]


# -- the umbrella's defaults and every profile, rendered whole --

CASES = [pytest.param("defaults", {}, id="defaults")] + [
    pytest.param(stem, data, id=f"profile/{stem}") for stem, data in PROFILES.items()
]


@pytest.mark.parametrize("kube", sorted({min_kube(), NEWEST}))
@pytest.mark.parametrize(("name", "profile"), CASES)
def test_umbrella_render_is_valid(
    chart: Path, name: str, profile: dict[str, Any], kube: str
) -> None:
    """The umbrella with this profile renders, validates strictly and holds every invariant."""
    values = with_globals(profile)
    result = render(chart, values, kube)
    assert not all_problems(result.docs, values, kube), "\n".join(
        all_problems(result.docs, values, kube)
    )
    rendered = {source_chart(d) for d in result.docs}
    assert rendered == set(enabled_subcharts(profile)), f"{name}: subcharts rendered {rendered}"


@pytest.mark.parametrize(("name", "profile"), CASES)
def test_subchart_renders_as_the_chart_alone(
    chart: Path, name: str, profile: dict[str, Any]
) -> None:
    """Each subchart's objects equal the chart's own render with the same, coalesced, values."""
    values = with_globals(profile)
    whole = render(chart, values).docs
    for sub in enabled_subcharts(profile):
        block = merge(UMBRELLA_DEFAULTS.get(sub) or {}, profile.get(sub) or {})
        block["global"] = merge(UMBRELLA_DEFAULTS.get("global") or {}, values["global"])
        alone = render(CHARTS[sub].path, block).docs
        mine = [d for d in whole if source_chart(d) == sub]
        assert _normalised(mine) == _normalised(alone), f"{sub} differs as a subchart of {name}"


@pytest.mark.parametrize(("name", "profile"), [c for c in CASES if c.id != "defaults"])
def test_profile_means_the_same_through_the_umbrella(
    chart: Path, name: str, profile: dict[str, Any]
) -> None:
    """``helm install x examples/umbrella -f values/<p>.yaml`` renders, for every chart the profile
    has a block for, what installing that chart alone with its block does: the umbrella's own
    defaults (GPU NodeSet, bridge partition, topology wiring) never leak into a profile, which
    switches them off where it replaces them."""
    values = with_globals(profile)
    whole = render(chart, values).docs
    for sub in enabled_subcharts(profile):
        if sub not in profile:
            continue
        block = {**copy.deepcopy(profile[sub]), "global": values["global"]}
        alone = render(CHARTS[sub].path, block).docs
        mine = [d for d in whole if source_chart(d) == sub]
        diff = _diff(_normalised(mine), _normalised(alone))
        assert not diff, f"{name}: {sub} through the umbrella differs from {sub} alone:\n{diff}"


def _diff(mine: dict[tuple[str, str], Doc], alone: dict[tuple[str, str], Doc]) -> str:
    lines = [f"only through the umbrella: {k}" for k in sorted(mine.keys() - alone.keys())]
    lines += [f"only alone: {k}" for k in sorted(alone.keys() - mine.keys())]
    for key in sorted(mine.keys() & alone.keys()):
        if mine[key] != alone[key]:
            paths = dict(manifests.walk(mine[key]))
            other = dict(manifests.walk(alone[key]))
            changed = sorted(p for p in paths.keys() | other.keys() if paths.get(p) != other.get(p))
            lines.append(
                f"{key}: {[p for p in changed if not any(c != p and c.startswith(p) for c in changed)][:8]}"
            )
    return "\n".join(lines)


def _normalised(docs: list[Doc]) -> dict[tuple[str, str], Doc]:
    """Docs by kind and name, with what is random per render (keys, certificates) blanked."""
    result = {}
    for original in docs:
        doc = copy.deepcopy(original)
        if doc.get("kind") == "Secret":
            doc.pop("data", None)
            doc.pop("stringData", None)
        for _, value in manifests.walk(doc):
            if isinstance(value, dict):
                if "caBundle" in value:
                    value["caBundle"] = "<random>"
                for key in [k for k in value if str(k).startswith("checksum/")]:
                    value[key] = "<random>"
        result[(str(doc["kind"]), str(doc["metadata"]["name"]))] = doc
    return result


# -- every ci scenario of every chart, as that chart's block --


RESET: dict[str, dict[str, Any]] = {
    "slurm-operator": {"certManager": {"enabled": True}},
    "slurm-cluster": {
        "nodesets": {"gpu": {"enabled": False}},
        "loginsets": {"login": {"enabled": False}},
        "partitions": {"slurm-bridge": {"enabled": False}},
        "topology": {"configMapRef": {"name": ""}},
    },
    "gpu-topology-labeler": {"topology": {"configMapName": ""}},
    "slurm-bridge": {},
}
"""Values that undo the umbrella's defaults for one subchart."""


@pytest.mark.parametrize("sub", SUBCHARTS)
def test_reset_gives_the_chart_defaults(chart: Path, sub: str) -> None:
    """RESET undoes exactly the umbrella's defaults: the subchart then renders its own defaults."""
    values = with_globals({sub: RESET[sub]})
    mine = [d for d in render(chart, values).docs if source_chart(d) == sub]
    alone = render(CHARTS[sub].path, {"global": values["global"]}).docs
    diff = _diff(_normalised(mine), _normalised(alone))
    assert not diff, diff


def _ci_cases() -> list[Any]:
    cases = []
    for name in SUBCHARTS:
        for scenario in charts.scenarios(CHARTS[name], include_profiles=False):
            if scenario.source is not None:
                cases.append(pytest.param(scenario, id=scenario.id))
    return cases


@pytest.mark.parametrize("scenario", _ci_cases())
def test_globals_reach_every_image_and_pod(chart: Path, scenario: charts.Scenario) -> None:
    """With a ci scenario as its block, every image of the subchart uses ``global.imageRegistry``
    and every pod ``global.imagePullSecrets`` (the ci files switch the optional parts on)."""
    block = copy.deepcopy(scenario.values)
    block.pop("global", None)
    values = with_globals({name: {"enabled": name == scenario.chart} for name in SUBCHARTS})
    merged = merge(RESET[scenario.chart], block)
    for name in block.get("nodesets") or {}:  # a ci NodeSet the reset switched off
        merged["nodesets"][name].setdefault("enabled", True)
    values[scenario.chart] = {**merged, "enabled": True}
    result = render(chart, values)
    problems = [
        *manifests.check_images(result.docs, SENTINEL_REGISTRY),
        *pull_secret_problems(result.docs),
        *manifests.check_unique(result.docs),
    ]
    assert not problems, "\n".join(problems)
    assert {source_chart(d) for d in result.docs} == {scenario.chart}


MIRROR = "mirror.example.com"
HOSTED_IMAGES: dict[str, dict[str, Any]] = {
    # the labeler's default `registry` (ghcr.io) beside a repository that carries its own host
    "gpu-topology-labeler": {"image": {"repository": "ghcr.io/acme/labeler"}},
    "slurm-operator": {
        "operator": {"image": {"repository": "quay.io/acme/slurm-operator"}},
        "webhook": {"image": "localhost:5000/acme/webhook:1.0"},  # upstream's whole-reference form
    },
    "slurm-bridge": {"scheduler": {"image": {"repository": "acme/scheduler"}}},  # no host at all
    "slurm-cluster": {"controller": {"slurmctld": {"image": "docker.io/acme/slurmctld:26.05"}}},
}
"""Images given with a host (in each chart's forms) and one without, as a user might write them."""


def names_a_host(part: str) -> bool:
    """Docker's rule: the first path element of a reference is a registry host when it holds a
    "." or a ":", or is "localhost"."""
    return "." in part or ":" in part or part == "localhost"


def image_hosts(docs: list[Doc]) -> dict[str, list[str]]:
    """Every image reference of the render (containers, init containers and the Slinky objects'
    image fields) -> the registry hosts it names, outermost first."""
    found: dict[str, list[str]] = {}
    for doc in docs:
        for path, value in manifests.walk(doc):
            if path.endswith(".image") and isinstance(value, str):
                parts = value.split("/")
                hosts = []
                while len(parts) > 1 and names_a_host(parts[0]):
                    hosts.append(parts.pop(0))
                found[value] = hosts
    return found


@pytest.mark.parametrize(("name", "profile"), CASES)
def test_one_registry_gives_one_host_on_every_image(
    chart: Path, name: str, profile: dict[str, Any]
) -> None:
    """Invariant: with ``global.imageRegistry`` set, every image of every pod of the umbrella names
    exactly one registry host, that one: the registry replaces the host an image carries (in
    ``repository``, a whole reference or ``registry``), never prefixes it, in every chart alike."""
    values = merge(profile, copy.deepcopy(HOSTED_IMAGES))
    values.setdefault("global", {})["imageRegistry"] = MIRROR
    hosts = image_hosts(render(chart, values).docs)
    wrong = {image: found for image, found in hosts.items() if found != [MIRROR]}
    assert not wrong, f"images that do not name {MIRROR} as their one host: {wrong}"
    if name == "defaults":  # every subchart on: the images given above are all there
        assert {
            f"{MIRROR}/acme/labeler:{CHARTS['gpu-topology-labeler'].meta['appVersion']}",
            f"{MIRROR}/acme/webhook:1.0",
            f"{MIRROR}/acme/slurmctld:26.05",
        } <= set(hosts), sorted(hosts)
        assert any(i.startswith(f"{MIRROR}/acme/slurm-operator:") for i in hosts)
        assert any(i.startswith(f"{MIRROR}/acme/scheduler:") for i in hosts)


# -- names --


def test_two_releases_share_no_object_names(chart: Path) -> None:
    """Two umbrella releases in one namespace: every name (namespaced or not) differs. The one
    exception is slurm-cluster's placeholder for the topology ConfigMap the labeler keeps (named
    by ``topology.configMapRef.name``, not by the chart): a lookup-guarded hook, created only when
    that ConfigMap is absent and never owned by a release. A cluster runs one Slinky operator, which
    owns the CRDs and the cluster-wide webhook configurations, and names its objects as upstream's
    chart does (``slurm-operator``, ``slurm-operator-webhook``, so that upgrading an upstream
    release keeps them): the second release leaves it to the first (``slurm-operator.enabled:
    false``). slurm-bridge names its objects as upstream's chart does, without the release (one
    bridge per namespace, charts/slurm-bridge/README.md "Names"), so the second release runs
    none (``slurm-bridge.enabled: false``)."""
    values = with_globals({})
    second = with_globals(
        {"slurm-operator": {"enabled": False}, "slurm-bridge": {"enabled": False}}
    )

    def names(release: str) -> set[tuple[str, str]]:
        docs = render(chart, values if release == "one" else second, release=release).docs
        return {
            (str(d["kind"]), str(d["metadata"]["name"]))
            for d in docs
            if "slinky.slurm.net/placeholder" not in (d["metadata"].get("annotations") or {})
        }

    one, two = names("one"), names("two")
    assert not one & two, f"names not scoped to the release: {sorted(one & two)}"


def test_release_namespace_flows_to_every_subchart(chart: Path) -> None:
    """Another namespace moves every namespaced object of every subchart, and nothing else names one."""
    values = with_globals({})
    result = render(chart, values, release="other", namespace="elsewhere")
    problems = manifests.check_namespaces(
        result.docs, "elsewhere", manifests.value_strings(merge(UMBRELLA_DEFAULTS, values))
    )
    assert not problems, "\n".join(problems)


def test_no_name_collides_across_subcharts(chart: Path) -> None:
    """No two subcharts render an object of the same kind and name (Helm would apply one twice)."""
    docs = render(chart, with_globals({})).docs
    seen: dict[tuple[str, str], str] = {}
    clashes = []
    for doc in docs:
        key = (str(doc["kind"]), str(doc["metadata"]["name"]))
        if key in seen and seen[key] != source_chart(doc):
            clashes.append(f"{key} from {seen[key]} and {source_chart(doc)}")
        seen.setdefault(key, source_chart(doc))
    assert not clashes, "\n".join(clashes)
    assert {source_chart(d) for d in docs} == set(SUBCHARTS)


# -- values reach the subcharts --

PASS_THROUGH: list[Any] = [
    pytest.param(
        "slurm-operator",
        {"operator": {"replicas": 3}},
        ("Deployment", "slurm-operator", "spec.replicas", 3),
        id="slurm-operator",
    ),
    pytest.param(
        "slurm-cluster",
        {"restapi": {"replicas": 3}},
        ("RestApi", "rel-slurm", "spec.replicas", 3),
        id="slurm-cluster",
    ),
    pytest.param(
        "gpu-topology-labeler",
        {"controller": {"replicas": 2}},
        ("Deployment", "rel-gpu-topology-labeler", "spec.replicas", 2),
        id="gpu-topology-labeler",
    ),
    pytest.param(
        "slurm-bridge",
        {"scheduler": {"replicaCount": 2, "leaderElect": True}},
        ("Deployment", "slurm-bridge-scheduler", "spec.replicas", 2),
        id="slurm-bridge",
    ),
]


@pytest.mark.parametrize(("sub", "block", "expect"), PASS_THROUGH)
def test_values_pass_through(
    chart: Path, sub: str, block: dict[str, Any], expect: tuple[str, str, str, Any]
) -> None:
    kind, name, path, want = expect

    def value(values: dict[str, Any]) -> Any:
        docs = render(chart, with_globals(values)).docs
        [doc] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
        node: Any = doc
        for part in path.split("."):
            node = node.get(part)
        return node

    assert value({}) != want, "the default already has the value: the test proves nothing"
    assert value({sub: block}) == want


@pytest.mark.parametrize("sub", SUBCHARTS)
def test_condition_switches_a_subchart_off(chart: Path, sub: str) -> None:
    docs = render(chart, with_globals({sub: {"enabled": False}})).docs
    rendered = {source_chart(d) for d in docs}
    assert sub not in rendered
    assert rendered == set(SUBCHARTS) - {sub}


@pytest.mark.parametrize(
    "values",
    [
        pytest.param({"slurm-clustr": {}}, id="misspelled-chart-block"),
        pytest.param({"slurm-cluster": {"nodesetz": {}}}, id="subchart-schema"),
        pytest.param({"gpu-topology-labeler": {"topology": {"preset": "gcp"}}}, id="labeler-enum"),
        pytest.param({"slurm-bridge": {"enabled": "yes"}}, id="condition-type"),
    ],
)
def test_typos_are_refused(chart: Path, values: dict[str, Any]) -> None:
    result = helm.template(chart, values)
    assert not result.ok, "helm accepted values the schemas should refuse"
    assert "schema" in result.stderr.lower() or "values don't meet" in result.stderr, result.stderr


def _notes(chart: Path, values: dict[str, Any]) -> str:
    result = helm.dry_run_install(chart, values)
    assert result.ok, result.describe()
    assert not manifests.check_notes(result.notes, result.docs)
    return result.notes


def test_notes_list_the_subcharts_and_the_crd_step(chart: Path) -> None:
    """The README's first install (slurm-cluster and slurm-bridge off) is told the upgrade that
    follows; the full install is not; with the CRDs outside the release, NOTES says how to install
    them first."""
    first = _notes(chart, {"slurm-bridge": {"enabled": False}, "slurm-cluster": {"enabled": False}})
    upgrade = f"helm upgrade {helm.DEFAULT_RELEASE} examples/umbrella -n {helm.DEFAULT_NAMESPACE}"
    assert upgrade in first
    assert "slurm-bridge          disabled" in first
    assert "slurm-cluster         disabled" in first
    full = _notes(chart, {})
    assert "helm upgrade" not in full
    assert "slurm-cluster         enabled" in full
    outside = _notes(chart, {"slurm-operator": {"crds": {"enabled": False}}})
    assert "helm install slurm-operator-crds ./charts/slurm-operator-crds" in outside


def test_pull_secret_objects_reach_every_pod(chart: Path) -> None:
    """``global.imagePullSecrets`` given as ``{name: ...}`` objects works like plain names."""
    values = with_globals({})
    values["global"]["imagePullSecrets"] = [{"name": SENTINEL_SECRET}]
    docs = render(chart, values).docs
    problems = pull_secret_problems(docs)
    assert not problems, "\n".join(problems)
