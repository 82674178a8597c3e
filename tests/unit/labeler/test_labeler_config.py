"""The controller's typed configuration: flags and environment in, one frozen LabelerConfig out,
settings that contradict each other refused by name (exit 2 from main)."""

from __future__ import annotations

import dataclasses
import socket
from typing import Any

import pytest

from slinky_topology.labeler.cli import main, parse_config
from slinky_topology.labeler.config import ConfigError, LabelerConfig
from slinky_topology.model import BlockOptions


def test_the_environment_fills_namespace_and_identity_unless_flags_say() -> None:
    env = {"POD_NAMESPACE": "gpu", "POD_NAME": "labeler-7d9f-abcde"}
    config = parse_config([], environ=env)
    assert (config.namespace, config.identity) == ("gpu", "labeler-7d9f-abcde")
    flags = parse_config(["--namespace=ops", "--identity=me"], environ=env)
    assert (flags.namespace, flags.identity) == ("ops", "me")
    bare = parse_config([], environ={})
    assert bare.namespace == "default"
    assert bare.identity.startswith(f"{socket.gethostname()}_")
    assert bare.identity != parse_config([], environ={}).identity, "a random suffix each"


def test_flags_become_typed_fields() -> None:
    config = parse_config(
        [
            "--node-selector=pool=gpu",
            "--node-selector=zone=",
            "--qps=50",
            "--burst=100",
            "--write-workers=8",
            "--watch-timeout=30",
            "--lease-name=lab",
        ],
        environ={},
    )
    assert dict(config.node_selector) == {"pool": "gpu", "zone": ""}
    assert (config.qps, config.burst, config.write_workers) == (50.0, 100, 8)
    assert config.watch_timeout == 30 and isinstance(config.watch_timeout, int)
    assert config.lease_name == "lab" and not config.offline
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.qps = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.node_selector["pool"] = "cpu"  # type: ignore[index]


def test_the_parser_and_the_dataclass_agree_on_every_default() -> None:
    """No flag has a default of its own: the chart's unset values mean the dataclass's."""
    parsed = parse_config([], environ={"POD_NAME": "x"})
    assert parsed == LabelerConfig(identity="x")


def test_offline_runs_are_dry_and_once() -> None:
    config = LabelerConfig(from_nodes="nodes.json")
    assert config.offline and config.dry_run and config.once


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param(
            {"renew_deadline": 20.0}, "--retry-period < --renew-deadline", id="renew-deadline"
        ),
        pytest.param(
            {"lease_name": "lab", "request_timeout": 14.0},
            "--request-timeout + --retry-period < --lease-duration",
            id="write-outlasts-the-lease",
        ),
        pytest.param({"stuck_seconds": 30.0}, "--stuck-seconds must exceed 70", id="stuck"),
        pytest.param(
            {"fabric_file": "f.yaml", "fabric_configmap": "fabric"},
            "--fabric-file or --fabric-configmap",
            id="two-fabrics",
        ),
        pytest.param(
            {"configmap_file": "t.yaml"}, "--configmap-file only goes with --from-nodes", id="cm"
        ),
        pytest.param({"write_workers": 0}, "--write-workers must be >= 1", id="workers"),
    ],
)
def test_contradicting_settings_are_refused_by_flag(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("+", r"\+")):
        LabelerConfig(**fields)


def test_a_quiet_watch_or_election_round_sets_the_stuck_default() -> None:
    assert LabelerConfig().stuck_after == 140.0, "twice --watch-timeout plus --request-timeout"
    slow_election = LabelerConfig(watch_timeout=5, request_timeout=4.0, retry_period=3.0)
    assert slow_election.quiet_seconds == 11.0 and slow_election.stuck_after == 22.0
    assert LabelerConfig(stuck_seconds=71.0).stuck_after == 71.0


def test_main_prints_a_config_error_once_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--node-selector=pool"], environ={}) == 2
    err = capsys.readouterr().err
    assert err == "error: --node-selector 'pool' is not KEY=VALUE\n"


def test_block_flags_become_block_options_and_none_given_keeps_the_defaults() -> None:
    assert parse_config([], environ={}).block_options is None, "library defaults apply"
    config = parse_config(
        ["--block-sizes=18,36", "--block-source=subdomain", "--oversized-domains=error"],
        environ={},
    )
    assert config.block_options == BlockOptions(
        block_sizes=(18, 36), source="subdomain", oversized="error"
    )
    only_sizes = parse_config(["--block-sizes=8"], environ={}).block_options
    assert only_sizes == BlockOptions(block_sizes=(8,), source="domain", oversized="split")
    assert not parse_config([], environ={}).allow_empty
    assert parse_config(["--allow-empty"], environ={}).allow_empty


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["--block-sizes=18,x"],
            "error: --block-sizes '18,x' is not a comma-separated list of integers",
            id="not-integers",
        ),
        pytest.param(
            ["--block-sizes=36,18"],
            "error: --block-sizes: invalid BlockSizes 36,18: 18 is not a multiple of the base 36",
            id="not-multiples",
        ),
        pytest.param(
            ["--block-source=domain", "--oversized-domains=split", "--fabric-configmap=fab"],
            "error: --block-source, --oversized-domains: for Node labels only; a fabric file",
            id="with-a-fabric",
        ),
    ],
)
def test_bad_block_flags_exit_2_naming_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv, environ={}) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err


def test_block_sizes_built_directly_are_checked_too() -> None:
    with pytest.raises(ConfigError, match="--block-sizes: invalid BlockSizes 0"):
        LabelerConfig(block_sizes=(0,))
    with pytest.raises(ConfigError, match="--block-sizes: for Node labels only"):
        LabelerConfig(block_sizes=(4,), fabric_file="fabric.yaml")
