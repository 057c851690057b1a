"""``chronus``: lease-based scheduling (Gao et al., SoCC '21), as a GFS baseline (Duan et al.,
ASPLOS '26, §4.1).

Chronus runs jobs in leases and, at lease boundaries, re-selects the jobs that get the next
leases by solving an integer program. Mapping assumed here (GFS jobs have no deadlines, so the
SLO jobs of Chronus become HP jobs and its best-effort jobs become spot jobs):

* a job that starts gets a lease of ``hp_lease_s`` (20 min) or ``spot_lease_s`` (5 min);
  lease ends are rounded up to the ``tick_s`` grid (5 min) so that all boundaries of one
  instant are decided together: a lease lasts between its length and one tick more;
* inside a lease a job is never preempted; free GPUs are granted at once (FCFS, HP first,
  with the placer) as new leases, so contention is resolved only at boundaries. Waiting jobs
  sit in FIFO queues per class and (pool, shape); a shape whose head cannot be placed is
  passed over for the round (its other jobs cannot be placed either);
* at a boundary the jobs whose lease ends and the pending jobs that may use their groups (at
  most ``max_candidates``, HP first then by submission; the others already failed to fit the
  free GPUs, which is all the boundary could offer them) compete for the GPUs they could use: the free GPUs plus those
  of the expiring jobs, per (pool, GPU model) group. A MILP (SciPy's HiGHS, ``milp``) picks at
  most one group per job under each group's capacity;
* objective (lexicographic, folded into one weighted sum): first the HP GPUs granted, then
  the spot GPUs, then keeping running jobs (a pause costs a checkpoint and a restore), then
  submission order. HP weight = 1 + all candidate spot GPUs, so no amount of spot work
  outweighs one HP GPU (Chronus serves SLO jobs first); the tie-breaks sum to less than one
  GPU, so they never trade GPUs. GPU counts rather than job counts are maximised because GFS
  measures GPU allocation rate and HP service;
* expiring jobs that are not selected are paused (``ctx.pause``: checkpointed, no work
  lost) and re-queued; selected expiring jobs get a new lease in place; selected pending jobs
  are placed with the placer in HP-first FCFS order. A fractional job counts as one GPU.

``release_all_s`` (off by default) is Chronus as the authors' GFS simulator runs it: every
1,200 s every running job is released and queued again at a cost of 120 s (the engine's
``restore_s``), and the queues are placed again, HP first, with no MILP; its queue order
(largest pods first) is not followed here, the queues keep submission order.

Deviations: the MILP sees capacity per group, not per node, so a selected pending job that
the placer cannot place (fragmentation) waits for the next boundary; Chronus' deadline
profiling and its consolidation/local-search placement are not modelled.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.errors import ConfigError
from schedlab.sim.policy import Context, Policy
from schedlab.policies.common.queues import ClassQueues, job_shape
from schedlab.policies.common.placers import Placer
from schedlab.policies.params import help_field
from schedlab.sim.job import PENDING, RUNNING, Job

SPOT = "spot"


@dataclass(frozen=True)
class ChronusConfig:
    """Lease lengths, the boundary grid and the candidate cap (seconds, jobs)."""

    hp_lease_s: float = help_field(1200.0, "lease of a high-priority job (s)")
    spot_lease_s: float = help_field(300.0, "lease of a spot job (s)")
    tick_s: float = help_field(300.0, "grid of lease boundaries (s)")
    max_candidates: int = help_field(256, "most jobs in one lease auction")
    release_all_s: float | None = help_field(None, "every this many seconds (a multiple of tick_s) every running job is "
                                             "paused and all jobs are placed again, HP first, no MILP: the authors' "
                                             "GFS simulator (1200, with --restore-s 120); none = leases and the MILP")  # fmt: skip

    def __post_init__(self) -> None:
        if not (self.hp_lease_s > 0 and self.spot_lease_s > 0 and self.tick_s > 0 and self.max_candidates >= 1):
            raise ConfigError("chronus: lease lengths and tick_s must be positive, max_candidates at least 1")
        if self.release_all_s is not None:
            ticks = self.release_all_s / self.tick_s
            if not self.release_all_s > 0 or abs(ticks - round(ticks)) > 1e-9:
                raise ConfigError(f"chronus: release_all_s must be none or a positive multiple of tick_s "
                                  f"({self.tick_s:g} s) (got {self.release_all_s!r})")  # fmt: skip


@dataclass(frozen=True)
class Candidate:
    """A job in the lease auction: GPUs, HP or not, running now, and the groups it may use."""

    gpus: int
    hp: bool
    running: bool
    groups: tuple[int, ...]


def select(candidates: list[Candidate], capacity: dict[int, float]) -> list[int | None]:
    """Solve the lease MILP: for each candidate, the group it is granted, or None."""
    if not candidates:
        return []
    from scipy.optimize import Bounds, LinearConstraint, milp  # imported here: slow to import, rarely needed
    from scipy.sparse import coo_matrix

    n = len(candidates)
    spot_gpus = sum(c.gpus for c in candidates if not c.hp)
    rows, cols, costs, var_job, var_group = [], [], [], [], []
    for j, c in enumerate(candidates):
        bonus = (0.5 * c.running + 0.4 * (n - j) / n) / (n + 1)
        value = c.gpus * ((spot_gpus + 1) if c.hp else 1) + bonus
        for g in c.groups:
            var_job.append(j)
            var_group.append(g)
            costs.append(-value)
    groups = sorted(capacity)
    index = {g: i for i, g in enumerate(groups)}
    nvar = len(costs)
    for v in range(nvar):
        rows.append(index[var_group[v]])
        cols.append(v)
    cap_matrix = coo_matrix(([candidates[var_job[v]].gpus for v in range(nvar)], (rows, cols)), shape=(len(groups), nvar))
    one_matrix = coo_matrix((np.ones(nvar), (var_job, range(nvar))), shape=(n, nvar))
    result = milp(
        np.asarray(costs),
        constraints=[LinearConstraint(cap_matrix, -np.inf, [capacity[g] for g in groups]),
                     LinearConstraint(one_matrix, -np.inf, 1.0)],
        integrality=np.ones(nvar), bounds=Bounds(0, 1),
    )  # fmt: skip
    granted: list[int | None] = [None] * n
    for taken in np.flatnonzero(np.round(result.x) > 0):
        granted[var_job[taken]] = var_group[taken]
    return granted


def uncontended(candidates: list[Candidate], capacity: dict[int, float]) -> bool:
    """Whether every candidate can be granted its only group at once (the MILP's optimum then
    grants all, so it is not solved)."""
    demand: dict[int, float] = {}
    for c in candidates:
        if len(c.groups) != 1:
            return False
        demand[c.groups[0]] = demand.get(c.groups[0], 0.0) + c.gpus
    return all(d <= capacity[g] for g, d in demand.items())


class Chronus(Policy):
    """Leases with MILP renewal at lease boundaries; no preemption inside a lease."""

    name = "chronus"

    def __init__(self, placer: Placer, config: ChronusConfig | None = None) -> None:
        self.placer = placer
        self.config = config or ChronusConfig()
        self.pending = ClassQueues()  # keyed by (pool, shape)
        self.expiry: dict[float, dict[int, Job]] = {}  # lease end -> running jobs
        self.lease_end: dict[int, float] = {}
        self.pauses = 0
        self.boundaries = 0
        self.solves = 0
        self.solve_s = 0.0

    def setup(self, ctx: Context) -> None:
        ctx.set_timer(ctx.now + self.config.tick_s, None)

    def on_arrival(self, ctx: Context, job: Job) -> None:
        self._enqueue(ctx, job)

    def on_finish(self, ctx: Context, job: Job) -> None:
        del self.expiry[self.lease_end.pop(job.idx)][job.idx]

    def on_timer(self, ctx: Context, payload: object) -> bool:
        if ctx.arrivals_left or ctx.active:
            ctx.set_timer(ctx.now + self.config.tick_s, None)
        return any(jobs and end <= ctx.now for end, jobs in self.expiry.items())

    def schedule(self, ctx: Context) -> None:
        expiring = [job for end in [t for t in self.expiry if t <= ctx.now] for job in self.expiry.pop(end).values()]
        if expiring:
            self._boundary(ctx, expiring)
        for spot in (False, True):
            self.pending.drain(lambda job, _key: self._grant(ctx, job), spot=spot)

    # ----- queues: per class, then per (pool, shape), FIFO by submission ---------------------------
    def _enqueue(self, ctx: Context, job: Job) -> None:
        self.pending.add(job, (ctx.pool_of(job), *job_shape(job)), spot=job.cls == SPOT)

    def _dequeue(self, ctx: Context, job: Job) -> None:
        self.pending.remove(job, (ctx.pool_of(job), *job_shape(job)), spot=job.cls == SPOT)

    def _pending_in(self, ctx: Context, gids: set[int]) -> Iterator[Job]:
        """Waiting jobs that may use one of the groups ``gids``, HP first, then by submission."""
        state = ctx.state
        for spot in (False, True):
            queues = []
            for queue in self.pending.queues[spot].values():
                head = self.pending.waiting[queue[0][1]]
                if any(state.node_group[g.nodes[0]] in gids for g in ctx.groups_of(head)):
                    queues.append(queue)
            for _submit, idx in heapq.merge(*queues):
                yield self.pending.waiting[idx]

    # ----- leases ------------------------------------------------------------------------------

    def _lease(self, ctx: Context, job: Job) -> None:
        every = self.config.release_all_s
        if every is not None:  # every lease ends at the next common release
            end = (math.floor(ctx.now / every + 1e-9) + 1) * every
        else:
            length = self.config.spot_lease_s if job.cls == SPOT else self.config.hp_lease_s
            end = math.ceil((ctx.now + length) / self.config.tick_s - 1e-9) * self.config.tick_s
        self.lease_end[job.idx] = end
        self.expiry.setdefault(end, {})[job.idx] = job

    def _grant(self, ctx: Context, job: Job) -> bool:
        """Start ``job`` on free GPUs with a new lease if the placer finds room (the caller
        takes it out of the queue)."""
        if not (job.fractional or job.num_gpus <= ctx.state.free_in(ctx.groups_of(job))):
            return False
        alloc = self.placer.place(ctx, job)
        if alloc is None:
            return False
        ctx.start(job, alloc)
        self._lease(ctx, job)
        return True

    def _boundary(self, ctx: Context, expiring: list[Job]) -> None:
        self.boundaries += 1
        if self.config.release_all_s is not None:
            self._release_all(ctx, expiring)
            return
        state = ctx.state
        freed = {state.node_group[node] for job in expiring for node, _ in job.alloc}
        pending = list(itertools.islice(self._pending_in(ctx, freed), self.config.max_candidates))
        jobs = sorted(expiring, key=lambda j: (j.cls == SPOT, j.submit, j.idx)) + pending
        capacity: dict[int, float] = {}
        candidates: list[Candidate] = []
        for job in jobs:
            gids = tuple(state.node_group[g.nodes[0]] for g in ctx.groups_of(job))
            for gid in gids:
                capacity.setdefault(gid, float(state.groups[gid].free_total))
            candidates.append(Candidate(max(1, int(job.num_gpus)), job.cls != SPOT, job.state == RUNNING, gids))
        for job in expiring:
            for node, gids in job.alloc:
                capacity[state.node_group[node]] += len(gids)
        if uncontended(candidates, capacity):
            granted: list[int | None] = [c.groups[0] for c in candidates]
        else:
            t0 = time.perf_counter()
            granted = select(candidates, capacity)
            self.solve_s += time.perf_counter() - t0
            self.solves += 1
        for job, group in zip(jobs, granted):
            if job.state == RUNNING:
                if group is None:
                    ctx.pause(job)
                    self.pauses += 1
                    del self.lease_end[job.idx]
                    self._enqueue(ctx, job)
                else:
                    self._lease(ctx, job)
        for job, group in zip(jobs, granted):
            if group is not None and job.state == PENDING and self._grant(ctx, job):
                self._dequeue(ctx, job)

    def _release_all(self, ctx: Context, expiring: list[Job]) -> None:
        """Pause every running job and queue it again; :meth:`schedule` then places the queues,
        HP first, each by submission (``release_all_s``)."""
        for job in expiring:
            ctx.pause(job)
            self.pauses += 1
            del self.lease_end[job.idx]
            self._enqueue(ctx, job)

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        """``{"chronus": ...}``: pauses at lease ends, boundaries decided, MILPs solved (only
        where the candidates contend) and their mean time."""
        return {self.name: {
            "pauses": self.pauses,
            "boundaries": self.boundaries,
            "solves": self.solves,
            "solve_ms_mean": 1000.0 * self.solve_s / self.solves if self.solves else None,
        }}  # fmt: skip
