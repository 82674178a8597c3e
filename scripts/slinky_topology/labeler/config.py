"""The labeler controller's configuration: one frozen :class:`LabelerConfig`.

:mod:`.cli` builds it from the command line (the chart renders the flags from its values) and
the environment (``$POD_NAMESPACE``, ``$POD_NAME`` from the downward API); tests build it
directly. Construction checks the rules that tie fields together and raises
:class:`ConfigError` naming the flags to change, so no controller ever runs with timings that
contradict each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from slinky_topology.errors import TopologyError
from slinky_topology.model import BlockOptions
from slinky_topology.validate import block_sizes_findings

if TYPE_CHECKING:
    from collections.abc import Mapping

    from slinky_topology.model import BlockSource, OversizedPolicy

__all__ = ["DEFAULT_TIMEOUT", "ConfigError", "LabelerConfig"]

DEFAULT_TIMEOUT = 10.0
"""Seconds one API call may take, connection included (``--request-timeout``)."""


class ConfigError(TopologyError):
    """Settings that contradict each other (a usage error: exit 2)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelerConfig:
    """Every setting of one labeler process; the flag of each is its name with dashes."""

    # input
    preset: str = "auto"
    label_map: str | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    slurm_name_key: str | None = None
    fabric_configmap: str | None = None
    fabric_key: str = "fabric.yaml"
    fabric_file: str | None = None
    from_nodes: str | None = None
    """Offline: a ``kubectl get nodes -o json`` file; implies ``dry_run`` and ``once``."""
    configmap_file: str | None = None
    allow_empty: bool = False
    """No Node, or none with a label of the preset, is expected: publish a flat topology
    instead of failing the pass and keeping the last good one."""
    # block topology of label inputs (``None``: not given; a fabric file sets these itself)
    block_sizes: tuple[int, ...] | None = None
    """BlockSizes of the ``nvlink`` block topology; ``None`` infers them."""
    block_source: BlockSource | None = None
    """One base block per NVLink domain (``domain``, the default) or per sub-domain."""
    oversized_domains: OversizedPolicy | None = None
    """A domain larger than the base block: ``split`` (the default) or ``error``."""
    # output
    configmap: str = "gpu-topology"
    namespace: str = "default"
    dry_run: bool = False
    output: Literal["text", "json"] = "text"
    # run
    once: bool = False
    resync_seconds: float = 300.0
    debounce_seconds: float = 2.0
    qps: float = 20.0
    burst: int = 40
    write_workers: int = 1
    lease_name: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    identity: str = "labeler"
    request_timeout: float = DEFAULT_TIMEOUT
    watch_timeout: int = 60
    stuck_seconds: float | None = None
    metrics_port: int = 8080
    kubeconfig: str | None = None
    log_level: str = "info"

    def __post_init__(self) -> None:
        if self.from_nodes and not (self.dry_run and self.once):
            # an offline run never writes and never loops; frozen, hence object.__setattr__
            object.__setattr__(self, "dry_run", True)
            object.__setattr__(self, "once", True)
        self._check()

    def _check(self) -> None:
        if not self.retry_period < self.renew_deadline < self.lease_duration:
            raise ConfigError("need --retry-period < --renew-deadline < --lease-duration")
        if self.lease_name and not self.request_timeout + self.retry_period < self.lease_duration:
            raise ConfigError(
                "need --request-timeout + --retry-period < --lease-duration (a write starts "
                "only when it ends before the Lease could pass to another instance)"
            )
        quiet = self.quiet_seconds
        if self.stuck_seconds is not None and not self.stuck_seconds > quiet:
            raise ConfigError(
                f"--stuck-seconds must exceed {quiet:g} (--watch-timeout plus "
                "--request-timeout, and --retry-period plus twice --request-timeout): a healthy "
                "loop can be quiet that long"
            )
        if self.fabric_file and self.fabric_configmap:
            raise ConfigError("give --fabric-file or --fabric-configmap, not both")
        if self.configmap_file and not self.from_nodes:
            raise ConfigError("--configmap-file only goes with --from-nodes")
        block_flags = [
            flag
            for flag, value in (
                ("--block-sizes", self.block_sizes),
                ("--block-source", self.block_source),
                ("--oversized-domains", self.oversized_domains),
            )
            if value is not None
        ]
        if block_flags and (self.fabric_file or self.fabric_configmap):
            raise ConfigError(
                f"{', '.join(block_flags)}: for Node labels only; a fabric file "
                "(--fabric-file/--fabric-configmap) sets blockSizes, source and oversizedDomains "
                "on each of its spec.topologies: drop the flag or set it in the fabric file"
            )
        if self.block_sizes is not None:
            problems = block_sizes_findings(self.block_sizes, "--block-sizes")
            if problems:
                raise ConfigError(f"--block-sizes: {problems[0].message}; {problems[0].fix}")
        if self.write_workers < 1:
            raise ConfigError(f"--write-workers must be >= 1, got {self.write_workers}")

    @property
    def quiet_seconds(self) -> float:
        """The longest a healthy loop goes without a heartbeat: a watch with no event (it ends
        after ``--watch-timeout``, or is dropped ``--request-timeout`` later), an election round
        (two calls) and its wait. ``--stuck-seconds`` must exceed it; the default is twice it."""
        return float(
            max(
                self.watch_timeout + self.request_timeout,
                self.retry_period + 2 * self.request_timeout,
            )
        )

    @property
    def stuck_after(self) -> float:
        """Seconds without progress after which a loop counts as stuck (``/healthz`` fails)."""
        return self.stuck_seconds or 2 * self.quiet_seconds

    @property
    def block_options(self) -> BlockOptions | None:
        """The block flags as library options; ``None`` when none is given (the defaults:
        inferred sizes, one block per domain, oversized domains split)."""
        if (
            self.block_sizes is None
            and self.block_source is None
            and self.oversized_domains is None
        ):
            return None
        return BlockOptions(
            block_sizes=self.block_sizes,
            source=self.block_source or "domain",
            oversized=self.oversized_domains or "split",
        )

    @property
    def offline(self) -> bool:
        """No cluster: Nodes from ``--from-nodes``."""
        return self.from_nodes is not None
