"""Slurm 22.05's own scheduler as policies: ``slurm`` (sched/builtin) and ``slurm-backfill``
(sched/backfill), both with priority/multifactor and select/cons_tres-style node choice.

Modules: :mod:`.params` (``SlurmParams``, reading a ``slurm.conf``), :mod:`.priority`
(multifactor priority and fair-share usage), :mod:`.nodes` (a job's ``-N``/``--gres`` request
and cons_tres's choice of nodes), :mod:`.builtin` (the main scheduler) and :mod:`.backfill`
(the backfill cycle). docs/slurm-scheduler.md lists every rule with its source.
"""
