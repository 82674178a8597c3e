"""The real Slinky slurm-operator v1.2.1, built from its Go module and run as a local process.

The cluster tier runs the operator's manager beside the kwok control plane (no kubelet runs
containers there), under the identity of the ServiceAccount that the ``slurm-operator`` chart
creates: a TokenRequest token for that account goes into a kubeconfig of its own, so every call
the operator makes is checked by the chart's RBAC, exactly as in a real cluster.

Where the binaries come from, first match wins:

1. the cache ``<cache>/operator/v1.2.1/bin/{manager,webhook}`` (``cache_root()``), reused;
2. the Go module proxy: ``github.com/SlinkyProject/slurm-operator@v1.2.1`` (the intended path;
   the proxy this project's machines use answers 403 for it at the time of writing);
3. a source checkout of that tag named by ``SLINKY_OPERATOR_SRC`` (and, where the proxy does not
   serve ``github.com/SlinkyProject/slurm-client`` either, a checkout of its v1.2.1 tag named by
   ``SLINKY_SLURM_CLIENT_SRC``). The checkout is only read: ``go build -modfile`` works on a copy
   of its ``go.mod``, and nothing is copied into this repository.

Otherwise :func:`ensure_operator` raises :class:`OperatorUnavailable`, whose message says all of
the above. ``python -m slinky_harness.operator build`` builds (or reports why it cannot).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.slurm import HARNESS_KEYS, FileSource
from slinky_harness.slurm_chroot import MOUNT_POINT
from slinky_harness.toolchain import (
    ToolError,
    cache_root,
    go_build,
    go_env,
    module_dir,
    staged_folder,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from slinky_harness.controlplane import Cluster

MODULE = "github.com/SlinkyProject/slurm-operator"
CLIENT_MODULE = "github.com/SlinkyProject/slurm-client"
VERSION = "v1.2.1"
SOURCE_ENV = "SLINKY_OPERATOR_SRC"
CLIENT_SOURCE_ENV = "SLINKY_SLURM_CLIENT_SRC"
BINARIES = ("manager", "webhook")


class OperatorUnavailable(RuntimeError):
    """The operator cannot be built here; the message says what was tried and how to unblock."""


class OperatorNotObtainable(OperatorUnavailable):
    """No source for the operator at all: the proxy refuses the module and no checkout is named."""


def binaries_dir() -> Path:
    return cache_root() / "operator" / VERSION / "bin"


def _complete(bindir: Path) -> bool:
    return all((bindir / name).is_file() for name in BINARIES) and (bindir / "SOURCE").is_file()


def _checkout(env: str, module: str) -> Path | None:
    """The source checkout named by ``env``, checked to be ``module`` at ``VERSION``."""
    value = os.environ.get(env)
    if not value:
        return None
    src = Path(value).expanduser().resolve()
    gomod = src / "go.mod"
    if not gomod.is_file():
        raise OperatorUnavailable(
            f"{env}={value}: no go.mod there; point it at a checkout of {module}"
        )
    first = gomod.read_text().splitlines()[0].split()
    if first[-1:] != [module]:
        raise OperatorUnavailable(f"{env}={value}: go.mod declares {first[-1:]}, not {module}")
    version_file = src / "VERSION"
    if version_file.is_file() and f"v{version_file.read_text().strip()}" != VERSION:
        raise OperatorUnavailable(
            f"{env}={value}: VERSION says {version_file.read_text().strip()}, need {VERSION}; "
            f"check out the {VERSION} tag"
        )
    return src


def _from_proxy() -> tuple[Path | None, str]:
    try:
        return module_dir(MODULE, VERSION), ""
    except ToolError as exc:
        return None, str(exc)


def _build_from(src: Path, client: Path | None, bindir: Path, log: Path, origin: str) -> None:
    with tempfile.TemporaryDirectory(prefix="slinky-operator-mod-") as tmp:
        modfile = Path(tmp) / "go.mod"
        shutil.copyfile(src / "go.mod", modfile)
        if (src / "go.sum").is_file():
            shutil.copyfile(src / "go.sum", Path(tmp) / "go.sum")
        if client is not None:
            subprocess.run(
                ["go", "mod", "edit", f"-modfile={modfile}", f"-replace={CLIENT_MODULE}={client}"],
                cwd=src,
                env=go_env(),
                check=True,
            )
        with staged_folder(bindir, VERSION) as staging:
            go_build(
                [
                    f"-modfile={modfile}",
                    "-trimpath",
                    "-o",
                    f"{staging}/",
                    "./cmd/manager",
                    "./cmd/webhook",
                ],
                cwd=src,
                log=log,
                what=f"slurm-operator {VERSION}",
            )
            (staging / "SOURCE").write_text(origin + "\n")


def ensure_operator() -> Path:
    """The folder holding the operator's ``manager`` and ``webhook``, built once and cached."""
    bindir = binaries_dir()
    if _complete(bindir):
        return bindir
    log = bindir.parent / "build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    src, proxy_error = _from_proxy()
    client: Path | None = None
    origin = f"{MODULE}@{VERSION} from the Go module proxy"
    if src is None:
        src = _checkout(SOURCE_ENV, MODULE)
        client = _checkout(CLIENT_SOURCE_ENV, CLIENT_MODULE)
        origin = f"source checkout {src} (slurm-client: {client or 'Go module proxy'})"
    if src is None:
        raise OperatorNotObtainable(
            f"the Slinky slurm-operator {VERSION} cannot be built here: the Go module proxy "
            f"refuses {MODULE}@{VERSION} ({proxy_error.strip().splitlines()[-1] if proxy_error else 'no answer'}), "
            f"and {SOURCE_ENV} names no source checkout. Unblock with a proxy that serves the module, "
            f"or set {SOURCE_ENV} (and {CLIENT_SOURCE_ENV} if {CLIENT_MODULE} is not served either) "
            f"to checkouts of their {VERSION} tags"
        )
    started = time.monotonic()
    print(f"operator: building manager and webhook {VERSION} ({origin})", file=sys.stderr)
    try:
        _build_from(src, client, bindir, log, origin)
    except (ToolError, subprocess.CalledProcessError) as exc:
        raise OperatorUnavailable(f"building slurm-operator {VERSION} failed: {exc}") from exc
    print(f"operator: built in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return bindir


# -- identity ---------------------------------------------------------------------------------


def service_account_kubeconfig(
    cluster: Cluster, namespace: str, name: str, dest: Path, *, hours: int = 2
) -> Path:
    """A kubeconfig for ServiceAccount ``namespace/name`` of ``cluster`` (TokenRequest token)."""
    token = cluster.kubectl(
        "create", "token", name, "-n", namespace, f"--duration={hours}h"
    ).strip()
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    server = admin["clusters"][0]["cluster"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kwok", "cluster": server}],
        "users": [{"name": f"system:serviceaccount:{namespace}:{name}", "user": {"token": token}}],
        "contexts": [
            {
                "name": "sa",
                "context": {
                    "cluster": "kwok",
                    "user": f"system:serviceaccount:{namespace}:{name}",
                    "namespace": namespace,
                },
            }
        ],
        "current-context": "sa",
    }
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        yaml.safe_dump(config, out)
    return dest


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chart_args(deployment: dict[str, Any]) -> list[str]:
    """The manager's arguments from the chart's Deployment, with listen addresses made local."""
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args: list[str] = []
    for arg in container.get("args", []):
        flag = arg.split("=", 1)[0]
        if flag in ("--health-addr", "--metrics-addr"):
            args.append(f"{flag}=127.0.0.1:{free_port()}")
        else:
            args.append(arg)
    return args


class Manager:
    """A running operator manager process; its JSON log lines are in ``log_path``."""

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


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (controller-runtime shuts down cleanly), SIGKILL after 15 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def run_manager(
    kubeconfig: Path, args: Sequence[str], log_path: Path, *, env: dict[str, str] | None = None
) -> Iterator[Manager]:
    """Run the operator's manager with ``args`` against ``kubeconfig``; stop it on exit."""
    binary = ensure_operator() / "manager"
    argv = [str(binary), f"--kubeconfig={kubeconfig}", "--zap-encoder=json", *args]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
    manager = Manager(proc, log_path, argv)
    try:
        time.sleep(0.5)
        if proc.poll() is not None:
            raise OperatorUnavailable(
                f"operator manager exited at once ({proc.returncode}): "
                f"{log_path.read_text(errors='replace')[-2000:]}"
            )
        yield manager
    finally:
        _stop(proc)


def secret_value(cluster: Cluster, namespace: str, name: str, key: str) -> bytes:
    data = cluster.kubectl_json("get", "secret", name, "-n", namespace)["data"]
    return base64.b64decode(data[key])


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

    def is_manager(obj: dict[str, Any]) -> bool:
        if obj.get("kind") != "Deployment":
            return False
        if deployment:
            return bool(obj["metadata"]["name"] == deployment)
        args = obj["spec"]["template"]["spec"]["containers"][0].get("args", [])
        return any(a.startswith("--controller-workers") for a in args)  # the manager's own flag

    found = [d for d in manifest if is_manager(d)]
    if len(found) != 1:
        raise OperatorUnavailable(f"expected one operator manager Deployment, found {len(found)}")
    manager_deployment = found[0]
    namespace = manager_deployment["metadata"]["namespace"]
    account = manager_deployment["spec"]["template"]["spec"]["serviceAccountName"]
    kubeconfig = service_account_kubeconfig(
        cluster, namespace, account, workdir / "kubeconfig.yaml"
    )
    # Go's HTTP client honours HTTP_PROXY for http:// URLs (slurmrestd) and never proxies loopback.
    env = (
        {"HTTP_PROXY": proxy.url, "NO_PROXY": "127.0.0.1,localhost"} if proxy is not None else None
    )
    args = chart_args(manager_deployment)
    with run_manager(kubeconfig, args, workdir / "manager.log", env=env) as running:
        yield running


# -- the admission webhook ---------------------------------------------------------------------


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


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        if proc.poll() is not None or time.monotonic() > deadline:
            raise OperatorUnavailable(
                f"webhook server did not listen on {port}: {log.read_text(errors='replace')[-2000:]}"
            )
        time.sleep(0.2)


@contextlib.contextmanager
def run_webhook_for_release(
    cluster: Cluster, manifest: Sequence[dict[str, Any]], workdir: Path
) -> Iterator[Manager]:
    """Run the operator's webhook server as the release's webhook Deployment would, and point the
    release's webhook configurations at it (``url`` on 127.0.0.1 with a test CA). Validating
    webhooks get ``failurePolicy: Fail`` (the chart's default), so a denial is a denial."""
    deployments = [
        d for d in manifest if d.get("kind") == "Deployment"
        and any(a.startswith("--server-addr") for a in
                d["spec"]["template"]["spec"]["containers"][0].get("args", []))
    ]  # fmt: skip
    if len(deployments) != 1:
        raise OperatorUnavailable(f"expected one webhook Deployment, found {len(deployments)}")
    deployment = deployments[0]
    namespace = deployment["metadata"]["namespace"]
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    kubeconfig = service_account_kubeconfig(
        cluster, namespace, account, workdir / "kubeconfig.yaml"
    )
    port = free_port()
    ca = serving_certificate(workdir / "k8s-webhook-server" / "serving-certs")
    args = []
    for arg in chart_args(deployment):
        flag = arg.split("=", 1)[0]
        args.append(f"--server-addr=127.0.0.1:{port}" if flag == "--server-addr" else arg)
    binary = ensure_operator() / "webhook"
    log_path = workdir / "webhook.log"
    argv = [str(binary), f"--kubeconfig={kubeconfig}", "--zap-encoder=json", *args]
    with log_path.open("wb") as log:
        # controller-runtime reads its serving certificate from $TMPDIR/k8s-webhook-server/...
        proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, "TMPDIR": str(workdir)}, start_new_session=True,
        )  # fmt: skip
    server = Manager(proc, log_path, argv)
    try:
        _wait_port(port, proc, log_path)
        bundle = base64.b64encode(ca).decode()
        for obj in manifest:
            if obj.get("kind") not in (
                "ValidatingWebhookConfiguration",
                "MutatingWebhookConfiguration",
            ):
                continue
            patch = []
            for index, hook in enumerate(obj["webhooks"]):
                path = hook["clientConfig"]["service"].get("path", "/")
                patch.append({"op": "replace", "path": f"/webhooks/{index}/clientConfig",
                              "value": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}})  # fmt: skip
                if obj["kind"] == "ValidatingWebhookConfiguration":
                    patch.append({"op": "replace", "path": f"/webhooks/{index}/failurePolicy",
                                  "value": "Fail"})  # fmt: skip
            cluster.kubectl("patch", obj["kind"].lower(), obj["metadata"]["name"],
                            "--type=json", "-p", json.dumps(patch))  # fmt: skip
        yield server
    finally:
        _stop(proc)


# -- the operator's slurm.conf in the harness's slurmctld ----------------------------------------


def localize(slurm_conf: str) -> str:
    """The operator's slurm.conf for the chroot: the harness owns hosts, ports, auth and state
    paths (dropped here), and the container paths move under the harness's mount."""
    keep = []
    for raw in slurm_conf.splitlines():
        key = raw.split("=", 1)[0].strip().lower()
        if key in HARNESS_KEYS:
            continue
        line = raw.replace("/etc/slurm/", f"{MOUNT_POINT}/etc/")
        line = re.sub(r"/var/(log|spool)/slurm\w*", f"{MOUNT_POINT}/run", line)
        if key in ("accountingstoragehost", "accountingstorageport"):
            continue
        # slurmctld 26.05 refuses to start before slurmdbd answers, and no slurmdbd (nor its
        # MariaDB) runs here: the accounting lines are checked as text by the test instead.
        keep.append(line.replace("accounting_storage/slurmdbd", "accounting_storage/none"))
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
    files: dict[str, FileSource] = {}
    refs = [
        *controller_spec.get("configFileRefs", []),
        *controller_spec.get("prologSlurmctldScriptRefs", []),
        *controller_spec.get("epilogSlurmctldScriptRefs", []),
    ]
    for ref in refs:
        files.update(cluster.kubectl_json("get", "configmap", ref["name"], "-n", namespace)["data"])
    keys = {
        "slurm.key": controller_spec.get("slurmKeyRef"),
        "jwt.key": controller_spec.get("jwtKeyRef") or controller_spec.get("jwtHs256KeyRef"),
    }
    for file_name, ref in keys.items():
        if ref:
            files[file_name] = secret_value(cluster, namespace, ref["name"], ref["key"])
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


# -- CLI --------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``build``: build or reuse; ``path``: print the bin folder; ``available``: exit 0 when the
    operator is (or could be built and now is) available, 3 when no source exists (one line),
    2 when a build fails."""
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.operator", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("command", choices=["build", "path", "available"])
    args = parser.parse_args(argv)
    try:
        bindir = ensure_operator()
    except OperatorNotObtainable as exc:
        print(f"operator: {exc}")  # stdout: nox -s cluster prints this one line
        return 3
    except OperatorUnavailable as exc:
        print(f"operator: {exc}", file=sys.stderr)
        return 2
    if args.command == "path":
        print(bindir)
    else:
        print(f"operator: {VERSION} in {bindir} ({(bindir / 'SOURCE').read_text().strip()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
