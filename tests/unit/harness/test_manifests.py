"""Each render invariant catches the defect it exists for, and accepts a clean object."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from slinky_harness.k8s import manifests

LABELS = {
    "app.kubernetes.io/name": "demo",
    "app.kubernetes.io/instance": "rel",
    "app.kubernetes.io/managed-by": "Helm",
}


def deployment(**spec_overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "rel-demo", "namespace": "ns", "labels": dict(LABELS)},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": "demo"}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "demo"}},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "reg.example/demo:1",
                            "env": [{"name": "A", "value": "1"}],
                            "ports": [{"name": "http", "containerPort": 8080}],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                        }
                    ],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                },
            },
        },
    }
    doc["spec"].update(spec_overrides)
    return doc


def test_clean_deployment_passes_everything() -> None:
    assert (
        manifests.all_invariants([deployment()], namespace="ns", values={}, registry="reg.example")
        == []
    )


def test_duplicate_objects_are_reported() -> None:
    assert manifests.check_unique([deployment(), deployment()])


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        pytest.param("Service", "1starts-with-digit", id="service-dns1035"),
        pytest.param("Service", "x" * 64, id="service-too-long"),
        pytest.param("StatefulSet", "s" * 53, id="statefulset-revision-label-too-long"),
        pytest.param("ConfigMap", "Upper", id="configmap-uppercase"),
    ],
)
def test_bad_names_are_reported(kind: str, name: str) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "labels": LABELS},
    }
    assert manifests.check_names([doc])


def test_bad_label_value_is_reported() -> None:
    doc = deployment()
    doc["metadata"]["labels"]["version"] = "x" * 64
    assert manifests.check_names([doc])


def test_selector_that_misses_the_template_is_reported() -> None:
    doc = deployment(selector={"matchLabels": {"app.kubernetes.io/name": "other"}})
    assert manifests.check_selectors([doc])
    assert manifests.check_selectors([deployment(selector={})])


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda c, s: c["env"].append({"name": "A", "value": "2"}), id="env"),
        pytest.param(
            lambda c, s: c["ports"].append({"name": "other", "containerPort": 8080}),
            id="port-number",
        ),
        pytest.param(
            lambda c, s: c["volumeMounts"].append({"name": "x", "mountPath": "/data"}),
            id="mount-path",
        ),
        pytest.param(
            lambda c, s: s["volumes"].append({"name": "data", "emptyDir": {}}), id="volume"
        ),
        pytest.param(lambda c, s: s["containers"].append(copy.deepcopy(c)), id="container"),
    ],
)
def test_duplicate_list_keys_are_reported(mutate: Any) -> None:
    doc = deployment()
    spec = doc["spec"]["template"]["spec"]
    mutate(spec["containers"][0], spec)
    assert manifests.check_list_keys([doc])


def test_image_outside_values_registry_is_reported() -> None:
    assert manifests.check_images([deployment()], "other.example")
    assert not manifests.check_images([deployment()], "reg.example")


def test_hard_coded_namespace_is_reported() -> None:
    doc = deployment()
    doc["metadata"]["namespace"] = "kube-system"
    assert manifests.check_namespaces([doc], "ns")
    assert not manifests.check_namespaces([doc], "ns", {"kube-system"})


def test_cluster_scoped_object_with_namespace_is_reported() -> None:
    doc = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "r", "namespace": "ns"},
    }
    assert manifests.check_namespaces([doc], "ns")


def test_missing_namespace_is_reported() -> None:
    doc = deployment()
    del doc["metadata"]["namespace"]
    assert manifests.check_namespaces([doc], "ns")


def test_missing_standard_labels_are_reported() -> None:
    doc = deployment()
    doc["metadata"]["labels"] = {}
    assert manifests.check_standard_labels([doc])


def test_secret_data_in_notes_is_reported() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "ns"},
        "data": {"key": base64.b64encode(b"hunter2-secret").decode()},
    }
    assert manifests.check_notes("your password is hunter2-secret", [secret])
    assert not manifests.check_notes("kubectl get secret s", [secret])


def test_values_text_reads_back_exactly_in_yaml() -> None:
    """Values files survive a YAML parser unchanged: y/n, numbers-as-strings, control and astral characters."""
    import yaml  # noqa: PLC0415

    from slinky_harness.helm.client import values_text  # noqa: PLC0415

    tricky = {
        "a": [
            "y",
            "n",
            "0o7",
            "1e3",
            "\x7f",
            "\x85",
            "\x9f",
            "\U00010000",
            "\ufeff",
            "\u2028",
            "tab\there",
        ]
    }
    assert yaml.safe_load(values_text(tricky)) == tricky
