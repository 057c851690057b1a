"""The queue objects and the non-preemptive scheduler most policies are built from (the
policy interface itself is :mod:`schedlab.sim.policy`; the preemptive scheduler is
:mod:`schedlab.policies.common.preemptive`).

* :class:`QueueScheduler` - non-preemptive: pending jobs wait in one queue per node pool,
  ordered by a key; each round walks the queue in order and starts what the placer can place.
* :class:`ClassQueues` - pending high-priority and spot jobs in shape queues, FIFO by
  submission or by a given order (GFS and its baselines).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from mypy_extensions import mypyc_attr
from sortedcontainers import SortedList

from schedlab.policies.common.placers import Placer, RandomFit, worker_size
from schedlab.sim.job import Job
from schedlab.sim.policy import Context, Policy


Key = tuple[Any, ...]  # a queue's shape key or an entry (order, arrival index): compared, hashed


def job_shape(job: Job) -> tuple[float, float, str]:
    """What placement depends on: GPUs, GPUs per worker (0 = any split; NaN would never
    compare equal) and GPU type."""
    gpw = job.gpus_per_worker
    return (job.num_gpus, gpw if gpw == gpw else 0.0, job.gpu_type)


def drain_shapes(shapes: dict[Key, SortedList], waiting: dict[int, Job], try_start: Callable[[Job, Key], bool]) -> None:
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
        self.queues: dict[bool, dict[Key, SortedList]] = {False: {}, True: {}}  # keyed by "is spot"
        self.waiting: dict[int, Job] = {}
        self.order = order

    def _entry(self, job: Job) -> Key:
        return (job.submit if self.order is None else self.order(job), job.idx)

    def add(self, job: Job, key: Key, *, spot: bool) -> None:
        queue = self.queues[spot].get(key)
        if queue is None:
            queue = self.queues[spot][key] = SortedList()
        queue.add(self._entry(job))
        self.waiting[job.idx] = job

    def remove(self, job: Job, key: Key, *, spot: bool) -> None:
        shapes = self.queues[spot]
        shapes[key].remove(self._entry(job))
        if not shapes[key]:
            del shapes[key]
        del self.waiting[job.idx]

    def drain(self, try_start: Callable[[Job, Key], bool], *, spot: bool) -> None:
        """Offer the head of each queue of a class to ``try_start(job, key)`` (see :func:`drain_shapes`)."""
        drain_shapes(self.queues[spot], self.waiting, try_start)


OrderKey = Callable[[Context, Job], float]


@mypyc_attr(allow_interpreted_subclasses=True)  # e.g. QSSF; with a compiled core (setup.py)
class QueueScheduler(Policy):
    """Non-preemptive scheduler from an order and a placer.

    ``order(ctx, job)`` is computed once, when the job arrives (a static priority). Without
    ``backfill`` each queue blocks at its head (strict FIFO semantics, as in Helios); with it,
    a job that cannot be placed is passed over and later jobs may start.

    Queues are per pool (each VC of a partitioned cluster has its own), and inside a pool per
    job *shape* (GPUs, GPUs per worker, GPU type): jobs of one shape are interchangeable for a
    deterministic placer, so when the first of a shape cannot be placed none of that shape can,
    and a round looks only at the heads of the shape queues. A round costs
    O(shapes x log + jobs started), not O(queue length). A shape queue is a binary heap of
    (order, arrival index): its head is the least, and entries never change while they wait.
    """

    def __init__(self, name: str, order: OrderKey, placer: Placer, *, backfill: bool = False) -> None:
        self.name = name
        self.order = order
        self.placer = placer
        self.backfill = backfill
        self.pools: dict[str, dict[Key, list[Key]]] = {}
        self.waiting: dict[int, Job] = {}
        self.exchangeable = not isinstance(placer, RandomFit)
        self.settled: dict[str, int] = {}  # pool -> its state's version when a round last left it

    def on_arrival(self, ctx: Context, job: Job) -> None:
        pool = ctx.pool_of(job)
        shapes = self.pools.get(pool)
        if shapes is None:
            shapes = self.pools[pool] = {}
        key = job_shape(job)
        queue = shapes.get(key)
        if queue is None:
            queue = shapes[key] = []
        heapq.heappush(queue, (self.order(ctx, job), job.idx))
        self.waiting[job.idx] = job
        self.settled.pop(pool, None)

    def schedule(self, ctx: Context) -> None:
        """Drain each pool's queues; with a deterministic placer, skip a pool where nothing has
        changed (no arrival, no allocation or power change) since a round left it: the same
        drain would start nothing."""
        if not self.waiting:
            return
        if not self.exchangeable:
            for shapes in self.pools.values():
                self._drain_each(ctx, shapes)
            return
        if len(self.pools) == 1:  # a lone pool is drained every round: the bookkeeping would cost more
            for pool, shapes in self.pools.items():
                self._drain(ctx, pool, shapes)
            return
        versions = ctx.state.pool_version
        settled = self.settled
        for pool, shapes in self.pools.items():
            if settled.get(pool) != versions[pool]:
                self._drain(ctx, pool, shapes)
                settled[pool] = versions[pool]

    def _drain(self, ctx: Context, pool: str, shapes: dict[Key, list[Key]]) -> None:
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
            heapq.heappop(queue)
            del self.waiting[entry[1]]
            if queue:
                heapq.heappush(heads, (queue[0], key))
            else:
                del shapes[key]  # only shapes with jobs are walked
            if state.free_in(pool_groups) == 0 and not (self.backfill and self._fractions_waiting(shapes)):
                return

    def _drain_each(self, ctx: Context, shapes: dict[Key, list[Key]]) -> None:
        """For a randomised placer, where jobs of one shape are not interchangeable: walk the
        pool's jobs in order (O(queue length))."""
        merged = sorted(entry + (key,) for key, queue in shapes.items() for entry in queue)
        started: set[int] = set()
        for _, idx, _ in merged:
            job = self.waiting[idx]
            alloc = self.placer.place(ctx, job)
            if alloc is None:
                if not self.backfill:
                    break
                continue
            ctx.start(job, alloc)
            started.add(idx)
            del self.waiting[idx]
        if started:
            for queue in shapes.values():
                queue[:] = [entry for entry in queue if entry[1] not in started]
                heapq.heapify(queue)

    @staticmethod
    def _fractions_waiting(shapes: dict[Key, list[Key]]) -> bool:
        return any(key[0] < 1 and queue for key, queue in shapes.items())
