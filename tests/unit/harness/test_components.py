"""How the harness turns a chart Deployment into a local process (operator, webhook, bridge)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

import pytest

from slinky_harness.build.slinky import OperatorUnavailable
from slinky_harness.k8s import bridge, operator


def deployment(*args: str) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": [{"name": "c", "args": list(args)}]}}}}


def test_listen_addresses_move_to_free_local_ports_and_named_flags_take_local_values() -> None:
    got = operator.local_args(
        deployment(
            "--config=/etc/slurm-bridge/config.yaml",
            "--health-probe-bind-address=:8081",
            "--metrics-bind-address=:8080",
            "--health-addr=:8081",
            "--metrics-addr=:8080",
            "--leader-elect",
            "--zap-log-level=info",
        ),
        {"--config": "/tmp/x/config.yaml"},
    )
    assert got[0] == "--config=/tmp/x/config.yaml"
    for arg in got[1:5]:
        _, _, value = arg.partition("=")
        assert re.fullmatch(r"127\.0\.0\.1:\d+", value), arg
        assert int(value.rsplit(":", 1)[1]) > 0
    assert got[5:] == ["--leader-elect", "--zap-log-level=info"]


def test_release_deployment_finds_exactly_one() -> None:
    a = {"kind": "Deployment", "metadata": {"name": "r-scheduler"}, **deployment("--config=x")}
    b = {
        "kind": "Deployment",
        "metadata": {"name": "r-controllers"},
        **deployment("--leader-elect"),
    }
    assert operator.release_deployment([a, b], name_suffix="-scheduler", what="s") is a
    assert operator.release_deployment([a, b], flag="--leader", what="c") is b
    with pytest.raises(OperatorUnavailable, match="expected one webhook Deployment, found 0"):
        operator.release_deployment([a, b], flag="--server-addr", what="webhook")


def test_slurm_jwt_has_the_shape_and_claims_slurm_reads() -> None:
    """Three unpadded base64url parts (RFC 7515 compact form), an HS256 header, Slurm's ``sun``
    claim and the lifetime asked for. That Slurm accepts the signature is proven by the bridge
    tests, whose components reach slurmrestd with such a token."""
    key = b"k" * 32
    token = bridge.slurm_jwt(key, "slurm", lifetime=60)
    header, claims, signature = token.split(".")

    def decode(part: str) -> bytes:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))

    assert json.loads(decode(header)) == {"alg": "HS256", "typ": "JWT"}
    body = json.loads(decode(claims))
    assert body["sun"] == "slurm" and body["exp"] - body["iat"] == 60
    assert len(decode(signature)) == hashlib.sha256().digest_size
    assert "=" not in token
