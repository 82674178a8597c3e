"""Builds, cached outside the clone: pinned tools, the control plane with the Slinky binaries,
the Slurm chroot, the labeler image."""
