"""The pure parts of ``slinky_harness.slurm.dbd``: the operator's slurmdbd.conf, localisation, the
Accounting object and rendered Secrets (the daemons themselves run in tests/slurm)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from slinky_harness.slurm.conf import HARNESS_KEYS, compose_slurm_conf
from slinky_harness.slurm.dbd_conf import (
    AccountingSpec,
    localize_slurmdbd_conf,
    operator_slurmdbd_conf,
    parse_conf,
    rendered_secret,
)


def accounting(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "slurmKeyRef": {"name": "rel-slurm-key", "key": "slurm.key"},
        "jwtKeyRef": {"name": "rel-jwt-key", "key": "jwt.key"},
        "storageConfig": {
            "host": "mariadb.db.svc",
            "port": 3307,
            "database": "acct",
            "username": "slurm",
            "passwordKeyRef": {"name": "mariadb-password", "key": "password"},
        },
    }
    return {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "Accounting",
        "metadata": {"name": "rel", "namespace": "ns"},
        "spec": {**base, **spec},
    }


def test_operator_conf_has_the_operators_keys_in_its_order() -> None:
    spec = AccountingSpec.from_object(accounting())
    assert operator_slurmdbd_conf(spec, "s3cret") == (
        "#\n### GENERAL ###\n"
        "DbdHost=rel-accounting-0\nDbdPort=6819\nSlurmUser=slurm\n"
        "#\n### PLUGINS & PARAMETERS ###\n"
        "AuthType=auth/slurm\nAuthAltTypes=auth/jwt\n"
        "AuthAltParameters=jwt_key=/etc/slurm/jwt.key\nAuthInfo=use_client_ids\n"
        "#\n### STORAGE ###\n"
        "StorageType=accounting_storage/mysql\nStorageHost=mariadb.db.svc\nStoragePort=3307\n"
        "StorageUser=slurm\nStorageLoc=acct\nStoragePass=s3cret\n"
        "#\n### LOGGING ###\nLogFile=/dev/null\n"
    )


def test_extra_conf_is_appended_and_merge_keys_are_merged() -> None:
    extra = "PurgeJobAfter=12month\nAuthInfo=cred_expire=70,use_client_ids\nAuthAltParameters=Disable_Token_Creation"
    spec = AccountingSpec.from_object(accounting(extraConf=extra, jwksKeyRef={"name": "j"}))
    conf = operator_slurmdbd_conf(spec, "pw")
    assert "AuthAltParameters=jwt_key=/etc/slurm/jwt.key,jwks=/etc/slurm/jwks.json\n" in conf
    tail = conf.split("### EXTRA CONFIG ###\n", 1)[1]
    extra_part, merged = tail.split("#\n### MERGED CONFIG ###\n")
    assert extra_part == extra + "\n"
    # the operator's options first in a set, extras lower-cased, the union sorted, keys sorted
    assert merged.splitlines() == [
        "AuthAltParameters=disable_token_creation,jwks=/etc/slurm/jwks.json,jwt_key=/etc/slurm/jwt.key",
        "AuthInfo=cred_expire=70,use_client_ids",
    ]


def test_merged_config_keeps_the_operators_option_over_an_extra_one_of_the_same_name() -> None:
    spec = AccountingSpec.from_object(accounting(extraConf="AuthAltParameters=jwt_key=/x"))
    merged = operator_slurmdbd_conf(spec, "pw").split("### MERGED CONFIG ###\n")[1]
    assert merged == "AuthAltParameters=jwt_key=/etc/slurm/jwt.key\n"


def test_localize_points_at_this_machine_and_keeps_the_rest() -> None:
    spec = AccountingSpec.from_object(accounting())
    conf = operator_slurmdbd_conf(spec, "pw")
    local = parse_conf(localize_slurmdbd_conf(conf, dbd_port=21000, storage_host="127.0.0.1",
                                              storage_port=22000))  # fmt: skip
    given = parse_conf(conf)
    changed = {k for k in given if given[k] != local[k]}
    assert changed == {"DbdPort", "StorageHost", "StoragePort", "LogFile", "AuthAltParameters"}
    assert local["DbdPort"] == "21000"
    assert (local["StorageHost"], local["StoragePort"]) == ("127.0.0.1", "22000")
    assert local["AuthAltParameters"] == "jwt_key=/srv/slinky/etc/jwt.key"
    assert local["LogFile"] == "/srv/slinky/slurmdbd.log"
    assert local["DbdHost"] == "rel-accounting-0"


def test_localize_adds_what_the_text_does_not_set() -> None:
    local = parse_conf(localize_slurmdbd_conf("DbdHost=x\n", dbd_port=1, storage_host="h",
                                              storage_port=2))  # fmt: skip
    assert local == {"DbdHost": "x", "DbdPort": "1", "StorageHost": "h", "StoragePort": "2",
                     "LogFile": "/srv/slinky/slurmdbd.log"}  # fmt: skip


def test_spec_from_a_manifest() -> None:
    spec = AccountingSpec.from_manifest([{"kind": "Secret"}, accounting()])
    assert spec.dbd_host == "rel-accounting-0"
    assert spec.service_name == "rel-accounting"
    assert spec.storage.port == 3307
    assert (spec.storage.password_secret, spec.storage.password_key) == (
        "mariadb-password",
        "password",
    )
    assert spec.slurm_key_ref == ("rel-slurm-key", "slurm.key")


@pytest.mark.parametrize(
    "docs",
    [
        pytest.param([], id="none"),
        pytest.param([accounting(), accounting()], id="two"),
        pytest.param([accounting(external=True)], id="external"),
    ],
)
def test_spec_needs_one_in_cluster_accounting(docs: list[dict[str, Any]]) -> None:
    with pytest.raises(ValueError, match=r"Accounting|external"):
        AccountingSpec.from_manifest(docs)


def test_rendered_secret_reads_data_and_string_data() -> None:
    docs = [
        {"kind": "Secret", "metadata": {"name": "a"},
         "data": {"k": base64.b64encode(b"\x00bin").decode()}},
        {"kind": "Secret", "metadata": {"name": "b"}, "stringData": {"k": "text"}},
    ]  # fmt: skip
    assert rendered_secret(docs, "a", "k") == b"\x00bin"
    assert rendered_secret(docs, "b", "k") == b"text"
    assert rendered_secret(docs, "c", "k") is None
    assert rendered_secret(docs, "a", "other") is None


@pytest.mark.parametrize(
    "key", ["AccountingStorageType", "AccountingStorageHost", "accountingstorageport"]
)
def test_accounting_storage_keys_are_the_harness_s(key: str) -> None:
    """``slurmctld(..., accounting=dbd)`` writes them; a caller's line would silently win."""
    assert key.lower() in HARNESS_KEYS
    with pytest.raises(ValueError, match=key.lower()):
        compose_slurm_conf(f"{key}=x\n", {})
