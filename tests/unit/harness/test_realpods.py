"""The target of the real-pod tests (slinky_harness.k8s.realpods): chosen by SLINKY_REAL_PODS,
the node every pod selects, and the check that the kind worker holds the images."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from slinky_harness.build.images import Archives
from slinky_harness.k8s import realpods
from slinky_harness.k8s.nodeconfig import NODE_NAME

if TYPE_CHECKING:
    from pathlib import Path


def test_unset_or_node_is_the_real_node() -> None:
    for env in ({}, {realpods.TARGET_ENV: "node"}, {realpods.TARGET_ENV: " "}):
        assert realpods.target(env) == realpods.Target(kind=None)
        assert realpods.node_name(env) == NODE_NAME


def test_kind_target_puts_pods_on_the_clusters_first_worker() -> None:
    env = {realpods.TARGET_ENV: "kind:ci-42-pods"}
    assert realpods.target(env) == realpods.Target(kind="ci-42-pods")
    assert realpods.node_name(env) == "ci-42-pods-worker"


@pytest.mark.parametrize("value", ["kind", "kind:", "minikube", "kind-x"])
def test_a_misnamed_target_is_an_error_naming_the_variable(value: str) -> None:
    with pytest.raises(realpods.RealPodsError, match=r"SLINKY_REAL_PODS=.*'kind:<cluster name>'"):
        realpods.target({realpods.TARGET_ENV: value})


def test_missing_references_reads_ctr_listing() -> None:
    listing = "ghcr.io/slinkyproject/slurmd:26.05\nimport-2026-12-03@sha256:ab\n"
    assert realpods.missing_references(
        listing, ["ghcr.io/slinkyproject/slurmd:26.05", "docker.io/library/alpine:3.22"]
    ) == ["docker.io/library/alpine:3.22"]


def test_kind_import_images_names_what_is_missing_and_how_to_load_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an image absent from the worker's containerd, the error names it and the
    ``kind load image-archive`` command of its archive; with all present it passes."""
    archives = Archives(tmp_path / "slurm.tar", tmp_path / "slinky.tar")
    refs = archives.references
    listing = tmp_path / "listing"
    docker = tmp_path / "docker"
    docker.write_text(f'#!/bin/sh\necho "$*" > {tmp_path}/argv\ncat {listing}\n')
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    pods = realpods.KindPods("t1-pods", cluster=None)  # type: ignore[arg-type]

    listing.write_text("\n".join(refs) + "\n")
    pods.import_images(archives)
    assert (tmp_path / "argv").read_text().split() == [
        "exec", "t1-pods-worker", "ctr", "-n", "k8s.io", "images", "ls", "-q",
    ]  # fmt: skip

    absent = next(r for r, a in refs.items() if a == archives.slinky)
    listing.write_text("\n".join(r for r in refs if r != absent) + "\n")
    with pytest.raises(realpods.RealPodsError) as info:
        pods.import_images(archives)
    message = str(info.value)
    assert f"images not on t1-pods-worker: {absent};" in message
    assert message.endswith(f"kind load image-archive {archives.slinky} --name t1-pods")


def test_kind_import_labeler_names_the_docker_image_load_when_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The labeler image (docker-built by the kind run) must be on the worker under the chart's
    reference; absent, the error names ``kind load docker-image`` of that reference."""
    ref = "ghcr.io/acme/gpu-topology-labeler:0.4.0"
    listing = tmp_path / "listing"
    docker = tmp_path / "docker"
    docker.write_text(f"#!/bin/sh\ncat {listing}\n")
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    pods = realpods.KindPods("t1-pods", cluster=None)  # type: ignore[arg-type]
    listing.write_text(f"{ref}\n")
    pods.import_labeler(ref)
    listing.write_text("docker.io/library/alpine:3.22\n")
    with pytest.raises(realpods.RealPodsError) as info:
        pods.import_labeler(ref)
    assert str(info.value).endswith(f"kind load docker-image {ref} --name t1-pods")


def test_real_node_target_imports_both_archives_into_containerd(tmp_path: Path) -> None:
    """NodePods is a RealNode (what the cluster tier starts) whose import_images imports the
    Slurm archive, then the Slinky one, with ``ctr images import``."""
    node = realpods.NodePods.__new__(realpods.NodePods)
    calls: list[tuple[str, ...]] = []

    def ctr(*args: str, timeout: float = 0) -> str:
        calls.append(args)
        return ""

    node.ctr = ctr  # type: ignore[method-assign]
    node.import_images(Archives(tmp_path / "slurm.tar", tmp_path / "slinky.tar"))
    assert [c[:2] for c in calls] == [("images", "import")] * 2
    assert [c[-1] for c in calls] == [str(tmp_path / "slurm.tar"), str(tmp_path / "slinky.tar")]
    assert node.node_name == NODE_NAME
