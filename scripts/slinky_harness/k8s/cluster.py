"""A real Kubernetes control plane with fake nodes, for the cluster test tier.

``Cluster.start(workdir, fleet=...)`` runs them as local processes through
``kwokctl create cluster --runtime binary``: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and the kwok controller, which plays kubelet for fake nodes according to the
Stage rules in ``kwok_stages.yaml``. The binaries come from
:func:`slinky_harness.build.controlplane.ensure_binaries`. Nothing runs in a container and nothing is downloaded::

    with Cluster.start(tmp_path, fleet="tests/data/fleets/small-gpu.yaml") as cluster:
        cluster.kubectl("get", "nodes")

Usage::

    python -m slinky_harness.k8s.cluster --fleet F.yaml     # start a cluster until Ctrl-C
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.build.controlplane import K8S_VERSION, ControlPlaneError, ensure_binaries
from slinky_harness.core import ports, processes
from slinky_harness.core.errors import WaitTimeout
from slinky_harness.core.polling import wait_for
from slinky_harness.k8s.fleet import Fleet, load_fleet

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

STAGES_FILE = Path(__file__).with_name("kwok_stages.yaml")


# --- cluster -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ports:
    """Host ports of one cluster's components (all on this machine)."""

    kube_apiserver: int
    etcd: int
    etcd_peer: int
    kube_controller_manager: int
    kube_scheduler: int
    kwok_controller: int

    def items(self) -> list[tuple[str, int]]:
        return [(f.name, getattr(self, f.name)) for f in fields(self)]


port_in_use = ports.in_use


def choose_ports(kube_apiserver: int | None = None, **fixed: int) -> Ports:
    """Free ports for every component; refuse ports that are already in use.

    ``kube_apiserver`` and any other ``Ports`` field given by keyword are used as they are,
    after checking that nothing listens on them.
    """
    wanted = dict(fixed)
    if kube_apiserver is not None:
        wanted["kube_apiserver"] = kube_apiserver
    names = [f.name for f in fields(Ports)]
    unknown = set(wanted) - set(names)
    if unknown:
        raise ControlPlaneError(f"unknown ports {sorted(unknown)}; known: {names}")
    busy = [f"{name}={port}" for name, port in wanted.items() if port_in_use(port)]
    if busy:
        raise ControlPlaneError(
            f"refusing to start a cluster: port(s) already in use: {', '.join(busy)} "
            "(another cluster or program is listening there)"
        )
    missing = [name for name in names if name not in wanted]
    try:
        chosen = ports.allocate(len(missing), exclude=set(wanted.values()))
    except ports.PortError as err:
        raise ControlPlaneError(str(err)) from err
    for name, port in zip(missing, chosen, strict=True):
        wanted[name] = port
    return Ports(**wanted)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return f"(no {path.name})"
    return "\n".join(f"    {line}" for line in text[-lines:])


LEADER_ELECTING = ("kube-controller-manager", "kube-scheduler")


def _disabled(extra_args: Sequence[str]) -> set[str]:
    """The components that ``--disable=`` arguments among ``extra_args`` leave out."""
    return {
        name
        for arg in extra_args
        if arg.startswith("--disable=")
        for name in arg.removeprefix("--disable=").split(",")
    }


KWOK_NODE_SELECTOR = "kwok.x-k8s.io/node=fake"
"""The annotation of the nodes the kwok controller plays kubelet for (every fleet node carries it:
:meth:`slinky_harness.k8s.fleet.Fleet.nodes`); a real node (:mod:`slinky_harness.k8s.realnode`)
has none, so its own kubelet reports for it."""


def _node_args() -> list[str]:
    """``--extra-args`` that leave nodes without the kwok annotation to their own kubelet, and
    reach kubelets by their InternalIP (never by a hostname the machine's resolver would look up,
    which is what logs and exec on a real node would wait on)."""
    return [
        "--extra-args=kwok-controller=manage-all-nodes=false",
        f"--extra-args=kwok-controller=manage-nodes-with-annotation-selector={KWOK_NODE_SELECTOR}",
        "--extra-args=kube-apiserver=kubelet-preferred-address-types=InternalIP",
    ]


def _single_instance_args(extra_args: Sequence[str]) -> list[str]:
    """``--extra-args`` that turn leader election off in the one scheduler and controller-manager.

    kwokctl starts them with leader election on. There is only ever one of each here, and on a
    starved machine (several control planes on two cores) a renewal that misses its deadline
    makes the component exit with "leaderelection lost": nothing restarts it, and from then on no
    pod is scheduled. Disabled components get no flag.
    """
    disabled = _disabled(extra_args)
    return [
        f"--extra-args={name}=leader-elect=false"
        for name in LEADER_ELECTING
        if name not in disabled
    ]


def kwokctl_order(args: Sequence[str]) -> list[str]:
    """``args`` with each component's first ``--extra-args=<component>=...`` before any second one.

    kwokctl v0.8.0 files a component's later ``--extra-args`` under the position of its first one
    among all ``--extra-args`` (``mutationComponentPatches``), not under its position among the
    components: once a component has repeated, the next new component's repeat indexes past the
    end and kwokctl panics ("index out of range"). With every first occurrence ahead of every
    repeat, the two positions agree. Other arguments keep their place and order.
    """
    extra = [a for a in args if a.startswith("--extra-args=")]
    seen: set[str] = set()
    firsts: list[str] = []
    repeats: list[str] = []
    for arg in extra:
        component = arg.removeprefix("--extra-args=").split("=", 1)[0]
        (repeats if component in seen else firsts).append(arg)
        seen.add(component)
    ordered = iter(firsts + repeats)
    return [next(ordered) if a.startswith("--extra-args=") else a for a in args]


class Cluster:
    """A running kwok cluster; build one with ``Cluster.start``."""

    def __init__(
        self,
        name: str,
        workdir: Path,
        bindir: Path,
        ports: Ports,
        fleet: Fleet | None,
        *,
        netns: Path | None = None,
    ) -> None:
        self.name = name
        self.netns = netns
        """The network namespace (``/run/netns/NAME``) the cluster runs in, ``None``: this one's."""
        self.workdir = workdir
        self.bindir = bindir
        self.ports = ports
        self.fleet = fleet
        self.kubeconfig = workdir / "kubeconfig.yaml"
        """Kubeconfig of this cluster only (never ``~/.kube/config``)."""
        self.kwok_workdir = workdir / "kwok"
        self.start_seconds = 0.0
        """Wall time from ``kwokctl create cluster`` to every fleet node Ready."""
        self.timings: dict[str, float] = {}
        """Seconds spent in each start step."""

    @property
    def cluster_dir(self) -> Path:
        return self.kwok_workdir / "clusters" / self.name

    @property
    def logs_dir(self) -> Path:
        """Component logs: ``kube-apiserver.log``, ``etcd.log``, ``kwok-controller.log``, ..."""
        return self.cluster_dir / "logs"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports.kube_apiserver}"

    def env(self) -> dict[str, str]:
        """Environment for tools run against this cluster (kwokctl, kubectl, helm).

        Points ``KUBECONFIG`` at this cluster's file and ``KUBECACHEDIR`` (discovery cache of
        kubectl and helm) into the workdir, so nothing is written under ``~/.kube``.
        """
        env = dict(os.environ)
        env.update(
            KWOK_WORKDIR=str(self.kwok_workdir),
            KUBECONFIG=str(self.kubeconfig),
            KUBECACHEDIR=str(self.workdir / "kube-cache"),
            PATH=f"{self.bindir}{os.pathsep}{env.get('PATH', '')}",
        )
        return env

    # -- commands --

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the cluster's network namespace (as it is when it has none)."""
        if self.netns is None:
            return list(argv)
        return ["nsenter", f"--net={self.netns}", *argv]

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> str:
        """Run the pinned kubectl against this cluster and return its stdout."""
        cmd = self.wrap([str(self.bindir / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args])
        try:
            proc = subprocess.run(
                cmd,
                input=input,
                capture_output=True,
                text=True,
                env=self.env(),
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ControlPlaneError(f"kubectl {' '.join(args)}: no answer in {timeout}s") from None
        if check and proc.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout

    def kubectl_json(self, *args: str) -> Any:
        """``kubectl <args> -o json``, decoded."""
        return json.loads(self.kubectl(*args, "-o", "json"))

    def apply(self, manifests: Sequence[dict[str, Any]] | str | Path) -> None:
        """Create or update objects given as dicts, YAML text or a file."""
        if isinstance(manifests, Path):
            self.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(manifests))
            return
        text = manifests if isinstance(manifests, str) else yaml.safe_dump_all(manifests)
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=text)

    def apply_crds(self, crds: Sequence[dict[str, Any]]) -> None:
        """Create or update CustomResourceDefinitions and wait until each is Established."""
        if not crds:
            return
        self.apply(list(crds))
        names = [f"crd/{crd['metadata']['name']}" for crd in crds]
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for this cluster (one in this network namespace)."""
        if self.netns is not None:
            raise ControlPlaneError(
                f"the cluster runs in network namespace {self.netns}: use kubectl (wrap)"
            )
        from kubernetes import config  # noqa: PLC0415 - optional at import time

        return config.new_client_from_config(config_file=str(self.kubeconfig))  # type: ignore[no-untyped-call]

    # -- life cycle --

    @classmethod
    @contextlib.contextmanager
    def start(
        cls,
        workdir: Path | str,
        fleet: Fleet | Path | str | None = None,
        *,
        name: str = "slinky",
        kube_apiserver_port: int | None = None,
        ports: Ports | None = None,
        stages: Path | None = STAGES_FILE,
        timeout: float = 180.0,
        bindir: Path | None = None,
        extra_args: Sequence[str] = (),
        netns: Path | None = None,
    ) -> Iterator[Cluster]:
        """Start a cluster in ``workdir``, yield it, and tear it down on exit (errors included).

        ``fleet`` is a fleet file or ``Fleet`` whose nodes are created and awaited Ready.
        Ports are chosen free unless given; a port already in use is refused before anything
        starts. ``stages`` is the kwok Stage file applied before the nodes are created.
        ``extra_args`` go to ``kwokctl create cluster`` (``--extra-args=kube-apiserver=v=2``).
        ``netns``: run every component and every command in that network namespace.
        """
        workdir = Path(workdir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        if isinstance(fleet, (str, Path)):
            fleet = load_fleet(fleet)
        if ports is None:
            ports = choose_ports(kube_apiserver_port)
        else:
            choose_ports(**dict(ports.items()))
        cluster = cls(name, workdir, bindir or ensure_binaries(), ports, fleet, netns=netns)
        clusters = cluster.kwok_workdir / "clusters"
        existing = sorted(p.name for p in clusters.iterdir()) if clusters.is_dir() else []
        if existing:
            # One cluster per workdir: they would share kubeconfig.yaml and kwokctl.yaml.
            raise ControlPlaneError(
                f"{workdir} already holds cluster {existing[0]!r}; use another workdir or "
                f"delete it (KWOK_WORKDIR={cluster.kwok_workdir} kwokctl delete cluster "
                f"--name {existing[0]})"
            )
        # The reaper ends the cluster's daemons (not our children) if this process dies.
        with (
            processes.sigterm_as_interrupt(),
            processes.reaping([f"{cluster.cluster_dir}/"]) as reaper,
        ):
            try:
                cluster._up(stages, timeout, extra_args)
                reaper.watch(cluster._pids())
                yield cluster
            finally:
                cluster.stop()

    def _config(self) -> Path:
        options = {
            "runtime": "binary",
            "kubeVersion": K8S_VERSION,
            "etcdBinary": str(self.bindir / "etcd"),
            "kubeApiserverBinary": str(self.bindir / "kube-apiserver"),
            "kubeControllerManagerBinary": str(self.bindir / "kube-controller-manager"),
            "kubeSchedulerBinary": str(self.bindir / "kube-scheduler"),
            "kwokControllerBinary": str(self.bindir / "kwok"),
            "kubectlBinary": str(self.bindir / "kubectl"),
            "kubeApiserverPort": self.ports.kube_apiserver,
            "etcdPort": self.ports.etcd,
            "etcdPeerPort": self.ports.etcd_peer,
            "kubeControllerManagerPort": self.ports.kube_controller_manager,
            "kubeSchedulerPort": self.ports.kube_scheduler,
            "kwokControllerPort": self.ports.kwok_controller,
            "enableCRDs": ["Stage"],
        }
        config = {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokctlConfiguration",
            "options": options,
        }
        path = self.workdir / "kwokctl.yaml"
        path.write_text("# generated by slinky_harness.k8s.cluster\n" + yaml.safe_dump(config))
        return path

    def _kwokctl(self, *args: str, timeout: float, log: Path) -> int:
        """Run kwokctl with ``args``, its output appended to ``log``; return its exit status."""
        cmd = self.wrap([str(self.bindir / "kwokctl"), f"--name={self.name}", *args])
        with log.open("ab") as sink:
            sink.write(f"$ {' '.join(cmd)}\n".encode())
            sink.flush()
            try:
                return processes.run_to_end(cmd, log=sink, env=self.env(), timeout=timeout)
            except subprocess.TimeoutExpired:
                raise ControlPlaneError(
                    f"kwokctl {args[0]} {args[1] if len(args) > 1 else ''}: no end in {timeout}s"
                ) from None

    def _fail(self, message: str) -> ControlPlaneError:
        details = [message, f"  kwokctl log ({self.workdir / 'kwokctl.log'}):"]
        details.append(_tail(self.workdir / "kwokctl.log"))
        for component in ("kube-apiserver", "etcd", "kwok-controller"):
            details.append(f"  {component}.log:")
            details.append(_tail(self.logs_dir / f"{component}.log", 8))
        return ControlPlaneError("\n".join(details))

    def _wait(self, what: str, probe: Any, deadline: float, interval: float = 0.25) -> None:
        """:func:`wait_for` ``probe``, a ControlPlaneError meaning "not yet"; on time-out a
        ControlPlaneError with the components' logs."""
        last: list[ControlPlaneError] = []

        def attempt() -> bool:
            try:
                ok = bool(probe())
            except ControlPlaneError as exc:
                last[:] = [exc]
                return False
            last.clear()
            return ok

        try:
            wait_for(attempt, timeout=deadline - time.monotonic(), what=what, every=interval)
        except WaitTimeout:
            raise self._fail(
                f"timed out waiting for {what}" + (f": {last[0]}" if last else "")
            ) from None

    def _up(self, stages: Path | None, timeout: float, extra_args: Sequence[str]) -> None:
        begin = time.monotonic()
        deadline = begin + timeout
        config = self._config()
        status = self._kwokctl(
            f"--config={config}",
            "create",
            "cluster",
            f"--kubeconfig={self.kubeconfig}",
            f"--timeout={int(timeout)}s",
            *kwokctl_order([*_single_instance_args(extra_args), *_node_args(), *extra_args]),
            timeout=timeout,
            log=self.workdir / "kwokctl.log",
        )
        if status != 0:
            raise self._fail(f"kwokctl create cluster failed (exit {status})")
        self.timings["kwokctl_create"] = time.monotonic() - begin

        def readyz() -> bool:
            return self.kubectl("get", "--raw=/readyz", check=False, timeout=10).strip() == "ok"

        self._wait("kube-apiserver /readyz", readyz, deadline)

        def default_service_account() -> bool:
            out = self.kubectl("get", "serviceaccount", "default", "-n", "default", check=False)
            return "default" in out

        # kube-controller-manager creates it; a cluster without one (a bench of the API server
        # alone) has none to wait for.
        if "kube-controller-manager" not in _disabled(extra_args):
            self._wait("the default ServiceAccount", default_service_account, deadline)
        self.timings["api_ready"] = time.monotonic() - begin

        if stages is not None:
            self._wait(
                "the kwok Stage CRD",
                lambda: "stages" in self.kubectl("api-resources", "--api-group=kwok.x-k8s.io"),
                deadline,
            )
            self.apply(stages)
        if self.fleet is not None and self.fleet.node_names():
            self.create_nodes(self.fleet, deadline=deadline)
        self.timings["nodes_ready"] = time.monotonic() - begin
        self.start_seconds = time.monotonic() - begin

    def create_nodes(self, fleet: Fleet, *, deadline: float | None = None) -> None:
        """Create the fleet's nodes and wait until each is Ready."""
        nodes = fleet.nodes(kubelet_version=K8S_VERSION)
        self.kubectl(
            "create",
            "-f",
            "-",
            input=yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}),
        )
        wanted = {node["metadata"]["name"] for node in nodes}

        def all_ready() -> bool:
            listed = self.kubectl_json("get", "nodes")["items"]
            ready = {
                item["metadata"]["name"]
                for item in listed
                if any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in item.get("status", {}).get("conditions", [])
                )
            }
            return wanted <= ready

        self._wait(
            f"{len(wanted)} fleet nodes Ready", all_ready, deadline or time.monotonic() + 120, 0.5
        )

    def _pids(self) -> set[int]:
        pids: set[int] = set()
        for pidfile in (self.cluster_dir / "pids").glob("*.pid"):
            with contextlib.suppress(OSError, ValueError):
                pids.add(int(pidfile.read_text().strip()))
        # Processes started for this cluster carry its folder on their command line.
        pids |= processes.mentioning(f"{self.cluster_dir}/", include_zombies=True)
        pids.discard(os.getpid())
        return pids

    def leave_running(self) -> str:
        """From now on :meth:`stop` leaves the cluster running (``--keep``): leaving
        ``Cluster.start``'s block, or the end of this process, no longer stops it. Returns the
        shell command that stops it later."""
        self.stop = _left_running  # type: ignore[method-assign]
        return (
            f"KWOK_WORKDIR={shlex.quote(str(self.kwok_workdir))} "
            f"{shlex.quote(str(self.bindir / 'kwokctl'))} --name={self.name} delete cluster"
        )

    def stop(self) -> None:
        """Delete the cluster and end any process of it that is left.

        The component logs are copied to ``<workdir>/logs`` first.
        """
        pids = self._pids()
        if self.logs_dir.is_dir():
            # kwokctl deletes the cluster folder; keep the component logs for post-mortems.
            with contextlib.suppress(OSError):
                shutil.copytree(self.logs_dir, self.workdir / "logs", dirs_exist_ok=True)
        if self.cluster_dir.exists():
            with contextlib.suppress(ControlPlaneError):
                self._kwokctl(
                    "delete",
                    "cluster",
                    f"--kubeconfig={self.kubeconfig}",
                    timeout=60,
                    log=self.workdir / "kwokctl.log",
                )
        processes.end_pids(pids | self._pids())


def _left_running() -> None:
    """Stands in for :meth:`Cluster.stop` after :meth:`Cluster.leave_running`."""


# --- command line ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.k8s.cluster", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--fleet", type=Path, help="fleet file (tests/data/fleets/*.yaml)")
    parser.add_argument("--workdir", type=Path, help="cluster folder (default: a temporary one)")
    parser.add_argument("--port", type=int, help="kube-apiserver port (default: a free one)")
    args = parser.parse_args(argv)
    try:
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="slinky-cluster-"))
        with Cluster.start(workdir, args.fleet, kube_apiserver_port=args.port) as cluster:
            print(
                f"cluster up in {cluster.start_seconds:.1f}s; "
                f"export KUBECONFIG={cluster.kubeconfig}; Ctrl-C stops it",
                file=sys.stderr,
            )
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause()
    except ControlPlaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    from slinky_harness.core.processes import run_main

    raise SystemExit(run_main(main))
