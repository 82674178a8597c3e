"""Real jobs under slurm-cluster's scheduling presets: the chart's slurm.conf lines, real slurmdbd.

:func:`render` runs ``helm template`` of charts/slurm-cluster with the given values and keeps what the
operator would put into slurm.conf from the chart: ``Controller.spec.extraConf`` (scheduling preset and
overrides, GPU lines, the user's slurm.conf values) verbatim, and the NodeSet's name, partition
options and slurmd ``--conf`` (``Gres=gpu:N``). :func:`cluster` starts, on that, a slurmctld with
``accounting_storage/slurmdbd`` (slurmdbd from :func:`slinky_harness.slurm.dbd.release_accounting`:
the operator's slurmdbd.conf for the rendered Accounting) and one emulated slurmd per node, named
like the NodeSet's pods (``compute-0``, ...). The operator's own part of slurm.conf (hosts, ports,
auth, paths) is the harness's; its NodeSet lines are written here as the operator writes them
(``NodeSet=<name> Feature=<name>`` and ``PartitionName=<name> Nodes=<name> <partition config>``).

Expectations in the tests come from :attr:`Rendered.settings` (what the values rendered) and the jobs
they submit, never from Slurm's output.
"""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests import worker_summary

from slinky_harness.helm import client as helm
from slinky_harness.helm.values import merge
from slinky_harness.slurm.conf import emulated_nodes, parse_records
from slinky_harness.slurm.ctld import slurmctld
from slinky_harness.slurm.dbd import release_accounting

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from slinky_harness.slurm.ctld import SlurmCtld
    from slinky_harness.slurm.dbd import MariaDB, Slurmdbd

CHART = Path(__file__).resolve().parents[2] / "charts" / "slurm-cluster"
NODE_CPUS = 2
"""CPUs of every emulated node."""
NODE_MEMORY_MB = 1000
JOB_MEMORY = "100M"
"""Memory a test job asks for unless it says otherwise (:meth:`Cluster.submit`)."""
NODESET_VALUES: dict[str, Any] = {
    "nodesets": {
        "compute": {"partition": {"enabled": True, "config": "Default=YES MaxTime=UNLIMITED"}}
    }
}
"""The NodeSet :func:`render` puts under every test's values (the chart lists none by default):
``compute`` with its own default partition."""
GPU_VALUES: dict[str, Any] = {"nodesets": {"compute": {"gpu": {"count": 2}}}}
"""Values that give the NodeSet two GPUs per node (``Gres=gpu:2``, ``GresTypes=gpu``, and
with accounting ``AccountingStorageTRES=gres/gpu``)."""


GPU_FILES = ("/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/console")
"""Character devices every chroot has, one per emulated GPU: slurmd ignores GPUs without a
``File`` (only their device numbers matter; no cgroup constrains them here)."""


PROOFS: list[str] = worker_summary.records("slurm.proofs")
"""Measured outcomes the tests record (:func:`proof`); the tier's summary prints them (merged
across xdist workers)."""


def proof(what: str, outcome: str) -> None:
    """Record what a test measured (job states, reasons, latencies, factors) for the summary."""
    PROOFS.append(f"{what}: {outcome}")


def conf_settings(text: str) -> dict[str, str]:
    """``Key=Value`` lines of a slurm.conf fragment (one setting per line, the last one wins)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line and " " not in line:
            key, _, value = line.partition("=")
            out[key] = value
    return out


def param_list(value: str) -> dict[str, str]:
    """``a,b=1`` (SchedulerParameters, DependencyParameters) -> {"a": "", "b": "1"}."""
    out: dict[str, str] = {}
    for item in filter(None, value.split(",")):
        key, _, val = item.partition("=")
        out[key] = val
    return out


@dataclass(frozen=True)
class Rendered:
    """What slurm-cluster rendered for the values, as far as slurm.conf is concerned."""

    values: Mapping[str, Any]
    docs: list[dict[str, Any]]
    extra_conf: str
    """``Controller.spec.extraConf``."""
    nodeset: str
    """Slurm NodeSet (and node name prefix) of the first NodeSet with a partition."""
    partition_config: str
    slurmd_conf: str
    """``NodeSet.spec.extraConf`` (``slurmd --conf``), e.g. ``Gres=gpu:2``."""
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def accounting(self) -> bool:
        return any(d.get("kind") == "Accounting" for d in self.docs)

    @property
    def gpus_per_node(self) -> int:
        found = re.search(r"\bGres=gpu(?::[\w.-]+)?:(\d+)", self.slurmd_conf)
        return int(found.group(1)) if found else 0

    def weight(self, name: str) -> int:
        """``PriorityWeight<name>`` as rendered (0 when not rendered)."""
        return int(self.settings.get(f"PriorityWeight{name}", "0"))

    def scheduler_params(self) -> dict[str, str]:
        return param_list(self.settings.get("SchedulerParameters", ""))

    def enforce(self) -> set[str]:
        return set(filter(None, self.settings.get("AccountingStorageEnforce", "").split(",")))


def render(values: Mapping[str, Any]) -> Rendered:
    """``helm template`` of slurm-cluster with ``values`` over :data:`NODESET_VALUES` (fails the
    test on a render error)."""
    result = helm.template(CHART, merge(NODESET_VALUES, values))
    assert result.ok, result.describe()
    controller = next(d for d in result.docs if d["kind"] == "Controller")
    nodesets = [
        d
        for d in result.docs
        if d["kind"] == "NodeSet" and (d["spec"].get("partition") or {}).get("enabled")
    ]
    assert nodesets, "the values give no NodeSet with a partition"
    spec = nodesets[0]["spec"]
    hostname = str(((spec.get("template") or {}).get("spec") or {}).get("hostname") or "")
    name = hostname.split(maxsplit=1)[0].strip("-") if hostname else nodesets[0]["metadata"]["name"]
    extra = str(controller["spec"].get("extraConf") or "")
    return Rendered(
        values=values,
        docs=result.docs,
        extra_conf=extra,
        nodeset=name,
        partition_config=str(spec["partition"].get("config") or ""),
        slurmd_conf=str(spec.get("extraConf") or ""),
        settings=conf_settings(extra),
    )


def node_names(rendered: Rendered, count: int) -> list[str]:
    """Node names as the NodeSet's pods are called (``<nodeset>-0``, ...)."""
    return [f"{rendered.nodeset}-{i}" for i in range(count)]


def slurm_files(rendered: Rendered, nodes: Sequence[str]) -> dict[str, str]:
    """slurm.conf (the chart's lines, then the operator's NodeSet lines, emulated nodes) and
    gres.conf. The chart's gres.conf (``AutoDetect=nvml``) is replaced: emulated nodes have no
    devices, so each GPU is one of the chroot's character devices (:data:`GPU_FILES`)."""
    name = rendered.nodeset
    settings = dict(t.split("=", 1) for t in rendered.slurmd_conf.split() if "=" in t)
    given = (settings.pop("Features", "") + "," + settings.pop("Feature", "")).split(",")
    features = list(dict.fromkeys([name, *filter(None, given)]))  # the NodeSet's name first
    node_extra = " ".join(
        [f"Features={','.join(features)}", *(f"{k}={v}" for k, v in settings.items())]
    )
    conf = "\n".join(
        [
            "# Controller.spec.extraConf, as slurm-cluster rendered it",
            rendered.extra_conf,
            "# emulated slurmd for the NodeSet's pods",
            emulated_nodes(nodes, cpus=NODE_CPUS, memory_mb=NODE_MEMORY_MB, extra=node_extra),
            "# NodeSet and partition, as the operator writes them (buildNodeSetConf)",
            f"NodeSet={name} Feature={name}",
            f"PartitionName={name} Nodes={name} {rendered.partition_config}".rstrip(),
        ]
    )
    files = {"slurm.conf": conf + "\n"}
    gpus = rendered.gpus_per_node
    if gpus:
        typed = re.search(r"\bGres=gpu:([\w.-]+):\d+", rendered.slurmd_conf)
        kind = f" Type={typed.group(1)}" if typed else ""
        assert gpus <= len(GPU_FILES), f"emulated nodes have at most {len(GPU_FILES)} GPUs"
        devices = ",".join(GPU_FILES[:gpus])
        files["gres.conf"] = "".join(f"NodeName={n} Name=gpu{kind} File={devices}\n" for n in nodes)
    return files


@dataclass
class Cluster:
    """A running slurmctld on the chart's lines, its emulated nodes and (with accounting) slurmdbd."""

    ctld: SlurmCtld
    rendered: Rendered
    nodes: list[str]
    dbd: Slurmdbd | None
    timings: dict[str, float]

    def submit(self, *args: str, user: str | None = None, mem: str | None = JOB_MEMORY) -> str:
        """``sbatch`` as ``user``; ``--mem=<mem>`` unless ``mem`` is None or the job is
        ``--exclusive`` (without ``DefMemPerCPU``, which neither chart nor operator sets, a job gets
        its node's whole memory and no two jobs would share a node)."""
        extra = () if mem is None or "--exclusive" in args else (f"--mem={mem}",)
        return self.ctld.submit(*extra, *args, user=user)

    def job(self, job_id: str) -> dict[str, str]:
        return self.ctld.job(job_id)

    def state(self, job_id: str) -> str:
        return self.job(job_id).get("JobState", "")

    def wait(self, job_id: str, *states: str, timeout: float = 60.0) -> dict[str, str]:
        return self.ctld.wait_job(job_id, states, timeout=timeout)

    def cancel(self, *job_ids: str) -> None:
        self.ctld.run(self.ctld._client("scancel"), *job_ids)

    def sacctmgr(self, *args: str) -> str:
        return self.ctld.sacctmgr(*args)

    def hold_state(self, job_id: str, state: str, seconds: float) -> None:
        """Assert the job stays in ``state`` for ``seconds`` (several scheduler passes)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            record = self.job(job_id)
            assert record.get("JobState") == state, record
            time.sleep(0.25)


@contextlib.contextmanager
def cluster(
    values: Mapping[str, Any],
    *,
    root: Path,
    workdir: Path,
    database: MariaDB | None,
    nodes: int = 2,
) -> Iterator[Cluster]:
    """Render ``values``, start slurmdbd (when the values enable accounting), slurmctld and one
    emulated slurmd per node; stop everything on exit."""
    rendered = render(values)
    names = node_names(rendered, nodes)
    files = slurm_files(rendered, names)
    timings: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        dbd = None
        if rendered.accounting:
            assert database is not None, "accounting needs the session's MariaDB"
            t0 = time.monotonic()
            dbd = stack.enter_context(
                release_accounting(
                    rendered.docs, database=database, root=root, workdir=workdir / "slurmdbd"
                )
            )
            timings["slurmdbd"] = time.monotonic() - t0
        t0 = time.monotonic()
        ctld = stack.enter_context(
            slurmctld(
                files, root=root, workdir=workdir / "slurmctld", emulator=True, accounting=dbd
            )
        )
        timings["slurmctld"] = time.monotonic() - t0
        t0 = time.monotonic()
        ctld.start_slurmd(*names)
        timings["slurmd"] = time.monotonic() - t0
        yield Cluster(ctld, rendered, names, dbd, timings)


def sprio_rows(ctld: SlurmCtld, *job_ids: str) -> dict[str, dict[str, float]]:
    """``sprio`` factors per job id: PRIORITY, AGE, FAIRSHARE, JOBSIZE, PARTITION, QOS (weighted,
    as sprio prints them)."""
    fmt = "%i|%Y|%A|%F|%J|%P|%Q"
    out = ctld.sprio("-h", "-o", fmt, "-j", ",".join(job_ids))
    rows = {}
    for line in out.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 7:
            keys = ("PRIORITY", "AGE", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS")
            rows[parts[0]] = {k: float(v) for k, v in zip(keys, parts[1:], strict=True)}
    return rows


def sshare_rows(ctld: SlurmCtld) -> list[dict[str, str]]:
    """``sshare -a -l -P`` rows (Account, User, RawShares, RawUsage, FairShare, LevelFS, ...)."""
    out = ctld.sshare("-a", "-l", "-P")
    lines = [ln for ln in out.splitlines() if ln.strip()]
    header = [h.strip() for h in lines[0].split("|")]
    return [dict(zip(header, (v.strip() for v in ln.split("|")), strict=False)) for ln in lines[1:]]


def sacct_rows(ctld: SlurmCtld, fields: Sequence[str], *args: str) -> list[dict[str, str]]:
    """``sacct -a -X -n -P -o <fields>`` as dicts (one allocation record per job)."""
    out = ctld.sacct("-a", "-X", "-n", "-P", "-o", ",".join(fields), *args)
    return [dict(zip(fields, ln.split("|"), strict=False)) for ln in out.splitlines() if ln.strip()]


def show_config(ctld: SlurmCtld) -> dict[str, str]:
    """``scontrol show config`` as key -> value."""
    out: dict[str, str] = {}
    for line in ctld.scontrol("show", "config").splitlines():
        key, sep, value = line.partition(" = ")
        if sep:
            out[key.strip()] = value.strip()
    return out


def records(text: str) -> list[dict[str, str]]:
    return parse_records(text)
