"""The ranking index of a :class:`~schedlab.policies.common.preemptive.PreemptiveScheduler`:
each pool's running jobs, sorted by the key they had when it was last computed.

Keys of running jobs never rise (the scheduler's contract), so an indexed key is an upper
bound of the key now: a round recomputes only the keys of the lowest ranked running jobs it
reads (:meth:`RunningIndex.lowest`), and writes them back where a stale key below them could
outrank them (:meth:`RunningIndex.settle`). With static keys the index is exact and nothing
is recomputed. A pool's index is a plain sorted list (C-speed inserts and deletes: cheaper
than a ``SortedList`` at the thousands of jobs a pool runs at once).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
from typing import Any, Protocol

from schedlab.sim.job import Job
from schedlab.sim.policy import Context

Key = tuple[Any, ...]  # a priority key: lower runs first
PriorityKey = Callable[[Context, Job], Key]
Row = tuple[Key, int, float]  # (key, arrival index, GPUs)


class Ranked(Protocol):
    """What the index reads of its scheduler: the key function, its active jobs by arrival
    index and whether keys change only when it says so."""

    priority: PriorityKey
    active: dict[int, Job]
    static_keys: bool


class RunningIndex:
    """Per pool, the running jobs' (key, idx, GPUs) rows as last computed, sorted; each job's
    row and the time its key was computed."""

    def __init__(self, owner: Ranked) -> None:
        self.owner = owner
        self.pools: dict[str, list[Row]] = {}
        self.rows: dict[int, Row] = {}
        self.keyed_at: dict[int, float] = {}

    def add(self, ctx: Context, job: Job) -> None:
        """A job started (or was re-keyed while running): index its key."""
        pool = ctx.pool_of(job)
        row = (self.owner.priority(ctx, job), job.idx, job.num_gpus)
        ranked = self.pools.get(pool)
        if ranked is None:
            ranked = self.pools[pool] = []
        insort(ranked, row)
        self.rows[job.idx] = row
        if not self.owner.static_keys:
            self.keyed_at[job.idx] = ctx.now

    def remove(self, ctx: Context, job: Job) -> None:
        """A running job stopped (finished, paused, or is being re-keyed)."""
        ranked = self.pools[ctx.pool_of(job)]
        row = self.rows.pop(job.idx)
        i = bisect_left(ranked, row)
        if i == len(ranked) or ranked[i] != row:
            raise ValueError(f"job {job.idx} is not in the index of running jobs")
        del ranked[i]
        if not self.owner.static_keys:
            del self.keyed_at[job.idx]

    def settle(self, ctx: Context, ranked: list[Row], i: int) -> Row:
        """Make ``ranked[-i]`` exact, given that the entries above it are: recompute the key
        there until it is unchanged since its last computation at this instant. Keys never rise,
        so an exact entry ranks after every entry below it, whose keys now are at most their
        indexed ones: it is the ``i``-th lowest ranked running job of the pool.

        Where keys fall alike faster than they are apart (many jobs' remaining times, a second
        apart, falling a second per second), each recomputed key drops below the stale ones and
        nearly every entry is recomputed one by one; past a quarter of the pool the whole index
        is rebuilt at once instead, as ranking the running jobs would."""
        row: Row
        if self.owner.static_keys:
            row = ranked[-i]
            return row
        now = ctx.now
        keyed_at = self.keyed_at
        priority = self.owner.priority
        active = self.owner.active
        budget = 16 + len(ranked) // 4
        while True:
            row = ranked[-i]
            idx = row[1]
            if keyed_at[idx] == now:
                return row
            if budget == 0:
                self.rekey_all(ctx, ranked)
                row = ranked[-i]
                return row
            budget -= 1
            del ranked[-i]
            row = (priority(ctx, active[idx]), idx, row[2])
            insort(ranked, row)
            self.rows[idx] = row
            keyed_at[idx] = now

    def rekey_all(self, ctx: Context, ranked: list[Row]) -> None:
        """Recompute every key of a pool's index (one sort)."""
        now = ctx.now
        priority = self.owner.priority
        active = self.owner.active
        rows = [(priority(ctx, active[idx]), idx, gpus) for _, idx, gpus in ranked]
        ranked[:] = sorted(rows)
        for row in rows:
            self.rows[row[1]] = row
            self.keyed_at[row[1]] = now

    def lowest(self, ctx: Context, ranked: list[Row], m: int) -> list[Row]:
        """The ``m`` lowest ranked running jobs of a pool's index, as exact rows in rank order.
        Their keys are computed afresh; when the lowest of them still ranks after the highest
        indexed key below them, which is at least the key now of every job below, they are the
        ``m`` lowest ranked and the index is left as it is. Otherwise the top of the index is
        made exact (:meth:`settle`)."""
        n = len(ranked)
        if self.owner.static_keys:
            return ranked[n - m :]
        priority = self.owner.priority
        active = self.owner.active
        rows = sorted([(priority(ctx, active[idx]), idx, gpus) for _, idx, gpus in ranked[n - m :]])
        if m < n and rows[0] < ranked[n - m - 1]:
            for i in range(1, m + 1):
                self.settle(ctx, ranked, i)
            rows = ranked[n - m :]
        return rows
