"""Smallest-GPU-demand-first with a per-tenant fairness cap: an example schedlab policy.

Pending jobs are ranked by GPU demand (fewest GPUs first, then submit order). In rank order a
job starts when

* its tenant would not hold more than ``cap`` of the shared pool's powered-on GPUs (a tenant
  that holds nothing may always start one job, so a job larger than the cap is not starved;
  on a partitioned cluster each tenant owns its pool and the cap does not apply), and
* the placer finds GPUs for it.

A job that fails either test is passed over and later jobs may start (backfill), so small jobs
flow past large ones and one tenant cannot fill the cluster while others wait. Non-preemptive.
Each round looks at every pending job (O(pending jobs) per round).

Run it directly::

    from schedlab.sim.engine import Simulation
    result = Simulation(workload, cluster, SmallFirstCapped(cap=0.5)).run()
"""

from __future__ import annotations

from collections import defaultdict

from sortedcontainers import SortedList

from schedlab.errors import ConfigError
from schedlab.sim.policy import Context, Policy
from schedlab.policies.common.placers import BestFit, Placer
from schedlab.sim.job import Job


class SmallFirstCapped(Policy):
    """Fewest GPUs first; no tenant above ``cap`` x its pool's GPUs; backfill; non-preemptive."""

    name = "small-first-capped"

    def __init__(self, placer: Placer | None = None, *, cap: float = 0.5) -> None:
        if not 0 < cap <= 1:
            raise ConfigError(f"{self.name}: cap must lie in (0, 1], got {cap!r}")
        self.placer = placer or BestFit()
        self.cap = cap
        self.queue: SortedList = SortedList()  # (num_gpus, submit time, job index)
        self.pending: dict[int, Job] = {}
        self.held: defaultdict[str, float] = defaultdict(float)  # GPUs each tenant holds now

    def on_arrival(self, ctx: Context, job: Job) -> None:
        self.queue.add((job.num_gpus, job.submit, job.idx))
        self.pending[job.idx] = job

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.held[job.tenant] -= job.num_gpus

    def over_cap(self, ctx: Context, job: Job) -> bool:
        """Whether starting ``job`` would lift its tenant above the cap."""
        if ctx.cluster.partitioned:
            return False  # each tenant owns its pool: there is nobody to be fair to
        held = self.held[job.tenant]
        limit = self.cap * ctx.state.pool_gpus_on.get(ctx.pool_of(job), 0)
        return held > 0 and held + job.num_gpus > limit

    def schedule(self, ctx: Context) -> None:
        for entry in list(self.queue):  # a copy: started jobs leave the queue as we go
            job = self.pending[entry[2]]
            if self.over_cap(ctx, job):
                continue
            alloc = self.placer.place(ctx, job)
            if alloc is None:
                continue  # a later job may still fit (another pool or GPU type)
            ctx.start(job, alloc)
            self.queue.remove(entry)
            del self.pending[entry[2]]
            self.held[job.tenant] += job.num_gpus
