"""Values that must never reach a running cluster, and the safe defaults that replace them.

Each rejection test renders one hostile or contradictory values file and requires Helm to refuse it
with a message naming the value's own path (the JSON pointer of a schema error, ``at
'/a/b/c'``, or the dotted path of a ``templates/validate.yaml`` message). Each acceptance test
renders the safe counterpart and checks the objects it produces.

- slurm-cluster: no value puts a line break, a carriage return or a Slurm separator into a Slurm
  config file (unless the key is documented as raw lines), ConfigMap keys are valid, numbers stay
  in the ranges Slurm and Kubernetes accept, and every rejection names the right key.
- slurm-cluster follows Slurm's own rules: no two values become one file in /etc/slurm, a
  NodeSet's `--conf` items are exactly `Key=Value` tokens, no name Slurm reserves (`DEFAULT`,
  `ALL`), GPUs declared once.
- slurm-bridge: never `default-scheduler`, never an all-namespaces selector without the explicit
  opt-in, never the operator's or Slurm's namespace (in whatever form the REST URL names it),
  leader-election durations client-go accepts.
- slurm-operator: pprof on localhost unless explicitly opened (and then a NOTES warning), Secrets
  readable only in the watched namespaces when those are listed.
- NetworkPolicies on by default where the chart knows every peer (operator, webhook, bridge).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from slinky_harness.helm import charts
from slinky_harness.helm import client as helm
from slinky_harness.k8s import schemas as kubeschema

CHARTS = {c.name: c for c in charts.discover_charts()}
NEWEST = kubeschema.newest_version()
INJECTED = "SlurmUser=root"

Doc = dict[str, Any]


def render(chart: str, values: dict[str, Any]) -> helm.HelmResult:
    return helm.template(CHARTS[chart].path, values, kube_version=NEWEST)


def names_path(stderr: str, path: str) -> bool:
    """Whether ``stderr`` names ``path`` (dotted) as a schema pointer or a dotted value path."""
    pointer = "/" + path.replace(".", "/")
    return f"'{pointer}'" in stderr or f"'{pointer}/" in stderr or path in stderr


def assert_rejected(chart: str, values: dict[str, Any], path: str) -> str:
    """Helm refuses ``values``; the message names ``path`` and no schema location elsewhere."""
    result = render(chart, values)
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


def docs_of(result: helm.HelmResult, kind: str) -> list[Doc]:
    return [d for d in result.docs if d.get("kind") == kind]


def slurm_conf(result: helm.HelmResult) -> str:
    """What the chart hands the operator for slurm.conf and the slurmd node lines."""
    parts = [str(d["spec"].get("extraConf", "")) for d in docs_of(result, "Controller")]
    parts += [str(d["spec"].get("extraConf", "")) for d in docs_of(result, "NodeSet")]
    parts += [str(d["spec"]["partition"].get("config", "")) for d in docs_of(result, "NodeSet")]
    return "\n".join(parts)


# -- slurm-cluster: Slurm config injection --------------------------------------------------------

PARTITION = {"nodesets": ["ALL"]}

INJECTIONS = [
    pytest.param(
        {"partitions": {"p1": {**PARTITION, "config": "MaxTime=1\rSlurmUser=root"}}},
        "partitions.p1.config",
        id="partition-config-cr",
    ),
    pytest.param(
        {"partitions": {"p1": {**PARTITION, "configMap": {"MaxTime\nSlurmUser": "root"}}}},
        "partitions.p1.configMap",
        id="partition-config-key-newline",
    ),
    pytest.param(
        {"partitions": {"p1": {**PARTITION, "configMap": {"MaxTime": "1\nSlurmUser=root"}}}},
        "partitions.p1.configMap",
        id="partition-config-value-newline",
    ),
    pytest.param(
        {"nodesets": {"compute": {"partition": {"config": "Default=YES\rSlurmUser=root"}}}},
        "nodesets.compute.partition.config",
        id="nodeset-partition-config-cr",
    ),
    pytest.param(
        {"controller": {"extraConfMap": {"MinJobAge": "300\nSlurmUser=root"}}},
        "controller.extraConfMap.MinJobAge",
        id="extraConfMap-value-newline",
    ),
    pytest.param(
        {"controller": {"extraConfMap": {"MinJobAge\nSlurmUser": "root"}}},
        "controller.extraConfMap",
        id="extraConfMap-key-newline",
    ),
    pytest.param(
        {
            "controller": {
                "extraConfMap": {"SlurmctldParameters": ["enable_configless\nSlurmUser=root"]}
            }
        },
        "controller.extraConfMap.SlurmctldParameters",
        id="extraConfMap-list-item-newline",
    ),
    pytest.param(
        {"scheduling": {"priority": {"decayHalfLife": "7-0\rAuthType=auth/none"}}},
        "scheduling.priority.decayHalfLife",
        id="decayHalfLife-cr",
    ),
    pytest.param(
        {"scheduling": {"priority": {"decayHalfLife": "7-0 SlurmUser=root"}}},
        "scheduling.priority.decayHalfLife",
        id="decayHalfLife-space",
    ),
    pytest.param(
        {"scheduling": {"schedulerParameters": {"bf_window": "10\nSlurmUser=root"}}},
        "scheduling.schedulerParameters.bf_window",
        id="schedulerParameters-value-newline",
    ),
    pytest.param(
        {"scheduling": {"schedulerParameters": {"bf_x\nSlurmUser": "root"}}},
        "scheduling.schedulerParameters",
        id="schedulerParameters-key-newline",
    ),
    pytest.param(
        {"scheduling": {"schedulerParameters": {"bf_window": "10,bf_continue"}}},
        "scheduling.schedulerParameters.bf_window",
        id="schedulerParameters-value-comma",
    ),
    pytest.param(
        {"topology": {"params": ["SwitchAsNodeRank\nSlurmUser=root"]}},
        "topology.params",
        id="topology-params-newline",
    ),
    pytest.param(
        {"nodesets": {"compute": {"extraConfMap": {"Features": "a\nSlurmUser=root"}}}},
        "nodesets.compute.extraConfMap.Features",
        id="extraConfMap-value-newline",
    ),
    pytest.param(
        {"nodesets": {"compute": {"extraConfMap": {"Features\rWeight": "1"}}}},
        "nodesets.compute.extraConfMap",
        id="extraConfMap-key-cr",
    ),
    pytest.param(
        {"nodesets": {"compute": {"extraConf": "Weight=1\nSlurmUser=root"}}},
        "nodesets.compute.extraConf",
        id="nodeset-extraConf-newline",
    ),
    pytest.param(
        {"nodesets": {"compute": {"extraConf": "Weight=1\x7f"}}},
        "nodesets.compute.extraConf",
        id="nodeset-extraConf-control-character",
    ),
    pytest.param(
        {"accounting": {"enabled": True, "storageConfig": {"username": "slurm\nStorageUser=root"}}},
        "accounting.storageConfig.username",
        id="slurmdbd-storage-user-newline",
    ),
    pytest.param(
        {"controller": {"external": True, "externalConfig": {"host": "ctl\nSlurmUser=root"}}},
        "controller.externalConfig.host",
        id="external-controller-host-newline",
    ),
]


@pytest.mark.parametrize(("values", "path"), INJECTIONS)
def test_slurm_conf_injection_is_rejected_by_name(values: dict[str, Any], path: str) -> None:
    """A value carrying a line break, CR or Slurm separator fails, naming the value."""
    assert_rejected("slurm-cluster", values, path)


def test_raw_lines_stay_raw() -> None:
    """`controller.extraConf` is documented as raw slurm.conf lines: each line stays verbatim."""
    result = render("slurm-cluster", {"controller": {"extraConf": "MaxJobCount=100000  # big\n"}})
    assert result.ok, result.describe()
    assert "MaxJobCount=100000  # big" in slurm_conf(result).splitlines()


def test_safe_slurm_values_render_one_line_each() -> None:
    """Ordinary values with commas, colons and slashes still render, each setting on its line."""
    values = {
        "controller": {
            "extraConfMap": {"SlurmctldParameters": ["enable_configless", "idle_on_node_suspend"]}
        },
        "scheduling": {
            "priority": {"decayHalfLife": "14-0", "weightTRES": "CPU=1000,Mem=2000"},
            "preemption": {"mode": "SUSPEND,GANG"},
            "schedulerParameters": {"bf_window": 10080, "bf_continue": True},
        },
        "topology": {"params": ["SwitchAsNodeRank"]},
        "partitions": {
            "p1": {**PARTITION, "configMap": {"MaxTime": "1-00:00:00", "Default": "NO"}}
        },
        "nodesets": {"compute": {"extraConfMap": {"Features": ["ib", "nvme"], "Weight": 10}}},
    }
    result = render("slurm-cluster", values)
    assert result.ok, result.describe()
    lines = slurm_conf(result).splitlines()
    for line in (
        "SlurmctldParameters=enable_configless,idle_on_node_suspend",
        "PriorityDecayHalfLife=14-0",
        "PriorityWeightTRES=CPU=1000,Mem=2000",
        "PreemptMode=SUSPEND,GANG",
        "TopologyParam=SwitchAsNodeRank",
        "PartitionName=p1 Nodes=ALL Default=NO MaxTime=1-00:00:00",
        "Features=ib,nvme Weight=10",
    ):
        assert line in lines, f"{line!r} not in {lines}"
    assert not any(INJECTED in line for line in lines)


# -- slurm-cluster: ConfigMap keys, numeric ranges, key paths --------------------------------------


@pytest.mark.parametrize(
    ("values", "path"),
    [
        pytest.param({"configFiles": {"..data": "x"}}, "configFiles", id="configFiles-..data"),
        pytest.param({"configFiles": {"..": "x"}}, "configFiles", id="configFiles-dotdot"),
        pytest.param({"configFiles": {".": "x"}}, "configFiles", id="configFiles-dot"),
        pytest.param({"configFiles": {"a" * 254: "x"}}, "configFiles", id="configFiles-too-long"),
        pytest.param(
            {"prologScripts": {"..data": "#!/bin/sh\n"}},
            "prologScripts",
            id="scripts-..data",
        ),
        pytest.param(
            {"slurmKey": {"secretRef": {"key": "..data"}}},
            "slurmKey.secretRef.key",
            id="secret-key-..data",
        ),
    ],
)
def test_invalid_configmap_keys_are_rejected(values: dict[str, Any], path: str) -> None:
    """Keys the API server refuses in a ConfigMap or Secret never render."""
    assert_rejected("slurm-cluster", values, path)


@pytest.mark.parametrize(
    ("values", "path"),
    [
        pytest.param(
            {"nodesets": {"compute": {"gpu": {"gres": "gpu:99999999999999999999"}}}},
            "nodesets.compute.gpu.gres",
            id="gres-above-int64",
        ),
        pytest.param(
            {"nodesets": {"compute": {"gpu": {"gres": "gpu:h100:1025"}}}},
            "nodesets.compute.gpu.gres",
            id="gres-above-slurm-gres-bitmap",
        ),
        pytest.param(
            {"nodesets": {"compute": {"gpu": {"count": 1025}}}},
            "nodesets.compute.gpu.count",
            id="gpu-count-above-slurm-gres-bitmap",
        ),
        pytest.param(
            {"controller": {"extraConfMap": {"MaxJobCount": 1e20}}},
            "controller.extraConfMap.MaxJobCount",
            id="conf-number-above-int64",
        ),
        pytest.param(
            {"nodesets": {"compute": {"ordinalPadding": 60}}},
            "nodesets.compute.ordinalPadding",
            id="ordinal-padding-beyond-a-dns-label",
        ),
        pytest.param(
            {"restapi": {"pdb": {"maxUnavailable": "150%"}}},
            "restapi.pdb.maxUnavailable",
            id="percent-above-100",
        ),
    ],
)
def test_numbers_out_of_range_are_rejected(values: dict[str, Any], path: str) -> None:
    """Numbers Slurm or Kubernetes would refuse (or silently wrap) fail naming the value."""
    assert_rejected("slurm-cluster", values, path)


def test_gpu_count_at_the_bound_renders() -> None:
    """1024 GPUs per node (Slurm's per-node GRES bitmap limit) still renders the GPU setup."""
    result = render("slurm-cluster", {"nodesets": {"compute": {"gpu": {"gres": "gpu:h100:1024"}}}})
    assert result.ok, result.describe()
    (nodeset,) = docs_of(result, "NodeSet")
    assert "Gres=gpu:h100:1024" in nodeset["spec"]["extraConf"]


@pytest.mark.parametrize(
    ("values", "path"),
    [
        pytest.param({"nodesets": {"Bad_Name": {}}}, "nodesets", id="nodeset-name"),
        pytest.param({"loginsets": {"Bad_Name": {}}}, "loginsets", id="loginset-name"),
        pytest.param({"partitions": {"bad name": PARTITION}}, "partitions", id="partition-name"),
        pytest.param(
            {"controller": {"metadata": {"labels": {"bad key!": "x"}}}},
            "controller.metadata.labels",
            id="label-key",
        ),
        pytest.param(
            {
                "nodesetDefaults": {"gpu": {"gres": "gpu:2"}},
                "nodesets": {"compute": {"gpu": {"count": 1}}},
            },
            "nodesetDefaults.gpu.gres",
            id="gres-from-nodesetDefaults",
        ),
        pytest.param(
            {
                "nodesets": {"compute": {}},  # no NodeSet by default (upstream's layout)
                "nodesetDefaults": {"autoscaling": {"enabled": True, "minReplicas": 0}},
            },
            "nodesetDefaults.autoscaling.minReplicas",
            id="autoscaling-from-nodesetDefaults",
        ),
        pytest.param(
            {"partitionDefaults": {"nodesets": ["nosuch"]}, "partitions": {"p1": {}}},
            "partitionDefaults.nodesets",
            id="partition-nodesets-from-partitionDefaults",
        ),
    ],
)
def test_rejection_names_the_key_path(values: dict[str, Any], path: str) -> None:
    """The error names where the bad value is, even beside valid values and merged defaults."""
    # A map-key error used to be reported at whichever sibling key was validated after it.
    assert_rejected("slurm-cluster", {"clusterName": "c1", **values}, path)


@pytest.mark.parametrize(
    ("chart", "values", "path"),
    [
        pytest.param(
            "slurm-operator",
            {"webhook": {"podLabels": {"bad key!": "x"}}, "operator": {"replicas": 1}},
            "webhook.podLabels",
            id="operator-label-key",
        ),
        pytest.param(
            "slurm-operator",
            {"operator": {"podAnnotations": {"bad key!": "x"}}, "webhook": {"replicas": 1}},
            "operator.podAnnotations",
            id="operator-annotation-key",
        ),
        pytest.param(
            "slurm-bridge",
            {"scheduler": {"featureGates": {"Bad-Gate": True}}, "controllers": {"replicas": 1}},
            "scheduler.featureGates",
            id="bridge-feature-gate-name",
        ),
        pytest.param(
            "gpu-topology-labeler",
            {"controller": {"podLabels": {"bad key!": "x"}, "replicas": 1}},
            "controller.podLabels",
            id="labeler-label-key",
        ),
        pytest.param(
            "slurm-operator",
            {"operator": {"resources": {"limits": {"bad name!": 1}}, "replicas": 1}},
            "operator.resources.limits",
            id="operator-resource-name",
        ),
    ],
)
def test_map_key_rejections_name_the_key_path(
    chart: str, values: dict[str, Any], path: str
) -> None:
    """Map-key errors of the other charts name the map too, not a sibling validated after it."""
    assert_rejected(chart, values, path)


# -- slurm-cluster: Slurm's own rules (issue 30) ---------------------------------------------------

SCRIPT = "#!/bin/sh\necho {}\n"


def script_files(result: helm.HelmResult) -> dict[str, dict[str, str]]:
    """ConfigMap name -> its data, for the script ConfigMaps the Controller names in a
    ``*ScriptRefs`` field."""
    (controller,) = docs_of(result, "Controller")
    refs = {
        ref["name"]
        for field, value in controller["spec"].items()
        if field.endswith("ScriptRefs")
        for ref in value
    }
    return {
        d["metadata"]["name"]: d["data"]
        for d in docs_of(result, "ConfigMap")
        if d["metadata"]["name"] in refs
    }


@pytest.mark.parametrize(
    ("values", "paths", "file"),
    [
        pytest.param(
            {
                "prologScripts": {"slurmctld-x.sh": SCRIPT.format("node")},
                "prologSlurmctldScripts": {"x.sh": SCRIPT.format("ctld")},
            },
            ["prologScripts.slurmctld-x.sh", "prologSlurmctldScripts.x.sh"],
            "prolog-slurmctld-x.sh",
            id="prolog-beside-prologSlurmctld",
        ),
        pytest.param(
            {
                "epilogScripts": {"slurmctld-x.sh": SCRIPT.format("node")},
                "epilogSlurmctldScripts": {"epilog-slurmctld-x.sh": SCRIPT.format("ctld")},
            },
            ["epilogScripts.slurmctld-x.sh", "epilogSlurmctldScripts.epilog-slurmctld-x.sh"],
            "epilog-slurmctld-x.sh",
            id="epilog-beside-epilogSlurmctld",
        ),
        pytest.param(
            {
                "epilogScripts": {"90-dcgm.sh": SCRIPT.format("mine")},
                "vendor": {"nvidia": {"dcgm": {"enabled": True}}},
            },
            ["epilogScripts.90-dcgm.sh", "vendor.nvidia.dcgm.enabled"],
            "epilog-90-dcgm.sh",
            id="user-epilog-beside-dcgm",
        ),
        pytest.param(
            {"prologScripts": {"a.sh": SCRIPT.format("a"), "prolog-a.sh": SCRIPT.format("b")}},
            ["prologScripts.a.sh", "prologScripts.prolog-a.sh"],
            "prolog-a.sh",
            id="prefixed-and-bare-key",
        ),
        pytest.param(
            {
                "configFiles": {"prolog-a.sh": SCRIPT.format("file")},
                "prologScripts": {"a.sh": SCRIPT.format("a")},
            },
            ["configFiles.prolog-a.sh", "prologScripts.a.sh"],
            "prolog-a.sh",
            id="config-file-beside-script",
        ),
    ],
)
def test_script_file_clash_is_refused_naming_both_keys(
    values: dict[str, Any], paths: list[str], file: str
) -> None:
    """Two values that would become one file in /etc/slurm (where the operator mounts every
    script ConfigMap and names each file in a Prolog=/Epilog=/... line) are refused, and the
    message names both keys and the file."""
    result = render("slurm-cluster", values)
    assert not result.ok, f"accepted {values!r}:\n{result.stdout[-2000:]}"
    for path in paths:
        assert path in result.stderr, f"{path!r} not named:\n{result.stderr}"
    assert f"/etc/slurm/{file}" in result.stderr, result.stderr


def test_script_files_each_hold_the_script_of_their_key() -> None:
    """Every script of every kind (and DCGM's) lands in a file of its own, holding exactly the
    script its key gave: no key of one script ConfigMap is a key of another."""
    values = {
        "prologScripts": {"00-a.sh": SCRIPT.format("p"), "prolog-b.sh": SCRIPT.format("pb")},
        "epilogScripts": {"00-a.sh": SCRIPT.format("e")},
        "prologSlurmctldScripts": {"00-a.sh": SCRIPT.format("pc")},
        "epilogSlurmctldScripts": {"00-a.sh": SCRIPT.format("ec")},
        "vendor": {"nvidia": {"dcgm": {"enabled": True}}},
    }
    result = render("slurm-cluster", values)
    assert result.ok, result.describe()
    files: dict[str, str] = {}
    for data in script_files(result).values():
        assert not set(data) & set(files), (
            f"a file name in two ConfigMaps: {set(data) & set(files)}"
        )
        files.update(data)
    assert files["prolog-00-a.sh"] == SCRIPT.format("p")
    assert files["prolog-b.sh"] == SCRIPT.format("pb")
    assert files["epilog-00-a.sh"] == SCRIPT.format("e")
    assert files["prolog-slurmctld-00-a.sh"] == SCRIPT.format("pc")
    assert files["epilog-slurmctld-00-a.sh"] == SCRIPT.format("ec")
    assert {"prolog-90-dcgm.sh", "epilog-90-dcgm.sh"} <= set(files)


NODE_CONF_HOSTILE = [
    pytest.param("Weight=10  Features=ib", id="two-spaces"),
    pytest.param("Weight=10 Features", id="token-without-equals"),
    pytest.param(" Weight=10", id="leading-space"),
    pytest.param("Weight=10 ", id="trailing-space"),
    pytest.param("Weight=10\tFeatures=ib", id="tab"),
    pytest.param("Features=ib=x", id="equals-in-value"),
    pytest.param("Weight=", id="empty-value"),
    pytest.param("=10", id="empty-key"),
    pytest.param("Features='ib'", id="single-quote"),
    pytest.param('Features="ib"', id="double-quote"),
    pytest.param("Features=$HOME", id="dollar"),
    pytest.param("Features=`id`", id="backtick"),
    pytest.param("Features=ib;id", id="semicolon"),
    pytest.param("Features=$(id)", id="parentheses"),
    pytest.param("Features=(ib)", id="parenthesis"),
]


@pytest.mark.parametrize("line", NODE_CONF_HOSTILE)
@pytest.mark.parametrize("where", ["nodesets.compute", "nodesetDefaults"])
def test_nodeset_extra_conf_is_key_value_tokens(line: str, where: str) -> None:
    """A NodeSet's extraConf is the operator's `--conf` items: anything but `Key=Value` tokens
    separated by single spaces (values without shell characters) is refused, naming the key."""
    values: dict[str, Any] = {"nodesets": {"compute": {}}}
    if where == "nodesetDefaults":
        values["nodesetDefaults"] = {"extraConf": line}
    else:
        values["nodesets"]["compute"]["extraConf"] = line
    assert_rejected("slurm-cluster", values, f"{where}.extraConf")


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("ib nvme", id="space"),
        pytest.param("'ib'", id="single-quote"),
        pytest.param("$HOME", id="dollar"),
        pytest.param("`id`", id="backtick"),
        pytest.param("ib;id", id="semicolon"),
        pytest.param("(ib)", id="parenthesis"),
        pytest.param("a=b", id="equals"),
        pytest.param(["ib", "$(id)"], id="list-item"),
    ],
)
@pytest.mark.parametrize("where", ["nodesets.compute", "nodesetDefaults"])
def test_nodeset_extra_conf_map_values_are_plain(value: Any, where: str) -> None:
    """A NodeSet's extraConfMap becomes the same `--conf` items: a value with a space, quote,
    `$`, backtick, `;`, parenthesis or `=` is refused, naming the key."""
    values: dict[str, Any] = {"nodesets": {"compute": {}}}
    if where == "nodesetDefaults":
        values["nodesetDefaults"] = {"extraConfMap": {"Features": value}}
    else:
        values["nodesets"]["compute"]["extraConfMap"] = {"Features": value}
    assert_rejected("slurm-cluster", values, f"{where}.extraConfMap.Features")


def test_nodeset_extra_conf_plain_tokens_render() -> None:
    """Ordinary node settings still render as given."""
    line = "Features=ib,nvme Weight=10 CpuSpecList=0-1 Gres=nic:2"
    result = render("slurm-cluster", {"nodesets": {"compute": {"extraConf": line}}})
    assert result.ok, result.describe()
    (nodeset,) = docs_of(result, "NodeSet")
    assert nodeset["spec"]["extraConf"] == line


@pytest.mark.parametrize(
    ("values", "path"),
    [
        pytest.param({"partitions": {"DEFAULT": PARTITION}}, "partitions.DEFAULT", id="DEFAULT"),
        pytest.param({"partitions": {"default": PARTITION}}, "partitions.default", id="default"),
        pytest.param({"partitions": {"Default": PARTITION}}, "partitions.Default", id="Default"),
        pytest.param(
            {"nodesets": {"default": {"partition": {"enabled": True}}}},
            "nodesets.default.partition.enabled",
            id="nodeset-partition-default",
        ),
        pytest.param({"nodesets": {"all": {}}}, "nodesets.all", id="nodeset-all"),
    ],
)
def test_names_slurm_reserves_are_refused(values: dict[str, Any], path: str) -> None:
    """`PartitionName=DEFAULT` (any case) is Slurm's defaults record and `Nodes=ALL` its every-node
    keyword: a partition or NodeSet named so is refused, naming the key."""
    assert_rejected("slurm-cluster", values, path)


def node_gres(result: helm.HelmResult, nodeset: str) -> list[str]:
    """The ``Gres`` tokens (any case) of a NodeSet's ``--conf`` line."""
    (doc,) = [d for d in docs_of(result, "NodeSet") if d["metadata"]["name"].endswith(nodeset)]
    return [
        t for t in str(doc["spec"].get("extraConf", "")).split() if t.lower().startswith("gres=")
    ]


A3MEGA = {
    "google": {
        "a3mega": [
            {"targetNodeSet": "a3", "nodePool": "a3", "networks": [f"n{i}" for i in range(9)]}
        ]
    }
}


@pytest.mark.parametrize(
    ("values", "path"),
    [
        pytest.param(
            {"nodesets": {"gpu": {"gpu": {"count": 8}, "extraConf": "Weight=1 gres=gpu:8"}}},
            "nodesets.gpu.extraConf",
            id="lower-case-gres-in-extraConf",
        ),
        pytest.param(
            {"nodesets": {"gpu": {"gpu": {"gres": "gpu:h100:8"}, "extraConf": "GRES=gpu:h100:8"}}},
            "nodesets.gpu.extraConf",
            id="upper-case-gres-in-extraConf",
        ),
        pytest.param(
            {"nodesets": {"gpu": {"gpu": {"count": 8}, "extraConfMap": {"gres": ["gpu:8"]}}}},
            "nodesets.gpu.extraConfMap.gres",
            id="gres-key-in-extraConfMap",
        ),
        pytest.param(
            {
                "nodesetDefaults": {"extraConf": "Gres=gpu:8"},
                "nodesets": {"gpu": {"gpu": {"count": 8}}},
            },
            "nodesetDefaults.extraConf",
            id="gres-from-nodesetDefaults",
        ),
        pytest.param(
            {"vendor": A3MEGA, "nodesets": {"a3": {"extraConf": "Gres=gpu:8"}}},
            "nodesets.a3.extraConf",
            id="a3mega-and-extraConf-gpus",
        ),
        pytest.param(
            {"vendor": A3MEGA, "nodesets": {"a3": {"gpu": {"count": 8}}}},
            "vendor.google.a3mega[0]",
            id="a3mega-and-gpu-count",
        ),
    ],
)
def test_gpus_declared_twice_are_refused(values: dict[str, Any], path: str) -> None:
    """GPUs come from one place (`gpu`, or an A3 Mega entry): a `gpu` GRES in a `Gres` key of any
    case beside them is refused, naming where it is (Slurm would count both)."""
    stderr = assert_rejected("slurm-cluster", values, path)
    assert "declares GPUs" in stderr, stderr


@pytest.mark.parametrize(
    ("values", "nodeset", "gres"),
    [
        pytest.param(
            {"vendor": A3MEGA, "nodesets": {"a3": {"extraConf": "Weight=10"}}},
            "a3",
            ["Gres=gpu:nvidia_h100_80gb_hbm3:8"],
            id="a3mega-with-extraConf",
        ),
        pytest.param(
            {"vendor": A3MEGA, "nodesets": {"a3": {"extraConfMap": {"Weight": 10}}}},
            "a3",
            ["Gres=gpu:nvidia_h100_80gb_hbm3:8"],
            id="a3mega-with-extraConfMap",
        ),
        pytest.param(
            {"nodesets": {"gpu": {"gpu": {"count": 8}, "extraConf": "gres=nic:2 Weight=1"}}},
            "gpu",
            ["Gres=gpu:8,nic:2"],
            id="gpu-and-other-gres-in-extraConf",
        ),
        pytest.param(
            {"nodesets": {"gpu": {"gpu": {"count": 8}, "extraConfMap": {"GRES": "nic:2"}}}},
            "gpu",
            ["Gres=gpu:8,nic:2"],
            id="gpu-and-other-gres-in-extraConfMap",
        ),
        pytest.param(
            {"nodesets": {"gpu": {"extraConfMap": {"Gres": ["gpu:h100:4"]}}}},
            "gpu",
            ["Gres=gpu:h100:4"],
            id="gpus-from-extraConfMap-only",
        ),
    ],
)
def test_gres_is_written_once(values: dict[str, Any], nodeset: str, gres: list[str]) -> None:
    """A NodeSet's `--conf` line has one `Gres` token: the chart's GPUs (`gpu` or A3 Mega) first,
    then the other GRES of extraConf/extraConfMap, whichever of them is set."""
    result = render("slurm-cluster", values)
    assert result.ok, result.describe()
    assert node_gres(result, nodeset) == gres


def test_a3mega_declares_the_gres_type() -> None:
    """An A3 Mega NodeSet's `Gres=gpu:...` needs `GresTypes=gpu` in slurm.conf."""
    result = render("slurm-cluster", {"vendor": A3MEGA, "nodesets": {"a3": {}}})
    assert result.ok, result.describe()
    (controller,) = docs_of(result, "Controller")
    assert "GresTypes=gpu" in str(controller["spec"].get("extraConf", "")).splitlines()


# -- slurm-bridge -----------------------------------------------------------------------------------


def webhook_namespace_selectors(result: helm.HelmResult) -> list[Doc]:
    selectors = []
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for doc in docs_of(result, kind):
            selectors += [w["namespaceSelector"] for w in doc["webhooks"]]
    return selectors


def excluded_namespaces(selector: Doc) -> set[str]:
    excluded: set[str] = set()
    for expr in selector.get("matchExpressions", []):
        if expr["key"] == "kubernetes.io/metadata.name" and expr["operator"] == "NotIn":
            excluded |= set(expr["values"])
    return excluded


def bridge_config(result: helm.HelmResult) -> Doc:
    (config,) = [d for d in docs_of(result, "ConfigMap") if "config.yaml" in d.get("data", {})]
    data: Doc = yaml.safe_load(config["data"]["config.yaml"])
    return data


@pytest.mark.parametrize(
    ("values", "path"),
    [
        pytest.param(
            {"schedulerConfig": {"schedulerName": "default-scheduler"}},
            "schedulerConfig.schedulerName",
            id="default-scheduler",
        ),
        pytest.param(
            {"admission": {"managedNamespaceSelector": {"matchLabels": {}}}},
            "admission.managedNamespaceSelector",
            id="empty-matchLabels-selector",
        ),
        pytest.param(
            {"admission": {"managedNamespaceSelector": {"matchExpressions": []}}},
            "admission.managedNamespaceSelector",
            id="empty-matchExpressions-selector",
        ),
        pytest.param(
            {"admission": {"managedNamespaceSelector": {"matchLabel": {"team": "a"}}}},
            "admission.managedNamespaceSelector",
            id="misspelled-selector",
        ),
        pytest.param(
            {"admission": {"managedNamespaces": ["slinky"]}},
            "admission.managedNamespaces",
            id="operator-namespace",
        ),
        pytest.param(
            {
                "sharedConfig": {"slurmRestApi": "http://hpc-restapi.hpc:6820"},
                "admission": {"managedNamespaces": ["hpc"]},
            },
            "admission.managedNamespaces",
            id="slurm-namespace",
        ),
        pytest.param(
            {
                "scheduler": {
                    "leaderElect": True,
                    "leaderElection": {"leaseDuration": "10s", "renewDeadline": "15s"},
                }
            },
            "scheduler.leaderElection.leaseDuration",
            id="lease-shorter-than-renew",
        ),
        pytest.param(
            {
                "scheduler": {
                    "leaderElect": True,
                    "leaderElection": {"renewDeadline": "10s", "retryPeriod": "9s"},
                }
            },
            "scheduler.leaderElection.renewDeadline",
            id="renew-within-jittered-retry",
        ),
        pytest.param(
            {"scheduler": {"leaderElection": {"retryPeriod": "0s"}}},
            "scheduler.leaderElection.retryPeriod",
            id="zero-retry",
        ),
    ],
)
def test_bridge_refuses_unsafe_values(values: dict[str, Any], path: str) -> None:
    """The bridge never competes with default-scheduler, bridges every namespace by accident, or
    starts a kube-scheduler that refuses its leader-election settings."""
    assert_rejected("slurm-bridge", values, path)


def test_bridge_never_bridges_operator_or_slurm_namespaces() -> None:
    """The webhooks skip kube-system, the release, Slurm's and the operator's namespaces, also
    under a user namespaceSelector, and config.yaml's selector excludes them too."""
    values = {
        "sharedConfig": {"slurmRestApi": "http://slurm-restapi.slurm.svc:6820"},
        "operatorNamespace": "ops",
        "admission": {
            "managedNamespaceSelector": {"matchLabels": {"team": "hpc"}},
            "namespaceSelector": {"matchLabels": {"bridge": "enabled"}},
        },
    }
    result = render("slurm-bridge", values)
    assert result.ok, result.describe()
    protected = {"kube-system", helm.DEFAULT_NAMESPACE, "slurm", "ops"}
    selectors = webhook_namespace_selectors(result)
    assert selectors
    for selector in selectors:
        assert protected <= excluded_namespaces(selector), selector
        assert selector.get("matchLabels") == {"bridge": "enabled"}
    managed = bridge_config(result)["managedNamespaceSelector"]
    assert managed["matchLabels"] == {"team": "hpc"}
    assert protected <= excluded_namespaces(managed)


def test_bridge_all_namespaces_is_an_explicit_opt_in() -> None:
    """`admission.manageAllNamespaces: true` bridges every namespace but the protected ones."""
    result = render(
        "slurm-bridge", {"admission": {"manageAllNamespaces": True, "managedNamespaces": []}}
    )
    assert result.ok, result.describe()
    managed = bridge_config(result)["managedNamespaceSelector"]
    assert set(managed) == {"matchExpressions"}
    assert {"kube-system", helm.DEFAULT_NAMESPACE, "slinky"} <= excluded_namespaces(managed)
    assert "managedNamespaces" not in bridge_config(result)


SLURM_REST_API_FORMS = [
    pytest.param("http://slurm-restapi.slurm:6820", id="service-namespace"),
    pytest.param("http://slurm-restapi.slurm.svc:6820", id="svc"),
    pytest.param("http://slurm-restapi.slurm.svc.cluster.local:6820", id="cluster-local"),
    pytest.param("http://slurm-restapi.slurm.svc.cluster.local.:6820", id="trailing-dot"),
    pytest.param("http://slurm-restapi.slurm.svc.k8s.example.org:6820", id="custom-domain"),
    pytest.param("http://slurm-restapi.slurm.svc.k8s.example.org.:6820", id="custom-domain-dot"),
    pytest.param("https://SLURM-RESTAPI.SLURM.SVC.CLUSTER.LOCAL:6820", id="upper-case"),
    pytest.param("http://Slurm-RestAPI.Slurm:6820", id="mixed-case"),
    pytest.param(
        "http://slurm-restapi-0.slurm-restapi.slurm.svc.cluster.local:6820", id="headless-pod"
    ),
]


@pytest.mark.parametrize("url", SLURM_REST_API_FORMS)
def test_bridge_protects_slurm_namespace_in_every_url_form(url: str) -> None:
    """However `sharedConfig.slurmRestApi` spells the Service (case, trailing dot, cluster
    domain), its namespace stays protected: `managedNamespaces` may not list it, and neither
    the webhooks nor `manageAllNamespaces` reach it."""
    assert_rejected(
        "slurm-bridge",
        {"sharedConfig": {"slurmRestApi": url}, "admission": {"managedNamespaces": ["slurm"]}},
        "admission.managedNamespaces",
    )
    result = render(
        "slurm-bridge",
        {
            "sharedConfig": {"slurmRestApi": url},
            "admission": {"manageAllNamespaces": True, "managedNamespaces": []},
        },
    )
    assert result.ok, result.describe()
    assert "slurm" in excluded_namespaces(bridge_config(result)["managedNamespaceSelector"])
    for selector in webhook_namespace_selectors(result):
        assert "slurm" in excluded_namespaces(selector), selector


@pytest.mark.parametrize(
    "url",
    ["http://10.1.2.3:6820", "https://slurm.example.com:6820", "http://slurm.example.com.:6820"],
)
def test_bridge_reads_no_namespace_from_hosts_outside_the_cluster(url: str) -> None:
    """An IP address or an external name names no Service: no namespace is taken from it."""
    result = render(
        "slurm-bridge",
        {
            "sharedConfig": {"slurmRestApi": url},
            "admission": {"manageAllNamespaces": True, "managedNamespaces": []},
        },
    )
    assert result.ok, result.describe()
    excluded = excluded_namespaces(bridge_config(result)["managedNamespaceSelector"])
    assert excluded == {
        "kube-system",
        "kube-public",
        "kube-node-lease",
        helm.DEFAULT_NAMESPACE,
        "slinky",
    }


def test_bridge_leader_election_defaults_are_accepted_by_client_go() -> None:
    """The defaults render: 15s > 10s > 1.2 x 2s."""
    result = render("slurm-bridge", {})
    assert result.ok, result.describe()


# -- slurm-operator ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "address", ["0.0.0.0:6060", ":6060", "10.0.0.5:6060", "[::]:6060", "pprof.example.com:6060"]
)
def test_operator_profiling_stays_on_localhost(address: str) -> None:
    """pprof on any non-loopback address needs `operator.profileAllowRemote: true`."""
    values = {"operator": {"profile": True, "profileAddr": address}}
    assert_rejected("slurm-operator", values, "operator.profileAddr")


@pytest.mark.parametrize("address", ["localhost:6060", "127.0.0.1:6060", "[::1]:6060"])
def test_operator_profiling_on_loopback_renders_without_warning(address: str) -> None:
    values = {"operator": {"profile": True, "profileAddr": address}}
    result = helm.dry_run_install(CHARTS["slurm-operator"].path, values)
    assert result.ok, result.describe()
    assert "pprof" not in result.notes


def test_operator_profiling_opened_explicitly_warns_in_notes() -> None:
    values = {
        "operator": {"profile": True, "profileAddr": "0.0.0.0:6060", "profileAllowRemote": True}
    }
    result = helm.dry_run_install(CHARTS["slurm-operator"].path, values)
    assert result.ok, result.describe()
    warnings = result.notes.strip().split("\n\n")[0]
    assert warnings.startswith("WARNINGS") and "0.0.0.0:6060" in warnings, result.notes


@pytest.mark.parametrize(
    ("values", "path"),
    [
        pytest.param({"operator": {"metricsPort": "08080"}}, "operator.metricsPort", id="octal"),
        pytest.param({"webhook": {"metricsPort": 70000}}, "webhook.metricsPort", id="port-range"),
        pytest.param({"operator": {"enabled": "yes"}}, "operator.enabled", id="enabled-string"),
        pytest.param(
            {"operator": {"leaderElection": {"enabled": True}}},
            "operator.leaderElection",
            id="old-leader-election-object",
        ),
        pytest.param({"certManager": {"secretNam": "x"}}, "certManager", id="misspelt-key"),
        pytest.param({"operator": {"namespaces": ["a"]}}, "operator.namespaces", id="list"),
        pytest.param(
            {"extraObjects": [{"kind": "ConfigMap"}]}, "extraObjects.0", id="no-apiVersion"
        ),
        pytest.param({"watchNamespaces": ["a"]}, "", id="removed-key"),
    ],
)
def test_upstream_keys_stay_strict(values: dict[str, Any], path: str) -> None:
    """Upstream's keys are known to the schema, which still refuses a wrong type, an unknown key
    (naming where it is) and a key this chart no longer has."""
    stderr = assert_rejected("slurm-operator", values, path)
    if not path:
        assert "watchNamespaces" in stderr, stderr


def rules_granting(docs: list[Doc], kind: str, resource: str) -> list[Doc]:
    return [
        d
        for d in docs
        if d["kind"] == kind and any(resource in r.get("resources", []) for r in d.get("rules", []))
    ]


def test_operator_secrets_are_namespaced_when_namespaces_are_known() -> None:
    """With operator.namespaces (and webhook.namespaces), only per-namespace Roles grant Secrets; no
    ClusterRole does."""
    result = render(
        "slurm-operator",
        {"operator": {"namespaces": "slurm, team-a"}, "webhook": {"namespaces": "slurm,team-a"}},
    )
    assert result.ok, result.describe()
    assert not rules_granting(result.docs, "ClusterRole", "secrets")
    roles = rules_granting(result.docs, "Role", "secrets")
    assert {r["metadata"]["namespace"] for r in roles} == {"slurm", "team-a"}
    bindings = [
        d
        for d in docs_of(result, "RoleBinding")
        if d["roleRef"]["name"] in {r["metadata"]["name"] for r in roles}
    ]
    assert {b["metadata"]["namespace"] for b in bindings} >= {"slurm", "team-a"}


def test_operator_watching_all_namespaces_warns_about_cluster_wide_secrets() -> None:
    """The all-namespaces default needs a ClusterRole on Secrets; NOTES says so and how to narrow it."""
    result = helm.dry_run_install(CHARTS["slurm-operator"].path, {})
    assert result.ok, result.describe()
    assert rules_granting(result.docs, "ClusterRole", "secrets")
    assert "operator.namespaces" in result.notes.strip().split("\n\n")[0], result.notes


# -- NetworkPolicies ---------------------------------------------------------------------------------


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
    found: dict[int, list[Any]] = {}
    for rule in policy["spec"].get("ingress", []):
        for port in rule.get("ports", []):
            found.setdefault(int(port["port"]), []).extend(rule.get("from", []))
    return found


def test_operator_network_policies_are_on_by_default() -> None:
    """Operator and webhook are fenced by default, with the API server, DNS and slurmrestd open."""
    result = render("slurm-operator", {})
    assert result.ok, result.describe()
    found = policies(result)
    assert set(found) == {"operator", "webhook"}, sorted(found)
    for policy in found.values():
        egress = egress_ports(policy)
        assert egress[443] == [] and egress[6443] == [], "the API server address is unknown"
        assert 53 in egress
    assert 6820 in egress_ports(found["operator"])
    webhook_in = ingress_ports(found["webhook"])
    assert webhook_in == {9443: []}, "kube-apiserver must reach the webhook from any source"
    assert ingress_ports(found["operator"]) == {}


def test_bridge_network_policies_are_on_by_default() -> None:
    """Scheduler, admission and controllers are fenced by default."""
    result = render("slurm-bridge", {})
    assert result.ok, result.describe()
    found = policies(result)
    assert set(found) == {"scheduler", "admission", "controllers"}, sorted(found)
    for policy in found.values():
        egress = egress_ports(policy)
        assert egress[443] == [] and egress[6443] == [] and 53 in egress
    assert ingress_ports(found["admission"]) == {9443: []}
    for component in ("scheduler", "controllers"):
        peers = egress_ports(found[component])[6820]
        assert peers and all("namespaceSelector" in p for p in peers), peers


def test_slurm_cluster_network_policies_stay_opt_in() -> None:
    """slurm-cluster cannot know its peers across namespaces (operator, bridge, login users): off."""
    result = render("slurm-cluster", {})
    assert result.ok, result.describe()
    assert not docs_of(result, "NetworkPolicy")
