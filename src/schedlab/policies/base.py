"""Policy interface and the two generic schedulers most policies are built from.

A policy receives ``on_arrival``, ``on_finish``, ``on_timer`` and ``on_node_on`` callbacks, and
``schedule(ctx)`` once per timestamp after all events of that instant; it acts only through
the context (:class:`schedlab.sim.engine.Simulation`).

* :class:`QueueScheduler` - non-preemptive: pending jobs wait in one queue per node pool,
  ordered by a key; each round walks the queue in order and starts what the placer can place.
* :class:`PreemptiveScheduler` - preemptive: each round ranks running and pending jobs together,
  keeps the best that fit the pool's capacity, pauses the running jobs that fell out of that set
  and starts the pending ones that entered it.
"""

from __future__ import annotations

from collections.abc import Callable

from sortedcontainers import SortedList

from schedlab.policies.placers import Placer
from schedlab.sim.job import RUNNING, Job


class Policy:
    """Base class: override the callbacks you need."""

    name = "policy"

    def setup(self, ctx) -> None:
        """Called once before the first event."""

    def on_arrival(self, ctx, job: Job) -> None:
        """A job was submitted; it is pending."""

    def on_finish(self, ctx, job: Job) -> None:
        """A job completed; its GPUs are free."""

    def on_timer(self, ctx, payload: object) -> None:
        """A timer set with ``ctx.set_timer`` fired."""

    def on_node_on(self, ctx, node: int) -> None:
        """A node finished booting."""

    def schedule(self, ctx) -> None:
        """Decide: start, preempt, migrate... through ``ctx``."""


OrderKey = Callable[[object, Job], float]


class QueueScheduler(Policy):
    """Non-preemptive scheduler from an order and a placer.

    ``order(ctx, job)`` is computed once, when the job arrives (a static priority). With
    ``backfill`` a job that cannot be placed is skipped and later jobs may start; without it
    the queue blocks at its head (strict FIFO semantics). Queues are per pool: each VC of a
    partitioned cluster has its own. A round stops walking a queue once its pool is full.
    """

    def __init__(self, name: str, order: OrderKey, placer: Placer, *, backfill: bool = True) -> None:
        self.name = name
        self.order = order
        self.placer = placer
        self.backfill = backfill
        self.queues: dict[str, SortedList] = {}
        self.waiting: dict[int, Job] = {}
        self.fractional_waiting = 0  # a full pool can still take these on partly used GPUs

    def on_arrival(self, ctx, job: Job) -> None:
        pool = ctx.pool_of(job)
        queue = self.queues.get(pool)
        if queue is None:
            queue = self.queues[pool] = SortedList()
        queue.add((self.order(ctx, job), job.idx))
        self.waiting[job.idx] = job
        self.fractional_waiting += job.fractional

    def schedule(self, ctx) -> None:
        for pool, queue in self.queues.items():
            if queue:
                self._drain(ctx, pool, queue)

    def _drain(self, ctx, pool: str, queue: SortedList) -> None:
        state = ctx.state
        pool_groups = state.groups_for(pool, "")
        if state.free_in(pool_groups) == 0 and not self.fractional_waiting:
            return
        started: list[tuple[float, int]] = []
        for entry in queue:
            job = self.waiting[entry[1]]
            fits = job.fractional or job.num_gpus <= state.free_in(ctx.groups_of(job))
            alloc = self.placer.place(ctx, job) if fits else None
            if alloc is None:
                if self.backfill:
                    continue
                break
            ctx.start(job, alloc)
            started.append(entry)
            self.fractional_waiting -= job.fractional
            if state.free_in(pool_groups) == 0 and not self.fractional_waiting:
                break
        for entry in started:
            queue.remove(entry)
            del self.waiting[entry[1]]


PriorityKey = Callable[[object, Job], tuple]


class PreemptiveScheduler(Policy):
    """Preemptive scheduler from a dynamic priority and a placer.

    Every round: rank all active jobs by ``priority(ctx, job)`` (lower runs first); walk the
    ranking and admit jobs while the sum of their GPUs fits the pool's powered-on GPUs; pause
    running jobs that were not admitted (checkpoint, no work lost; restart costs from the
    engine config); place admitted pending jobs in rank order; then, to stay work-conserving,
    also start non-admitted pending jobs that happen to fit. Looks at every active job each
    round: O(A log A) for A active jobs.
    """

    def __init__(self, name: str, priority: PriorityKey, placer: Placer) -> None:
        self.name = name
        self.priority = priority
        self.placer = placer
        self.active: dict[int, Job] = {}

    def on_arrival(self, ctx, job: Job) -> None:
        self.active[job.idx] = job

    def on_finish(self, ctx, job: Job) -> None:
        del self.active[job.idx]

    def schedule(self, ctx) -> None:
        if not self.active:
            return
        ranked = sorted(self.active.values(), key=lambda j: self.priority(ctx, j))
        capacity: dict[str, float] = {}
        admitted: set[int] = set()
        for job in ranked:
            pool = ctx.pool_of(job)
            if pool not in capacity:
                capacity[pool] = self._pool_gpus(ctx, pool)
            need = job.num_gpus
            if need <= capacity[pool]:
                capacity[pool] -= need
                admitted.add(job.idx)
        for job in ranked:
            if job.state == RUNNING and job.idx not in admitted:
                ctx.pause(job)
        for job in ranked:
            if job.state != RUNNING and job.idx in admitted:
                self._try_start(ctx, job)
        for job in ranked:
            if job.state != RUNNING and job.idx not in admitted:
                self._try_start(ctx, job)

    def _try_start(self, ctx, job: Job) -> None:
        alloc = self.placer.place(ctx, job)
        if alloc is not None:
            ctx.start(job, alloc)

    @staticmethod
    def _pool_gpus(ctx, pool: str) -> float:
        return float(ctx.state.pool_gpus_on.get(pool, 0))
