"""The real Slinky slurm-operator v1.2.1 run as a local process beside the kwok control plane.

The cluster tier runs the operator's manager beside the kwok control plane (no kubelet runs
containers there), under the identity of the ServiceAccount that the ``slurm-operator`` chart
creates: a TokenRequest token for that account goes into a kubeconfig of its own
(:mod:`slinky_harness.k8s.accounts`), so every call the operator makes is checked by the chart's
RBAC, exactly as in a real cluster. The binaries come from :mod:`slinky_harness.build.slinky`.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import http.server
import json
import re
import subprocess
import threading
import time
import urllib.parse
from typing import TYPE_CHECKING, Any

from slinky_harness.build.slinky import OperatorUnavailable, operator_binary
from slinky_harness.build.slurm_chroot import MOUNT_POINT
from slinky_harness.core import ports, processes
from slinky_harness.core.errors import WaitTimeout
from slinky_harness.core.polling import wait_for
from slinky_harness.k8s.accounts import service_account_kubeconfig
from slinky_harness.slurm.conf import HARNESS_KEYS, FileSource

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path

    from slinky_harness.k8s.cluster import Cluster


EXPECTED_LOG_NOISE = (
    "Bad Gateway",
    "no such host",
    "connection refused",
    "context canceled",
    "provided port is already allocated",
)
"""Operator log lines that are no RBAC denial and no schema error where the operator runs here:
its Slurm calls fail until a slurmrestd is routed to it (and after it stops), and under load
kube-apiserver's NodePort allocator once refused a Service create (the operator's retry then
made it). :meth:`Manager.problems` of the conformance command and the cluster tier ignore them."""

# -- identity ---------------------------------------------------------------------------------


# -- Service names for a process outside the cluster -----------------------------------------


class ServiceProxy:
    """An HTTP forward proxy that stands in for cluster DNS and kube-proxy for one local process.

    The operator reaches slurmrestd at ``http://<restapi>-restapi.<namespace>:6820``; outside a
    pod that name resolves nowhere. Run the operator with ``HTTP_PROXY`` set to :attr:`url` (Go's
    HTTP client honours it for ``http://`` URLs and never proxies loopback, so the API server on
    127.0.0.1 is reached directly), then :meth:`route` each ``host:port`` to a local port.
    Unknown hosts get ``502``.
    """

    def __init__(self) -> None:
        self.routes: dict[str, int] = {}
        self.requests: list[tuple[str, str, int]] = []
        """(method, URL, status) of every request, for test assertions."""
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _forward(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                target = proxy.routes.get(f"{url.hostname}:{url.port or 80}")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if target is None:
                    self._reply(502, b"no route", {})
                    proxy.requests.append((self.command, self.path, 502))
                    return
                conn = http.client.HTTPConnection("127.0.0.1", target, timeout=60)
                try:
                    headers = {
                        k: v for k, v in self.headers.items() if k.lower() != "proxy-connection"
                    }
                    path = url.path + (f"?{url.query}" if url.query else "")
                    conn.request(self.command, path, body=body, headers=headers)
                    answer = conn.getresponse()
                    data = answer.read()
                    keep = {k: v for k, v in answer.getheaders()
                            if k.lower() not in ("transfer-encoding", "connection", "content-length")}  # fmt: skip
                    self._reply(answer.status, data, keep)
                    proxy.requests.append((self.command, self.path, answer.status))
                except OSError as exc:
                    self._reply(502, str(exc).encode(), {})
                    proxy.requests.append((self.command, self.path, 502))
                finally:
                    conn.close()

            def _reply(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def route(self, host_port: str, local_port: int) -> None:
        self.routes[host_port] = local_port

    def __enter__(self) -> ServiceProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


# -- running the manager ----------------------------------------------------------------------


def local_args(deployment: dict[str, Any], local: dict[str, str] | None = None) -> list[str]:
    """A Deployment's first container's arguments for a local process: every listen-address flag
    (``--health-addr``, ``--metrics-addr``, ``--health-probe-bind-address``,
    ``--metrics-bind-address``) moves to a free port on 127.0.0.1, and each flag in ``local``
    (a path inside the pod, say) gets the value given there. Every other argument is the chart's."""
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    listen = {
        "--health-addr",
        "--metrics-addr",
        "--health-probe-bind-address",
        "--metrics-bind-address",
    }
    args: list[str] = []
    for arg in container.get("args", []):
        flag = arg.split("=", 1)[0]
        if local and flag in local:
            args.append(f"{flag}={local[flag]}")
        elif flag in listen:
            args.append(f"{flag}=127.0.0.1:{ports.allocate_one()}")
        else:
            args.append(arg)
    return args


class Manager:
    """A running component process (operator manager, webhook, bridge component); its log lines
    (JSON for controller-runtime, klog text for the scheduler) are in ``log_path``."""

    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path, argv: list[str]) -> None:
        self.proc = proc
        self.log_path = log_path
        self.argv = argv

    def records(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                record = json.loads(line)
                if isinstance(record, dict):
                    out.append(record)
        return out

    def problems(self, ignore: Sequence[str] = ()) -> list[str]:
        """Log lines that say RBAC denial or schema/validation trouble, minus ``ignore`` hits."""
        words = (
            "forbidden",
            "is invalid",
            "unknown field",
            "strict decoding",
            "cannot list",
            "cannot watch",
            "cannot get",
            "cannot create",
            "cannot patch",
            "cannot update",
        )
        found = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            low = line.lower()
            if any(word in low for word in words) and not any(i in line for i in ignore):
                found.append(line[:600])
        return found

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, chars: int = 2000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


@contextlib.contextmanager
def run_process(
    argv: Sequence[str], log_path: Path, *, env: dict[str, str] | None = None, what: str = "process"
) -> Iterator[Manager]:
    """Run ``argv`` in its own session with its output in ``log_path``; stop it on exit.
    ``env`` is added to this process's environment. A process that exits within half a second
    raises :class:`OperatorUnavailable` with its log's tail."""
    proc = processes.start(argv, log=log_path, extra_env=env)
    running = Manager(proc, log_path, list(argv))
    try:
        time.sleep(0.5)
        if proc.poll() is not None:
            raise OperatorUnavailable(
                f"{what} exited at once ({proc.returncode}): {running.tail()}"
            )
        yield running
    finally:
        processes.stop(proc, grace=15)  # controller-runtime shuts down cleanly on SIGTERM


@contextlib.contextmanager
def run_manager(
    kubeconfig: Path, args: Sequence[str], log_path: Path, *, env: dict[str, str] | None = None
) -> Iterator[Manager]:
    """Run the operator's manager with ``args`` against ``kubeconfig``; stop it on exit."""
    argv = [
        str(operator_binary("manager")),
        f"--kubeconfig={kubeconfig}",
        "--zap-encoder=json",
        *args,
    ]
    with run_process(argv, log_path, env=env, what="operator manager") as running:
        yield running


def secret_value(cluster: Cluster, namespace: str, name: str, key: str) -> bytes:
    data = cluster.kubectl_json("get", "secret", name, "-n", namespace)["data"]
    return base64.b64decode(data[key])


def release_deployment(
    manifest: Sequence[dict[str, Any]], *, flag: str = "", name_suffix: str = "", what: str
) -> dict[str, Any]:
    """The one Deployment of a release whose first container takes ``flag`` (or whose name ends
    with ``name_suffix``)."""

    def matches(obj: dict[str, Any]) -> bool:
        if obj.get("kind") != "Deployment":
            return False
        if name_suffix:
            return str(obj["metadata"]["name"]).endswith(name_suffix)
        args = obj["spec"]["template"]["spec"]["containers"][0].get("args", [])
        return any(str(a).startswith(flag) for a in args)

    found = [d for d in manifest if matches(d)]
    if len(found) != 1:
        raise OperatorUnavailable(f"expected one {what} Deployment, found {len(found)}")
    return found[0]


def deployment_identity(cluster: Cluster, deployment: dict[str, Any], workdir: Path) -> Path:
    """A kubeconfig (0600) for the ServiceAccount the Deployment's pods run as."""
    namespace = deployment["metadata"]["namespace"]
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    return service_account_kubeconfig(cluster, namespace, account, workdir / "kubeconfig.yaml")


def with_mounts(argv: Sequence[str], mounts: dict[Path, Path]) -> list[str]:
    """``argv`` run in a private mount namespace of its own in which each host folder (key) is
    bind-mounted on a path (value), as a pod's volumes are; the host sees no mount. Each target
    must exist: it is created (empty) on the host when missing."""
    script = (
        'while [ "$1" != "--" ]; do mount --bind "$1" "$2" || exit 1; shift 2; done; '
        'shift; exec "$@"'
    )
    wrapped = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"]
    for source_dir, target in mounts.items():
        target.mkdir(parents=True, exist_ok=True)
        wrapped += [str(source_dir), str(target)]
    return [*wrapped, "--", *argv]


def proxy_env(proxy: ServiceProxy | None) -> dict[str, str]:
    """Environment that sends a Go program's ``http://`` calls (slurmrestd under its Service name)
    through ``proxy``; Go never proxies loopback, so the API server on 127.0.0.1 is reached directly."""
    return {"HTTP_PROXY": proxy.url, "NO_PROXY": "127.0.0.1,localhost"} if proxy else {}


@contextlib.contextmanager
def run_for_release(
    cluster: Cluster,
    manifest: Sequence[dict[str, Any]],
    workdir: Path,
    *,
    deployment: str = "",
    proxy: ServiceProxy | None = None,
) -> Iterator[Manager]:
    """Run the manager as a slurm-operator release would: ``manifest`` is the release's objects
    (``helm get manifest``); its operator Deployment gives the arguments and ServiceAccount."""
    if deployment:
        manager_deployment = release_deployment(
            [d for d in manifest if d.get("metadata", {}).get("name") == deployment],
            name_suffix=deployment,
            what="operator manager",
        )
    else:  # --controller-workers is the manager's own flag
        manager_deployment = release_deployment(
            manifest, flag="--controller-workers", what="operator manager"
        )
    kubeconfig = deployment_identity(cluster, manager_deployment, workdir)
    args = local_args(manager_deployment)
    with run_manager(
        kubeconfig, args, workdir / "manager.log", env=proxy_env(proxy) or None
    ) as running:
        yield running


# -- admission webhooks -------------------------------------------------------------------------


def serving_certificate(folder: Path) -> bytes:
    """A throw-away CA and a serving certificate for 127.0.0.1 (``tls.crt``, ``tls.key`` in
    ``folder``, where controller-runtime looks); returns the CA certificate (PEM) for caBundle."""
    folder.mkdir(parents=True, exist_ok=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
            "/CN=slinky-test-ca", "-keyout", "ca.key", "-out", "ca.crt")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "tls.key", "-out", "tls.csr")  # fmt: skip
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "tls.crt")  # fmt: skip
    return (folder / "ca.crt").read_bytes()


def wait_port(port: int, running: Manager, timeout: float = 30) -> None:
    """Wait until something listens on 127.0.0.1:``port``; fail when ``running`` exits first."""

    def failed() -> OperatorUnavailable:
        return OperatorUnavailable(f"{running.argv[0]} did not listen on {port}: {running.tail()}")

    def listening() -> bool:
        if not running.alive():
            raise failed()
        return ports.accepts(port)

    try:
        wait_for(listening, timeout=timeout, what=f"{running.argv[0]} on {port}", every=0.2)
    except WaitTimeout:
        raise failed() from None


SERVED_TIMEOUT = 10
"""``timeoutSeconds`` of a webhook that a real server answers (slurm-operator's default)."""


def point_webhooks_at(
    cluster: Cluster, manifest: Sequence[dict[str, Any]], port: int, ca: bytes
) -> None:
    """Point every webhook configuration of ``manifest`` at ``https://127.0.0.1:<port><path>``
    with ``ca`` as its caBundle. Validating webhooks get ``failurePolicy: Fail`` (the charts'
    default), so a denial is a denial, and every webhook the chart's default timeout
    (:data:`SERVED_TIMEOUT`): a release made for kwok's unreachable pods has 1 s, which a busy
    machine's webhook server overran."""
    bundle = base64.b64encode(ca).decode()
    for obj in manifest:
        if obj.get("kind") not in (
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
        ):
            continue
        patch: list[dict[str, Any]] = []
        for index, hook in enumerate(obj["webhooks"]):
            path = hook["clientConfig"]["service"].get("path", "/")
            patch.append({"op": "replace", "path": f"/webhooks/{index}/clientConfig",
                          "value": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}})  # fmt: skip
            if obj["kind"] == "ValidatingWebhookConfiguration":
                patch.append({"op": "replace", "path": f"/webhooks/{index}/failurePolicy",
                              "value": "Fail"})  # fmt: skip
            patch.append({"op": "add", "path": f"/webhooks/{index}/timeoutSeconds",
                          "value": SERVED_TIMEOUT})  # fmt: skip
        cluster.kubectl("patch", obj["kind"].lower(), obj["metadata"]["name"],
                        "--type=json", "-p", json.dumps(patch))  # fmt: skip


def restore_webhooks(cluster: Cluster, manifest: Sequence[dict[str, Any]]) -> None:
    """Undo :func:`point_webhooks_at`: every webhook configuration of ``manifest`` that still
    exists gets the release's own ``clientConfig``, ``failurePolicy`` and ``timeoutSeconds`` back, so that a later
    ``helm upgrade`` (server-side apply, which leaves the ``url`` another manager set) finds them
    as the release made them."""
    for obj in manifest:
        if obj.get("kind") not in (
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
        ):
            continue
        kind, name = obj["kind"].lower(), obj["metadata"]["name"]
        if not cluster.kubectl("get", kind, name, "--ignore-not-found", "-o", "name").strip():
            continue
        live = cluster.kubectl_json("get", kind, name)
        patch = []
        for index, hook in enumerate(obj["webhooks"]):
            own = {**hook["clientConfig"]}
            bundle = live["webhooks"][index]["clientConfig"].get("caBundle")
            if bundle and "caBundle" not in own:  # injected by cert-manager or the chart's hook
                own["caBundle"] = bundle
            patch.append({"op": "replace", "path": f"/webhooks/{index}/clientConfig",
                          "value": own})  # fmt: skip
            if "failurePolicy" in hook:
                patch.append({"op": "replace", "path": f"/webhooks/{index}/failurePolicy",
                              "value": hook["failurePolicy"]})  # fmt: skip
            if "timeoutSeconds" in hook:
                patch.append({"op": "add", "path": f"/webhooks/{index}/timeoutSeconds",
                              "value": hook["timeoutSeconds"]})  # fmt: skip
        cluster.kubectl("patch", kind, name, "--type=json", "-p", json.dumps(patch))


@contextlib.contextmanager
def run_webhook_for_release(
    cluster: Cluster, manifest: Sequence[dict[str, Any]], workdir: Path
) -> Iterator[Manager]:
    """Run the operator's webhook server as the release's webhook Deployment would, and point the
    release's webhook configurations at it (:func:`point_webhooks_at`) until the server stops
    (:func:`restore_webhooks`)."""
    deployment = release_deployment(manifest, flag="--server-addr", what="webhook")
    kubeconfig = deployment_identity(cluster, deployment, workdir)
    port = ports.allocate_one()
    ca = serving_certificate(workdir / "k8s-webhook-server" / "serving-certs")
    args = local_args(deployment, {"--server-addr": f"127.0.0.1:{port}"})
    argv = [
        str(operator_binary("webhook")),
        f"--kubeconfig={kubeconfig}",
        "--zap-encoder=json",
        *args,
    ]
    # controller-runtime reads its serving certificate from $TMPDIR/k8s-webhook-server/...
    with run_process(
        argv, workdir / "webhook.log", env={"TMPDIR": str(workdir)}, what="operator webhook"
    ) as server:
        wait_port(port, server)
        point_webhooks_at(cluster, manifest, port, ca)
        try:
            yield server
        finally:
            restore_webhooks(cluster, manifest)


# -- the operator's slurm.conf in the harness's slurmctld ----------------------------------------


def localize(slurm_conf: str) -> str:
    """The operator's slurm.conf for the chroot: the harness owns hosts, ports, auth, state paths
    and the ``AccountingStorage{Type,Host,Port}`` keys (dropped here: ``slurmctld(...,
    accounting=dbd)`` points them at the slurmdbd it runs), and the container paths move under the
    harness's mount."""
    keep = []
    for raw in slurm_conf.splitlines():
        key = raw.split("=", 1)[0].strip().lower()
        if key in HARNESS_KEYS:
            continue
        line = raw.replace("/etc/slurm/", f"{MOUNT_POINT}/etc/")
        line = re.sub(r"/var/(log|spool)/slurm\w*", f"{MOUNT_POINT}/run", line)
        keep.append(line)
    lowered = slurm_conf.lower()
    if "auth/jwt" in lowered and "jwt_key=" not in lowered:
        # Without jwt_key Slurm reads <StateSaveLocation>/jwt_hs256.key; the harness owns that path.
        keep.append(f"AuthAltParameters=jwt_key={MOUNT_POINT}/etc/jwt.key")
    return "\n".join(keep) + "\n"


def without_autodetect(gres_conf: str) -> str:
    """gres.conf for emulated registrations: GPU autodetection (NVML, RSMI) runs in slurmd on a GPU
    node; slurmctld refuses dynamic nodes made by ``scontrol create`` while it is set."""
    return "".join(
        line for line in gres_conf.splitlines(keepends=True)
        if not line.strip().lower().startswith("autodetect=")
    )  # fmt: skip


def slurmctld_files(
    cluster: Cluster, namespace: str, controller_spec: dict[str, Any], slurm_conf: str
) -> dict[str, FileSource]:
    """What the slurmctld pod would see in /etc/slurm: the operator's slurm.conf (localised),
    the Controller's config files and slurmctld prolog/epilog scripts, and its key Secrets."""

    def configmap(name: str) -> dict[str, str]:
        data: dict[str, str] = cluster.kubectl_json("get", "configmap", name, "-n", namespace)[
            "data"
        ]
        return data

    def secret(name: str, key: str) -> bytes:
        return secret_value(cluster, namespace, name, key)

    return controller_files(controller_spec, slurm_conf, configmap, secret)


def controller_files(
    controller_spec: dict[str, Any],
    slurm_conf: str,
    configmap: Callable[[str], dict[str, str]],
    secret: Callable[[str, str], bytes | None],
) -> dict[str, FileSource]:
    """:func:`slurmctld_files` with the ConfigMaps' data (by name) and the Secrets' values (by
    name and key) read by ``configmap`` and ``secret``: from a cluster, or from a render."""
    files: dict[str, FileSource] = {}
    refs = [  # upstream's chart writes null for a list it leaves empty
        *(controller_spec.get("configFileRefs") or []),
        *(controller_spec.get("prologSlurmctldScriptRefs") or []),
        *(controller_spec.get("epilogSlurmctldScriptRefs") or []),
    ]
    for ref in refs:
        files.update(configmap(ref["name"]))
    keys = {
        "slurm.key": controller_spec.get("slurmKeyRef"),
        "jwt.key": controller_spec.get("jwtKeyRef") or controller_spec.get("jwtHs256KeyRef"),
    }
    for file_name, ref in keys.items():
        value = secret(ref["name"], ref["key"]) if ref else None
        if value is not None:
            files[file_name] = value
    files["slurm.conf"] = localize(slurm_conf)
    gres = files.get("gres.conf")
    if isinstance(gres, str):
        files["gres.conf"] = without_autodetect(gres)
    return files


def slurm_nodeset_name(nodeset: dict[str, Any]) -> str:
    """The Slurm NodeSet (and Feature) name of a NodeSet: its pods' hostname prefix without the
    trailing dash, else the object's name (the operator's rule, v1.2.1)."""
    template = nodeset["spec"].get("template") or {}
    hostname = str((template.get("spec") or {}).get("hostname") or template.get("hostname") or "")
    if hostname.strip():
        return hostname.split(maxsplit=1)[0].strip("-")
    return str(nodeset["metadata"]["name"])
