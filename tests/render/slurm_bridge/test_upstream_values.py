"""slurm-bridge takes values written for upstream Slinky's ``slurm-bridge`` chart (v1.2.1) with their meaning.

Two kinds of tests:

* upstream's own ``values.yaml`` (read from upstream's packaged chart, ``SLINKY_UPSTREAM_CHARTS``, as
  the conformance test takes it; nothing of upstream is stored here), alone and with overlays of
  upstream's keys, is accepted by our chart, and the three Deployments' images, arguments and
  environment equal what upstream's chart renders for the same values (less the documented
  intentional differences);
* each upstream key changes our render the way upstream's templates use it (``sharedConfig.*``,
  ``schedulerConfig.*``, ``scheduler.replicaCount``/``leaderElect``/``verbosity``,
  ``controllers.verbosity``, ``admission.managedNamespaces``/``managedNamespaceSelector``, images
  whose ``repository`` holds the registry), with the expected values written out by hand from
  upstream's templates, and our extensions (the Token) fit them.
"""

from __future__ import annotations

import tarfile
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.render import render_support as support
from tests.render.render_support import Doc, find, one

from slinky_harness import parity
from slinky_harness.helm import charts
from slinky_harness.helm import client as helm
from slinky_harness.helm.values import merge

if TYPE_CHECKING:
    from pathlib import Path

CHART = next(c for c in charts.discover_charts() if c.name == "slurm-bridge")
INTENTIONAL = parity.DIFFERENCES_FILE
RELEASE = "slurm-bridge"


def render(values: dict[str, Any], namespace: str = "slurm") -> list[Doc]:
    return support.render(CHART.name, values, release=RELEASE, namespace=namespace)


def container(docs: list[Doc], deployment: str) -> Doc:
    spec = one(docs, "Deployment", deployment)["spec"]["template"]["spec"]
    containers: list[Doc] = spec["containers"]
    assert len(containers) == 1
    return containers[0]


def config_yaml(docs: list[Doc]) -> Doc:
    data: Doc = yaml.safe_load(one(docs, "ConfigMap", "slurm-bridge-config")["data"]["config.yaml"])
    return data


def scheduler_config(docs: list[Doc]) -> Doc:
    cm = one(docs, "ConfigMap", "scheduler-config")
    data: Doc = yaml.safe_load(cm["data"]["scheduler-config.yaml"])
    return data


def jwt_secret(c: Doc) -> tuple[str, str]:
    env = {e["name"]: e for e in c.get("env", [])}
    ref = env["SLURM_JWT"]["valueFrom"]["secretKeyRef"]
    return ref["name"], ref["key"]


# --- upstream's values.yaml, rendered by both charts ---------------------------------------------


@pytest.fixture(scope="module")
def upstream_archive() -> Path:
    return parity.upstream_chart("slurm-bridge")


@pytest.fixture(scope="module")
def upstream_values(upstream_archive: Path) -> dict[str, Any]:
    """upstream's values.yaml, as its packaged chart ships it."""
    with tarfile.open(upstream_archive) as archive:
        member = archive.extractfile("slurm-bridge/values.yaml")
        assert member is not None
        values: dict[str, Any] = yaml.safe_load(member.read())
    return values


OVERLAYS: dict[str, dict[str, Any]] = {
    "as-is": {},
    "scheduler-keys": {
        "scheduler": {
            "replicaCount": 2,
            "leaderElect": True,
            "verbosity": 5,
            "image": {"repository": "registry.example.com/hpc/scheduler", "tag": "9.9"},
        }
    },
    "controllers-verbosity": {"controllers": {"verbosity": "debug", "replicas": 2}},
    "shared-config": {
        "sharedConfig": {
            "slurmRestApi": "http://hpc-restapi.hpc.svc.cluster.local:6820",
            "slurmJwtSecret": "bridge-jwt",
        }
    },
    "scheduler-config": {
        "schedulerConfig": {"schedulerName": "hpc-scheduler", "mcsLabel": "k8s", "partition": "gpu"}
    },
    "managed-namespace-selector": {
        "admission": {
            "managedNamespaceSelector": {"matchLabels": {"slinky.slurm.net/bridge": "yes"}},
            "image": {"repository": "quay.io/me/admission", "tag": "2"},
        }
    },
}


@pytest.mark.parametrize("namespace", ["slurm", "bridge"])
@pytest.mark.parametrize("overlay", list(OVERLAYS), ids=list(OVERLAYS))
def test_upstream_values_render_the_same_deployments(
    upstream_archive: Path, upstream_values: dict[str, Any], overlay: str, namespace: str
) -> None:
    """upstream's values.yaml (plus an overlay of upstream's keys) is accepted, and each
    Deployment's image, arguments and environment are upstream's for the same values, in the
    namespace of upstream's quickstart (``slurm``, where ours adds its Token) and in another."""
    values = merge(upstream_values, OVERLAYS[overlay])
    theirs = helm.template(upstream_archive, values, release=RELEASE, namespace=namespace)
    assert theirs.ok, theirs.describe()
    ours = render(values, namespace)
    intentional = [i for i in parity.load_intentional(INTENTIONAL) if "slurm-bridge" in i.charts]
    found = parity.compare(theirs.docs, ours, deployments=True, kept=("*",))
    # The Token is our extension (rendered in namespace slurm, see the Token tests below); the
    # conformance list cannot hold it, since none of upstream's cases renders in that namespace.
    extension = "Token/slurm-bridge-jwt: upstream does not render it, ours does"
    different = [str(d) for d in found if not any(i.covers(d) for i in intentional)]
    assert [d for d in different if d != extension] == []
    assert (extension in different) == (namespace == "slurm" and overlay != "shared-config")
    assert {d["metadata"]["name"] for d in find(ours, "Deployment")} == {
        d["metadata"]["name"] for d in find(theirs.docs, "Deployment")
    }


# --- each upstream key's meaning -------------------------------------------------------------------


def test_defaults_are_upstreams() -> None:
    """With no values: upstream's images (registry in ``repository``, tag = appVersion), REST API
    URL, JWT Secret, scheduler name, MCS label, partition, managed namespace, one scheduler without
    leader election and no ``--v``, controllers at log level ``info``."""
    docs = render({})
    sched, ctl = (
        container(docs, "slurm-bridge-scheduler"),
        container(docs, "slurm-bridge-controllers"),
    )
    adm = container(docs, "slurm-bridge-admission")
    assert sched["image"] == "ghcr.io/slinkyproject/slurm-bridge-scheduler:1.2.1"
    assert adm["image"] == "ghcr.io/slinkyproject/slurm-bridge-admission:1.2.1"
    assert ctl["image"] == "ghcr.io/slinkyproject/slurm-bridge-controllers:1.2.1"
    assert config_yaml(docs) == {
        "schedulerName": "slurm-bridge-scheduler",
        "slurmRestApi": "http://slurm-restapi.slurm:6820",
        "managedNamespaces": ["slurm-bridge"],
        "mcsLabel": "kubernetes",
        "partition": "slurm-bridge",
    }
    assert jwt_secret(sched) == jwt_secret(ctl) == ("slurm-bridge-token", "auth-token")
    assert one(docs, "Deployment", "slurm-bridge-scheduler")["spec"]["replicas"] == 1
    assert scheduler_config(docs)["leaderElection"]["leaderElect"] is False
    assert not [a for a in sched["args"] if str(a).startswith("--v=")]
    args = ctl["args"]
    assert args[args.index("-zap-log-level") + 1] == "info"


def test_shared_config_sets_the_url_and_the_jwt_secret() -> None:
    """``sharedConfig.slurmRestApi`` is config.yaml's ``slurmRestApi``; ``slurmJwtSecret`` is the
    Secret of ``SLURM_JWT`` in the scheduler and controllers, and the Secret our Token writes."""
    docs = render(
        {
            "sharedConfig": {
                "slurmRestApi": "http://slurm-restapi.slurm:16820",
                "slurmJwtSecret": "bridge-jwt",
            }
        }
    )
    assert config_yaml(docs)["slurmRestApi"] == "http://slurm-restapi.slurm:16820"
    for deployment in ("slurm-bridge-scheduler", "slurm-bridge-controllers"):
        assert jwt_secret(container(docs, deployment)) == ("bridge-jwt", "auth-token")
    assert one(docs, "Token")["spec"]["secretRef"] == {"name": "bridge-jwt", "key": "auth-token"}


def test_scheduler_config_names_the_scheduler_everywhere() -> None:
    """``schedulerConfig.schedulerName`` names the profile, config.yaml's scheduler, the Lease and
    the scheduler's Deployment, ServiceAccount and ClusterRole (as upstream's ``_helpers.tpl``
    definition, the one Helm uses); ``mcsLabel`` and ``partition`` go to config.yaml."""
    docs = render(
        {
            "schedulerConfig": {
                "schedulerName": "hpc-scheduler",
                "mcsLabel": "k8s",
                "partition": "gpu",
            }
        }
    )
    cfg = config_yaml(docs)
    assert (cfg["schedulerName"], cfg["mcsLabel"], cfg["partition"]) == (
        "hpc-scheduler",
        "k8s",
        "gpu",
    )
    sched = scheduler_config(docs)
    assert [p["schedulerName"] for p in sched["profiles"]] == ["hpc-scheduler"]
    assert sched["leaderElection"]["resourceName"] == "hpc-scheduler"
    deployment = one(docs, "Deployment", "hpc-scheduler")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "hpc-scheduler"
    one(docs, "ServiceAccount", "hpc-scheduler")
    one(docs, "ClusterRole", "hpc-scheduler")


def test_scheduler_replica_count_leader_elect_and_verbosity() -> None:
    """``scheduler.replicaCount`` is the Deployment's replicas, ``leaderElect`` the
    KubeSchedulerConfiguration's ``leaderElection.leaderElect``, ``verbosity`` the ``--v`` flag."""
    docs = render({"scheduler": {"replicaCount": 3, "leaderElect": True, "verbosity": 4}})
    assert one(docs, "Deployment", "slurm-bridge-scheduler")["spec"]["replicas"] == 3
    assert scheduler_config(docs)["leaderElection"]["leaderElect"] is True
    assert "--v=4" in container(docs, "slurm-bridge-scheduler")["args"]


@pytest.mark.parametrize(
    ("verbosity", "expected"), [("debug", "debug"), (2, "2"), (0, "info"), (None, "info")]
)
def test_controllers_verbosity_is_the_zap_log_level(verbosity: Any, expected: str) -> None:
    """``controllers.verbosity`` is the value of ``-zap-log-level`` (quoted; unset or 0 is
    ``info``, as upstream's ``default "info"``)."""
    args = container(render({"controllers": {"verbosity": verbosity}}), "slurm-bridge-controllers")[
        "args"
    ]
    assert args[args.index("-zap-log-level") + 1] == expected


def test_managed_namespaces_and_selector() -> None:
    """``admission.managedNamespaces`` is config.yaml's list; a ``managedNamespaceSelector`` wins
    over it (upstream's rule) and keeps its labels, the protected namespaces excluded."""
    cfg = config_yaml(render({"admission": {"managedNamespaces": ["ml", "batch"]}}))
    assert cfg["managedNamespaces"] == ["ml", "batch"]
    assert "managedNamespaceSelector" not in cfg
    selector = {"matchLabels": {"slinky.slurm.net/bridge": "yes"}}
    cfg = config_yaml(
        render({"admission": {"managedNamespaces": ["ml"], "managedNamespaceSelector": selector}})
    )
    assert "managedNamespaces" not in cfg
    assert cfg["managedNamespaceSelector"]["matchLabels"] == selector["matchLabels"]
    [protected] = cfg["managedNamespaceSelector"]["matchExpressions"]
    assert protected["operator"] == "NotIn"
    assert {"kube-system", "slurm", "slinky"} <= set(protected["values"])


@pytest.mark.parametrize(
    ("image", "registry", "expected"),
    [
        pytest.param(
            {"repository": "ghcr.io/slinkyproject/slurm-bridge-scheduler", "tag": "1.2.0"},
            "",
            "ghcr.io/slinkyproject/slurm-bridge-scheduler:1.2.0",
            id="registry-in-repository",
        ),
        pytest.param(
            {"repository": "localhost:5000/scheduler", "tag": "1"},
            "",
            "localhost:5000/scheduler:1",
            id="registry-with-port",
        ),
        pytest.param(
            {
                "repository": "ghcr.io/slinkyproject/slurm-bridge-scheduler",
                "digest": "sha256:" + "a" * 64,
            },
            "",
            "ghcr.io/slinkyproject/slurm-bridge-scheduler@sha256:" + "a" * 64,
            id="digest-wins",
        ),
        pytest.param(
            {"repository": "ghcr.io/slinkyproject/slurm-bridge-scheduler", "tag": "1"},
            "mirror.example.com/cache",
            "mirror.example.com/cache/slinkyproject/slurm-bridge-scheduler:1",
            id="global-registry-replaces-the-host",
        ),
        pytest.param(
            {"repository": "slinkyproject/slurm-bridge-scheduler", "tag": "1"},
            "mirror.example.com",
            "mirror.example.com/slinkyproject/slurm-bridge-scheduler:1",
            id="global-registry-before-a-bare-repository",
        ),
    ],
)
def test_image_repository_holds_the_registry(image: Doc, registry: str, expected: str) -> None:
    """An image in upstream's form renders as upstream's ``<repository>:<tag>``: never a doubled
    host; ``global.imageRegistry`` (ours) replaces the host once."""
    values: dict[str, Any] = {"scheduler": {"image": image}}
    if registry:
        values["global"] = {"imageRegistry": registry}
    assert container(render(values), "slurm-bridge-scheduler")["image"] == expected


# --- our Token fits upstream's keys ----------------------------------------------------------------


def test_token_writes_upstreams_secret_in_the_quickstart_layout() -> None:
    """In upstream's quickstart layout (the bridge in ``slurm``, next to a slurm release serving
    ``slurm-restapi.slurm``), ours renders a Token doing what the quickstart's hand-made one does:
    signed with ``slurm-auth-jwt``, written to ``slurm-bridge-token``, key ``auth-token``."""
    token = one(render({}, namespace="slurm"), "Token")
    assert token["metadata"]["name"] == "slurm-bridge-jwt"
    assert token["spec"]["jwtKeyRef"] == {"name": "slurm-auth-jwt", "key": "jwt.key"}
    assert token["spec"]["secretRef"] == {"name": "slurm-bridge-token", "key": "auth-token"}


@pytest.mark.parametrize(
    ("namespace", "url", "jwt_key"),
    [
        ("bridge", "http://slurm-restapi.slurm:6820", None),
        ("slurm", "https://slurm.example.com:6820", None),
        ("hpc", "http://hpc-restapi.hpc.svc.cluster.local:6820", "hpc-auth-jwt"),
        ("hpc", "http://hpc-restapi:6820", "hpc-auth-jwt"),
    ],
    ids=["other-namespace", "external-host", "fqdn-here", "short-name-here"],
)
def test_token_only_where_its_key_secret_is_known(
    namespace: str, url: str, jwt_key: str | None
) -> None:
    """The Token reads its key from its own namespace: it is rendered when the REST API Service
    (and so slurm-cluster's JWT key Secret) is in the release's namespace, and not otherwise."""
    docs = render({"sharedConfig": {"slurmRestApi": url}}, namespace=namespace)
    tokens = find(docs, "Token")
    if jwt_key is None:
        assert tokens == []
    else:
        assert [t["spec"]["jwtKeyRef"]["name"] for t in tokens] == [jwt_key]


def test_token_with_an_explicit_key_secret_and_off() -> None:
    """``token.jwtKeySecretRef.name`` renders the Token in any layout; ``token.create: false``
    renders none (the Secret ``sharedConfig.slurmJwtSecret`` is the user's)."""
    docs = render({"token": {"jwtKeySecretRef": {"name": "copied-jwt-key"}}}, namespace="bridge")
    assert one(docs, "Token")["spec"]["jwtKeyRef"]["name"] == "copied-jwt-key"
    assert find(render({"token": {"create": False}}), "Token") == []


@pytest.mark.parametrize(
    ("url", "namespace", "ports"),
    [
        ("http://slurm-restapi.slurm:6820", "slurm", [6820]),
        ("http://hpc-restapi.hpc.svc:7000", "hpc", [6820, 7000]),
        ("https://slurm.example.com", None, [443]),
    ],
    ids=["service", "service-other-port", "external"],
)
def test_slurmrestd_network_policy_peer_follows_the_url(
    url: str, namespace: str | None, ports: list[int]
) -> None:
    """The scheduler's egress to slurmrestd: the slurmrestd pods of the Service's namespace when
    the URL names a Service, else the URL's port at any address."""
    docs = render({"sharedConfig": {"slurmRestApi": url}}, namespace="bridge")
    egress = one(docs, "NetworkPolicy", "slurm-bridge-scheduler")["spec"]["egress"]
    rule = egress[-1]
    assert [p["port"] for p in rule["ports"]] == ports
    if namespace is None:
        assert "to" not in rule
    else:
        [peer] = rule["to"]
        assert peer["namespaceSelector"]["matchLabels"] == {
            "kubernetes.io/metadata.name": namespace
        }
        assert peer["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "slurmrestd"}
