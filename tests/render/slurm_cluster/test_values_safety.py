"""slurm-cluster: values that must never reach a running cluster, and the safe defaults that
replace them.

Each rejection test renders one hostile or contradictory values file and requires Helm to refuse it
with a message naming the value's own path (the JSON pointer of a schema error, ``at
'/a/b/c'``, or the dotted path of a ``templates/validate.yaml`` message). Each acceptance test
renders the safe counterpart and checks the objects it produces.

- No value puts a line break, a carriage return or a Slurm separator into a Slurm config file
  (unless the key is documented as raw lines), ConfigMap keys are valid, numbers stay in the
  ranges Slurm and Kubernetes accept, and every rejection names the right key.
- Slurm's own rules: no two values become one file in /etc/slurm, a NodeSet's `--conf` items are
  exactly `Key=Value` tokens, no name Slurm reserves (`DEFAULT`, `ALL`), GPUs declared once.
- NetworkPolicies stay opt-in: the chart cannot know its peers across namespaces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from tests.render.render_support import assert_rejected, docs_of
from tests.render.render_support import template as render

if TYPE_CHECKING:
    from slinky_harness.helm import client as helm

INJECTED = "SlurmUser=root"


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


# -- NetworkPolicies ---------------------------------------------------------------------------------


def test_slurm_cluster_network_policies_stay_opt_in() -> None:
    """slurm-cluster cannot know its peers across namespaces (operator, bridge, login users): off."""
    result = render("slurm-cluster", {})
    assert result.ok, result.describe()
    assert not docs_of(result, "NetworkPolicy")
