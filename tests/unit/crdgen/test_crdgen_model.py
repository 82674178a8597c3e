"""The model loader, and the v1.2.1 facts the model must keep."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from tests.unit.crdgen.crdgen_support import GROUP, VERSION, crds

from slinky_crdgen.dsl import ListOf, MapOf, Named, Scalar, load_model, parse_type
from slinky_crdgen.errors import ModelError
from slinky_crdgen.jsonschema import version_schema

if TYPE_CHECKING:
    from pathlib import Path


def _spec(kind: str) -> dict[str, Any]:
    props: dict[str, Any] = version_schema(crds()[(GROUP, kind)], VERSION)["properties"]
    return props


def test_parse_type() -> None:
    assert parse_type("[]k8s.LocalObjectReference") == ListOf(Named("k8s.LocalObjectReference"))
    assert parse_type("map[string]string") == MapOf(Scalar("string"))
    assert parse_type("int-or-string") == Scalar("int-or-string")
    with pytest.raises(ModelError, match="bad type expression"):
        parse_type("[]map[int]x y")


BASE = """
group: g.example.org
version: v1
kubernetes: {definitions: "1.36"}
kinds: [{kind: Thing, plural: things, spec: ThingSpec}]
types:
  ThingSpec:
    fields:
"""


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("      a: {type: string, colour: red}", "unknown key(s) colour"),
        ("      a: Missing", "unknown type 'Missing'"),
        ("      a: {type: '[]string', listType: map}", "listMapKeys goes with listType map"),
        ("      a: {type: string, schema: partial}", "expected full or preserve"),
        ("      a: {type: string, schema: preserve}", "schema preserve is for embedded"),
        ("      a: {type: string, required: maybe}", "expected true or false"),
    ],
)
def test_model_errors(tmp_path: Path, fields: str, message: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(BASE + fields + "\n", encoding="utf-8")
    with pytest.raises(ModelError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_model(path)


def test_model_rejects_bad_yaml(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("a: [", encoding="utf-8")
    with pytest.raises(ModelError, match="not valid YAML"):
        load_model(path)


def test_names_and_subresources() -> None:
    """Short names, scale and printer columns of v1.2.1 (api/v1beta1 markers)."""
    names = {kind: crd["spec"]["names"] for (_, kind), crd in crds().items()}
    assert names["Controller"]["shortNames"] == ["slurmctld"]
    assert names["NodeSet"]["shortNames"] == ["nodesets", "nss", "slurmd"]
    assert names["LoginSet"]["shortNames"] == ["loginsets", "lss", "sackd"]
    assert names["RestApi"]["shortNames"] == ["slurmrestd"]
    assert names["Accounting"]["shortNames"] == ["slurmdbd"]
    assert names["Token"]["shortNames"] == ["tokens", "jwt"]
    assert all("categories" not in n for n in names.values())
    versions = {kind: crd["spec"]["versions"][0] for (_, kind), crd in crds().items()}
    scaled = {k for k, v in versions.items() if "scale" in v["subresources"]}
    assert scaled == {"NodeSet", "LoginSet"}
    columns = [
        (c["name"], c.get("priority", 0)) for c in versions["NodeSet"]["additionalPrinterColumns"]
    ]
    assert columns == [
        ("DESIRED", 0),
        ("REPLICAS", 0),
        ("UPDATED", 0),
        ("READY", 0),
        ("IDLE", 1),
        ("ALLOCATED", 1),
        ("DOWN", 1),
        ("DRAIN", 1),
        ("AGE", 0),
    ]
    token = [c["jsonPath"] for c in versions["Token"]["additionalPrinterColumns"]]
    assert token == [".spec.username", ".status.issuedAt", ".metadata.creationTimestamp"]


def test_nodeset_facts() -> None:
    spec = _spec("NodeSet")["spec"]
    props = spec["properties"]
    assert spec["required"] == ["controllerRef"]
    assert props["scalingMode"]["enum"] == ["DaemonSet", "StatefulSet"]
    assert props["scalingMode"]["default"] == "StatefulSet"
    assert props["pruneSlurmNodeRecords"]["enum"] == ["Never", "NodeNotFound"]
    assert props["replicas"] == {**props["replicas"], "default": 1, "format": "int32"}
    strategy = props["updateStrategy"]
    assert strategy["properties"]["type"]["enum"] == [
        "RollingUpdate",
        "OnDelete",
        "ScheduledUpdate",
    ]
    assert (
        strategy["properties"]["rollingUpdate"]["properties"]["maxUnavailable"]["default"] == "25%"
    )
    assert strategy["properties"]["scheduledUpdate"]["properties"]["duration"]["default"] == "30m"
    assert "x-kubernetes-validations" in strategy
    assert props["partition"]["properties"]["config"]["pattern"] == "^[^\\n]+$"
    assert props["ssh"]["required"] == ["enabled", "sssdConfRef"]
    assert props["workloadDisruptionProtection"]["default"] is True
    assert props["template"]["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"]
    status = _spec("NodeSet")["status"]
    assert status["required"] == ["nodeSetHash", "selector"]
    conditions = status["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]


def test_controller_accounting_token_facts() -> None:
    controller = _spec("Controller")["spec"]
    assert len(controller["x-kubernetes-validations"]) == 3
    persistence = controller["properties"]["persistence"]
    assert persistence["required"] == ["enabled"]
    assert persistence["properties"]["enabled"]["default"] is True
    assert {"accessModes", "resources", "storageClassName", "existingClaim"} <= set(
        persistence["properties"]
    )
    accounting = _spec("Accounting")["spec"]
    storage = accounting["properties"]["storageConfig"]
    assert storage["required"] == ["host", "passwordKeyRef"]
    assert storage["properties"]["port"]["default"] == 3306
    assert storage["properties"]["database"]["default"] == "slurm_acct_db"
    assert accounting["x-kubernetes-validations"] == controller["x-kubernetes-validations"]
    token = _spec("Token")["spec"]
    assert token["required"] == ["username"]
    assert token["properties"]["refresh"]["default"] is True
    assert _spec("Token")["status"]["properties"]["issuedAt"]["format"] == "date-time"
    for kind in ("LoginSet", "RestApi"):
        assert "controllerRef" in _spec(kind)["spec"]["required"]
    assert _spec("LoginSet")["spec"]["required"] == ["controllerRef", "sssdConfRef"]
