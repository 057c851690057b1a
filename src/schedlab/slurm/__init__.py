"""A real Slurm beside the simulator: a local sandbox of fake GPU nodes (``sandbox``), the
client commands behind one adapter (``client``), replay of a trace on it (``replay``) and the
comparison of what really happened with what the simulator predicts (``agreement``).

Slurm itself comes from Debian's packages (``slurmctld``, ``slurmd``, ``slurm-client``,
``munge``; ``slurmdbd`` and ``mariadb-server`` for accounting); nothing here is needed by the
simulator.
"""
