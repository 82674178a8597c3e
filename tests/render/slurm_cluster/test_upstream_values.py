"""slurm-cluster takes values written for upstream Slinky's ``slurm`` chart (v1.2.1) with their meaning.

Each test renders our chart with a values file in upstream's layout and checks the Slinky objects
it makes: images written as upstream writes them (the registry inside ``repository``, a reference
string, a digest), the NodeSets a user lists and no others, and the other upstream keys
slurm-cluster accepts. The expected values are the ones upstream's chart documents for the same
input (its values.yaml comments and helm-unittest suites), written out here by hand.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.render import render_support as support
from tests.render.render_support import Doc, one

from slinky_harness.helm import charts
from slinky_harness.helm import client as helm

CHART = next(c for c in charts.discover_charts() if c.name == "slurm-cluster")


def render(values: dict[str, Any]) -> list[Doc]:
    return support.render(CHART.name, values)


def images(docs: list[Doc], nodeset: str = "cpu") -> dict[str, str]:
    """The container images of the Slinky objects, keyed by ``<kind>.<container field>`` (of the
    NodeSets, only ``nodeset``'s)."""
    result = {}
    for doc in docs:
        if doc["kind"] == "NodeSet" and not doc["metadata"]["name"].endswith(f"-{nodeset}"):
            continue
        for field in ("slurmctld", "reconfigure", "logfile", "slurmd", "slurmrestd", "slurmdbd"):
            image = (doc.get("spec") or {}).get(field, {}).get("image")
            if image:
                result[f"{doc['kind']}.{field}"] = image
    return result


# --- images ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        pytest.param(
            {"repository": "ghcr.io/slinkyproject/slurmd", "tag": "25.11-ubuntu24.04"},
            "ghcr.io/slinkyproject/slurmd:25.11-ubuntu24.04",
            id="registry-in-repository",
        ),
        pytest.param(
            {"repository": "localhost:5000/slurmd", "tag": "1"},
            "localhost:5000/slurmd:1",
            id="registry-with-port",
        ),
        pytest.param(
            {"repository": "ghcr.io/slinkyproject/slurmd", "tag": None, "digest": "sha256:abc123"},
            "ghcr.io/slinkyproject/slurmd@sha256:abc123",
            id="digest-wins-tag-null",
        ),
        pytest.param(
            "registry.example.com/hpc/slurmd:custom",
            "registry.example.com/hpc/slurmd:custom",
            id="reference-string",
        ),
        pytest.param(
            {"registry": "mirror.example.com", "repository": "hpc/slurmd", "tag": "2"},
            "mirror.example.com/hpc/slurmd:2",
            id="registry-key-before-a-bare-repository",
        ),
        pytest.param(
            {"registry": "mirror.example.com", "repository": "quay.io/hpc/slurmd", "tag": "2"},
            "quay.io/hpc/slurmd:2",
            id="repository-host-wins-over-registry-key",
        ),
    ],
)
def test_image_renders_as_upstream_writes_it(image: Any, expected: str) -> None:
    """An image in upstream's form renders to the reference upstream renders: never a doubled host."""
    docs = render({"nodesets": {"cpu": {"slurmd": {"image": image}}}})
    assert images(docs)["NodeSet.slurmd"] == expected


def test_default_images_are_upstreams() -> None:
    """The Slinky images default to upstream's repositories and tag (registry inside repository)."""
    found = images(render({"accounting": {"enabled": True}, "nodesets": {"cpu": {}}}))
    tag = "26.05-ubuntu26.04"
    for field, name in {
        "Controller.slurmctld": "slurmctld",
        "Controller.reconfigure": "slurmctld",
        "NodeSet.slurmd": "slurmd",
        "RestApi.slurmrestd": "slurmrestd",
        "Accounting.slurmdbd": "slurmdbd",
    }.items():
        assert found[field] == f"ghcr.io/slinkyproject/{name}:{tag}", field


@pytest.mark.parametrize(
    "image",
    [
        {"repository": "ghcr.io/slinkyproject/slurmd", "tag": "1"},
        "ghcr.io/slinkyproject/slurmd:1",
        {"repository": "slinkyproject/slurmd", "tag": "1"},
    ],
    ids=["object", "string", "no-host"],
)
def test_global_registry_replaces_the_host_only(image: Any) -> None:
    """``global.imageRegistry`` replaces the registry host and keeps the repository path once."""
    docs = render(
        {
            "global": {"imageRegistry": "mirror.example.com/cache"},
            "nodesets": {"cpu": {"slurmd": {"image": image}}},
        }
    )
    assert images(docs)["NodeSet.slurmd"] == "mirror.example.com/cache/slinkyproject/slurmd:1"


# --- NodeSets ----------------------------------------------------------------------------------


def nodeset_names(docs: list[Doc]) -> set[str]:
    """The Slurm NodeSet names (the pod hostname prefixes) of the rendered NodeSets."""
    return {
        d["spec"]["template"]["spec"]["hostname"].rstrip("-")
        for d in docs
        if d["kind"] == "NodeSet"
    }


def test_no_nodeset_by_default() -> None:
    """Like upstream's chart since 1.2, the defaults render no NodeSet and no partition."""
    docs = render({})
    assert nodeset_names(docs) == set()
    assert "PartitionName=" not in str(one(docs, "Controller")["spec"].get("extraConf") or "")


@pytest.mark.parametrize(
    "nodesets",
    [
        {"slinky": {}},
        {"gpu": {"replicas": 2, "partition": {"enabled": True}}, "cpu": {}},
    ],
    ids=["upstream-slinky", "two"],
)
def test_only_the_users_nodesets_are_rendered(nodesets: dict[str, Any]) -> None:
    """A user's ``nodesets`` map gives exactly those NodeSets (and only their partitions): no
    default NodeSet is merged in next to them."""
    docs = render({"nodesets": nodesets})
    assert nodeset_names(docs) == set(nodesets)
    partitions = {
        d["spec"]["template"]["spec"]["hostname"].rstrip("-")
        for d in docs
        if d["kind"] == "NodeSet" and d["spec"]["partition"]["enabled"]
    }
    assert partitions == {n for n, v in nodesets.items() if v.get("partition", {}).get("enabled")}


# --- priorityClass -----------------------------------------------------------------------------

SLINKY_PODS = ("Controller", "RestApi", "Accounting", "NodeSet", "LoginSet")
EVERY_POD: dict[str, Any] = {
    "accounting": {"enabled": True},
    "nodesets": {"cpu": {}},
    "loginsets": {"login": {}},
}


def pod_priority_classes(docs: list[Doc]) -> dict[str, str | None]:
    """The pod template ``priorityClassName`` of every Slinky object, by kind."""
    return {
        d["kind"]: d["spec"]["template"].get("spec", {}).get("priorityClassName")
        for d in docs
        if d["kind"] in SLINKY_PODS
    }


def test_priority_class_is_off_by_default() -> None:
    """No PriorityClass is created and no pod names one unless ``priorityClass.enabled``."""
    docs = render({**EVERY_POD, "priorityClass": {"create": True}})
    assert not [d for d in docs if d["kind"] == "PriorityClass"]
    assert set(pod_priority_classes(docs)) == set(SLINKY_PODS)
    assert set(pod_priority_classes(docs).values()) == {None}


def test_enabled_priority_class_reaches_every_pod_and_is_created_on_request() -> None:
    """``priorityClass.enabled`` names the class on every Slinky pod; ``create`` makes it with the
    given value, policy and description."""
    pc = {"enabled": True, "create": True, "name": "hpc-high", "value": 1000, "description": "HPC"}
    docs = render({**EVERY_POD, "priorityClass": {**pc, "preemptionPolicy": "Never"}})
    assert pod_priority_classes(docs) == dict.fromkeys(SLINKY_PODS, "hpc-high")
    created = one(docs, "PriorityClass")
    assert created["metadata"]["name"] == "hpc-high"
    assert (created["value"], created["preemptionPolicy"], created["description"]) == (
        1000,
        "Never",
        "HPC",
    )
    assert created["globalDefault"] is False


def test_priority_class_is_used_without_being_created() -> None:
    """``enabled`` without ``create`` uses an existing class and creates nothing."""
    docs = render({**EVERY_POD, "priorityClass": {"enabled": True, "name": "existing"}})
    assert not [d for d in docs if d["kind"] == "PriorityClass"]
    assert pod_priority_classes(docs) == dict.fromkeys(SLINKY_PODS, "existing")


# --- containers --------------------------------------------------------------------------------

CONTAINERS = {
    "Controller": ("controller", "slurmctld"),
    "RestApi": ("restapi", "slurmrestd"),
    "Accounting": ("accounting", "slurmdbd"),
    "NodeSet": ("nodesets.cpu", "slurmd"),
    "LoginSet": ("loginsets.login", "login"),
}


def at(values: dict[str, Any], dotted: str) -> dict[str, Any]:
    """The mapping at ``dotted`` in ``values``, created on the way."""
    node = values
    for key in dotted.split("."):
        node = node.setdefault(key, {})
    return node


def test_container_fields_pass_through_under_upstreams_container_keys() -> None:
    """Each Slinky container takes upstream's key (``controller.slurmctld``, ...) and passes any
    corev1.Container field through, with ``imagePullPolicy`` winning over the chart default."""
    values: dict[str, Any] = {"accounting": {"enabled": True}}
    probe = {"exec": {"command": ["true"]}}
    for parent, container in CONTAINERS.values():
        at(values, parent)[container] = {
            "args": ["-v"],
            "env": [{"name": "X", "value": "1"}],
            "livenessProbe": probe,
            "imagePullPolicy": "Always",
        }
    docs = render(values)
    for kind, (_, container) in CONTAINERS.items():
        got = one(docs, kind)["spec"][container]
        assert got["livenessProbe"] == probe, kind
        assert (got["args"], got["env"], got["imagePullPolicy"]) == (
            ["-v"],
            [{"name": "X", "value": "1"}],
            "Always",
        ), kind


def test_gpu_limits_merge_into_the_slurmd_resources() -> None:
    """GPUs of ``nodesets.<n>.gpu`` are added to the user's ``slurmd.resources``, which stay."""
    values = {
        "nodesets": {
            "cpu": {"gpu": {"count": 4}, "slurmd": {"resources": {"limits": {"memory": "8Gi"}}}}
        }
    }
    resources = one(render(values), "NodeSet")["spec"]["slurmd"]["resources"]
    assert resources["limits"] == {"memory": "8Gi", "nvidia.com/gpu": 4}


@pytest.mark.parametrize(
    ("values", "pointer"),
    [
        ({"controller": {"resources": {}}}, "/controller"),
        ({"nodesets": {"cpu": {"env": []}}}, "/nodesets/cpu"),
        ({"loginsetDefaults": {"image": {"tag": "1"}}}, "/loginsetDefaults"),
    ],
    ids=["controller", "nodeset", "loginsetDefaults"],
)
def test_container_keys_outside_their_container_are_refused(
    values: dict[str, Any], pointer: str
) -> None:
    """The pre-1.0 places of container settings (on the component) are gone: the schema names them."""
    result = support.template(CHART.name, values)
    assert not result.ok
    assert f"at '{pointer}': additional properties" in result.stderr, result.stderr


# --- podSpec and metadata ----------------------------------------------------------------------


def test_pod_spec_and_metadata_pass_through_to_every_pod_template() -> None:
    """``<component>.podSpec`` is the pod template's spec (any PodSpec field) and ``metadata`` adds
    labels and annotations to the object and its pod template, for every Slinky object; the pod's
    own priorityClassName wins over ``priorityClass`` and its pull secrets come first."""
    pod = {
        "nodeSelector": {"pool": "hpc"},
        "tolerations": [{"key": "hpc", "operator": "Exists", "effect": "NoSchedule"}],
        "hostNetwork": True,
        "priorityClassName": "own",
        "imagePullSecrets": [{"name": "own-pull"}],
    }
    meta = {"labels": {"team": "hpc"}, "annotations": {"note": "x"}}
    values: dict[str, Any] = {
        "accounting": {"enabled": True},
        "priorityClass": {"enabled": True, "name": "chart-wide"},
        "imagePullSecrets": ["chart-pull"],
    }
    for parent, _ in CONTAINERS.values():
        at(values, parent).update({"podSpec": pod, "metadata": meta})
    docs = render(values)
    for kind in CONTAINERS:
        doc = one(docs, kind)
        spec = doc["spec"]["template"]["spec"]
        # upstream's default kubernetes.io/os label stays: a values map merges with the default
        assert spec["nodeSelector"] == {"kubernetes.io/os": "linux", "pool": "hpc"}, kind
        assert spec["tolerations"] == pod["tolerations"], kind
        assert spec["hostNetwork"] is True, kind
        assert spec["priorityClassName"] == "own", kind
        assert spec["imagePullSecrets"] == [{"name": "own-pull"}, {"name": "chart-pull"}], kind
        for where in (doc["metadata"], doc["spec"]["template"]["metadata"]):
            assert where["labels"]["team"] == "hpc", kind
            assert where["annotations"] == {"note": "x"}, kind
        assert doc["metadata"]["labels"]["app.kubernetes.io/instance"] == helm.DEFAULT_RELEASE


@pytest.mark.parametrize(
    ("values", "pointer"),
    [
        ({"controller": {"nodeSelector": {}}}, "/controller"),
        ({"nodesets": {"cpu": {"tolerations": []}}}, "/nodesets/cpu"),
        ({"restapi": {"podAnnotations": {}}}, "/restapi"),
    ],
    ids=["controller", "nodeset", "restapi"],
)
def test_pod_keys_outside_pod_spec_are_refused(values: dict[str, Any], pointer: str) -> None:
    """The pre-1.0 places of pod settings (on the component) are gone: the schema names them."""
    result = support.template(CHART.name, values)
    assert not result.ok
    assert f"at '{pointer}': additional properties" in result.stderr, result.stderr


# --- key Secrets -------------------------------------------------------------------------------


def secrets(docs: list[Doc]) -> dict[str, set[str]]:
    """The rendered Secrets: name -> data keys."""
    return {d["metadata"]["name"]: set(d.get("data") or {}) for d in docs if d["kind"] == "Secret"}


def test_keys_are_created_under_the_secret_ref_upstream_names() -> None:
    """``create: true`` with a ``secretRef`` makes the Secret under that name and key, and the
    Controller and Accounting refer to it."""
    values = {
        "accounting": {"enabled": True},
        "slurmKey": {"secretRef": {"name": "my-slurm", "key": "auth.key"}},
        "jwtKey": {"secretRef": {"name": "my-jwt", "key": "hs256.key"}},
    }
    docs = render(values)
    found = secrets(docs)
    assert found["my-slurm"] == {"auth.key"}
    assert found["my-jwt"] == {"hs256.key"}
    for kind in ("Controller", "Accounting"):
        spec = one(docs, kind)["spec"]
        assert spec["slurmKeyRef"] == {"name": "my-slurm", "key": "auth.key"}, kind
        assert spec["jwtKeyRef"] == {"name": "my-jwt", "key": "hs256.key"}, kind


@pytest.mark.parametrize(
    "values",
    [
        {"slurmKey": {"create": False}, "jwtKey": {"create": False}},
        {"controller": {"external": True, "externalConfig": {"host": "ctld.example"}}},
        {
            "accounting": {
                "enabled": True,
                "external": True,
                "externalConfig": {"host": "dbd.example"},
            }
        },
    ],
    ids=["create-false", "controller-external", "accounting-external"],
)
def test_no_key_is_created_without_create_or_for_an_external_daemon(values: dict[str, Any]) -> None:
    """As upstream: no key Secret with ``create: false`` or an external slurmctld or slurmdbd; the
    objects still refer to upstream's default names, ``<fullname>-auth-slurm`` and
    ``<fullname>-auth-jwt``."""
    docs = render(values)
    assert not [n for n in secrets(docs) if n.endswith(("-auth-slurm", "-auth-jwt"))]
    objects = [d["spec"] for d in docs if d["kind"] in ("Controller", "Accounting")]
    fullname = f"{helm.DEFAULT_RELEASE}-slurm"
    assert objects
    for spec in objects:
        assert spec["slurmKeyRef"] == {"name": f"{fullname}-auth-slurm", "key": "slurm.key"}
        assert spec["jwtKeyRef"] == {"name": f"{fullname}-auth-jwt", "key": "jwt.key"}


# --- prolog and epilog scripts -----------------------------------------------------------------

SCRIPT_KEYS = {
    "prologScripts": "prologScriptRefs",
    "epilogScripts": "epilogScriptRefs",
    "prologSlurmctldScripts": "prologSlurmctldScriptRefs",
    "epilogSlurmctldScripts": "epilogSlurmctldScriptRefs",
}


@pytest.mark.parametrize("key", SCRIPT_KEYS)
def test_script_maps_become_configmaps_the_controller_refers_to(key: str) -> None:
    """Each of upstream's script maps gives one ConfigMap holding every script, and the Controller
    refers to it in the matching ``*ScriptRefs`` (and to no other script ConfigMap)."""
    script = "#!/bin/sh\nexit 0\n"
    docs = render({key: {"00-a.sh": script, "10-b.sh": script}})
    refs = {f: one(docs, "Controller")["spec"].get(f) for f in SCRIPT_KEYS.values()}
    assert [f for f, r in refs.items() if r] == [SCRIPT_KEYS[key]]
    (ref,) = refs[SCRIPT_KEYS[key]]
    config = next(
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == ref["name"]
    )
    assert sorted(config["data"].values()) == [script, script]
    assert all(k.endswith(("00-a.sh", "10-b.sh")) for k in config["data"])


# --- controller.extraConf and extraConfMap -----------------------------------------------------


def extra_conf(values: dict[str, Any]) -> list[str]:
    return str(one(render(values), "Controller")["spec"].get("extraConf") or "").splitlines()


def test_controller_extra_conf_map_renders_one_setting_per_line() -> None:
    """``controller.extraConfMap`` gives ``Key=value`` lines, lists joined with commas."""
    lines = extra_conf(
        {"controller": {"extraConfMap": {"MinJobAge": 300, "SlurmctldParameters": ["a", "b"]}}}
    )
    assert "MinJobAge=300" in lines
    assert "SlurmctldParameters=a,b" in lines


def test_controller_extra_conf_wins_over_the_map() -> None:
    """As upstream: the raw ``controller.extraConf`` lines are used verbatim and the map is ignored."""
    lines = extra_conf(
        {
            "controller": {
                "extraConf": "DebugFlags=Backfill\nMaxJobCount=5 # raw\n",
                "extraConfMap": {"MinJobAge": 300},
            }
        }
    )
    assert "DebugFlags=Backfill" in lines
    assert "MaxJobCount=5 # raw" in lines
    assert not [line for line in lines if line.startswith("MinJobAge")]


# --- partitions: config and configMap ----------------------------------------------------------


def partition_lines(docs: list[Doc]) -> list[str]:
    extra = str(one(docs, "Controller")["spec"].get("extraConf") or "")
    return [line for line in extra.splitlines() if line.startswith("PartitionName=")]


def test_partition_config_map_and_null_config_as_upstream() -> None:
    """A partition's ``configMap`` renders ``Key=value`` options when ``config`` is null or empty,
    and a ``config`` line wins over it; a NodeSet's own partition takes the same keys."""
    values = {
        "nodesets": {
            "cpu": {"partition": {"enabled": True, "config": None, "configMap": {"MaxTime": "60"}}}
        },
        "partitions": {
            "by-map": {
                "nodesets": ["ALL"],
                "config": None,
                "configMap": {"Default": "NO", "MaxTime": "UNLIMITED"},
            },
            "by-line": {"nodesets": ["cpu"], "config": "MaxTime=5", "configMap": {"MaxTime": "60"}},
        },
    }
    docs = render(values)
    assert sorted(partition_lines(docs)) == [
        "PartitionName=by-line Nodes=cpu MaxTime=5",
        "PartitionName=by-map Nodes=ALL Default=NO MaxTime=UNLIMITED",
    ]
    assert one(docs, "NodeSet")["spec"]["partition"] == {"enabled": True, "config": "MaxTime=60"}


def test_a_null_nodeset_partition_means_no_partition() -> None:
    """``nodesets.<n>.partition: null`` (accepted by upstream's chart) renders no partition."""
    docs = render({"nodesets": {"cpu": {"partition": None}}})
    assert one(docs, "NodeSet")["spec"]["partition"]["enabled"] is False
    assert partition_lines(docs) == []


# --- extraObjects ------------------------------------------------------------------------------


def test_extra_objects_are_rendered_through_tpl() -> None:
    """Each ``extraObjects`` entry becomes one object of the render, its templates expanded."""
    extra = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "{{ .Release.Name }}-site", "namespace": "{{ .Release.Namespace }}"},
        "data": {"k": "v"},
    }
    docs = render({"extraObjects": [extra]})
    site = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-site")]
    assert [d["metadata"] for d in site] == [
        {"name": f"{helm.DEFAULT_RELEASE}-site", "namespace": helm.DEFAULT_NAMESPACE}
    ]
    assert site[0]["data"] == {"k": "v"}


def test_sssd_secret_ref_replaces_the_chart_made_sssd_conf() -> None:
    """``sssd.secretRef`` (upstream's key) names the sssd.conf Secret of the LoginSets and
    SSH-enabled NodeSets, and the chart renders no sssd.conf Secret of its own."""
    values = {
        "sssd": {"secretRef": {"name": "sssd-ldap", "key": "ldap.conf"}},
        "loginsets": {"login": {}},
        "nodesets": {"cpu": {"ssh": {"enabled": True}}},
    }
    docs = render(values)
    assert not [n for n in secrets(docs) if n.endswith("-sssd")]
    assert one(docs, "LoginSet")["spec"]["sssdConfRef"] == {"name": "sssd-ldap", "key": "ldap.conf"}
    assert one(docs, "NodeSet")["spec"]["ssh"]["sssdConfRef"] == {
        "name": "sssd-ldap",
        "key": "ldap.conf",
    }


# --- services ----------------------------------------------------------------------------------


def test_service_templates_pass_through_as_upstream() -> None:
    """Each component's ``service`` (metadata, spec, port, nodePort) reaches its object's service
    template as given; the login Service stays ClusterIP unless the values say otherwise."""
    service = {
        "metadata": {"annotations": {"a": "b"}},
        "spec": {"type": "NodePort", "externalTrafficPolicy": "Local"},
        "nodePort": 30022,
    }
    values: dict[str, Any] = {"accounting": {"enabled": True}, "loginsets": {"plain": {}}}
    with_service = {k: v for k, v in CONTAINERS.items() if k != "NodeSet"}
    for parent, _ in with_service.values():
        at(values, parent)["service"] = service
    docs = render(values)
    for kind in with_service:
        for doc in (d for d in docs if d["kind"] == kind):
            if doc["metadata"]["name"].endswith("-plain"):
                assert doc["spec"]["service"] == {"spec": {"type": "ClusterIP"}, "port": 22}
            else:
                assert doc["spec"]["service"] == {
                    **service,
                    **({"port": 22} if kind == "LoginSet" else {}),
                }, kind


def test_jwks_keys_reach_slurmctld_and_slurmdbd_only_when_enabled() -> None:
    """``jwksKeys.enabled`` gives the Controller and Accounting a ``jwksKeyRef`` (default name and
    key when ``configMapRef`` is empty); off, neither has one."""
    on = render({"accounting": {"enabled": True}, "jwksKeys": {"enabled": True}})
    for kind in ("Controller", "Accounting"):
        ref = one(on, kind)["spec"]["jwksKeyRef"]
        assert ref["name"].endswith("-jwks") and ref["key"] == "jwks.json", kind
    named = {"enabled": True, "configMapRef": {"name": "site-jwks", "key": "keys.json"}}
    ref = one(render({"jwksKeys": named}), "Controller")["spec"]["jwksKeyRef"]
    assert ref == {"name": "site-jwks", "key": "keys.json"}
    off = render({"accounting": {"enabled": True}})
    assert not [d for d in off if "jwksKeyRef" in d.get("spec", {})]


def test_login_strategy_passes_through() -> None:
    """``loginsets.<n>.strategy`` (upstream's key) is the LoginSet's Deployment strategy."""
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    docs = render({"loginsets": {"login": {"strategy": strategy}}})
    assert one(docs, "LoginSet")["spec"]["strategy"] == strategy


# --- vendor.nvidia.dcgm ------------------------------------------------------------------------


def test_dcgm_scripts_and_mount_only_on_nvidia_gpu_nodesets() -> None:
    """``vendor.nvidia.dcgm.enabled`` adds a Prolog and an Epilog script ConfigMap that the
    Controller refers to (next to the user's), and mounts ``jobMappingDir`` from the node in the
    NodeSets with NVIDIA GPUs (declared through ``gpu`` or as a ``slurmd`` resource) only."""
    values = {
        "vendor": {
            "nvidia": {
                "dcgm": {"enabled": True, "jobMappingDir": "/srv/map", "scriptPriority": "10"}
            }
        },
        "prologScripts": {"00-own.sh": "#!/bin/sh\n"},
        "configFiles": {"gres.conf": "AutoDetect=nvml\n"},
        "nodesets": {
            "modelled": {"gpu": {"count": 2}},
            "raw": {"slurmd": {"resources": {"limits": {"nvidia.com/gpu": 1}}}},
            "amd": {"gpu": {"vendor": "amd", "count": 1}},
            "cpu": {},
        },
    }
    docs = render(values)
    spec = one(docs, "Controller")["spec"]
    prolog = [r["name"] for r in spec["prologScriptRefs"]]
    epilog = [r["name"] for r in spec["epilogScriptRefs"]]
    assert len(prolog) == 2 and prolog[-1].endswith("-prolog-dcgm")
    assert len(epilog) == 1 and epilog[0].endswith("-epilog-dcgm")
    configs = {d["metadata"]["name"]: d["data"] for d in docs if d["kind"] == "ConfigMap"}
    assert list(configs[prolog[-1]]) == ["prolog-10-dcgm.sh"]
    assert list(configs[epilog[0]]) == ["epilog-10-dcgm.sh"]
    assert "'/srv/map'" in configs[prolog[-1]]["prolog-10-dcgm.sh"]
    mounted = {}
    for doc in (d for d in docs if d["kind"] == "NodeSet"):
        name = doc["spec"]["template"]["spec"]["hostname"].rstrip("-")
        mounts = doc["spec"]["slurmd"].get("volumeMounts") or []
        volumes = doc["spec"]["template"]["spec"].get("volumes") or []
        mounted[name] = (
            {"name": "dcgm-job-mapping", "mountPath": "/srv/map"} in mounts,
            {
                "name": "dcgm-job-mapping",
                "hostPath": {"type": "DirectoryOrCreate", "path": "/srv/map"},
            }
            in volumes,
        )
    assert mounted == {
        "modelled": (True, True),
        "raw": (True, True),
        "amd": (False, False),
        "cpu": (False, False),
    }


def test_dcgm_off_adds_nothing() -> None:
    """With the default ``vendor`` values no DCGM ConfigMap, reference or mount is rendered."""
    docs = render({"nodesets": {"modelled": {"gpu": {"count": 2}}}})
    assert not [d for d in docs if "dcgm" in d["metadata"]["name"]]
    assert "prologScriptRefs" not in one(docs, "Controller")["spec"]
    assert "volumes" not in one(docs, "NodeSet")["spec"]["template"]["spec"]


A3MEGA_NETWORKS = ["default", *(f"vpc{i}" for i in range(1, 9))]


def a3mega(**extra: Any) -> dict[str, Any]:
    """Values with an A3 Mega entry targeting NodeSet ``gpu``, next to a plain NodeSet ``cpu``."""
    entry = {"targetNodeSet": "gpu", "nodePool": "a3-pool", "networks": A3MEGA_NETWORKS}
    return {
        "nodesets": {"gpu": {"replicas": 2}, "cpu": {}},
        "vendor": {"google": {"a3mega": [entry]}},
        **extra,
    }


def nodeset(docs: list[Doc], key: str) -> Doc:
    name = f"{helm.DEFAULT_RELEASE}-slurm-worker-{key}"
    return next(d for d in docs if d["kind"] == "NodeSet" and d["metadata"]["name"] == name)


def test_a3mega_configures_the_nodeset_it_targets() -> None:
    """``vendor.google.a3mega`` (upstream's key) gives the targeted NodeSet its GKE node pool, the 9
    networks (eth<i> on networks[i]), the TCPXO daemon sidecar with its host folders, the NCCL
    device folder and 8 GPUs for slurmd, and ``Gres=gpu:nvidia_h100_80gb_hbm3:8``; the other
    NodeSet is left as it was (values as in upstream's vendor_google_a3mega suite)."""
    docs = render(a3mega())
    spec = nodeset(docs, "gpu")["spec"]
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"]["cloud.google.com/gke-nodepool"] == "a3-pool"
    annotations = spec["template"]["metadata"]["annotations"]
    assert annotations["networking.gke.io/default-interface"] == "eth0"
    assert annotations["networking.gke.io/interfaces"] == (
        "[\n"
        '  {"interfaceName":"eth0","network":"default"},\n'
        '  {"interfaceName":"eth1","network":"vpc1"},\n'
        '  {"interfaceName":"eth2","network":"vpc2"},\n'
        '  {"interfaceName":"eth3","network":"vpc3"},\n'
        '  {"interfaceName":"eth4","network":"vpc4"},\n'
        '  {"interfaceName":"eth5","network":"vpc5"},\n'
        '  {"interfaceName":"eth6","network":"vpc6"},\n'
        '  {"interfaceName":"eth7","network":"vpc7"},\n'
        '  {"interfaceName":"eth8","network":"vpc8"}\n'
        "]\n"
    )
    daemon = next(c for c in pod["containers"] if c["name"] == "tcpxo-daemon")
    assert (
        daemon["image"] == "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21"
    )
    assert daemon["securityContext"] == {"capabilities": {"add": ["NET_ADMIN", "NET_BIND_SERVICE"]}}
    assert "--num_nics=8" in daemon["args"][0]
    assert {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]} == {
        "libraries": "/home/kubernetes/bin/nvidia/lib64",
        "sys": "/sys",
        "proc-sys": "/proc/sys",
        "aperture-devices": "/dev/aperture_devices",
    }
    slurmd = spec["slurmd"]
    assert slurmd["resources"] == {
        "requests": {"nvidia.com/gpu": 8},
        "limits": {"nvidia.com/gpu": 8},
    }
    assert {"name": "aperture-devices", "mountPath": "/dev/aperture_devices"} in slurmd[
        "volumeMounts"
    ]
    assert {"name": "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "value": "/dev/aperture_devices"} in (
        slurmd["env"]
    )
    assert spec["extraConf"] == "Gres=gpu:nvidia_h100_80gb_hbm3:8"
    other = nodeset(docs, "cpu")["spec"]
    assert "extraConf" not in other
    assert "containers" not in other["template"]["spec"]
    assert "annotations" not in other["template"]["metadata"]


def test_a3mega_serves_gres_conf_unless_the_cluster_has_one() -> None:
    """With an A3 Mega entry the chart serves gres.conf ``AutoDetect=nvidia`` in
    ``<fullname>-config-a3mega`` (a configFileRef of the Controller), but not when
    ``configFiles`` has a gres.conf."""
    name = f"{helm.DEFAULT_RELEASE}-slurm-config-a3mega"
    docs = render(a3mega())
    config = next(d for d in docs if d["metadata"]["name"] == name)
    assert config["kind"] == "ConfigMap"
    assert config["data"] == {"gres.conf": "AutoDetect=nvidia\n"}
    assert {"name": name} in one(docs, "Controller")["spec"]["configFileRefs"]
    docs = render(a3mega(configFiles={"gres.conf": "AutoDetect=off\n"}))
    assert not [d for d in docs if d["metadata"]["name"] == name]
    assert {"name": name} not in one(docs, "Controller")["spec"]["configFileRefs"]


def test_a3mega_entry_without_node_pool_is_refused_by_name() -> None:
    """An A3 Mega entry must name its node pool: the schema names the entry."""
    values = {"vendor": {"google": {"a3mega": [{"targetNodeSet": "gpu"}]}}}
    result = support.template(CHART.name, values)
    assert not result.ok
    assert "at '/vendor/google/a3mega/0'" in result.stderr, result.stderr


# --- controller.persistence --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("storage_class", "expected"),
    [(None, None), ("", ""), ("-", ""), ("fast", "fast")],
    ids=["null-default-class", "empty-no-provisioning", "dash-no-provisioning", "named"],
)
def test_persistence_takes_upstreams_resources_and_storage_class(
    storage_class: str | None, expected: str | None
) -> None:
    """``persistence.resources.requests.storage`` sizes the PVC; ``storageClassName`` null leaves
    the class to the cluster, ``""`` or ``"-"`` turns dynamic provisioning off (upstream's rule)."""
    values = {
        "controller": {
            "persistence": {
                "storageClassName": storage_class,
                "resources": {"requests": {"storage": "9Gi"}},
            }
        }
    }
    persistence = one(render(values), "Controller")["spec"]["persistence"]
    assert persistence["resources"] == {"requests": {"storage": "9Gi"}}
    assert persistence.get("storageClassName") == expected


def test_accounting_storage_config_as_upstream() -> None:
    """``accounting.storageConfig`` (upstream's key, with ``passwordKeyRef``) is the Accounting's
    database."""
    storage = {
        "host": "db.example",
        "port": 3307,
        "database": "acct",
        "username": "dbd",
        "passwordKeyRef": {"name": "db-pass", "key": "pw"},
    }
    docs = render({"accounting": {"enabled": True, "storageConfig": storage}})
    assert one(docs, "Accounting")["spec"]["storageConfig"] == storage


def test_service_monitor_goes_to_the_controller_as_upstream() -> None:
    """``controller.metrics`` (upstream's keys, ``serviceMonitor`` with its ``endpoints``) is the
    Controller's ``spec.metrics``, from which the operator makes the ServiceMonitor: the chart
    renders none itself, and its own ``serviceAnnotations`` stays out of the Controller."""
    metrics = {
        "enabled": True,
        "serviceAnnotations": {"a": "b"},
        "serviceMonitor": {
            "enabled": True,
            "interval": "15s",
            "labels": {"release": "prom"},
            "endpoints": [{"path": "/metrics/jobs", "scrapeTimeout": "5s"}],
        },
    }
    docs = render({"controller": {"metrics": metrics}})
    assert not [d for d in docs if d["kind"] == "ServiceMonitor"]
    assert one(docs, "Controller")["spec"]["metrics"] == {
        "enabled": True,
        "serviceMonitor": {
            "enabled": True,
            "interval": "15s",
            "scrapeTimeout": "25s",
            "labels": {"release": "prom"},
            "annotations": {},
            "endpoints": [{"path": "/metrics/jobs", "scrapeTimeout": "5s"}],
        },
    }


def test_service_monitor_endpoints_take_only_the_operators_fields() -> None:
    """An endpoint field the Controller's MetricEndpoint lacks (the operator would drop it) is
    refused, naming the endpoint."""
    metrics = {"serviceMonitor": {"endpoints": [{"path": "/metrics/jobs", "honorLabels": True}]}}
    result = support.template(CHART.name, {"controller": {"metrics": metrics}})
    assert not result.ok
    assert "at '/controller/metrics/serviceMonitor/endpoints/0'" in result.stderr, result.stderr


def test_oversubscribe_node_passes_to_the_nodeset() -> None:
    """``nodesets.<n>.oversubscribeNode`` (upstream's key) reaches the NodeSet, false by default
    (rendered, as upstream renders it)."""
    assert (
        one(render({"nodesets": {"cpu": {"oversubscribeNode": True}}}), "NodeSet")["spec"][
            "oversubscribeNode"
        ]
        is True
    )
    assert one(render({"nodesets": {"cpu": {}}}), "NodeSet")["spec"]["oversubscribeNode"] is False
