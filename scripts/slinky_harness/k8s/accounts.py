"""ServiceAccount identities for processes that run outside the cluster: the one way the harness
mints a token and writes a kubeconfig or a pod's ServiceAccount folder for it.

A token comes from the TokenRequest API (:func:`mint_token`, through ``kubectl create token``);
:func:`token_kubeconfig` writes it into a kubeconfig of its own, and
:func:`service_account_folder` into what a pod sees in :data:`SERVICE_ACCOUNT_MOUNT`. Every file
that holds a token is written by :func:`~slinky_harness.core.files.write_atomic` with mode 0600
from creation: never readable by others, not even between a write and a ``chmod``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from slinky_harness.core.files import write_atomic

if TYPE_CHECKING:
    from slinky_harness.k8s.cluster import Cluster

__all__ = [
    "SERVICE_ACCOUNT_MOUNT",
    "mint_token",
    "service_account_folder",
    "service_account_kubeconfig",
    "service_account_user",
    "token_credential",
    "token_kubeconfig",
]


def service_account_user(namespace: str, name: str) -> str:
    """The user name a ServiceAccount token authenticates as."""
    return f"system:serviceaccount:{namespace}:{name}"


def mint_token(cluster: Cluster, namespace: str, name: str, seconds: int = 3600) -> str:
    """A token for ServiceAccount ``namespace/name`` from the TokenRequest API, valid ``seconds``."""
    token = cluster.kubectl("create", "token", name, "-n", namespace, f"--duration={seconds}s")
    return token.strip()


def token_credential(token: str) -> str:
    """The ``credential-id`` the audit log shows for a ServiceAccount token (``JTI=<jti>``)."""
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return f"JTI={claims['jti']}"


def token_kubeconfig(
    cluster: Cluster,
    token: str,
    dest: Path,
    *,
    user: str,
    namespace: str | None = None,
    server: str | None = None,
) -> Path:
    """A kubeconfig (0600 from creation) for ``cluster`` that authenticates as ``user`` with
    ``token`` (no client certificate); ``namespace``: the context's default namespace; ``server``:
    reach the API server at this URL instead (a proxy in front of it, same certificate)."""
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    entry = dict(admin["clusters"][0]["cluster"])
    if server is not None:
        entry["server"] = server
    context: dict[str, str] = {"cluster": "kwok", "user": user}
    if namespace is not None:
        context["namespace"] = namespace
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kwok", "cluster": entry}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": context}],
        "current-context": "sa",
    }
    return write_atomic(dest, yaml.safe_dump(config), mode=0o600)


def service_account_kubeconfig(
    cluster: Cluster, namespace: str, name: str, dest: Path, *, hours: int = 2
) -> Path:
    """A kubeconfig for ServiceAccount ``namespace/name`` of ``cluster`` with a fresh token, its
    namespace the default one (as in the account's pod)."""
    token = mint_token(cluster, namespace, name, seconds=hours * 3600)
    user = service_account_user(namespace, name)
    return token_kubeconfig(cluster, token, dest, user=user, namespace=namespace)


SERVICE_ACCOUNT_MOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
"""Where a pod finds its ServiceAccount's namespace, token and CA (programs read the namespace
there to know "their" namespace, e.g. for leader election)."""


def service_account_folder(kubeconfig: Path, namespace: str, dest: Path) -> Path:
    """What a pod of ``namespace`` sees in :data:`SERVICE_ACCOUNT_MOUNT`, for the identity in
    ``kubeconfig`` (from :func:`token_kubeconfig`): ``namespace``, ``token`` (0600) and
    ``ca.crt``."""
    config = yaml.safe_load(kubeconfig.read_text())
    dest.mkdir(parents=True, exist_ok=True)
    write_atomic(dest / "namespace", namespace)
    write_atomic(dest / "token", config["users"][0]["user"]["token"], mode=0o600)
    cluster = config["clusters"][0]["cluster"]
    ca = cluster.get("certificate-authority-data")
    write_atomic(dest / "ca.crt", base64.b64decode(ca) if ca else b"")
    return dest
