"""Real Slurm 26.05 for tests: a cached Debian sid chroot and throw-away ``slurmctld`` instances.

Modules: :mod:`.conf` (the slurm.conf the harness composes), :mod:`.ctld` (a running slurmctld
with emulated slurmd and slurmrestd), :mod:`.check` (does slurmctld accept a config?),
:mod:`.dbd_conf` and :mod:`.dbd` (slurmdbd and MariaDB; ``accounting_daemon`` for a release's
``Accounting`` object), :mod:`.topology` (the oracle), :mod:`.release` (what a slurm-cluster
release asks of slurmctld: its partitions and their NodeSets' nodes, topologies).

Debian bookworm ships Slurm 22.05 (no ``topology.yaml``, no ``topology/block``), so the tier runs
Debian sid's Slurm 26.05 packages in a debootstrap chroot cached outside the clone and reused (see
:mod:`slinky_harness.build.slurm_chroot`). Needs Linux, root, ``unshare``, ``chroot`` and ``mount``; no
systemd, no Docker, no munge; slurmd only for real jobs (the emulator build, see below). A second
chroot, Debian trixie's Slurm 24.11 (slurmctld and the client commands only), holds version-dependent
output (``ensure_chroot(suite="trixie")``; ``slurmctld(files, root=...)`` runs either).

API (what a test needs; all typed)::

    from slinky_harness.build.slurm_chroot import (
        ensure_chroot,        # (suite="sid") -> Path: build once (~1.5 min cold), then reuse (< 1 ms)
        chroot_info,          # (root) -> ChrootInfo(slurm_version, emulator, build_seconds, ...)
    )
    from slinky_harness.slurm.ctld import (
        slurmctld,            # context manager -> SlurmCtld (below)
        SlurmCommandError,    # a command failed (.returncode, .stdout, .stderr)
        SlurmctldStartError,  # slurmctld exited during start-up or never answered (.log)
    )
    from slinky_harness.slurm.conf import emulated_nodes, parse_records  # "Key=Value" -> dicts
    from slinky_harness.slurm.check import check_load  # (files, root=...) -> LoadResult

    files = {  # or a folder (Path) holding these files
        "slurm.conf": "MaxNodeCount=64\\n"
                      "NodeName=n[1-8] CPUs=1 State=CLOUD\\n"
                      "PartitionName=all Nodes=ALL Default=YES\\n",
        "topology.yaml": yaml_text,  # topology.conf, gres.conf, ...: str, bytes or a Path
    }
    with slurmctld(files, root=ensure_chroot(), workdir=tmp_path / "c1") as ctld:
        ctld.scontrol("show", "topology")      # stdout; SlurmCommandError on failure
        ctld.show_topology("nvl")              # scontrol show topology nvl
        parse_records(ctld.show_topology())    # [{"SwitchName": "leaf1", "Level": "0", ...}]
        ctld.create_node("d1", "fabric:leaf2,nvl:b3")  # dynamic node (recipe below)
        ctld.set_node_topology("d1", "fabric:leaf4")   # scontrol update NodeName=d1 Topology=
        ctld.node_topology("d1")               # "fabric:leaf4", as slurmctld reports it
        ctld.hostnames("n[1-3]")               # ["n1", "n2", "n3"]: Slurm's hostlist oracle
        ctld.sinfo("-h", "-o", "%N")
        ctld.run("sbatch", "--test-only", "-N", "2", "--wrap", "true", check=False)
        ctld.write_file("topology.yaml", new_text)
        ctld.reconfigure()                     # scontrol reconfigure, wait until re-read
        ctld.log()                             # everything slurmctld logged so far

    # real jobs: emulated slurmd (slurm-wlm-emulator; chroot_info(root).emulator says if present)
    conf = "TopologyPlugin=topology/block\\n" + emulated_nodes(["gpu01", "gpu02"]) + partitions
    with slurmctld({"slurm.conf": conf, ...}, emulator=True) as ctld:
        ctld.start_slurmd("gpu01", "gpu02")    # one slurmd each, waits until idle
        ctld.run("srun", "-N", "2", "hostname")
        job = ctld.run_job("-N", "2", "--segment=2", "--wrap", "true")  # waits for the end
        job["JobState"], job["NodeList"]       # "COMPLETED", "gpu[01-02]"
        job_id = ctld.submit("--wrap", "sleep 60", user="alice")  # as a chroot user (TEST_USERS)
        ctld.wait_job(job_id, {"RUNNING"})     # its record once in one of the states
        ctld.job(job_id)["Reason"]

    # accounting: real slurmdbd 26.05 + MariaDB (slinky_harness.slurm.dbd has the details)
    with mariadb() as db, release_accounting(helm_docs, database=db) as dbd, \
            slurmctld(files, accounting=dbd, emulator=True) as ctld:
        ctld.sacctmgr("add", "account", "physics")  # sacctmgr -i; also sacct, sshare, sprio

    result = check_load(files, root=ensure_chroot())  # start, read every topology, stop
    result.accepted    # started, and `scontrol show topology [name]` worked for all
    result.started     # False: slurmctld refused the files (exited during start-up)
    result.errors      # log lines with fatal/error: why it was rejected
    result.warnings    # log lines with "warning:": what Slurm accepted but complained about
    result.topologies  # {"": default topology, "<name>": ...} (names from topology.yaml)

By hand: ``python -m slinky_harness.build.slurm_chroot`` (build or reuse, print what it holds) and
``python -m slinky_harness.slurm.check DIR...`` (accepted/REJECTED per config folder, with Slurm's
reasons; exit 1 when any is rejected).

In ``tests/slurm`` use the fixtures of its conftest: ``slurm_root`` (session: the chroot),
``slurm_data`` (``tests/data/slurm``) and ``start_ctld`` (``with start_ctld(files) as ctld:``, a
fresh work folder under ``tmp_path``, start-up times reported in the summary). The oracle
:mod:`slinky_harness.slurm.topology` parses topology.conf/topology.yaml input and ``scontrol show
topology`` output into comparable shapes (``read_tree``, ``read_blocks``). A generated-topology
test looks like::

    def test_generated_loads(start_ctld: CtldFactory, slurm_root: Path) -> None:
        files = {"slurm.conf": "MaxNodeCount=1024\\nPartitionName=all Nodes=ALL\\n",
                 "topology.yaml": skeleton_yaml}            # the generator's output
        result = check_load(files, root=slurm_root)
        assert result.accepted, result.errors
        with start_ctld(files) as ctld:
            for node, spec in annotations.items():         # topology.slinky.slurm.net/spec
                ctld.create_node(node, spec)               # SlurmCommandError if refused
                assert ctld.node_topology(node) == spec

The ``slurm.conf`` you give holds only the cluster part (nodes, partitions, ``TopologyPlugin``,
``MaxNodeCount``, ``TopologyParam``, ...). The harness adds the keys it owns and refuses them in
your text (:data:`HARNESS_KEYS`): ``SlurmctldHost``, ``SlurmctldPort``, ``SlurmdPort``,
``SlurmUser``, ``StateSaveLocation``, ``SlurmctldPidFile``, ``SlurmctldLogFile``, ``AuthType``,
``CredType`` (``auth/slurm`` and ``cred/slurm`` with a generated 1 KiB ``slurm.key``, owned by
``slurm``, mode 600, as Slinky uses) and ``AccountingStorageType``/``Host``/``Port`` (set only
with ``accounting=``: a running :class:`slinky_harness.slurm.dbd.Slurmdbd`, whose ``slurm.key``
the controller then shares). It adds ``ClusterName=slinky``, ``SlurmctldDebug=info``,
``MailProg=/bin/true`` and slurmd spool/pid/log paths unless your text sets them, and writes
``cgroup.conf`` with ``CgroupPlugin=disabled`` unless you give one (no cgroup filesystem in the
chroot).

How a controller runs, and why several can run at once:

* Its files live in a host work folder (``workdir``; by default a temporary folder deleted on exit
  unless ``keep=True``): ``etc/`` (slurm.conf, your files, slurm.key), ``state/``, ``spool/``,
  ``run/``, ``slurmctld.log``, ``slurmctld.pid`` and ``slurmctld.stderr`` (what
  :meth:`SlurmCtld.log` returns: in ``-D`` mode it also holds errors from before the log file is
  opened).
* Every process started in the chroot (daemon and clients) runs in its own private mount namespace
  in which that folder is bind-mounted on ``/srv/slinky`` and its ``run/`` on ``/run``: each
  controller sees its own ``/srv/slinky/etc/slurm.conf`` (clients get ``SLURM_CONF``), state folder
  and ``/run/slurmctld/sack.socket`` (auth/slurm hands local clients their tokens through that
  socket; with a shared ``/run`` a client would get a token from the wrong controller and fail with
  "Protocol authentication error"). No mount outlives its process, even on SIGKILL. Clients need
  neither ``/proc`` nor ``/dev`` mounted (debootstrap creates the device nodes).
* ``/usr/sbin/slurmctld-wlm -D -i -f /srv/slinky/etc/slurm.conf`` (foreground, ignore state; the
  ``-wlm-emulator`` build with ``emulator=True``; started by absolute path, else it needs
  ``/proc/self/exe``) runs in its own process group, UTS namespace (host name ``slurmctld``,
  127.0.0.1 in the chroot's ``/etc/hosts``) and PID namespace with a fresh ``/proc``, on a free
  port from 20000-29999 (``SlurmctldPort``; a distinct ``SlurmdPort``). Start-up waits until
  ``scontrol ping`` answers: about 0.1 s (0.3 s with file writing) on the project's 2-core machines.
* On exit emulated slurmd are stopped, then slurmctld's process group gets SIGTERM (it saves state
  and exits; SIGKILL after 10 s), also when the body raised. Each daemon's PID namespace is tied
  to the test process (``unshare --kill-child`` plus a parent-death signal; a shell stays the
  namespace's first process because slurmctld's switch to ``SlurmUser`` would clear that signal),
  so daemons and job steps die even when the test process is killed with SIGKILL.
* ``scontrol show ...`` exits 0 even when the request failed; :class:`CommandResult` ``.ok`` (and so
  ``check=True``) also treats an ``error`` on stderr as a failure.

Node recipe for topology annotations (found by experiment with Slurm 26.05.5):

* Static nodes: declare them ``NodeName=n[1-8] CPUs=1 State=CLOUD``: no slurmd is needed and they
  show as idle/powered down. Plain static nodes need ``NodeAddr=127.0.0.1`` (or resolvable names):
  otherwise slurmctld blocks about 5 s per node on name resolution at start-up.
  ``scontrol update NodeName=n1 Topology=default:leaf2`` moves a static node (the single topology
  of a ``topology.conf`` is named ``default``).
* Dynamic nodes (what Slinky's ``slurmd -Z`` produces): set ``MaxNodeCount=<n>`` in slurm.conf;
  ``scontrol create NodeName=d1 CPUs=1 State=CLOUD Topology=fabric:leaf2,nvl:b3``
  (:meth:`SlurmCtld.create_node`; ``scontrol create`` only accepts ``State=CLOUD``, ``FUTURE`` or
  ``EXTERNAL``), then ``scontrol update NodeName=d1 Topology=...``
  (:meth:`SlurmCtld.set_node_topology`) replaces the node's whole placement; an empty string takes
  it out of every topology. A skeleton topology.yaml (switches and blocks without nodes) loads.
* A tree spec may be a path from an existing switch (``fabric:spine1:leaf9`` creates ``leaf9``
  under ``spine1``); a block spec must name an existing block and a topology name must exist, else
  ``scontrol`` exits 1 ("Requested topology configuration is not available"), raised as
  :class:`SlurmCommandError`. Every unused ``MaxNodeCount`` slot counts as a node in no switch or
  block, so expect a "lack access to N nodes" warning when it is set.
"""
