"""The conformance command's steps, one subpackage per phase: :mod:`.static`, :mod:`.live` and
:mod:`.slurm`, each with its ``STEPS`` in run order."""
