"""Unit checks of the conformance static phase's pure parts: the value cross-references
(partitions, inline topology, Secrets), the values-schema findings, the Pod Security levels and the
RBAC wildcard rule, each on small hand-made inputs with the expected answer written out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from slinky_conformance.context import Context
from slinky_conformance.steps.static import helm, objects, references, security, slurm_conf
from slinky_conformance.target import resolve
from slinky_harness.k8s import podsecurity, rbac

if TYPE_CHECKING:
    from pathlib import Path

CLUSTER_CHART = "slurm-cluster"


def _cluster_target(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "values.yaml"
    path.write_text(text)
    return resolve([path], chart=CLUSTER_CHART)


def _umbrella_target(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "values.yaml"
    path.write_text(text)
    return resolve([path])


def test_partition_naming_a_disabled_nodeset_names_the_list_item(tmp_path: Path) -> None:
    target = _cluster_target(
        tmp_path,
        "nodesets:\n  a: {}\n  b: {enabled: false}\n"
        "partitions:\n  p:\n    nodesets: [a, b, all]\n  spare:\n    enabled: false\n    nodesets: [zz]\n",
    )
    findings = references.partition_findings(target, target.chart_values(CLUSTER_CHART))
    assert [f.path for f in findings] == ["partitions.p.nodesets[1]"]
    assert "disabled" in findings[0].problem
    assert findings[0].fix.startswith("name one of: a, ALL")
    assert "nodesets.b.enabled" in findings[0].fix


def test_partition_paths_carry_the_subchart_in_an_umbrella(tmp_path: Path) -> None:
    target = _umbrella_target(
        tmp_path,
        "slurm-cluster:\n  nodesets:\n    gpu: {enabled: false}\n    c: {}\n"
        "  partitions:\n    slurm-bridge:\n      nodesets: [gpu]\n",
    )
    findings = references.partition_findings(target, target.chart_values(CLUSTER_CHART))
    assert [f.path for f in findings] == ["slurm-cluster.partitions.slurm-bridge.nodesets[0]"]


def test_topology_node_under_two_leaf_switches_is_a_finding(tmp_path: Path) -> None:
    target = _cluster_target(
        tmp_path,
        "topology:\n  yaml: |\n    - topology: t\n      cluster_default: true\n      tree:\n"
        "        switches:\n          - switch: s1\n            nodes: n[1-2]\n"
        "          - switch: s2\n            nodes: n[2-3]\n          - switch: top\n"
        "            children: s[1-2]\n"
        "partitions:\n  p:\n    nodesets: [ALL]\n    topology: other\n",
    )
    findings = references.topology_findings(target, target.chart_values(CLUSTER_CHART))
    assert [f.path for f in findings] == ["topology.yaml", "partitions.p.topology"]
    assert "n2" in findings[0].problem
    assert findings[1].fix == "name one of: t"


def test_a_valid_inline_topology_has_no_finding(tmp_path: Path) -> None:
    target = _cluster_target(
        tmp_path,
        "topology:\n  yaml: |\n    - topology: b\n      cluster_default: true\n      block:\n"
        "        block_sizes: [2]\n        blocks:\n          - block: b1\n            nodes: n[1-2]\n"
        "          - block: b2\n            nodes: n[3-4]\n",
    )
    assert references.topology_findings(target, target.chart_values(CLUSTER_CHART)) == []


def _pod(name: str, volume_secret: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "slurm"},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "volumes": [{"name": "v", "secret": {"secretName": volume_secret}}],
            **spec,
        },
    }


def test_secret_references_the_render_does_not_make(tmp_path: Path) -> None:
    target = _cluster_target(tmp_path, "imagePullSecrets: [regcred]\n")
    docs = [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "made", "namespace": "slurm"}},
        _pod("a", "made"),
        _pod("b", "elsewhere", imagePullSecrets=[{"name": "regcred"}]),
        {
            "apiVersion": "slinky.slurm.net/v1beta1",
            "kind": "Token",
            "metadata": {"name": "tok", "namespace": "slurm"},
            "spec": {"username": "u"},
        },
        _pod("c", "tok-jwt-u"),
        {
            "apiVersion": "slinky.slurm.net/v1beta1",
            "kind": "Accounting",
            "metadata": {"name": "acct", "namespace": "slurm"},
            "spec": {"storageConfig": {"passwordKeyRef": {"name": "db-pass", "key": "p"}}},
        },
    ]
    findings = references.secret_findings(target, docs)
    named = sorted((f.path, f.problem.split("'")[1]) for f in findings)
    assert named == [("", "db-pass"), ("", "elsewhere"), ("imagePullSecrets[0]", "regcred")]
    regcred = next(f for f in findings if f.path)
    assert regcred.fix.startswith("create Secret regcred in namespace slurm before installing")
    assert "set imagePullSecrets[0] to a Secret the chart makes" in regcred.fix


def test_existing_objects_count_as_made(tmp_path: Path) -> None:
    target = _cluster_target(tmp_path, "")
    docs = [_pod("a", "db-pass")]
    assert [f.path for f in references.secret_findings(target, docs)] == [""]
    existing = [{"kind": "Secret", "metadata": {"name": "db-pass", "namespace": "slurm"}}]
    assert references.secret_findings(target, docs, existing) == []
    elsewhere = [{"kind": "Secret", "metadata": {"name": "db-pass", "namespace": "other"}}]
    assert len(references.secret_findings(target, docs, elsewhere)) == 1


def test_schema_findings_name_the_unknown_key_and_the_wrong_type() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": False,
        "properties": {"a": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    }
    findings = helm.schema_findings(schema, {"a": {"n": "x"}, "typo": 1}, ("chart",))
    assert {(f.path, f.problem) for f in findings} == {
        ("chart.typo", "unknown key"),
        ("chart.a.n", "'x' is not of type 'integer'"),
    }


RESTRICTED_CONTAINER = {
    "name": "c",
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    },
}


def test_pod_security_levels() -> None:
    pod_ctx = {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}
    assert (
        podsecurity.level({**pod_ctx, "containers": [RESTRICTED_CONTAINER]}).level == "restricted"
    )
    assert podsecurity.level({"containers": [{"name": "c"}]}).level == "baseline"
    verdict = podsecurity.level(
        {**pod_ctx, "hostNetwork": True, "containers": [RESTRICTED_CONTAINER]}
    )
    assert verdict == podsecurity.Verdict("privileged", ["hostNetwork: true"])
    nodeset = {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "NodeSet",
        "metadata": {"name": "n"},
        "spec": {"slurmd": {"image": "x"}, "template": {"spec": pod_ctx}},
    }
    ((_, spec),) = podsecurity.workload_pods([nodeset])
    assert podsecurity.level(spec).reasons[0] == "slurmd: privileged container"


def test_rbac_wildcards_and_secret_access() -> None:
    docs: list[dict[str, Any]] = [
        {
            "kind": "ClusterRole",
            "metadata": {"name": "r"},
            "rules": [
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
                {"apiGroups": ["*"], "resources": ["pods"], "verbs": ["list"]},
            ],
        },
        {
            "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "ns"},
            "roleRef": {"kind": "ClusterRole", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}],
        },
        {"kind": "Role", "metadata": {"name": "lonely", "namespace": "ns"}, "rules": []},
    ]
    grants, notes = rbac.grants(docs, "ns")
    assert [(g.account, g.scope, g.what()) for g in grants] == [
        ("ns/sa", "ns", "get secrets"),
        ("ns/sa", "ns", "list pods.*"),
    ]
    assert [rbac.secret_access(g) for g in grants] == [True, False]
    assert [rbac.wildcards(g) for g in grants] == [[], ["resources"]]
    assert notes == []
    assert rbac.unbound_roles(docs) == ["Role lonely"]


HELM_SCHEMA_ERROR = """Error: values don't meet the specifications of the schema(s) in the following chart(s):
slurm-cluster:
- at '/scheduling/preset': value must be one of 'fairshare', 'fifo', 'none'
- at '/nodesets/compute': validation failed
  - at '/nodesets/compute/partition/enabled': got string, want boolean
"""
"""Helm 4's schema refusal, as it prints it (the innermost error of each branch is the finding)."""

HELM_VALIDATE_FAIL = (
    "Error: execution error at (slinky-gpu-cluster/charts/slurm-cluster/templates/validate.yaml:"
    '170:4): \n\nslurm-cluster: invalid values (1):\n  - partitions.all.nodesets names NodeSet "gpu" '
    '(partition "all"), which is unknown or disabled: known NodeSets are [compute]. Fix the name, '
    "enable `nodesets.gpu`, or use `ALL`.\n\nUse --debug flag to render out invalid YAML\n"
)
HELM_REQUIRED = (
    "Error: execution error at (slinky-gpu-cluster/charts/slurm-cluster/templates/controller/"
    "controller.yaml:36:8): an image repository is required (image.repository)\n"
)


def test_helm_schema_errors_become_umbrella_paths(tmp_path: Path) -> None:
    target = _umbrella_target(tmp_path, "slurm-cluster: {}\n")
    findings = helm.helm_findings(target, HELM_SCHEMA_ERROR)
    assert [(f.path, f.problem) for f in findings] == [
        ("slurm-cluster.scheduling.preset", "value must be one of 'fairshare', 'fifo', 'none'"),
        ("slurm-cluster.nodesets.compute.partition.enabled", "got string, want boolean"),
    ]


def test_a_chart_refusal_names_the_value_path_and_the_fix(tmp_path: Path) -> None:
    target = _umbrella_target(tmp_path, "slurm-cluster: {}\n")
    (finding,) = helm.helm_findings(target, HELM_VALIDATE_FAIL)
    assert finding.path == "slurm-cluster.partitions.all.nodesets"
    assert finding.problem.endswith("known NodeSets are [compute]")
    assert finding.fix == "Fix the name, enable `nodesets.gpu`, or use `ALL`."
    chart = _cluster_target(tmp_path, "")
    (finding,) = helm.helm_findings(chart, HELM_VALIDATE_FAIL)
    assert finding.path == "partitions.all.nodesets"


def test_a_template_fail_without_a_top_level_path_keeps_the_message(tmp_path: Path) -> None:
    target = _umbrella_target(tmp_path, "slurm-cluster: {}\n")
    (finding,) = helm.helm_findings(target, HELM_REQUIRED)
    assert finding.path == ""
    assert finding.problem == "an image repository is required (image.repository)"


def _ctx(target: Any, tmp_path: Path, docs: list[dict[str, Any]]) -> Context:
    ctx = Context(target=target, work=tmp_path, kube_version="1.35.0")
    ctx.rendered = docs
    return ctx


def test_pod_security_fails_only_below_an_explicit_namespace_label(tmp_path: Path) -> None:
    target = _cluster_target(
        tmp_path, 'extraObjects:\n  - {labels: {"pod-security.kubernetes.io/enforce": baseline}}\n'
    )
    nodeset = {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "NodeSet",
        "metadata": {"name": "n", "namespace": "hpc"},
        "spec": {"slurmd": {"image": "x"}},
    }
    unlabelled = security.check_pod_security(_ctx(target, tmp_path, [nodeset]))
    assert unlabelled.findings == []
    assert unlabelled.details == [
        "namespace hpc: privileged (NodeSet hpc/n: slurmd: privileged container) "
        "-> label it pod-security.kubernetes.io/enforce=privileged"
    ]
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "hpc", "labels": {podsecurity.ENFORCE_LABEL: "baseline"}},
    }
    (finding,) = security.check_pod_security(_ctx(target, tmp_path, [namespace, nodeset])).findings
    assert finding.path == 'extraObjects[0].labels["pod-security.kubernetes.io/enforce"]'
    assert finding.fix == "set pod-security.kubernetes.io/enforce=privileged on namespace hpc"


def test_rbac_step_fails_on_a_wildcard_verb_only(tmp_path: Path) -> None:
    target = _cluster_target(tmp_path, "")
    role: dict[str, Any] = {"kind": "Role", "metadata": {"name": "r", "namespace": "slurm"}}
    binding = {
        "kind": "RoleBinding",
        "metadata": {"name": "b", "namespace": "slurm"},
        "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa"}],
    }
    role["rules"] = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    fine = security.check_rbac(_ctx(target, tmp_path, [role, binding]))
    assert fine.findings == []
    assert fine.details == ["ServiceAccount slurm/sa:", "  in namespace slurm: get pods"]
    role["rules"] = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}]
    (finding,) = security.check_rbac(_ctx(target, tmp_path, [role, binding])).findings
    assert finding.problem.startswith("slurm/sa is granted wildcard verbs (* pods, slurm)")


def _obj(kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}, **fields}


def test_external_names_the_api_server_refuses(tmp_path: Path) -> None:
    """Kubernetes takes an ExternalName only as a lower-case RFC 1123 DNS name (a final dot
    allowed): upper case, an IPv6 or IPv4 address with a colon, ``_`` are refused; the finding
    names the value that rendered the host."""
    target = _cluster_target(tmp_path, "accounting:\n  externalConfig:\n    host: DB.Example.COM\n")
    hosts = {
        "DB.Example.COM": True, "fd00::53": True, "db_1.example.com": True, "a" * 254: True,
        "db.example.com": False, "db.example.com.": False, "10.0.0.5": False,
    }  # fmt: skip
    docs = [
        _obj("Service", f"s{i}", spec={"type": "ExternalName", "externalName": host})
        for i, host in enumerate(hosts)
    ]
    docs.append(_obj("Service", "c", spec={"type": "ClusterIP", "externalName": "UPPER"}))
    findings = objects.external_name_findings(target, docs)
    bad = [h for h, refused in hosts.items() if refused]
    assert [f.problem.split("'")[1] for f in findings] == bad
    assert findings[0].path == "accounting.externalConfig.host"
    assert all("lower case" in f.fix for f in findings)


def test_config_maps_and_secrets_the_api_server_refuses(tmp_path: Path) -> None:
    big = "x" * (1024 * 1024 + 1)
    target = _cluster_target(tmp_path, f"controller:\n  extraConf: {big}\n")
    docs = [
        _obj("ConfigMap", "big", data={"slurm.conf": big}),
        _obj("ConfigMap", "fits", data={"a": "x" * (1024 * 1024 - 10)}),
        _obj("ConfigMap", "keys", data={"ok.conf": "", "bad/key": "", "..": ""}),
        _obj("ConfigMap", "both", data={"k": "a"}, binaryData={"k": "YQ=="}),
        _obj("Secret", "over", data={"k": "QUFB"}, stringData={"k": "b"}),
        _obj("Secret", "bigsecret", data={"k": "QUFB" * (1024 * 1024 // 3 + 1)}),
        _obj("Secret", "fine", data={"k": "QUFB" * 1000}, stringData={"j": "b"}),
    ]
    got = [(f.path, f.problem) for f in objects.config_findings(target, docs)]
    assert got[0] == (
        "controller.extraConf",
        f"ConfigMap big: holds {len(big)} bytes of data; the API server refuses over 1 MiB "
        "(1048576)",
    )
    problems = [p for _, p in got[1:]]
    assert problems == [
        "ConfigMap keys: key '..' is not a valid file name, so the API server refuses it",
        "ConfigMap keys: key 'bad/key' is not a valid file name, so the API server refuses it",
        "ConfigMap both: key 'k' is in both data and binaryData: the API server refuses it",
        "Secret over: key 'k' is in both data and stringData: stringData silently replaces "
        "the data value",
        "Secret bigsecret: holds 1048578 bytes of data; the API server refuses over 1 MiB "
        "(1048576)",
    ]


def test_host_paths_refused_or_root_on_the_node(tmp_path: Path) -> None:
    target = _cluster_target(tmp_path, "")
    paths = {
        "/": "the node's whole filesystem", "//": "the node's whole filesystem",
        "/etc": "the node's /etc", "/etc/": "the node's /etc", "/data/../etc": "'..'",
        "..": "'..'", "/etc/ssl/certs": None, "/dev/infiniband": None, "/scratch..x": None,
    }  # fmt: skip
    docs = [
        _obj("Pod", "p", spec={"containers": [], "volumes": [
            {"name": f"v{i}", "hostPath": {"path": p}} for i, p in enumerate(paths)]})
    ]  # fmt: skip
    findings = objects.host_path_findings(target, docs)
    flagged = {f.problem.split("(")[1].split(")")[0]: f.problem for f in findings}
    assert sorted(flagged) == sorted(p for p, why in paths.items() if why)
    for path, why in paths.items():
        if why:
            assert why in flagged[path]


def test_mounts_naming_no_volume_and_two_mounts_on_one_path(tmp_path: Path) -> None:
    """In a pod, the volumes are the pod's; in a Slinky resource, the template's and the
    operator's own (``slurm-etc``, ...); two mounts on one path (``/w`` and ``/w/``) clash."""
    target = _cluster_target(
        tmp_path,
        "nodesets:\n  a:\n    slurmd:\n      volumeMounts:\n        - {name: scratch, "
        "mountPath: /s}\n",
    )
    pod = _obj("Pod", "p", spec={
        "volumes": [{"name": "v"}],
        "containers": [{"name": "c", "volumeMounts": [
            {"name": "v", "mountPath": "/a"}, {"name": "slurm-etc", "mountPath": "/b"}]}],
    })  # fmt: skip
    nodeset = {
        "apiVersion": "slinky.slurm.net/v1beta1", "kind": "NodeSet", "metadata": {"name": "n"},
        "spec": {
            "template": {"spec": {"volumes": [{"name": "w"}]}},
            "slurmd": {"volumeMounts": [
                {"name": "scratch", "mountPath": "/s"}, {"name": "slurm-etc", "mountPath": "/e"},
                {"name": "w", "mountPath": "/w"}, {"name": "w", "mountPath": "/w/"}]},
        },
    }  # fmt: skip
    got = [(f.path, f.problem) for f in objects.mount_findings(target, [pod, nodeset])]
    assert got == [
        ("", "Pod p: container c mounts volume 'slurm-etc' at /b, which the pod does not have"),
        ("nodesets.a.slurmd.volumeMounts[0].name",
         "NodeSet n: container (the chart names it) mounts volume 'scratch' at /s, which the pod "
         "does not have"),
        ("", "NodeSet n: container (the chart names it) has two volumeMounts on /w, which the "
         "API server refuses"),
    ]  # fmt: skip


def _nodeset(name: str, extra: str = "", partition: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"extraConf": extra, "template": {"spec": {"hostname": f"{name}-"}}}
    if partition is not None:
        spec["partition"] = {"enabled": True, "config": partition}
    return {"apiVersion": "slinky.slurm.net/v1beta1", "kind": "NodeSet",
            "metadata": {"name": f"r-slurm-worker-{name}"}, "spec": spec}  # fmt: skip


def test_a_default_partition_and_gres_types_slurmctld_needs(tmp_path: Path) -> None:
    """No partition (with nodes), no ``Default=YES`` partition, and a NodeSet's ``Gres`` that
    ``GresTypes`` does not name are findings; a ``default=yes`` in any case, ``Gres=(null)``
    and a GRES type named are not."""
    target = _cluster_target(tmp_path, "nodesets:\n  g:\n    extraConfMap: {Gres: 'gpu:8'}\n")
    ok = slurm_conf.partition_default_findings
    assert ok(target, {}, 0) == []
    (none,) = ok(target, {}, 2)
    assert none.path == "partitions" and "no partition" in none.problem
    (no_default,) = ok(target, {"a": "MaxTime=1", "b": "PartitionName=b Nodes=ALL"}, 1)
    assert no_default.problem.startswith("no partition is the default (none of a, b has")
    assert ok(target, {"a": "MaxTime=1", "b": "PartitionName=b default=yes"}, 1) == []
    nodesets = [_nodeset("g", "Features=x Gres=gpu:h100:8"), _nodeset("c", "Gres=(null)"),
                _nodeset("t", "Gres=gpu:1,tpu:4")]  # fmt: skip
    controller = {"extraConf": "GresTypes=gpu\nPartitionName=x Nodes=ALL"}
    (tpu,) = slurm_conf.gres_findings(target, controller, nodesets)
    assert tpu.path == "nodesets.t" and "GresTypes=tpu" in tpu.problem
    (gpu,) = slurm_conf.gres_findings(target, {"extraConf": ""}, nodesets[:1])
    assert gpu.path == "nodesets.g.extraConfMap"
    assert "Gres=(null)" in gpu.problem and "nodesets.g.gpu" in gpu.fix
    parts = slurm_conf._slurm_partitions(controller, [*nodesets, _nodeset("p", partition="X=1")])
    assert parts == {"x": "PartitionName=x Nodes=ALL", "p": "X=1"}


@pytest.mark.parametrize(
    ("values", "controller_conf", "path"),
    [
        ("slurm-cluster: {scheduling: {preset: fifo}}", "PriorityType=priority/basic",
         "slurm-cluster.scheduling.preset"),
        ("slurm-cluster: {scheduling: {priority: {type: priority/basic}}}",
         "SchedulerType=sched/backfill\nPriorityType=priority/basic",
         "slurm-cluster.scheduling.priority.type"),
        ("slurm-cluster: {controller: {extraConfMap: {PriorityType: priority/basic}}}",
         "PriorityType=priority/basic", "slurm-cluster.controller.extraConfMap.PriorityType"),
        ("slurm-cluster: {scheduling: {preset: fairshare}}", "PriorityType=priority/multifactor",
         None),
        ("slurm-cluster: {scheduling: {preset: fifo}}\nslurm-bridge: {enabled: false}",
         "PriorityType=priority/basic", None),
        ("slurm-cluster: {scheduling: {preset: fifo}}",
         "PriorityType=priority/basic\nPriorityType=priority/multifactor", None),
    ],
)  # fmt: skip
def test_basic_priority_beside_slurm_bridge_is_a_finding_at_what_set_it(
    tmp_path: Path, values: str, controller_conf: str, path: str | None
) -> None:
    """Invariant: with slurm-bridge installed, a slurm.conf whose last PriorityType is
    priority/basic (slurm-bridge 1.2.1 overflows on its job priorities: no bridged pod is ever
    placed) is one finding at the values path that chose it; otherwise there is none."""
    target = _umbrella_target(tmp_path, values)
    findings = slurm_conf.bridge_priority_findings(target, {"extraConf": controller_conf})
    assert [f.path for f in findings] == ([path] if path else [])
    for finding in findings:
        assert "int32" in finding.problem and "priority/multifactor" in finding.fix
