"""Runtime state of one job inside a simulation."""

from __future__ import annotations

import math

PENDING = 0
RUNNING = 1
FINISHED = 2
STATE_NAMES = ("pending", "running", "finished")


class Job:
    """A job as the engine and policies see it.

    Static fields come from the workload row; the rest is runtime state that only the engine
    writes. ``remaining`` is work left in reference-GPU seconds as of ``last_update``; a
    running job progresses at ``rate`` work-seconds per second, except before ``stall_until``
    (restore or migration overhead; ``restart_cost`` is the stall its next start will pay).
    ``run_s`` counts the wall seconds it held GPUs, stalls included; ``served_s`` only those
    outside stalls (its service). ``pause_s``, ``restore_s`` and ``migration_s`` add up the
    checkpoint costs charged to it (:mod:`schedlab.sim.checkpoint`); ``mem_gib`` is its row's
    GPU memory per GPU (NaN: the cost model's default); ``time_limit`` its row's requested
    run-time limit (NaN: none), read only by policies that plan with limits (Slurm's). A
    policy keeps its own per-job state in a mapping of its own, keyed by ``idx``.
    """

    __slots__ = (
        "idx", "id", "submit", "user", "tenant", "name", "cls", "num_gpus", "gpus_per_worker",
        "gpu_type", "work", "ckpt_interval", "model", "deadline",
        "state", "alloc", "milli", "rate", "remaining", "last_update", "stall_until", "restart_cost", "version",
        "first_start", "end", "queue_s", "queued_since", "run_s", "served_s", "run_since", "preemptions",
        "migrations", "lost_work", "gpu_seconds", "work_done", "saved_progress", "colocated", "shared_s", "shared_since",
        "copies", "elastic", "mem_gib", "time_limit", "pause_s", "restore_s", "migration_s", "fractional",
    )  # fmt: skip

    def __init__(
        self,
        idx: int,
        job_id: str,
        submit: float,
        user: str,
        tenant: str,
        name: str,
        cls: str,
        num_gpus: float,
        gpus_per_worker: float,
        gpu_type: str,
        work: float,
        ckpt_interval: float,
        model: str,
        deadline: float,
        mem_gib: float = math.nan,
        time_limit: float = math.nan,
    ) -> None:
        self.idx = idx
        self.id = job_id
        self.submit = submit
        self.user = user
        self.tenant = tenant
        self.name = name
        self.cls = cls
        self.num_gpus = num_gpus
        self.gpus_per_worker = gpus_per_worker
        self.gpu_type = gpu_type
        self.work = work
        self.ckpt_interval = ckpt_interval
        self.model = model
        self.deadline = deadline
        self.fractional = num_gpus < 1  # asks for part of one GPU
        self.state = PENDING
        self.alloc: tuple[tuple[int, tuple[int, ...]], ...] = ()
        self.milli = 1000 if num_gpus >= 1 else max(1, int(round(num_gpus * 1000)))
        self.rate = 0.0
        self.remaining = work
        self.last_update = submit
        self.stall_until = 0.0
        self.restart_cost = 0.0
        self.version = 0
        self.first_start = float("nan")
        self.end = float("nan")
        self.queue_s = 0.0
        self.queued_since = submit
        self.run_s = 0.0
        self.served_s = 0.0
        self.run_since = 0.0
        self.preemptions = 0
        self.migrations = 0
        self.lost_work = 0.0
        self.gpu_seconds = 0.0
        self.work_done = 0.0
        self.saved_progress = 0.0
        self.colocated = False
        self.shared_s = 0.0  # wall seconds spent sharing a GPU with another job
        self.shared_since = 0.0
        self.copies: tuple[tuple[int, ...], ...] = ()  # nodes of each forked copy (Simulation.fork)
        self.mem_gib = mem_gib
        self.time_limit = time_limit  # the user's run-time limit, wall seconds (NaN = none)
        self.pause_s = 0.0  # checkpoint saves of its pauses
        self.restore_s = 0.0  # restores and restarts after its pauses and evictions
        self.migration_s = 0.0  # stalls of its migrations
        self.elastic = False  # resized at least once (Simulation.resize): it holds its allocation's GPUs

    @property
    def held_gpus(self) -> float:
        """GPUs the job holds: its request, or its allocation's GPUs when it runs forked or resized."""
        return sum(len(g) for _, g in self.alloc) if self.copies or self.elastic else self.num_gpus

    @property
    def nodes(self) -> tuple[int, ...]:
        alloc = self.alloc
        return (alloc[0][0],) if len(alloc) == 1 else tuple([node for node, _ in alloc])

    def checkpointed(self, progress: float) -> float:
        """The progress an eviction at ``progress`` would resume from: the later of the last
        periodic checkpoint (every ``ckpt_interval`` of work; 0 = continuous, inf = never)
        and the last explicit save (a pause or migration)."""
        interval = self.ckpt_interval
        if interval == 0:
            periodic = progress
        elif math.isinf(interval):
            periodic = 0.0
        else:
            periodic = math.floor(progress / interval) * interval
        return min(max(self.saved_progress, periodic), progress)

    def __repr__(self) -> str:
        return f"Job({self.id!r}, gpus={self.num_gpus:g}, {STATE_NAMES[self.state]})"
