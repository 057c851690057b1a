"""YARN capacity scheduler (Apache Hadoop YARN CapacityScheduler, as the baseline of the
Helios, Philly and GFS studies): one FIFO queue per tenant, each tenant limited to its
capacity (``TenantSpec.quota_gpus``; without quotas, an equal split of the pool), best-fit
placement. A queue blocks at its head: YARN does not reorder jobs within a queue.

``elastic`` lets a tenant borrow idle GPUs beyond its capacity (YARN's maximum-capacity
above capacity); borrowed GPUs are not reclaimed (no preemption in this baseline).
On a partitioned cluster every tenant already owns its nodes, so this is per-VC FIFO.
A job larger than its tenant's capacity is refused at submission, as YARN refuses an
application above its queue's limit: it never runs and is reported unfinished.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from schedlab.sim.policy import Context, Policy
from schedlab.policies.params import help_field
from schedlab.policies.common.placers import Placer
from schedlab.sim.job import Job


@dataclass(frozen=True)
class YarnParams:
    """Whether tenants may borrow idle GPUs."""

    elastic: bool = help_field(False, "let a tenant borrow idle GPUs beyond its capacity (YARN's maximum-capacity)")


class YarnCapacity(Policy):
    """Per-tenant FIFO with capacity limits."""

    name = "yarn-cs"

    def __init__(self, placer: Placer, *, elastic: bool = False) -> None:
        self.placer = placer
        self.elastic = elastic
        self.queues: dict[str, deque[Job]] = {}
        self.used: dict[str, float] = {}
        self.capacity: dict[str, float] = {}
        self.refused: list[str] = []  # ids of jobs above their tenant's capacity

    def setup(self, ctx: Context) -> None:
        spec = ctx.cluster
        total = spec.total_gpus if not spec.partitioned else 0
        tenants = spec.tenants
        for name, tenant in tenants.items():
            if spec.partitioned:
                self.capacity[name] = float(spec.gpus_by_pool().get(name, 0))
            elif tenant.quota_gpus is not None:
                self.capacity[name] = tenant.quota_gpus
        self._default_share = total / max(1, len(tenants)) if tenants else float(total)

    def _capacity(self, ctx: Context, tenant: str) -> float:
        cap = self.capacity.get(tenant)
        if cap is None:
            cap = self.capacity[tenant] = self._default_share or float(ctx.cluster.total_gpus)
        return cap

    def on_arrival(self, ctx: Context, job: Job) -> None:
        if job.num_gpus > self._capacity(ctx, job.tenant) and not self.elastic:
            self.refused.append(job.id)
            return
        self.queues.setdefault(job.tenant, deque()).append(job)

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.used[job.tenant] -= job.num_gpus

    def schedule(self, ctx: Context) -> None:
        for tenant, queue in self.queues.items():
            cap = self._capacity(ctx, tenant)
            while queue:
                job = queue[0]
                used = self.used.get(tenant, 0.0)
                if used + job.num_gpus > cap and not self.elastic:
                    break
                alloc = self.placer.place(ctx, job)
                if alloc is None:
                    break
                ctx.start(job, alloc)
                queue.popleft()
                self.used[tenant] = used + job.num_gpus
