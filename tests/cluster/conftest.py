"""Fixtures of the cluster tier: one kwok control plane per session, one namespace per test.

The control plane (kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kwok) is built
once per machine by ``slinky_harness.build.controlplane.ensure_binaries`` and started with the fleet
``tests/data/fleets/small-gpu.yaml`` (override with ``SLINKY_CLUSTER_FLEET``). Every test in this
folder gets the ``cluster`` marker.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes import client
from tests.cluster import charts_support as support
from tests.worker_summary import records

from slinky_harness.core.polling import wait_for
from slinky_harness.helm.client import Helm
from slinky_harness.k8s.cluster import Cluster
from slinky_harness.k8s.fleet import Fleet, load_fleet

if TYPE_CHECKING:
    from collections.abc import Iterator

HERE = Path(__file__).resolve().parent
DEFAULT_FLEET = HERE.parent / "data" / "fleets" / "small-gpu.yaml"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cluster: needs the kwok control plane (tests/cluster, nox -s cluster)"
    )
    config.addinivalue_line(
        "markers",
        "operator: runs the real Slinky operator (slinky_harness.k8s.operator), built with the control "
        "plane from tools/go.mod",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def third_party_crds(cluster: Cluster) -> None:
    """The third-party CRDs (cert-manager, Prometheus Operator, KEDA, ...) that optional values
    render objects of; installed once (no test removes them)."""
    support.install_third_party_crds(cluster)


@pytest.fixture(scope="module")
def slinky_crds(cluster: Cluster) -> None:
    """The Slinky CRDs that slurm-cluster renders objects of; ensured per module, because an
    uninstall of slurm-operator with ``crds.keep: false`` removes them."""
    support.ensure_slinky_crds(cluster)


@pytest.fixture(scope="module")
def crds(third_party_crds: None, slinky_crds: None) -> None:
    """Both sets of CRDs."""


@pytest.fixture(scope="session")
def fleet() -> Fleet:
    return load_fleet(os.environ.get("SLINKY_CLUSTER_FLEET", str(DEFAULT_FLEET)))


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory, fleet: Fleet) -> Iterator[Cluster]:
    """A running control plane with the fleet's nodes Ready; torn down at session end."""
    workdir = tmp_path_factory.mktemp("kwok-cluster")
    with Cluster.start(workdir, fleet=fleet) as running:
        steps = ", ".join(f"{k} {v:.1f}s" for k, v in running.timings.items())
        _SUMMARY.append(
            f"kwok cluster with {len(fleet.node_names())} nodes started in "
            f"{running.start_seconds:.1f}s ({steps}); logs kept in {workdir / 'logs'}"
        )
        yield running


_SUMMARY: list[str] = records("cluster.summary")  # merged across xdist workers


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _SUMMARY:
        terminalreporter.write_line(f"cluster: {line}")


@pytest.fixture(scope="session")
def api_client(cluster: Cluster) -> Iterator[Any]:
    """``kubernetes.client.ApiClient`` bound to the session cluster."""
    api = cluster.api_client()
    try:
        yield api
    finally:
        api.close()


@pytest.fixture(scope="session")
def core(api_client: Any) -> Any:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def apps(api_client: Any) -> Any:
    return client.AppsV1Api(api_client)


@pytest.fixture(scope="session")
def batch(api_client: Any) -> Any:
    return client.BatchV1Api(api_client)


@pytest.fixture
def namespace(request: pytest.FixtureRequest, core: Any) -> Iterator[str]:
    """A fresh namespace named after the test; deleted (without waiting) afterwards."""
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{base}-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    wait_for(
        lambda: (
            core.list_namespaced_service_account(name, field_selector="metadata.name=default").items
        ),
        timeout=30,
        what=f"the default ServiceAccount in {name}",
    )
    try:
        yield name
    finally:
        core.delete_namespace(name)


@pytest.fixture(scope="session")
def helm4(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    """The pinned Helm 4 bound to the session cluster (its own config and cache folders)."""
    from slinky_harness.build import toolchain  # noqa: PLC0415 - builds helm on first use

    return Helm(toolchain.ensure("helm"), cluster, tmp_path_factory.mktemp("helm4"))


@pytest.fixture(scope="session")
def helm3(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    """The pinned Helm 3 bound to the session cluster."""
    from slinky_harness.build import toolchain  # noqa: PLC0415 - builds helm on first use

    return Helm(toolchain.ensure("helm3"), cluster, tmp_path_factory.mktemp("helm3"))
