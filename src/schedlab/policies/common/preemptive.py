"""The generic preemptive scheduler: each round ranks running and pending jobs together, keeps
the best that fit the pool's capacity, pauses the running jobs that fell out of that set and
starts the pending ones that entered it; a restarted job is first guaranteed some progress
(:func:`guard_ends`). Its index of running jobs is :mod:`schedlab.policies.common.ranking`.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Iterable, Mapping
from operator import itemgetter

from sortedcontainers import SortedList

from schedlab.policies.common.placers import Alloc, Placer, RandomFit, worker_size
from schedlab.policies.common.queues import Key, job_shape
from schedlab.policies.common.ranking import PriorityKey, RunningIndex
from schedlab.sim.job import RUNNING, Job
from schedlab.sim.policy import Context, Policy

_third = itemgetter(2)
Head = tuple[Key, int, Key, SortedList]  # (entry, position, shape key, queue) of a pool's shape queue


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

    def __init__(self, heads: list[Head]) -> None:
        self.heads = list(heads)
        self.entries: list[Key] = []
        self.sums = [0.0]

    def fit_before(self, bound: Key | None, room: float) -> bool:
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
      the keys of the lowest ranked running jobs it reads only (:meth:`RunningIndex.lowest`), and
      writes them back where a stale key below them could outrank them (:meth:`RunningIndex.settle`); with
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
        self.queues: dict[str, dict[Key, SortedList]] = {}
        self.entries: dict[int, Key] = {}
        self.running_gpus: dict[str, float] = {}  # per pool
        self.index = RunningIndex(self)  # per pool, the running jobs by their last computed key

    # ----- bookkeeping ----------------------------------------------------------------------
    def _queue_key(self, ctx: Context, job: Job) -> Key:
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

    def rekey(self, ctx: Context, job: Job) -> None:
        """Tell the scheduler that ``job``'s priority changed outside the events it sees itself:
        a pending job's at all; a running job's upwards, or with :attr:`static_keys` at all."""
        if job.idx in self.entries:
            self._dequeue(ctx, job)
            self._enqueue(ctx, job)
        elif job.state == RUNNING:
            self.index.remove(ctx, job)
            self.index.add(ctx, job)

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
        self.index.remove(ctx, job)
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
    def _heads(self, pools: Iterable[str]) -> list[Head]:
        """Heap of (head entry, position, shape key, queue) over the shape queues of ``pools``."""
        heads = [(queue[0], 0, key, queue) for pool in pools for key, queue in self.queues.get(pool, {}).items()]
        heapq.heapify(heads)
        return heads

    def _pending_in_order(self, pools: Iterable[str]) -> list[Job]:
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
        ranked = self.index.pools.get(pool)
        if not ranked:
            return True
        last = self.index.lowest(ctx, ranked, 1)[0]
        return all(queue[0] > last for queue in self.queues[pool].values())

    def _start_all_fitting(self, ctx: Context) -> None:
        """Every active job would be admitted, so nobody is a victim: the full round reduces to
        placing the pending jobs in rank order (the same decisions, without ranking everyone)."""
        failed: set[Key] = set()
        for job in self._pending_in_order(self.queues):
            if not self._try(ctx, job, failed):
                self.blocked.add(job.idx)

    def _start_behind_running(self, ctx: Context, capacity: Mapping[str, int]) -> None:
        """Every pending job ranks after every running job: all running jobs are admitted and
        none is a victim; pending jobs are admitted in rank order into what the running ones
        leave of each pool. The same decisions as the full round, without ranking the running."""
        state = ctx.state
        if state.free_total() == 0 and not self.fractions:
            return  # nothing admitted (the pools are full), nothing to backfill
        left = {pool: capacity.get(pool, 0) - self.running_gpus.get(pool, 0.0) for pool in self.queues}
        admitted: set[int] = set()
        failed: set[Key] = set()
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
        outside: dict[str, list[Key]] = {}  # per pool: running rows not admitted, rank order
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
        failed: set[Key] = set()  # shapes that did not fit since the last pause
        hopeless: set[Key] = set()
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

    def _merge(self, rows: list[Key], heads: list[Head], cap: float, admitted: set[int], waiting: list[Job],
               sums: list[float] | None) -> list[Key]:  # fmt: skip
        """Walk a pool's running ``rows`` ((key, idx, GPUs, ...), rank order) and queue ``heads``
        in rank order while ``cap`` GPUs are left: a pending job is admitted if it fits (into
        ``admitted`` and ``waiting``), a running one keeps its GPUs if they fit. Returns the
        running rows not admitted, in rank order. With ``sums`` (the rows' running GPU totals,
        for whole GPU counts, where they are exact) the longest stretch of running rows that
        fits is admitted in one step, so a walk costs O(heads + rows left out), not O(rows)."""
        out: list[Key] = []
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

    def _unguarded(self, ctx: Context, rows: list[Key], guarded: dict[str, float], pool: str) -> list[Job]:
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

    def _boundary_rows(self, ctx: Context, pool: str, heads: list[Head], cap: float) -> tuple[list[Key], float]:
        """The running jobs of ``pool`` that the merge with the queue ``heads`` must walk, as
        (key, idx, GPUs) rows in rank order, and what is left of ``cap`` GPUs once the others
        are admitted. Rows are read from the lowest ranked up (:meth:`RunningIndex.lowest`), 16 then
        twice as many each time (1,024 first for exact keys, which are sliced at C speed),
        until the rest are all admitted whatever their order, as the merge would admit them:
        when they and the pending jobs ranked before them fit ``cap`` together, or when they
        rank before every pending job (they run, so they fit). With fractional jobs (inexact
        GPU sums) every running job is read."""
        ranked = self.index.pools.get(pool)
        if not ranked:
            return [], cap
        n = len(ranked)
        total = self.running_gpus.get(pool, 0.0)
        if self.fractions:
            return self.index.lowest(ctx, ranked, n), cap
        first = heads[0][0]
        limit = n - bisect.bisect_left(ranked, first) if self.static_keys else n  # rows that may rank after it
        pending = _PendingPrefix(heads)
        read = 0
        while True:
            read = min(limit, 2 * read or (1024 if self.static_keys else 16))
            rows = self.index.lowest(ctx, ranked, read)
            cut = bisect.bisect_left(rows, first)
            if cut:
                rows = rows[cut:]  # these rank before every pending job, and so does the rest
                read = limit
            below = total - sum(map(_third, rows))  # GPUs of the running jobs not read
            if read >= limit or pending.fit_before(rows[0], cap - below):
                return rows, cap - below

    def _admit_head(self, heads: list[Head], cap: float, admitted: set[int], waiting: list[Job]) -> float:
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

    def _backfill(self, ctx: Context, admitted: set[int], paused: set[int], failed: set[Key]) -> None:
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

    def _try(self, ctx: Context, job: Job, failed: set[Key]) -> bool:
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

    def _start_preempting(self, ctx: Context, job: Job, victims: list[Job], paused: set[int], failed: set[Key],
                          hopeless: set[Key]) -> None:  # fmt: skip
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
        free: float = state.free_in(ctx.groups_of(job))
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

    def _start(self, ctx: Context, job: Job, alloc: Alloc) -> None:
        self._dequeue(ctx, job)
        ctx.start(job, alloc)
        pool = ctx.pool_of(job)
        self.running_gpus[pool] = self.running_gpus.get(pool, 0.0) + job.num_gpus
        self.started(ctx, job)
        self.index.add(ctx, job)

    def _pause(self, ctx: Context, job: Job) -> None:
        self.index.remove(ctx, job)
        ctx.pause(job)
        self.running_gpus[ctx.pool_of(job)] -= job.num_gpus
        self.paused(ctx, job)
        self._enqueue(ctx, job)

    def started(self, ctx: Context, job: Job) -> None:
        """Hook: this scheduler just started (or resumed) ``job``."""

    def paused(self, ctx: Context, job: Job) -> None:
        """Hook: this scheduler just paused ``job``."""
