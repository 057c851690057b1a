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

import bisect
import heapq
import itertools
import math
from collections.abc import Callable
from operator import itemgetter

from sortedcontainers import SortedList

from schedlab.policies.common.placers import Placer, RandomFit, worker_size
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
_third = itemgetter(2)


def kill_guard_ends(ctx: Context, job: Job) -> float:
    """:func:`guard_ends`, and under a checkpoint model whose pause kills (``kill``: the job
    restarts from its last periodic checkpoint) also until the run has reached a checkpoint:
    until then a pause would throw away everything the run did, so a job whose queue changes
    faster than its checkpoint interval would never progress. A job never checkpointed
    (``inf``) is then never a victim."""
    until = guard_ends(job)
    if ctx.migration_cost(job)[1] <= 0:
        return until  # a pause keeps the work (or this run has nothing to lose)
    interval = job.ckpt_interval
    progress = job.work - ctx.remaining(job)
    if math.isinf(interval) or job.rate <= 0:
        return math.inf
    next_checkpoint = (math.floor(job.saved_progress / interval) + 1) * interval
    if progress >= next_checkpoint:
        return until  # this run has kept work already
    return max(until, max(ctx.now, job.stall_until) + (next_checkpoint - progress) / job.rate)


class _PendingPrefix:
    """The GPUs of a pool's pending jobs ranked before a bound, read in rank order from a copy
    of the queue heads (:meth:`PreemptiveScheduler._heads`) only as far as a question needs:
    bounds asked for must not rise."""

    def __init__(self, heads: list[tuple]) -> None:
        self.heads = list(heads)
        self.entries: list[tuple] = []
        self.sums = [0.0]

    def fit_before(self, bound: tuple | None, room: float) -> bool:
        """Whether the pending jobs ranked before ``bound`` (None: all) need at most ``room``
        GPUs together."""
        if room < 0:
            return False
        heads = self.heads
        sums = self.sums
        while heads and sums[-1] <= room and (bound is None or heads[0][0] < bound):
            entry, pos, key, queue = heapq.heappop(heads)
            self.entries.append(entry)
            sums.append(sums[-1] + key[1])
            if pos + 1 < len(queue):
                heapq.heappush(heads, (queue[pos + 1], pos + 1, key, queue))
        return (sums[-1] if bound is None else sums[bisect.bisect_left(self.entries, bound)]) <= room


GUARD_ENDS = "guard-ends"  # timer payload of PreemptiveScheduler: a progress guard has ended


def guard_ends(job: Job) -> float:
    """When a running job may be paused by a :class:`PreemptiveScheduler`: once it has
    progressed, after the stall its (re)start paid (restore, migration), for as long as the
    stall lasted. So a restarted job progresses before it is paused again, and a paused run
    spent at most half its time stalled; a job started without a stall is not guarded."""
    return 2.0 * job.stall_until - job.run_since


class PreemptiveScheduler(Policy):
    """Preemptive scheduler from a dynamic priority and a placer.

    Every round: rank all active jobs by ``priority(ctx, job)`` (lower runs first; ties by
    arrival) and admit jobs in rank order while the sum of their GPUs fits the pool's powered-on
    GPUs. Each admitted pending job, in rank order, is placed; if it does not fit, running jobs
    that were not admitted are paused, lowest rank first, until it does - only when releasing
    their GPUs in a what-if check shows that the placer can then place it; otherwise nothing is
    paused for it until some job finishes or a running job leaves its progress guard
    (:func:`guard_ends`, and under the ``kill`` checkpoint model until the run has reached a
    checkpoint, :func:`kill_guard_ends`: until then it is never a victim). Paused jobs keep their work
    (checkpointed; the engine charges the restart cost). Then, to stay work-conserving, pending
    jobs that were not admitted start if they fit, except jobs paused in this round.

    The contract on ``priority``: a pending job's key stays fixed while it waits, and a running
    job's key never rises (it may fall, e.g. remaining time), unless the policy calls
    :meth:`rekey` for that job (Tiresias: a demotion, a starvation promotion). With it, a round
    costs what the cluster holds, not what waits:

    * pending jobs wait in sorted queues per pool and shape, keyed when they arrive, are paused
      or re-keyed; a round merges the queue heads lazily, so it reads only the jobs it admits
      or tries;
    * each pool's running jobs are kept in a sorted index under the key they had when it was
      last computed: an upper bound of their key now, as keys never rise. A round recomputes
      the keys of the lowest ranked running jobs it reads only (:meth:`_lowest_ranked`), and
      writes them back where a stale key below them could outrank them (:meth:`_settle`); with
      :attr:`static_keys` the index is exact and nothing is recomputed;
    * while every pending job ranks after the lowest ranked running job, every running job is
      admitted and nobody is a victim, so the round only places pending jobs in rank order
      (nothing at all when no GPU is free);
    * otherwise the running jobs are read from the lowest ranked up until the rest, with the
      pending jobs ranked before them, fit the pool together (:meth:`_boundary_rows`): those
      are all admitted whatever their order, so they are neither ranked nor walked. The rows
      read are merged with the queue heads up to the boundary where the pool is full, a stretch
      of running jobs that fits at once in one step; the victims are the running jobs past it;
    * victims and their progress guards are read only for a pool where an admitted job does not
      fit, and the placer counts how many victims it needs where it can
      (:meth:`~schedlab.policies.common.placers.Placer.fewest_releases`) instead of trying
      placements on released GPUs;
    * the backfill walks the heads of the shape queues and drops a shape that does not fit.

    A round with no pending job returns at once.
    """

    static_keys = False
    """True for a policy whose running jobs' keys change only when it calls :meth:`rekey` (up
    or down): the index of running jobs is then exact and no key is recomputed in a round. The
    keys must be distinct (victims with equal keys would otherwise go in arrival order, not
    start order)."""

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
        # pending jobs: per pool, per shape, (key, idx) sorted; and each pending job's entry
        self.queues: dict[str, dict[tuple, SortedList]] = {}
        self.entries: dict[int, tuple] = {}
        self.running_gpus: dict[str, float] = {}  # per pool
        # per pool, the running jobs' (key, idx, GPUs) as last computed, sorted; each one's
        # entry and the time its key was computed (the key now is at most that one)
        self.ranked: dict[str, SortedList] = {}
        self.run_entries: dict[int, tuple] = {}
        self.keyed_at: dict[int, float] = {}

    # ----- bookkeeping ----------------------------------------------------------------------
    def _queue_key(self, ctx: Context, job: Job) -> tuple:
        return (ctx.pool_of(job), *job_shape(job))

    def _enqueue(self, ctx: Context, job: Job) -> None:
        entry = (self.priority(ctx, job), job.idx)
        self.entries[job.idx] = entry
        pool = ctx.pool_of(job)
        shapes = self.queues.setdefault(pool, {})
        key = self._queue_key(ctx, job)
        queue = shapes.get(key)
        if queue is None:
            queue = shapes[key] = SortedList()
        queue.add(entry)

    def _dequeue(self, ctx: Context, job: Job) -> None:
        entry = self.entries.pop(job.idx)
        shapes = self.queues[ctx.pool_of(job)]
        key = self._queue_key(ctx, job)
        queue = shapes[key]
        queue.remove(entry)
        if not queue:
            del shapes[key]

    def _run_add(self, ctx: Context, job: Job) -> None:
        """A job started (or was re-keyed while running): index its key."""
        pool = ctx.pool_of(job)
        entry = (self.priority(ctx, job), job.idx, job.num_gpus)
        ranked = self.ranked.get(pool)
        if ranked is None:
            ranked = self.ranked[pool] = SortedList()
        ranked.add(entry)
        self.run_entries[job.idx] = entry
        if not self.static_keys:
            self.keyed_at[job.idx] = ctx.now

    def _run_remove(self, ctx: Context, job: Job) -> None:
        """A running job stopped (finished, paused, or is being re-keyed)."""
        self.ranked[ctx.pool_of(job)].remove(self.run_entries.pop(job.idx))
        if not self.static_keys:
            del self.keyed_at[job.idx]

    def _settle(self, ctx: Context, ranked: SortedList, i: int) -> tuple:
        """Make ``ranked[-i]`` exact, given that the entries above it are: recompute the key
        there until it is unchanged since its last computation at this instant. Keys never rise,
        so an exact entry ranks after every entry below it, whose keys now are at most their
        indexed ones: it is the ``i``-th lowest ranked running job of the pool.

        Where keys fall alike faster than they are apart (many jobs' remaining times, a second
        apart, falling a second per second), each recomputed key drops below the stale ones and
        nearly every entry is recomputed one by one; past a quarter of the pool the whole index
        is rebuilt at once instead, as ranking the running jobs would."""
        if self.static_keys:
            return ranked[-i]
        now = ctx.now
        keyed_at = self.keyed_at
        budget = 16 + len(ranked) // 4
        while True:
            entry = ranked[-i]
            idx = entry[1]
            if keyed_at[idx] == now:
                return entry
            if budget == 0:
                self._rekey_all(ctx, ranked)
                return ranked[-i]
            budget -= 1
            del ranked[-i]
            entry = (self.priority(ctx, self.active[idx]), idx, entry[2])
            ranked.add(entry)
            self.run_entries[idx] = entry
            keyed_at[idx] = now

    def _rekey_all(self, ctx: Context, ranked: SortedList) -> None:
        """Recompute every key of a pool's index (one sort)."""
        now = ctx.now
        entries = [(self.priority(ctx, self.active[idx]), idx, gpus) for _, idx, gpus in ranked]
        ranked.clear()
        ranked.update(entries)
        for entry in entries:
            self.run_entries[entry[1]] = entry
            self.keyed_at[entry[1]] = now

    def rekey(self, ctx: Context, job: Job) -> None:
        """Tell the scheduler that ``job``'s priority changed outside the events it sees itself:
        a pending job's at all; a running job's upwards, or with :attr:`static_keys` at all."""
        if job.idx in self.entries:
            self._dequeue(ctx, job)
            self._enqueue(ctx, job)
        elif job.state == RUNNING:
            self._run_remove(ctx, job)
            self._run_add(ctx, job)

    def on_arrival(self, ctx: Context, job: Job) -> None:
        self.active[job.idx] = job
        self.fractions += job.fractional
        pool = ctx.pool_of(job)
        self.demand[pool] = self.demand.get(pool, 0.0) + job.num_gpus
        self._enqueue(ctx, job)

    def on_finish(self, ctx: Context, job: Job) -> None:
        del self.active[job.idx]
        self.fractions -= job.fractional
        pool = ctx.pool_of(job)
        self.demand[pool] -= job.num_gpus
        self.running_gpus[pool] -= job.num_gpus
        self._run_remove(ctx, job)
        self.blocked.clear()  # GPUs were freed: preempting may help again

    def on_migrated(self, ctx: Context, job: Job) -> None:
        """A move may raise a job's key (under ``kill`` it restarts from its last checkpoint)."""
        self.rekey(ctx, job)

    def on_timer(self, ctx: Context, payload: object) -> bool | None:
        """A subclass with timers of its own passes :data:`GUARD_ENDS` on to this method."""
        if payload == GUARD_ENDS:
            self.blocked.clear()  # more jobs may be victims now
            return True
        return None

    # ----- rounds ---------------------------------------------------------------------------
    def _heads(self, pools) -> list[tuple]:
        """Heap of (head entry, position, shape key, queue) over the shape queues of ``pools``."""
        heads = [(queue[0], 0, key, queue) for pool in pools for key, queue in self.queues.get(pool, {}).items()]
        heapq.heapify(heads)
        return heads

    def _pending_in_order(self, pools) -> list[Job]:
        """Pending jobs of ``pools`` in rank order (the merged shape queues)."""
        heads = self._heads(pools)
        order: list[Job] = []
        while heads:
            entry, pos, key, queue = heapq.heappop(heads)
            order.append(self.active[entry[1]])
            if pos + 1 < len(queue):
                heapq.heappush(heads, (queue[pos + 1], pos + 1, key, queue))
        return order

    def schedule(self, ctx: Context) -> None:
        if ctx.pending_count == 0:
            return  # everyone runs: nothing to rank, nobody to preempt
        capacity = ctx.state.pool_gpus_on
        if all(d <= capacity.get(pool, 0) for pool, d in self.demand.items()):
            self._start_all_fitting(ctx)
            return
        if all(self._behind_running(ctx, pool) for pool in self.queues):
            self._start_behind_running(ctx, capacity)
            return
        self._full_round(ctx)

    def _behind_running(self, ctx: Context, pool: str) -> bool:
        """Whether every pending job of ``pool`` ranks after every running job of it."""
        ranked = self.ranked.get(pool)
        if not ranked:
            return True
        last = self._lowest_ranked(ctx, ranked, 1)[0]
        return all(queue[0] > last for queue in self.queues[pool].values())

    def _start_all_fitting(self, ctx: Context) -> None:
        """Every active job would be admitted, so nobody is a victim: the full round reduces to
        placing the pending jobs in rank order (the same decisions, without ranking everyone)."""
        failed: set[tuple] = set()
        for job in self._pending_in_order(self.queues):
            if not self._try(ctx, job, failed):
                self.blocked.add(job.idx)

    def _start_behind_running(self, ctx: Context, capacity: dict[str, float]) -> None:
        """Every pending job ranks after every running job: all running jobs are admitted and
        none is a victim; pending jobs are admitted in rank order into what the running ones
        leave of each pool. The same decisions as the full round, without ranking the running."""
        state = ctx.state
        if state.free_total() == 0 and not self.fractions:
            return  # nothing admitted (the pools are full), nothing to backfill
        left = {pool: capacity.get(pool, 0) - self.running_gpus.get(pool, 0.0) for pool in self.queues}
        admitted: set[int] = set()
        failed: set[tuple] = set()
        for job in self._admit_pending(ctx, left, admitted):
            if not self._try(ctx, job, failed):
                self.blocked.add(job.idx)  # no victims: it waits for a finish
        self._backfill(ctx, admitted, set(), failed)

    def _admit_pending(self, ctx: Context, left: dict[str, float], admitted: set[int]) -> list[Job]:
        """Pending jobs admitted, in rank order, into ``left`` GPUs per pool (updated); a shape
        larger than what is left is dropped from the merge (what is left only shrinks)."""
        heads = self._heads(left)
        active = self.active
        chosen: list[Job] = []
        while heads:
            entry, pos, key, queue = heapq.heappop(heads)
            pool = key[0]
            cap = left[pool]
            if cap <= 0 or key[1] > cap:
                continue  # no job of this shape fits what is left of its pool
            job = active[entry[1]]
            left[pool] = cap - job.num_gpus
            admitted.add(job.idx)
            chosen.append(job)
            if pos + 1 < len(queue):
                heapq.heappush(heads, (queue[pos + 1], pos + 1, key, queue))
        return chosen

    def _full_round(self, ctx: Context) -> None:
        """Merge each pool's running jobs with its queue heads in rank order up to the boundary
        where the pool is full: before it the admitted, past it the victims. Victims and their
        progress guards are read only for a pool where an admitted job needs them."""
        pool_of = ctx.pool_of
        capacity = ctx.state.pool_gpus_on
        admitted: set[int] = set()
        waiting: list[Job] = []  # admitted but not running
        outside: dict[str, list[tuple]] = {}  # per pool: running rows not admitted, rank order
        for pool in self.queues:
            heads = self._heads([pool])
            if not heads:
                continue
            rows, cap = self._boundary_rows(ctx, pool, heads, capacity.get(pool, 0))
            sums = None if self.fractions else list(itertools.accumulate(map(_third, rows), initial=0))
            outside[pool] = self._merge(rows, heads, cap, admitted, waiting, sums)
        waiting.sort(key=lambda j: self.entries[j.idx])
        victims: dict[str, list[Job]] = {}
        guarded: dict[str, float] = {}  # per pool: the first end of a guard that spares a job
        paused: set[int] = set()
        failed: set[tuple] = set()  # shapes that did not fit since the last pause
        hopeless: set[tuple] = set()
        for job in waiting:
            if self._try(ctx, job, failed) or job.idx in self.blocked:
                continue
            pool = pool_of(job)
            if pool not in victims:
                victims[pool] = self._unguarded(ctx, outside[pool], guarded, pool)
            self._start_preempting(ctx, job, victims[pool], paused, failed, hopeless)
        unstarted = {pool_of(j) for j in waiting if j.state != RUNNING}
        for pool in unstarted - victims.keys():
            self._unguarded(ctx, outside[pool], guarded, pool)
        wake = min((guarded.get(pool, math.inf) for pool in unstarted), default=math.inf)
        if wake < math.inf and not ctx.now < self.wake_at <= wake:
            ctx.set_timer(wake, GUARD_ENDS)
            self.wake_at = wake
        self._backfill(ctx, admitted, paused, failed)

    def _merge(self, rows: list[tuple], heads: list[tuple], cap: float, admitted: set[int], waiting: list[Job],
               sums: list[float] | None) -> list[tuple]:  # fmt: skip
        """Walk a pool's running ``rows`` ((key, idx, GPUs, ...), rank order) and queue ``heads``
        in rank order while ``cap`` GPUs are left: a pending job is admitted if it fits (into
        ``admitted`` and ``waiting``), a running one keeps its GPUs if they fit. Returns the
        running rows not admitted, in rank order. With ``sums`` (the rows' running GPU totals,
        for whole GPU counts, where they are exact) the longest stretch of running rows that
        fits is admitted in one step, so a walk costs O(heads + rows left out), not O(rows)."""
        out: list[tuple] = []
        n = len(rows)
        i = 0
        while cap > 0 and i < n:
            head = heads[0][0] if heads else None
            if head is not None and head < rows[i]:
                cap = self._admit_head(heads, cap, admitted, waiting)
                continue
            j = n if head is None else bisect.bisect_left(rows, head, i)
            if sums is None:
                while i < j and cap > 0:
                    row = rows[i]
                    i += 1
                    if row[2] <= cap:
                        cap -= row[2]
                    else:
                        out.append(row)
                continue
            while i < j and cap > 0:
                k = bisect.bisect_right(sums, sums[i] + cap, i, j + 1) - 1  # rows i..k-1 fit
                cap -= sums[k] - sums[i]
                i = k
                if i < j and cap > 0:
                    out.append(rows[i])  # the next one does not
                    i += 1
        while cap > 0 and heads:
            cap = self._admit_head(heads, cap, admitted, waiting)
        out += rows[i:]
        return out

    def _unguarded(self, ctx: Context, rows: list[tuple], guarded: dict[str, float], pool: str) -> list[Job]:
        """The jobs of ``rows`` that may be paused now, lowest rank first (equal keys in the
        order they (re)started); notes in ``guarded[pool]`` the first end of a guard that spares
        one."""
        if not self.static_keys and any(a[0] == b[0] for a, b in zip(rows, rows[1:])):
            started = {idx: pos for pos, idx in enumerate(ctx.running)}  # equal keys: start order
            rows = sorted(rows, key=lambda row: (row[0], started[row[1]]))
        now = ctx.now
        active = self.active
        kills = ctx.pause_kills
        victims: list[Job] = []
        first = math.inf
        for row in rows:
            job = active[row[1]]
            until = kill_guard_ends(ctx, job) if kills else guard_ends(job)
            if now < until:
                first = min(first, until)
            else:
                victims.append(job)
        if first < math.inf:
            guarded[pool] = first
        return victims

    def _boundary_rows(self, ctx: Context, pool: str, heads: list[tuple], cap: float) -> tuple[list[tuple], float]:
        """The running jobs of ``pool`` that the merge with the queue ``heads`` must walk, as
        (key, idx, GPUs) rows in rank order, and what is left of ``cap`` GPUs once the others
        are admitted. Rows are read from the lowest ranked up (:meth:`_lowest_ranked`), 16 then
        twice as many each time (1,024 first for exact keys, which are sliced at C speed),
        until the rest are all admitted whatever their order, as the merge would admit them:
        when they and the pending jobs ranked before them fit ``cap`` together, or when they
        rank before every pending job (they run, so they fit). With fractional jobs (inexact
        GPU sums) every running job is read."""
        ranked = self.ranked.get(pool)
        if not ranked:
            return [], cap
        n = len(ranked)
        total = self.running_gpus.get(pool, 0.0)
        if self.fractions:
            return self._lowest_ranked(ctx, ranked, n), cap
        first = heads[0][0]
        limit = n - ranked.bisect_left(first) if self.static_keys else n  # rows that may rank after it
        pending = _PendingPrefix(heads)
        read = 0
        while True:
            read = min(limit, 2 * read or (1024 if self.static_keys else 16))
            rows = self._lowest_ranked(ctx, ranked, read)
            cut = bisect.bisect_left(rows, first)
            if cut:
                rows = rows[cut:]  # these rank before every pending job, and so does the rest
                read = limit
            below = total - sum(map(_third, rows))  # GPUs of the running jobs not read
            if read >= limit or pending.fit_before(rows[0], cap - below):
                return rows, cap - below

    def _lowest_ranked(self, ctx: Context, ranked: SortedList, m: int) -> list[tuple]:
        """The ``m`` lowest ranked running jobs of an index, as exact (key, idx, GPUs) rows in
        rank order. Their keys are computed afresh; when the lowest of them still ranks after
        the highest indexed key below them, which is at least the key now of every job below,
        they are the ``m`` lowest ranked and the index is left as it is. Otherwise the top of
        the index is made exact (:meth:`_settle`)."""
        n = len(ranked)
        if self.static_keys:
            return list(ranked.islice(n - m))
        priority = self.priority
        active = self.active
        rows = sorted([(priority(ctx, active[idx]), idx, gpus) for _, idx, gpus in ranked.islice(n - m)])
        if m < n and rows[0] < ranked[n - m - 1]:
            for i in range(1, m + 1):
                self._settle(ctx, ranked, i)
            rows = list(ranked.islice(n - m))
        return rows

    def _admit_head(self, heads: list[tuple], cap: float, admitted: set[int], waiting: list[Job]) -> float:
        """Admit the best queued job of a pool if it fits ``cap``; a shape that does not fit is
        dropped (what is left only shrinks). Returns what is left."""
        entry, pos, shape, queue = heapq.heappop(heads)
        if shape[1] > cap:
            return cap  # no job of this shape fits what is left of the pool
        job = self.active[entry[1]]
        admitted.add(job.idx)
        waiting.append(job)
        if pos + 1 < len(queue):
            heapq.heappush(heads, (queue[pos + 1], pos + 1, shape, queue))
        return cap - job.num_gpus

    def _backfill(self, ctx: Context, admitted: set[int], paused: set[int], failed: set[tuple]) -> None:
        """Work conservation: pending jobs not admitted (nor paused in this round) start, in rank
        order, where they fit. A shape is dropped once it cannot fit (nothing free in its
        groups, or, for a deterministic placer, a failed placement): GPUs only get fewer here."""
        state = ctx.state
        if state.free_total() == 0 and not self.fractions:
            return  # nothing free to backfill (fractional jobs may still fit on shared GPUs)
        heads = self._heads(self.queues)
        active = self.active
        while heads:
            entry, pos, key, queue = heapq.heappop(heads)
            job = active[entry[1]]
            if job.idx in admitted or job.idx in paused:
                pos += 1
            elif not (job.fractional or state.free_in(ctx.groups_of(job)) > 0):
                continue  # nothing free for this shape, now or later in the round
            elif self._try(ctx, job, failed):
                if state.free_total() == 0 and not self.fractions:
                    return
            elif self.exchangeable:
                continue  # no job of this shape fits
            else:
                pos += 1
            if pos < len(queue):
                heapq.heappush(heads, (queue[pos], pos, key, queue))

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

    def _start_preempting(self, ctx: Context, job: Job, victims: list[Job], paused: set[int], failed: set[tuple],
                          hopeless: set[tuple]) -> None:  # fmt: skip
        """Start an admitted job that does not fit as things are, pausing victims if that makes
        room. ``hopeless``: shapes whose victim search failed since the last pause (for a
        deterministic placer the same search fails again, as GPUs only got fewer)."""
        shape = (ctx.pool_of(job), *job_shape(job))
        chosen = None if shape in hopeless else self._victims_that_make_room(ctx, job, victims)
        if chosen is None:
            if self.exchangeable:
                hopeless.add(shape)
            self.blocked.add(job.idx)  # no set of victims frees a placement: wait for a finish
            return
        for victim in chosen:
            victims.remove(victim)
            self._pause(ctx, victim)
            paused.add(victim.idx)
        failed.clear()
        hopeless.clear()
        self._try(ctx, job, failed)

    def _victims_that_make_room(self, ctx: Context, job: Job, victims: list[Job]) -> list[Job] | None:
        """The fewest lowest-ranked victims whose GPUs, once freed, let the placer place
        ``job``: counted by the placer where it can (:meth:`Placer.fewest_releases`), else found
        in a what-if check on the cluster state (undone on leaving it). For a deterministic
        placer, whether a job can be placed only grows with the free GPUs, so one check with
        every candidate released rules out a hopeless search, and no placement is tried while
        the freed GPUs are fewer than the job needs."""
        state = ctx.state
        free = state.free_in(ctx.groups_of(job))
        if free + sum(v.num_gpus for v in victims) < job.num_gpus:
            return None
        candidates = [v for v in reversed(victims) if not v.colocated]  # lowest rank first
        if self.exchangeable and not job.fractional:
            count = self.placer.fewest_releases(state, ctx.groups_of(job), int(job.num_gpus), worker_size(job),
                                                [v.alloc for v in candidates])  # fmt: skip
            if count is None:
                return None
            if count is not False:
                return candidates[:count]
            with state.what_if() as release:
                for victim in candidates:
                    release(victim.alloc, victim.milli)
                if self.placer.place(ctx, job) is None:
                    return None
        chosen: list[Job] = []
        with state.what_if() as release:
            for victim in candidates:
                release(victim.alloc, victim.milli)
                chosen.append(victim)
                free += victim.num_gpus
                if self.exchangeable and not job.fractional and free < job.num_gpus:
                    continue  # the placer refuses a job larger than the free GPUs
                if self.placer.place(ctx, job) is not None:
                    return chosen
        return None

    def _start(self, ctx: Context, job: Job, alloc) -> None:
        self._dequeue(ctx, job)
        ctx.start(job, alloc)
        pool = ctx.pool_of(job)
        self.running_gpus[pool] = self.running_gpus.get(pool, 0.0) + job.num_gpus
        self.started(ctx, job)
        self._run_add(ctx, job)

    def _pause(self, ctx: Context, job: Job) -> None:
        self._run_remove(ctx, job)
        ctx.pause(job)
        self.running_gpus[ctx.pool_of(job)] -= job.num_gpus
        self.paused(ctx, job)
        self._enqueue(ctx, job)

    def started(self, ctx: Context, job: Job) -> None:
        """Hook: this scheduler just started (or resumed) ``job``."""

    def paused(self, ctx: Context, job: Job) -> None:
        """Hook: this scheduler just paused ``job``."""
