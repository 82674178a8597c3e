"""The API server's audit log (policy and reader) and ServiceAccount identities (token id,
kubeconfig) of :mod:`slinky_harness.k8s`, without a cluster."""

from __future__ import annotations

import base64
import json
import os
import stat
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from slinky_harness.core.files import write_atomic
from slinky_harness.k8s import accounts, audit

if TYPE_CHECKING:
    from pathlib import Path


def test_audit_policy_records_only_the_users_writes() -> None:
    user = accounts.service_account_user("ns", "sa")
    policy = yaml.safe_load(audit.audit_policy([user]))
    assert policy["kind"] == "Policy" and "RequestReceived" in policy["omitStages"]
    reviews, writes, rest = policy["rules"]
    assert reviews["level"] == "None"
    assert writes == {"level": "Metadata", "users": [user], "verbs": sorted(audit.WRITE_VERBS)}
    assert rest == {"level": "None"}


def _event(verb: str, resource: str, name: str, code: int, user: str, **extra: Any) -> str:
    body = {
        "stage": extra.get("stage", "ResponseComplete"),
        "verb": verb,
        "user": {
            "username": user,
            "extra": {"authentication.kubernetes.io/credential-id": ["JTI=abc"]},
        },
        "objectRef": {"resource": resource, "name": name, "namespace": "ns"},
        "responseStatus": {"code": code},
    }
    return json.dumps(body)


def test_read_audit_writes_keeps_completed_writes_of_one_user(tmp_path: Path) -> None:
    me, other = "system:serviceaccount:ns:sa", "admin"
    lines = [
        _event("patch", "nodes", "n1", 200, me),
        _event("get", "nodes", "n1", 200, me),
        _event("patch", "nodes", "n2", 200, me, stage="ResponseStarted"),
        _event("create", "configmaps", "cm", 409, me),
        _event("patch", "nodes", "n3", 200, other),
    ]
    (tmp_path / "audit.log").write_text("\n".join(lines) + "\n")
    writes = audit.read_audit_writes(tmp_path / "audit.log", user=me)
    assert [(w.verb, w.resource, w.name, w.ok) for w in writes] == [
        ("patch", "nodes", "n1", True),
        ("create", "configmaps", "cm", False),
    ]
    assert writes[0].credential == "JTI=abc"
    assert len(audit.read_audit_writes(tmp_path / "audit.log")) == 3
    assert audit.read_audit_writes(tmp_path / "missing.log") == []


def test_token_credential_is_the_jti_claim() -> None:
    claims = base64.urlsafe_b64encode(json.dumps({"jti": "1234-5"}).encode()).rstrip(b"=")
    assert accounts.token_credential(f"header.{claims.decode()}.signature") == "JTI=1234-5"


class _Admin:
    """The part of a Cluster that token_kubeconfig reads: its admin kubeconfig."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig


def _admin(tmp_path: Path) -> _Admin:
    admin = tmp_path / "admin.kubeconfig"
    cluster = {"server": "https://127.0.0.1:6443", "certificate-authority-data": "Q0E="}
    admin.write_text(yaml.safe_dump({"clusters": [{"name": "kwok", "cluster": cluster}]}))
    return _Admin(admin)


def test_token_kubeconfig_is_private_even_under_a_permissive_umask(tmp_path: Path) -> None:
    """The file is 0600 whatever the umask, and holds the token under the given user."""
    old = os.umask(0)
    try:
        path = accounts.token_kubeconfig(
            _admin(tmp_path),  # type: ignore[arg-type]
            "tok.en.sig",
            tmp_path / "sa" / "kubeconfig",
            user="system:serviceaccount:ns:sa",
            namespace="ns",
        )
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    config = yaml.safe_load(path.read_text())
    assert config["users"] == [
        {"name": "system:serviceaccount:ns:sa", "user": {"token": "tok.en.sig"}}
    ]
    assert config["contexts"][0]["context"] == {
        "cluster": "kwok",
        "user": "system:serviceaccount:ns:sa",
        "namespace": "ns",
    }
    assert config["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"
    assert [p.name for p in path.parent.iterdir()] == ["kubeconfig"]  # no temporary file left


def test_token_kubeconfig_can_point_at_a_proxy_with_the_same_certificate(tmp_path: Path) -> None:
    path = accounts.token_kubeconfig(
        _admin(tmp_path),  # type: ignore[arg-type]
        "t",
        tmp_path / "k",
        user="u",
        server="https://127.0.0.1:7000",
    )
    cluster = yaml.safe_load(path.read_text())["clusters"][0]["cluster"]
    assert cluster == {"server": "https://127.0.0.1:7000", "certificate-authority-data": "Q0E="}


def test_service_account_folder_holds_a_private_token_and_the_ca(tmp_path: Path) -> None:
    kubeconfig = accounts.token_kubeconfig(
        _admin(tmp_path),  # type: ignore[arg-type]
        "secret-token",
        tmp_path / "k",
        user="u",
    )
    folder = accounts.service_account_folder(kubeconfig, "ns", tmp_path / "sa")
    assert (folder / "token").read_text() == "secret-token"
    assert stat.S_IMODE((folder / "token").stat().st_mode) == 0o600
    assert (folder / "namespace").read_text() == "ns"
    assert (folder / "ca.crt").read_bytes() == b"CA"


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o644])
def test_write_atomic_gives_the_final_mode_and_replaces_whole(tmp_path: Path, mode: int) -> None:
    target = tmp_path / "f"
    target.write_text("old")
    write_atomic(target, b"new", mode=mode)
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]
