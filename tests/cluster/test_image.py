"""The labeler image, built from the repository ``Dockerfile`` and run without Docker.

Rootful podman from Debian's packages builds the real ``Dockerfile`` on a Python base made from
Debian packages (no image registry is reachable; :mod:`slinky_harness.build.labeler_image`), then runs it the
way the chart runs its pod: the image's own non-root user, a read-only root filesystem with a
tmpfs on ``/tmp`` only, no capabilities, host network. A ``--once`` pass of the controller inside
the container labels the 1,010-node kwok fleet of the labeler tests (its own control plane, the
chart's rendered RBAC applied as it is) with a ServiceAccount token mounted read-only; the API
server's audit log says every write came from that token.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from tests.cluster import labeler_cluster_support as support
from tests.cluster.labeler_cluster_support import (
    CATCH_ALL_SPEC,
    CONFIGMAP,
    NAMESPACE,
    SPEC,
    LabelerLab,
)

from slinky_harness.build import labeler_image as image
from slinky_harness.build.podman import Podman
from slinky_harness.k8s import accounts, labeler

if TYPE_CHECKING:
    from collections.abc import Iterator

    from packaging.markers import Marker

PRODUCT = "slinky-suite"
"""The distribution that carries ``slinky_topology`` (pyproject's project name)."""
EXTRAS = frozenset({"labeler", "nvml"})
"""The extras the Dockerfile installs."""
KUBECONFIG = "/etc/slinky/kubeconfig"
"""Where the container finds its ServiceAccount kubeconfig (mounted read-only)."""

INVENTORY = r"""
import importlib.metadata as md, json, os, platform, sys, sysconfig
site = sysconfig.get_paths()["purelib"]
probes = {}
for folder in ("/", "/opt/labeler", "/etc", "/var", "/tmp"):
    try:
        with open(os.path.join(folder, ".probe"), "w") as f:
            f.write("x")
        probes[folder] = "writable"
    except OSError as exc:
        probes[folder] = exc.strerror
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "prefix": sys.prefix, "site": site, "top_level": sorted(os.listdir(site)),
    "bin": sorted(os.listdir(os.path.join(sys.prefix, "bin"))),
    "src": os.path.exists("/src"),
    "console_scripts": sorted(
        e.name for d in md.distributions() for e in d.entry_points if e.group == "console_scripts"
    ),
    "probes": probes,
    "dists": [
        {"name": d.metadata["Name"], "version": d.version, "requires": d.requires or [],
         "licenses": [str(f) for f in (d.files or []) if "/licenses/" in str(f)]}
        for d in md.distributions()
    ],
    "env": {
        "implementation_name": sys.implementation.name,
        "implementation_version": platform.python_version(),
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    },
}))
"""
"""Run by the image's own interpreter: who it runs as, what it can write, what is installed."""


@pytest.fixture(scope="module")
def podman() -> Podman:
    return Podman.default()


@pytest.fixture(scope="module")
def built(podman: Podman, pytestconfig: pytest.Config) -> image.Build:
    """The image, built from the Dockerfile (its layers cached after the first build)."""
    result = image.build(podman)
    _report(pytestconfig, f"labeler image: {result.describe()}; storage {podman.driver}")
    return result


@pytest.fixture(scope="module")
def inventory(podman: Podman, built: image.Build) -> dict[str, Any]:
    proc = image.run(podman, built.ref, ["-c", INVENTORY], entrypoint="/opt/labeler/bin/python")
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def _report(config: pytest.Config, line: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\n{line}")


def runtime_closure(
    dists: list[dict[str, Any]], env: dict[str, str], root: str, extras: frozenset[str]
) -> set[str]:
    """Canonical names of ``root`` (with ``extras``) and everything it needs at run time, by the
    installed distributions' own ``Requires-Dist`` and the image's marker environment."""
    by_name = {canonicalize_name(d["name"]): d for d in dists}
    done: set[tuple[str, frozenset[str]]] = set()
    todo = [(canonicalize_name(root), extras)]
    while todo:
        name, wanted = todo.pop()
        if (name, wanted) in done:
            continue
        done.add((name, wanted))
        assert name in by_name, f"{name} is required but not installed in the image"
        for line in by_name[name]["requires"]:
            req = Requirement(line)
            marker: Marker | None = req.marker
            if marker is not None and not any(
                marker.evaluate({**env, "extra": extra}) for extra in (wanted or {""})
            ):
                continue
            todo.append((canonicalize_name(req.name), frozenset(req.extras)))
    return {name for name, _ in done}


# --- the image on its own -------------------------------------------------------------------------


def test_the_image_runs_as_its_non_root_user(
    podman: Podman, built: image.Build, inventory: dict[str, Any]
) -> None:
    config = podman.inspect(built.ref)["Config"]
    assert config["User"] == image.IMAGE_USER
    assert (inventory["uid"], inventory["gid"]) == (65532, 65532)
    assert inventory["groups"] in ([], [65532])


def test_the_root_filesystem_is_read_only_and_only_tmp_is_writable(
    inventory: dict[str, Any],
) -> None:
    """The run mirrors the chart: read-only root filesystem, an emptyDir (here a tmpfs) on /tmp."""
    assert inventory["probes"] == {
        "/": "Read-only file system",
        "/opt/labeler": "Read-only file system",
        "/etc": "Read-only file system",
        "/var": "Read-only file system",
        "/tmp": "writable",
    }


def test_help_works_as_the_entry_point(
    podman: Podman, built: image.Build, inventory: dict[str, Any]
) -> None:
    proc = image.run(podman, built.ref, ["--help"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m slinky_topology.labeler")
    assert "--once" in proc.stdout
    assert proc.stderr == ""
    version = image.run(podman, built.ref, ["--version"])
    (product,) = [d for d in inventory["dists"] if canonicalize_name(d["name"]) == PRODUCT]
    assert version.stdout.split() == ["python", "-m", "slinky_topology.labeler", product["version"]]
    labels = podman.inspect(built.ref)["Config"]["Labels"]
    assert labels["org.opencontainers.image.version"] == image.labeler_version()


def test_the_image_holds_only_the_product_package_and_its_runtime_dependencies(
    inventory: dict[str, Any],
) -> None:
    installed = {canonicalize_name(d["name"]) for d in inventory["dists"]}
    needed = runtime_closure(inventory["dists"], inventory["env"], PRODUCT, EXTRAS)
    assert installed - needed == set(), "installed but not needed at run time"
    assert {"pip", "setuptools", "wheel"} & installed == set()
    top = set(inventory["top_level"])
    assert "slinky_topology" in top
    assert {"slinky_harness", "slinky_crdgen", "tests", "charts"} & top == set()
    assert inventory["src"] is False, "the build stage's sources are not in the image"
    assert inventory["prefix"] == "/opt/labeler"
    scripts = {n for n in inventory["bin"] if not re.fullmatch(r"python3?(\.\d+)?", n)}
    assert scripts == set(inventory["console_scripts"]), (
        "console scripts of installed packages only"
    )
    assert "slinky-topology" in scripts
    (product,) = [d for d in inventory["dists"] if canonicalize_name(d["name"]) == PRODUCT]
    assert any(path.endswith("LICENSE") for path in product["licenses"])


# --- the controller in the container against the kwok fleet ---------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, built: image.Build) -> Iterator[LabelerLab]:
    with support.labeler_lab(tmp_path_factory.mktemp("image-lab")) as running:
        yield running


def test_a_once_pass_in_the_container_labels_the_fleet_under_the_charts_service_account(
    lab: LabelerLab, podman: Podman, built: image.Build, pytestconfig: pytest.Config
) -> None:
    assert lab.writes() == []
    token = accounts.mint_token(lab.cluster, NAMESPACE, lab.account)
    host_config = accounts.token_kubeconfig(
        lab.cluster, token, lab.workdir / "container.kubeconfig", user="labeler"
    )
    mounted = image.self_contained_kubeconfig(host_config, lab.workdir / "mounted.kubeconfig")
    assert "certificate-authority-data" in mounted.read_text()
    args = [*lab.args, f"--kubeconfig={KUBECONFIG}", *support.FAST, "--once", "--metrics-port=0"]
    proc = image.run(
        podman,
        built.ref,
        args,
        mounts={mounted: KUBECONFIG},
        env={"POD_NAME": "gtl-image-test", "POD_NAMESPACE": NAMESPACE},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    done = [line for line in labeler.parse_logs(proc.stderr) if line.get("msg") == "pass done"]
    assert done, proc.stderr[-3000:]

    writes = lab.settled_writes()
    gpu = {str(n["metadata"]["name"]) for n in support.gpu_nodes(lab.fleet)}
    assert [w for w in writes if not w.ok] == []
    assert {w.credential for w in lab.all_writes()} == {accounts.token_credential(token)}
    leafless = set(lab.nodes()) - gpu  # CPU service nodes: under the catch-all switch
    assert sorted(w.name for w in writes if w.resource == "nodes") == sorted(gpu | leafless)
    assert [(w.resource, w.verb, w.name) for w in writes if w.resource != "nodes"] == [
        ("configmaps", "create", CONFIGMAP)
    ]
    assert done[-1]["writes"] == len(writes)
    nodes = lab.nodes()
    assert all((nodes[n]["metadata"].get("annotations") or {}).get(SPEC) for n in gpu)
    assert {(nodes[n]["metadata"].get("annotations") or {}).get(SPEC) for n in leafless} == {
        CATCH_ALL_SPEC
    }
    topologies = yaml.safe_load(lab.configmap()["data"]["topology.yaml"])
    assert [t["topology"] for t in topologies] == ["fabric", "nvlink"]
    _report(
        pytestconfig,
        f"labeler image --once in the container: {len(gpu)} nodes labelled, "
        f"{len(writes)} writes as {lab.user}",
    )
