"""Lease-based two-phase scheduling, the frame ASTRAEA and its fair-share baselines share.

A started job holds its GPUs for a *lease term* of ``lease_s`` seconds of progress; a timer
marks it *expired* at the lease end (rounded up to ``tick_s``, so that leases ending close
together are decided in one round, as the ASTRAEA artifact's 10-s ticks do). A round runs
whenever GPUs are free or leases have expired:

1. The budget of each node pool is its free GPUs plus the GPUs of its expired jobs.
2. Tenant phase and job phase: the group (tenant) with the lowest :meth:`group_key` gets
   its candidate (pending or expired) with the lowest :meth:`job_key` that fits the budget; the
   group is ranked again with that grant counted, and so on until the budget or the candidates
   run out.
3. Starvation threshold: inside a group, jobs pending for ``starvation_s`` (since arrival or
   their last pause) come first, oldest first, ahead of the job ranking; a starving job that is
   not taken *blocks* its group for the round, so the group's later jobs do not take the GPUs
   it needs. With ``block="any"`` every job that is not taken blocks its group (the ASTRAEA
   artifact's ``--block_scheduling 1``, which stops a user's loop at its first failed quota
   check or placement). A job larger than the powered-on GPUs it may use never blocks.
4. Expired jobs that were chosen keep running on a renewed lease (no checkpoint); the others
   are paused (``ctx.pause``: checkpointed, no work lost). This first pass counts GPUs only.
   With ``repack=True`` the chosen ones are paused too and placed afresh in step 5 with the
   pending jobs, as the ASTRAEA artifact releases every expired job at a lease end; this
   re-packs the GPUs of the expired leases, and each move pays the engine's checkpoint and
   restore costs (the artifact charges none).
5. A second pass ranks the pending jobs the same way over the GPUs now free and starts each
   that the placer can place; one it cannot place is passed over (counting alone would leave
   the GPUs of unplaceable picks idle).

Progress guarantee (issue 15): a lease runs from the end of the start's restore stall and lasts
at least as long as that stall, so every run progresses at least max(lease, stall) and a job is
paused at most 1 + work / max(lease, stall) times.

Cost: a round ranks the groups (O(G log G)) and heapifies the candidates of each group it
visits (O(candidates of that group)); nothing is re-sorted between rounds, and a round with no
free GPU and no expired lease returns at once. Expiries and starvation limits come by timers.
"""

from __future__ import annotations

import heapq
import math
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

from sortedcontainers import SortedList

from schedlab.errors import ConfigError
from schedlab.policies.common.placers import Placer
from schedlab.sim.job import RUNNING, Job
from schedlab.sim.policy import Context, Policy

_LEASE, _STARVE = 0, 1
BLOCK_RULES = ("starving", "any")  # which job not taken stops its group for the round
Rank = tuple[int, float | tuple[float, ...], int]  # a candidate's: (0, waiting since, idx) if starving, else (1, job key, idx)


@dataclass(slots=True)
class LeaseState:
    """A job's bookkeeping from its arrival to its finish: its group, when it last became
    pending, its live lease timer."""

    group: str
    waiting_since: float
    lease: int = 0
    expired: bool = False
    baseline: float = 0.0  # for subclasses (ASTRAEA: deserved-GPU-time baseline)


class LeaseScheduler(Policy, ABC):
    """Two-phase lease scheduler; subclasses give :meth:`group_key` and :meth:`job_key`."""

    def __init__(self, name: str, placer: Placer, *, lease_s: float, tick_s: float = 10.0,
                 starvation_s: float = math.inf, shares: Mapping[str, float] | None = None,
                 block: str = "starving", repack: bool = False) -> None:  # fmt: skip
        if not lease_s > 0:
            raise ConfigError(f"{name}: lease_s must be > 0, got {lease_s!r}")
        if not tick_s >= 0:
            raise ConfigError(f"{name}: tick_s must be >= 0, got {tick_s!r}")
        if not starvation_s > 0:
            raise ConfigError(f"{name}: starvation_s must be > 0, got {starvation_s!r}")
        if block not in BLOCK_RULES:
            raise ConfigError(f"{name}: block must be one of {', '.join(BLOCK_RULES)}, got {block!r}")
        self.name = name
        self.block_any = block == "any"
        self.repack = repack
        self.placer = placer
        self.lease_s = lease_s
        self.tick_s = tick_s
        self.starvation_s = starvation_s
        self.shares = dict(shares) if shares is not None else None
        self.pending: defaultdict[str, dict[int, Job]] = defaultdict(dict)
        self.expired: defaultdict[str, dict[int, Job]] = defaultdict(dict)
        self.held: defaultdict[str, float] = defaultdict(float)  # GPUs held by the group's running jobs
        self.waiting = SortedList()  # (waiting since, idx) of pending jobs
        self.jobs: dict[int, Job] = {}
        self.states: dict[int, LeaseState] = {}  # of the jobs in ``jobs``, by arrival index

    # -- what subclasses define -------------------------------------------------------------
    def group_of(self, job: Job) -> str:
        """The group fairness is counted over: the tenant."""
        return job.tenant

    def weight(self, group: str) -> float:
        """The group's weight: its share, 1 when no shares were given."""
        return 1.0 if self.shares is None else self.shares.get(group, 1.0)

    @abstractmethod
    def group_key(self, ctx: Context, group: str, next_gpus: float) -> float:
        """Rank of a group, lowest served first; ``next_gpus`` = GPUs it will hold over the next
        lease if the round ended now (its unexpired jobs plus what the round granted it)."""

    @abstractmethod
    def job_key(self, ctx: Context, job: Job) -> tuple[float, ...]:
        """Rank of a candidate job inside its group, lowest served first."""

    def arrived(self, ctx: Context, job: Job) -> None:
        """Hook: a job arrived (its state in :attr:`states` is set)."""

    def finished(self, ctx: Context, job: Job) -> None:
        """Hook: a job finished (its GPUs are already released through :meth:`holds`; its
        state in :attr:`states` goes after this call)."""

    def holds(self, ctx: Context, job: Job, gpus: float) -> None:
        """Hook: the job's group now holds ``gpus`` more GPUs (negative on a pause)."""

    def advance(self, ctx: Context) -> None:
        """Hook: called first in every callback (accounting up to ``ctx.now``)."""

    # -- events -------------------------------------------------------------------------------
    def on_arrival(self, ctx: Context, job: Job) -> None:
        self.advance(ctx)
        self.states[job.idx] = LeaseState(self.group_of(job), ctx.now)
        self.jobs[job.idx] = job
        self._wait(ctx, job)
        self.arrived(ctx, job)

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.advance(ctx)
        st = self.states[job.idx]
        if st.expired:
            self._unexpire(job)
        self.held[st.group] -= job.num_gpus
        self.holds(ctx, job, -job.num_gpus)
        del self.jobs[job.idx]
        self.finished(ctx, job)
        del self.states[job.idx]

    def on_timer(self, ctx: Context, payload: object) -> bool:
        kind, idx, mark = cast(tuple[int, int, float], payload)  # (kind, job, lease number or wait start)
        job = self.jobs.get(idx)
        if job is None:
            return False
        st = self.states[idx]
        if kind == _LEASE:
            if job.state != RUNNING or st.lease != mark or st.expired:
                return False
            if not self.waiting:  # nobody to hand the GPUs to: a round would renew the lease
                self._lease(ctx, job, renew=True)
                return False
            self.advance(ctx)
            st.expired = True
            self.expired[st.group][idx] = job
            return True
        return job.state != RUNNING and st.waiting_since == mark

    # -- the round ------------------------------------------------------------------------------
    def schedule(self, ctx: Context) -> None:
        self.advance(ctx)
        budget = self._budget(ctx)
        if not any(v > 0 for v in budget.values()):
            return
        if self.expired:
            keep = {job.idx for job in self._rank(ctx, budget, lambda ctx, job: True, with_expired=True)}
            for jobs in list(self.expired.values()):
                for job in list(jobs.values()):
                    if job.idx in keep and not self.repack:
                        self._lease(ctx, job, renew=True)
                    else:
                        self._pause(ctx, job)
            budget = self._budget(ctx)
        self._rank(ctx, budget, self._try_start, with_expired=False)

    def _try_start(self, ctx: Context, job: Job) -> bool:
        alloc = self.placer.place(ctx, job)
        if alloc is None:
            return False
        ctx.start(job, alloc)
        self._started(ctx, job)
        return True

    def _budget(self, ctx: Context) -> dict[str, float]:
        """GPUs to hand out per pool: free ones plus those of expired leases."""
        if ctx.cluster.partitioned:
            budget: defaultdict[str, float] = defaultdict(float)
            state = ctx.state
            for node in range(state.num_nodes):
                if state.on[node]:
                    budget[state.node_pool[node]] += state.free[node]
        else:
            budget = defaultdict(float, {"": float(ctx.state.free_total())})
        for jobs in self.expired.values():
            for job in jobs.values():
                budget[ctx.pool_of(job)] += job.num_gpus
        return budget

    @staticmethod
    def _capacity(ctx: Context, job: Job) -> int:
        """Powered-on GPUs of the node groups the job may use (a job larger never blocks)."""
        state = ctx.state
        return sum(state.node_gpus[n] for g in ctx.groups_of(job) for n in g.nodes if state.on[n])

    def _rank(self, ctx: Context, budget: dict[str, float], admit: Callable[[Context, Job], bool], *,
              with_expired: bool) -> list[Job]:  # fmt: skip
        """The two phases within ``budget`` (GPUs per pool); a job within the budget is taken if
        ``admit(ctx, job)`` (stage 1: any, deciding by count which expired jobs go on; stage 2:
        placed and started). Inside a group its starving jobs come first, oldest first; a group
        whose starving job (``block="any"``: any job) is not taken gets nothing more this round.
        Returns the jobs taken."""
        chosen: list[Job] = []
        granted: defaultdict[str, float] = defaultdict(float)
        starve_before = ctx.now - self.starvation_s

        def offer(job: Job) -> bool:
            pool = ctx.pool_of(job)
            if job.num_gpus > budget[pool] or not admit(ctx, job):
                return False
            chosen.append(job)
            granted[self.states[job.idx].group] += job.num_gpus
            budget[pool] -= job.num_gpus
            return True

        def entry(job: Job) -> Rank:
            since = self.states[job.idx].waiting_since
            starving = job.state != RUNNING and since <= starve_before
            return (0, since, job.idx) if starving else (1, self.job_key(ctx, job), job.idx)

        expiring = {g: sum(j.num_gpus for j in jobs.values()) for g, jobs in self.expired.items()}
        if not with_expired:
            expiring = {}

        def next_gpus(group: str) -> float:
            return self.held[group] - expiring.get(group, 0.0) + granted[group]

        groups = sorted(set(self.pending) | set(self.expired)) if with_expired else sorted(self.pending)
        heap = [(self.group_key(ctx, g, next_gpus(g)), g) for g in groups]
        heapq.heapify(heap)
        queues: dict[str, list[Rank]] = {}
        while heap and any(v > 0 for v in budget.values()):
            _, group = heapq.heappop(heap)
            queue = queues.get(group)
            if queue is None:
                members = [*self.pending.get(group, {}).values()]
                if with_expired:
                    members += self.expired.get(group, {}).values()
                queue = queues[group] = [entry(j) for j in members]
                heapq.heapify(queue)
            while queue:
                rank = heapq.heappop(queue)
                job = self.jobs[rank[2]]
                if offer(job):
                    heapq.heappush(heap, (self.group_key(ctx, group, next_gpus(group)), group))
                    break
                if (rank[0] == 0 or self.block_any) and job.num_gpus <= self._capacity(ctx, job):
                    break  # block: a job that is not taken stops its group for the round
        return chosen

    # -- state changes --------------------------------------------------------------------------
    def _wait(self, ctx: Context, job: Job) -> None:
        st = self.states[job.idx]
        st.waiting_since = ctx.now
        self.pending[st.group][job.idx] = job
        self.waiting.add((ctx.now, job.idx))
        if self.starvation_s < math.inf:
            ctx.set_timer(ctx.now + self.starvation_s, (_STARVE, job.idx, ctx.now))

    def _started(self, ctx: Context, job: Job) -> None:
        st = self.states[job.idx]
        pending = self.pending[st.group]
        del pending[job.idx]
        if not pending:
            del self.pending[st.group]
        self.waiting.remove((st.waiting_since, job.idx))
        self.held[st.group] += job.num_gpus
        self.holds(ctx, job, job.num_gpus)
        self._lease(ctx, job, renew=False)

    def _lease(self, ctx: Context, job: Job, *, renew: bool) -> None:
        """A new lease from the end of the start's stall, at least as long as the stall."""
        st = self.states[job.idx]
        if st.expired:
            self._unexpire(job)
        stall = 0.0 if renew else max(0.0, job.stall_until - ctx.now)
        end = ctx.now + stall + max(self.lease_s, stall)
        if self.tick_s > 0:
            end = math.ceil(end / self.tick_s - 1e-9) * self.tick_s
        st.lease += 1
        ctx.set_timer(end, (_LEASE, job.idx, st.lease))

    def _unexpire(self, job: Job) -> None:
        st = self.states[job.idx]
        expired = self.expired[st.group]
        del expired[job.idx]
        if not expired:
            del self.expired[st.group]
        st.expired = False

    def _pause(self, ctx: Context, job: Job) -> None:
        self._unexpire(job)
        st = self.states[job.idx]
        ctx.pause(job)
        self.held[st.group] -= job.num_gpus
        self.holds(ctx, job, -job.num_gpus)
        self._wait(ctx, job)
