"""Real Slurm daemons in the chroot (slurmctld, slurmd, slurmdbd) and the topology oracle."""
