"""The queue objects and the two generic schedulers most policies are built from
(the policy interface itself is :mod:`schedlab.sim.policy`).

* :class:`QueueScheduler` - non-preemptive: pending jobs wait in one queue per node pool,
  ordered by a key; each round walks the queue in order and starts what the placer can place.
* :class:`PreemptiveScheduler` - preemptive: each round ranks running and pending jobs together,
  keeps the best that fit the pool's capacity, pauses the running jobs that fell out of that set
  and starts the pending ones that entered it; a restarted job is first guaranteed some
  progress (:func:`guard_ends`).
* :class:`ClassQueues` - pending high-priority and spot jobs in shape queues, FIFO by
  submission or by a given order (GFS and its baselines).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from functools import partial

from sortedcontainers import SortedList

from schedlab.policies.common.placers import Placer, RandomFit
from schedlab.sim.job import RUNNING, Job
from schedlab.sim.policy import Context, Policy


def job_shape(job: Job) -> tuple[float, float, str]:
    """What placement depends on: GPUs, GPUs per worker (0 = any split; NaN would never
    compare equal) and GPU type."""
    gpw = job.gpus_per_worker
    return (job.num_gpus, gpw if gpw == gpw else 0.0, job.gpu_type)


def add_to_shape_queue(shapes: dict[tuple, SortedList], job: Job, order: float) -> None:
    """Queue ``job`` under its shape, ordered by ``order`` then arrival index."""
    key = job_shape(job)
    queue = shapes.get(key)
    if queue is None:
        queue = shapes[key] = SortedList()
    queue.add((order, job.idx))


def drain_shapes(shapes: dict[tuple, SortedList], waiting: dict[int, Job], try_start: Callable[[Job, tuple], bool]) -> None:
    """Offer the head job of every shape, in queue order, to ``try_start(job, shape)``. A job
    that starts leaves its queue and ``waiting``, and the next job of its shape is offered; a
    shape whose head does not start is passed over for the round (backfill across shapes).
    Shapes left empty are dropped, so that only shapes with jobs are walked."""
    heads = [(queue[0], key) for key, queue in shapes.items() if queue]
    heapq.heapify(heads)
    while heads:
        entry, key = heapq.heappop(heads)
        if not try_start(waiting[entry[1]], key):
            continue
        queue = shapes[key]
        queue.remove(entry)
        del waiting[entry[1]]
        if queue:
            heapq.heappush(heads, (queue[0], key))
        else:
            del shapes[key]


class ClassQueues:
    """Pending high-priority and spot jobs: per class, per key (a job's shape, or pool and
    shape), ordered by ``order(job)`` (submission time by default), drained HP or spot with
    :func:`drain_shapes`. The queue object GFS and its baselines (spot FCFS, Chronus) share."""

    def __init__(self, order: Callable[[Job], object] | None = None) -> None:
        self.queues: dict[bool, dict[tuple, SortedList]] = {False: {}, True: {}}  # keyed by "is spot"
        self.waiting: dict[int, Job] = {}
        self.order = order

    def _entry(self, job: Job) -> tuple:
        return (job.submit if self.order is None else self.order(job), job.idx)

    def add(self, job: Job, key: tuple, *, spot: bool) -> None:
        queue = self.queues[spot].get(key)
        if queue is None:
            queue = self.queues[spot][key] = SortedList()
        queue.add(self._entry(job))
        self.waiting[job.idx] = job

    def remove(self, job: Job, key: tuple, *, spot: bool) -> None:
        shapes = self.queues[spot]
        shapes[key].remove(self._entry(job))
        if not shapes[key]:
            del shapes[key]
        del self.waiting[job.idx]

    def drain(self, try_start: Callable[[Job, tuple], bool], *, spot: bool) -> None:
        """Offer the head of each queue of a class to ``try_start(job, key)`` (see :func:`drain_shapes`)."""
        drain_shapes(self.queues[spot], self.waiting, try_start)


OrderKey = Callable[[Context, Job], float]


class QueueScheduler(Policy):
    """Non-preemptive scheduler from an order and a placer.

    ``order(ctx, job)`` is computed once, when the job arrives (a static priority). Without
    ``backfill`` each queue blocks at its head (strict FIFO semantics, as in Helios); with it,
    a job that cannot be placed is passed over and later jobs may start.

    Queues are per pool (each VC of a partitioned cluster has its own), and inside a pool per
    job *shape* (GPUs, GPUs per worker, GPU type): jobs of one shape are interchangeable for a
    deterministic placer, so when the first of a shape cannot be placed none of that shape can,
    and a round looks only at the heads of the shape queues. A round costs
    O(shapes x log + jobs started), not O(queue length).
    """

    def __init__(self, name: str, order: OrderKey, placer: Placer, *, backfill: bool = False) -> None:
        self.name = name
        self.order = order
        self.placer = placer
        self.backfill = backfill
        self.pools: dict[str, dict[tuple, SortedList]] = {}
        self.waiting: dict[int, Job] = {}
        self.exchangeable = not isinstance(placer, RandomFit)

    def on_arrival(self, ctx: Context, job: Job) -> None:
        add_to_shape_queue(self.pools.setdefault(ctx.pool_of(job), {}), job, self.order(ctx, job))
        self.waiting[job.idx] = job

    def schedule(self, ctx: Context) -> None:
        for pool, shapes in self.pools.items():
            if self.exchangeable:
                self._drain(ctx, pool, shapes)
            else:
                self._drain_each(ctx, shapes)

    def _drain(self, ctx: Context, pool: str, shapes: dict[tuple, SortedList]) -> None:
        state = ctx.state
        pool_groups = state.groups_for(pool, "")
        heads = [(queue[0], key) for key, queue in shapes.items() if queue]
        heapq.heapify(heads)
        while heads:
            entry, key = heapq.heappop(heads)
            job = self.waiting[entry[1]]
            fits = job.fractional or job.num_gpus <= state.free_in(ctx.groups_of(job))
            alloc = self.placer.place(ctx, job) if fits else None
            if alloc is None:
                if not self.backfill:
                    return
                continue  # no job of this shape can be placed in this round
            ctx.start(job, alloc)
            queue = shapes[key]
            queue.pop(0)
            del self.waiting[entry[1]]
            if queue:
                heapq.heappush(heads, (queue[0], key))
            else:
                del shapes[key]  # only shapes with jobs are walked
            if state.free_in(pool_groups) == 0 and not (self.backfill and self._fractions_waiting(shapes)):
                return

    def _drain_each(self, ctx: Context, shapes: dict[tuple, SortedList]) -> None:
        """For a randomised placer, where jobs of one shape are not interchangeable: walk the
        pool's jobs in order (O(queue length))."""
        merged = sorted(entry + (key,) for key, queue in shapes.items() for entry in queue)
        for order_key, idx, key in merged:
            job = self.waiting[idx]
            alloc = self.placer.place(ctx, job)
            if alloc is None:
                if not self.backfill:
                    return
                continue
            ctx.start(job, alloc)
            shapes[key].remove((order_key, idx))
            del self.waiting[idx]

    @staticmethod
    def _fractions_waiting(shapes: dict[tuple, SortedList]) -> bool:
        return any(key[0] < 1 and queue for key, queue in shapes.items())


PriorityKey = Callable[[Context, Job], tuple]
GUARD_ENDS = "guard-ends"  # timer payload of PreemptiveScheduler: a progress guard has ended


def guard_ends(job: Job) -> float:
    """When a running job may be paused by a :class:`PreemptiveScheduler`: once it has
    progressed, after the stall its (re)start paid (restore, migration), for as long as the
    stall lasted. So a restarted job progresses before it is paused again, and a paused run
    spent at most half its time stalled; a job started without a stall is not guarded."""
    return 2.0 * job.stall_until - job.run_since


class PreemptiveScheduler(Policy):
    """Preemptive scheduler from a dynamic priority and a placer.

    Every round: rank all active jobs by ``priority(ctx, job)`` (lower runs first) and admit
    jobs in rank order while the sum of their GPUs fits the pool's powered-on GPUs. Each
    admitted pending job, in rank order, is placed; if it does not fit, running jobs that were
    not admitted are paused, lowest rank first, until it does - only when releasing their GPUs
    in a what-if check shows that the placer can then place it; otherwise nothing is paused
    for it until some job finishes or a running job leaves its progress guard (:func:`guard_ends`:
    until then it is never a victim). Paused jobs keep their work (checkpointed; the engine
    charges the restart cost). Then, to stay work-conserving, pending jobs that were not admitted start if
    they fit, except jobs paused in this round. A round with pending jobs ranks every active
    job: O(A log A) for A active jobs; a round with none returns at once, and a round where
    all active jobs fit their pools ranks only the pending ones.
    """

    def __init__(self, name: str, priority: PriorityKey, placer: Placer) -> None:
        self.name = name
        self.priority = priority
        self.placer = placer
        self.active: dict[int, Job] = {}
        self.blocked: set[int] = set()  # admitted jobs that preemption could not place
        self.fractions = 0  # active jobs asking for part of a GPU
        self.demand: dict[str, float] = {}  # GPUs asked for by active jobs, per pool
        self.exchangeable = not isinstance(placer, RandomFit)
        self.wake_at = -math.inf  # the latest GUARD_ENDS timer

    def on_arrival(self, ctx: Context, job: Job) -> None:
        self.active[job.idx] = job
        self.fractions += job.fractional
        pool = ctx.pool_of(job)
        self.demand[pool] = self.demand.get(pool, 0.0) + job.num_gpus

    def on_finish(self, ctx: Context, job: Job) -> None:
        del self.active[job.idx]
        self.fractions -= job.fractional
        self.demand[ctx.pool_of(job)] -= job.num_gpus
        self.blocked.clear()  # GPUs were freed: preempting may help again

    def on_timer(self, ctx: Context, payload: object) -> bool | None:
        """A subclass with timers of its own passes :data:`GUARD_ENDS` on to this method."""
        if payload == GUARD_ENDS:
            self.blocked.clear()  # more jobs may be victims now
            return True
        return None

    def schedule(self, ctx: Context) -> None:
        if ctx.pending_count == 0:
            return  # everyone runs: nothing to rank, nobody to preempt
        key = partial(self.priority, ctx)
        capacity = ctx.state.pool_gpus_on
        if all(d <= capacity.get(pool, 0) for pool, d in self.demand.items()):
            self._start_all_fitting(ctx, key)
            return
        ranked = sorted(self.active.values(), key=key)
        partitioned = ctx.cluster.partitioned
        capacity: dict[str, float] = dict(ctx.state.pool_gpus_on)
        open_pools = sum(1 for c in capacity.values() if c > 0)
        admitted: set[int] = set()
        waiting: list[Job] = []  # admitted but not running, in rank order
        for job in ranked:
            if not open_pools:
                break  # every pool is full: the rest is not admitted
            pool = job.tenant if partitioned else ""
            cap = capacity[pool]
            if job.num_gpus <= cap:
                capacity[pool] = cap - job.num_gpus
                admitted.add(job.idx)
                if job.state != RUNNING:
                    waiting.append(job)
                if capacity[pool] == 0:
                    open_pools -= 1
        victims: dict[str, list[Job]] = {}
        guarded: dict[str, float] = {}  # per pool: the first end of a guard that spares a job
        for job in sorted((j for j in ctx.running.values() if j.idx not in admitted), key=key):
            pool = ctx.pool_of(job)
            until = guard_ends(job)
            if ctx.now < until:
                guarded[pool] = min(guarded.get(pool, math.inf), until)
            else:
                victims.setdefault(pool, []).append(job)
        paused: set[int] = set()
        failed: set[tuple] = set()  # shapes that did not fit since the last pause
        for job in waiting:
            self._start_preempting(ctx, job, victims.get(ctx.pool_of(job), []), paused, failed)
        wake = min((guarded.get(ctx.pool_of(j), math.inf) for j in waiting if j.state != RUNNING), default=math.inf)
        if wake < math.inf and not ctx.now < self.wake_at <= wake:
            ctx.set_timer(wake, GUARD_ENDS)
            self.wake_at = wake
        state = ctx.state
        if state.free_total() == 0 and not self.fractions:
            return  # nothing free to backfill (fractional jobs may still fit on shared GPUs)
        for job in ranked:
            if job.state != RUNNING and job.idx not in admitted and job.idx not in paused:
                if state.free_in(ctx.groups_of(job)) > 0 or job.fractional:
                    self._try(ctx, job, failed)

    def _start_all_fitting(self, ctx: Context, key) -> None:
        """Every active job would be admitted, so nobody is a victim: the full round reduces to
        placing the pending jobs in rank order (the same decisions, without ranking everyone)."""
        failed: set[tuple] = set()
        for job in sorted((j for j in self.active.values() if j.state != RUNNING), key=key):
            if not self._try(ctx, job, failed):
                self.blocked.add(job.idx)

    def _try(self, ctx: Context, job: Job, failed: set[tuple]) -> bool:
        """Place and start ``job`` if it fits; remember a shape that does not (the same
        shape will not fit either, for a deterministic placer)."""
        shape = (job.tenant if ctx.cluster.partitioned else "", *job_shape(job))
        if shape in failed:
            return False
        alloc = self.placer.place(ctx, job)
        if alloc is None:
            if self.exchangeable:
                failed.add(shape)
            return False
        self._start(ctx, job, alloc)
        return True

    def _start_preempting(self, ctx: Context, job: Job, victims: list[Job], paused: set[int], failed: set[tuple]) -> None:
        if self._try(ctx, job, failed) or job.idx in self.blocked:
            return
        chosen = self._victims_that_make_room(ctx, job, victims)
        if chosen is None:
            self.blocked.add(job.idx)  # no set of victims frees a placement: wait for a finish
            return
        for victim in chosen:
            victims.remove(victim)
            ctx.pause(victim)
            self.paused(ctx, victim)
            paused.add(victim.idx)
        failed.clear()
        self._try(ctx, job, failed)

    def _victims_that_make_room(self, ctx: Context, job: Job, victims: list[Job]) -> list[Job] | None:
        """The fewest lowest-ranked victims whose GPUs, once freed, let the placer place
        ``job``; found in a what-if check on the cluster state (undone on leaving it)."""
        state = ctx.state
        freeable = state.free_in(ctx.groups_of(job)) + sum(v.num_gpus for v in victims)
        if freeable < job.num_gpus:
            return None
        chosen: list[Job] = []
        with state.what_if() as release:
            for victim in reversed(victims):  # lowest rank first
                if victim.colocated:
                    continue
                release(victim.alloc, victim.milli)
                chosen.append(victim)
                if self.placer.place(ctx, job) is not None:
                    return chosen
        return None

    def _start(self, ctx: Context, job: Job, alloc) -> None:
        ctx.start(job, alloc)
        self.started(ctx, job)

    def started(self, ctx: Context, job: Job) -> None:
        """Hook: this scheduler just started (or resumed) ``job``."""

    def paused(self, ctx: Context, job: Job) -> None:
        """Hook: this scheduler just paused ``job``."""
