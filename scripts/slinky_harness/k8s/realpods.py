"""Where the real-pod tests run their pods: the real node of :mod:`slinky_harness.k8s.realnode`
(the default, the cluster tier: :class:`NodePods`, a ``RealNode``) or a worker of a kind cluster
(``nox -s kind``, machines with Docker: :class:`KindPods`). Both give the tests the same three
things (:class:`RealPods`): the cluster to talk to, the name of the node every pod selects
(``kubernetes.io/hostname``) and a way to make the images of :mod:`slinky_harness.build.images`
present on it.

:data:`TARGET_ENV` chooses: unset (or ``node``) for the real node; ``kind:<cluster>`` for the kind
cluster of that name, reached through ``$KUBECONFIG``, whose first worker ``<cluster>-worker``
runs the pods. On kind the images are loaded before the tests start (``kind load image-archive``,
a step of the kind run's plan); :meth:`KindPods.import_images` checks that each reference is in the
node's containerd and names the command that loads the ones that are not.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from slinky_harness.build import labeler_image, toolchain
from slinky_harness.build.podman import Podman
from slinky_harness.core.errors import HarnessError
from slinky_harness.k8s.cluster import Cluster, Ports
from slinky_harness.k8s.nodeconfig import NODE_NAME
from slinky_harness.k8s.realnode import RealNode

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from slinky_harness.build.images import Archives

TARGET_ENV = "SLINKY_REAL_PODS"
"""``node`` (or unset): the real node; ``kind:<cluster>``: that kind cluster's first worker."""


class RealPodsError(HarnessError):
    """The target of the real-pod tests is misnamed or not ready; the message says how to fix it."""


class RealPods(Protocol):
    """What the real-pod tests need of the place their pods run."""

    @property
    def cluster(self) -> Cluster: ...

    @property
    def node_name(self) -> str: ...

    def import_images(self, archives: Archives) -> None: ...

    def import_labeler(self, reference: str) -> None: ...


@dataclass(frozen=True)
class Target:
    """The parsed :data:`TARGET_ENV`: ``kind`` is the kind cluster's name, ``None`` the real node."""

    kind: str | None = None

    @property
    def node_name(self) -> str:
        return NODE_NAME if self.kind is None else kind_worker(self.kind)


def kind_worker(cluster: str) -> str:
    """The first worker kind creates in ``cluster`` (kind names nodes ``<cluster>-worker``)."""
    return f"{cluster}-worker"


def target(env: Mapping[str, str] | None = None) -> Target:
    """Read :data:`TARGET_ENV` from ``env`` (this process's environment by default)."""
    value = (os.environ if env is None else env).get(TARGET_ENV, "").strip()
    if value in ("", "node"):
        return Target()
    name = value.removeprefix("kind:")
    if value.startswith("kind:") and name:
        return Target(kind=name)
    raise RealPodsError(
        f"{TARGET_ENV}={value!r}: expected 'node' (the real node) or 'kind:<cluster name>'"
    )


def node_name(env: Mapping[str, str] | None = None) -> str:
    """The node the real-pod tests put every pod on, for the target :data:`TARGET_ENV` names."""
    return target(env).node_name


NODE_TOOLS = ("ip", "nsenter", "sysctl", "mount")
"""Machine commands the real node runs (its network namespace, mounts and kernel settings)."""


def unavailable(
    env: Mapping[str, str] | None = None,
    *,
    platform: str | None = None,
    euid: int | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> str | None:
    """Why no real pods can run here (one line that says how to get them), or None when they
    can: a kind worker named by :data:`TARGET_ENV` (checked when attached), or the real node,
    which needs Linux, root and the commands of :data:`NODE_TOOLS`. Cheap: nothing is started
    and nothing is built; ``platform``, ``euid`` and ``which`` default to this machine's."""
    try:
        chosen = target(env)
    except RealPodsError as exc:
        return str(exc)
    if chosen.kind is not None:
        return None
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux"):
        return f"the real node runs on Linux only (this is {platform})"
    euid = os.geteuid() if euid is None else euid
    if euid != 0:
        return (
            "the real node needs root (a network namespace, containerd, cgroups): run as root, "
            f"or set {TARGET_ENV}=kind:<cluster> for a kind cluster's worker"
        )
    missing = [tool for tool in NODE_TOOLS if which(tool) is None]
    if missing:
        return f"the real node needs {', '.join(missing)} on PATH (iproute2, util-linux, procps)"
    return None


def cgroup_v2_only(mounts: str | None = None) -> bool:
    """Whether ``/sys/fs/cgroup`` is one pure cgroup v2 hierarchy (``mounts``: the text of
    /proc/self/mounts, read when None): what Slurm's default ``CgroupPlugin=cgroup/v2`` needs. A
    cgroup v1 or hybrid host (v1 controllers, v2 at ``/sys/fs/cgroup/unified``) is not."""
    if mounts is None:
        try:
            mounts = Path("/proc/self/mounts").read_text()
        except OSError:
            return False
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[1] == "/sys/fs/cgroup":
            return fields[2] == "cgroup2"
    return False


def missing_references(listing: str, references: Iterable[str]) -> list[str]:
    """``references`` absent from ``ctr images ls -q`` output (one image name a line)."""
    present = {line.strip() for line in listing.splitlines()}
    return sorted(ref for ref in references if ref not in present)


class NodePods(RealNode):
    """The real node as the place of the real-pod tests (``NodePods.start`` as ``RealNode.start``)."""

    @property
    def node_name(self) -> str:
        return NODE_NAME

    def import_images(self, archives: Archives) -> None:
        """Import both archives into the node's containerd (``ctr images import``)."""
        for archive in (archives.slurm, archives.slinky):
            self.import_image(archive)

    def import_labeler(self, reference: str) -> None:
        """Build the labeler image with podman (layer-cached) and import it as ``reference``."""
        built = labeler_image.build()
        self.import_from_podman(Podman.default(), built.ref, reference)


class KindPods:
    """A kind cluster's first worker as the place of the real-pod tests."""

    def __init__(self, name: str, cluster: Cluster) -> None:
        self.name = name
        self._cluster = cluster

    @property
    def cluster(self) -> Cluster:
        return self._cluster

    @property
    def node_name(self) -> str:
        return kind_worker(self.name)

    def _listing(self) -> str:
        """``ctr images ls -q`` on the worker: one image reference a line."""
        argv = ["docker", "exec", self.node_name, "ctr", "-n", "k8s.io", "images", "ls", "-q"]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RealPodsError(f"{' '.join(argv)}: {exc}") from exc
        if proc.returncode != 0:
            raise RealPodsError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")
        return proc.stdout

    def import_labeler(self, reference: str) -> None:
        """Check that the labeler image is in the worker's containerd under ``reference`` (the
        kind run builds it with docker and loads it); raise naming the command that loads it."""
        if missing_references(self._listing(), [reference]):
            raise RealPodsError(
                f"the labeler image {reference} is not on {self.node_name}; load it: "
                f"kind load docker-image {reference} --name {self.name}"
            )

    def import_images(self, archives: Archives) -> None:
        """Check that every image of ``archives`` is in the worker's containerd (the kind run
        loaded them); raise naming the missing ones and the command that loads them."""
        refs = archives.references
        missing = missing_references(self._listing(), refs)
        if missing:
            load = "; ".join(
                f"kind load image-archive {path} --name {self.name}"
                for path in sorted({refs[m] for m in missing})
            )
            raise RealPodsError(
                f"images not on {self.node_name}: {', '.join(missing)}; load them: {load}"
            )

    @classmethod
    @contextlib.contextmanager
    def attach(cls, name: str, workdir: Path) -> Iterator[KindPods]:
        """The running kind cluster ``name`` through ``$KUBECONFIG``; its worker must be Ready.
        The cluster is the kind run's to delete: leaving does nothing to it."""
        kubeconfig = os.environ.get("KUBECONFIG", "")
        if not kubeconfig or not Path(kubeconfig).is_file():
            raise RealPodsError(
                f"{TARGET_ENV}=kind:{name} needs KUBECONFIG naming the kind cluster's kubeconfig "
                f"(got {kubeconfig!r})"
            )
        bindir = toolchain.ensure("kubectl").parent
        cluster = Cluster(name, workdir, bindir, Ports(0, 0, 0, 0, 0, 0), None)
        cluster.kubeconfig = Path(kubeconfig)
        pods = cls(name, cluster)
        ready = cluster.kubectl(
            "get", "node", pods.node_name, "-o",
            'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
            check=False,
        )  # fmt: skip
        if ready.strip() != "True":
            raise RealPodsError(f"kind node {pods.node_name} is not Ready (or absent) in {name}")
        yield pods


@contextlib.contextmanager
def start(workdir: Path, fleet: Path | None, *, wait: float) -> Iterator[RealPods]:
    """The target :data:`TARGET_ENV` names: a real node started for the block (and stopped after
    it), or the kind cluster's worker. ``fleet``: the kwok nodes beside the real node (none:
    only the real node)."""
    chosen = target()
    if chosen.kind is None:
        with NodePods.start(workdir, fleet, wait=wait) as node:
            assert isinstance(node, NodePods)
            yield node
    else:
        with KindPods.attach(chosen.kind, workdir) as pods:
            yield pods
