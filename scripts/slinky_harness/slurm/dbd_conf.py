"""The slurmdbd.conf of a chart's ``Accounting`` object, as the Slinky operator v1.2.1 writes it,
and its localisation for the chroot: pure text in, text out (no daemon runs here).

* :class:`AccountingSpec`: the Accounting object's fields the operator reads (from the object or
  from a rendered manifest); :func:`rendered_secret` reads a Secret's key from a manifest.
* :func:`operator_slurmdbd_conf`: the text the operator writes (:data:`OPERATOR_SOURCE`).
* :func:`localize_slurmdbd_conf`: only what names Kubernetes addresses or container paths changes:
  ``DbdPort``, ``StorageHost``, ``StoragePort``, ``/etc/slurm/`` paths and ``LogFile``.

:mod:`slinky_harness.slurm.dbd` runs slurmdbd on the result.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slinky_harness.build.slurm_chroot import MOUNT_POINT

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "DBD_ETC",
    "OPERATOR_SOURCE",
    "AccountingSpec",
    "StorageConfig",
    "localize_slurmdbd_conf",
    "operator_slurmdbd_conf",
    "parse_conf",
    "rendered_secret",
]

DBD_ETC = f"{MOUNT_POINT}/etc"
"""Where the chroot's slurmdbd reads its slurmdbd.conf and keys."""

OPERATOR_SOURCE = (
    "github.com/SlinkyProject/slurm-operator v1.2.1, internal/builder/accountingbuilder/"
    "accounting_config.go buildSlurmdbdConf (with internal/builder/common BuildMergedConfig)"
)
"""Where :func:`operator_slurmdbd_conf` comes from."""


# Constants of the operator (internal/builder/common/const.go, v1.2.1).
_SLURM_USER = "slurm"


_AUTH_TYPE = "auth/slurm"


_AUTH_ALT_TYPES = "auth/jwt"


_AUTH_INFO = "use_client_ids"


_JWT_PARAM = "jwt_key=/etc/slurm/jwt.key"


_JWKS_PARAM = "jwks=/etc/slurm/jwks.json"


_SLURMDBD_PORT = 6819


_DEV_NULL = "/dev/null"


@dataclass(frozen=True)
class StorageConfig:
    """``Accounting.spec.storageConfig``: where slurmdbd stores accounting."""

    host: str
    port: int
    database: str
    username: str
    password_secret: str
    """Name of the Secret holding the database password (``passwordKeyRef.name``)."""
    password_key: str


@dataclass(frozen=True)
class AccountingSpec:
    """The fields of an ``Accounting`` object (slinky.slurm.net/v1beta1) the operator's
    slurmdbd.conf is built from."""

    name: str
    namespace: str
    storage: StorageConfig
    extra_conf: str
    jwks: bool
    """``spec.jwksKeyRef`` is set (adds ``jwks=`` to ``AuthAltParameters``)."""
    slurm_key_ref: tuple[str, str]
    """(Secret name, key) of ``slurm.key``."""
    jwt_key_ref: tuple[str, str]

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> AccountingSpec:
        """Read an ``Accounting`` object (a rendered document or the object as applied)."""
        if obj.get("kind") != "Accounting":
            raise ValueError(f"not an Accounting object: kind {obj.get('kind')!r}")
        spec = obj.get("spec") or {}
        if spec.get("external"):
            raise ValueError("an external Accounting has no slurmdbd.conf (nothing to run)")
        storage = spec.get("storageConfig") or {}
        password = storage.get("passwordKeyRef") or {}
        slurm_key = spec.get("slurmKeyRef") or {}
        jwt_key = spec.get("jwtKeyRef") or spec.get("jwtHs256KeyRef") or {}
        meta = obj.get("metadata") or {}
        return cls(
            name=str(meta["name"]),
            namespace=str(meta.get("namespace", "")),
            storage=StorageConfig(
                host=str(storage.get("host", "")),
                port=int(storage.get("port", 3306)),
                database=str(storage.get("database", "")),
                username=str(storage.get("username", "")),
                password_secret=str(password.get("name", "")),
                password_key=str(password.get("key", "")),
            ),
            extra_conf=str(spec.get("extraConf") or ""),
            jwks=bool(spec.get("jwksKeyRef")),
            slurm_key_ref=(str(slurm_key.get("name", "")), str(slurm_key.get("key", ""))),
            jwt_key_ref=(str(jwt_key.get("name", "")), str(jwt_key.get("key", ""))),
        )

    @classmethod
    def from_manifest(cls, docs: Sequence[Mapping[str, Any]]) -> AccountingSpec:
        """The one ``Accounting`` object of a rendered release."""
        found = [d for d in docs if d.get("kind") == "Accounting"]
        if len(found) != 1:
            raise ValueError(f"expected one Accounting object in the manifest, found {len(found)}")
        return cls.from_object(found[0])

    @property
    def dbd_host(self) -> str:
        """``DbdHost``: the slurmdbd pod's name (``Accounting.PrimaryName()``)."""
        return f"{self.name}-accounting-0"

    @property
    def service_name(self) -> str:
        """The slurmdbd Service (``AccountingStorageHost`` in the operator's slurm.conf)."""
        return f"{self.name}-accounting"


def rendered_secret(docs: Sequence[Mapping[str, Any]], name: str, key: str) -> bytes | None:
    """The value of ``key`` in the Secret ``name`` of a rendered release (None when not rendered)."""
    for doc in docs:
        if doc.get("kind") == "Secret" and (doc.get("metadata") or {}).get("name") == name:
            if key in (doc.get("data") or {}):
                return base64.b64decode(doc["data"][key])
            if key in (doc.get("stringData") or {}):
                return str(doc["stringData"][key]).encode("utf-8")
    return None


def _conf_kv(text: str) -> dict[str, str]:
    """The operator's ``parseSlurmConfKV``: lower-case key -> value of one-word ``Key=Value`` lines
    (``#`` comments and ``\\`` continuations handled; the last one wins)."""
    out: dict[str, str] = {}
    pending = ""
    for raw in text.split("\n"):
        line = raw.removesuffix("\r").split("#", 1)[0].rstrip(" \t")
        if not line:
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        logical, pending = (pending + line).strip(), ""
        key, sep, value = logical.partition("=")
        key, value = key.strip(), value.strip()
        if sep and key and value and not any(c in value for c in " \n"):
            out[key.lower()] = value
    if pending.strip():
        key, sep, value = pending.strip().partition("=")
        if sep and key.strip() and value.strip() and " " not in value.strip():
            out[key.strip().lower()] = value.strip()
    return out


def _merged_config(extra_conf: str, merge: Mapping[str, Sequence[str]]) -> str:
    """The operator's ``BuildMergedConfig``: for each merge key set in ``extra_conf``, the union of
    the operator's values and the extra ones (options keyed by the text before ``=``; the operator's
    win), sorted; keys in sorted order, no final newline."""
    given = _conf_kv(extra_conf)
    lines = []
    for key in sorted(merge):
        value = given.get(key.lower())
        if value is None:
            continue
        values = set(merge[key])
        seen = {v.split("=", 1)[0].lower() for v in values}
        for item in value.split(","):
            if not item:
                continue
            option = item.split("=", 1)[0].lower()
            if option in seen:
                continue
            values.add(item.lower())
            seen.add(option)
        lines.append(f"{key}={','.join(sorted(values))}")
    return "\n".join(lines)


def operator_slurmdbd_conf(spec: AccountingSpec, storage_password: str) -> str:
    """The slurmdbd.conf the Slinky operator writes for ``spec`` (Secret ``<name>-accounting``,
    key ``slurmdbd.conf``), reproduced key for key from :data:`OPERATOR_SOURCE`.

    ``storage_password``: the value of the Secret ``spec.storage.password_secret`` (the operator
    copies it into ``StoragePass``). The cluster tier reads the operator's real output instead.
    """
    merge = {
        "AuthInfo": [_AUTH_INFO],
        "AuthAltParameters": [_JWT_PARAM, *([_JWKS_PARAM] if spec.jwks else [])],
    }
    s = spec.storage
    lines = [
        "#",
        "### GENERAL ###",
        f"DbdHost={spec.dbd_host}",
        f"DbdPort={_SLURMDBD_PORT}",
        f"SlurmUser={_SLURM_USER}",
        "#",
        "### PLUGINS & PARAMETERS ###",
        f"AuthType={_AUTH_TYPE}",
        f"AuthAltTypes={_AUTH_ALT_TYPES}",
        f"AuthAltParameters={','.join(merge['AuthAltParameters'])}",
        f"AuthInfo={','.join(merge['AuthInfo'])}",
        "#",
        "### STORAGE ###",
        "StorageType=accounting_storage/mysql",
        f"StorageHost={s.host}",
        f"StoragePort={s.port}",
        f"StorageUser={s.username}",
        f"StorageLoc={s.database}",
        f"StoragePass={storage_password}",
        "#",
        "### LOGGING ###",
        f"LogFile={_DEV_NULL}",
    ]
    if spec.extra_conf:
        lines += ["#", "### EXTRA CONFIG ###", spec.extra_conf]
    merged = _merged_config(spec.extra_conf, merge)
    if merged:
        lines += ["#", "### MERGED CONFIG ###", merged]
    return "\n".join(lines) + "\n"


def parse_conf(text: str) -> dict[str, str]:
    """``Key=Value`` lines of a slurmdbd.conf as key -> value (the last one wins; keys as written)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip()
    return out


def localize_slurmdbd_conf(
    text: str, *, dbd_port: int, storage_host: str, storage_port: int
) -> str:
    """The operator's slurmdbd.conf for the chroot: ``DbdPort``, ``StorageHost`` and
    ``StoragePort`` point at this machine's ports, and container paths move under the mount of the
    work folder: ``/etc/slurm/`` and ``LogFile`` (``/dev/null`` in the pod: slurmdbd would
    chown the chroot's ``/dev/null`` to ``SlurmUser``; here ``/srv/slinky/slurmdbd.log``).
    Everything else is kept as written (``DbdHost`` too)."""
    replace = {
        "dbdport": f"DbdPort={dbd_port}",
        "storagehost": f"StorageHost={storage_host}",
        "storageport": f"StoragePort={storage_port}",
        "logfile": f"LogFile={MOUNT_POINT}/slurmdbd.log",
    }
    lines = []
    for raw in text.splitlines():
        key = raw.split("=", 1)[0].strip().lower() if "=" in raw else ""
        if key in replace and not raw.lstrip().startswith("#"):
            lines.append(replace.pop(key))
            continue
        lines.append(raw.replace("/etc/slurm/", f"{DBD_ETC}/"))
    lines += list(replace.values())  # keys the text did not set
    return "\n".join(lines) + "\n"
