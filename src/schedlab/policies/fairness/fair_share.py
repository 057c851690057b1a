"""Fair-share baselines on the lease frame (:mod:`schedlab.policies.fairness.lease`), with the
tenant weights of ``--shares`` (equal when none are given).

* :class:`FairShare` - weighted max-min (DRF with one resource, GPUs: a tenant's dominant
  share is its GPU share): at every round GPUs go by progressive filling to the tenant with the
  fewest GPUs held per unit of weight, counting what the round already granted; FIFO inside a
  tenant. Instantaneous: it has no memory of what a tenant received before.
* :class:`GandivaFair` - GPU-time tickets in the style of Gandiva_fair (Chaudhary et al.,
  EuroSys'20, §3-4): each tenant holds tickets in proportion to its weight and stride
  scheduling serves the tenant with the lowest *pass*, its GPU-seconds received per ticket
  (the next lease counted); a tenant that returns after a time without jobs re-enters at the
  lowest pass of the active tenants (stride scheduling's rule, so idle time is not banked).
  Inside a tenant its tickets are split equally among its jobs: the job with the least GPU-time
  attained goes first. Simplified: one cluster-wide stride scheduler instead of Gandiva_fair's
  per-server gang-aware schedulers with ticket transfers between servers, the lease as its time
  quantum, no GPU trading across generations (the clusters here have one GPU type per pool).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from schedlab.policies.common.placers import Placer
from schedlab.policies.fairness.lease import LeaseScheduler
from schedlab.policies.fairness.ledger import Ledger
from schedlab.policies.params import help_field
from schedlab.sim.job import Job
from schedlab.sim.policy import Context


@dataclass(frozen=True)
class LeaseParams:
    """The lease term of a fair-share baseline."""

    lease_s: float = help_field(900.0, "lease term, seconds of progress (ASTRAEA's, for a like-for-like comparison)")
    tick_s: float = help_field(10.0, "lease ends are rounded up to this grid")


class FairShare(LeaseScheduler):
    """Weighted max-min fair share of GPUs among tenants, re-balanced at lease ends."""

    def __init__(self, placer: Placer, *, lease_s: float = 900.0, tick_s: float = 10.0,
                 shares: Mapping[str, float] | None = None) -> None:  # fmt: skip
        super().__init__("fair-share", placer, lease_s=lease_s, tick_s=tick_s, shares=shares)

    def group_key(self, ctx: Context, group: str, next_gpus: float) -> float:
        return next_gpus / self.weight(group)

    def job_key(self, ctx: Context, job: Job) -> tuple[float, int]:
        return (job.submit, job.idx)


class GandivaFair(LeaseScheduler):
    """Stride scheduling of GPU-time over tenant tickets; least-attained job first in a tenant."""

    ledger: Ledger  # made by setup

    def __init__(self, placer: Placer, *, lease_s: float = 900.0, tick_s: float = 10.0,
                 shares: Mapping[str, float] | None = None) -> None:  # fmt: skip
        super().__init__("gandiva-fair", placer, lease_s=lease_s, tick_s=tick_s, shares=shares)
        self.lift: dict[str, float] = {}  # GPU-s added when a tenant re-enters

    def setup(self, ctx: Context) -> None:
        self.ledger = Ledger(float(ctx.cluster.total_gpus), self.weight, window_s=float("inf"))

    def advance(self, ctx: Context) -> None:
        self.ledger.advance(ctx.now)

    def pass_value(self, tenant: str, next_gpus: float = 0.0) -> float:
        """GPU-seconds per ticket, the next lease counted at ``next_gpus``."""
        used = self.ledger.used[tenant] + self.lift.get(tenant, 0.0) + next_gpus * self.lease_s
        return used / self.weight(tenant)

    def arrived(self, ctx: Context, job: Job) -> None:
        tenant = self.states[job.idx].group
        if self.ledger.jobs[tenant] == 0:
            active = [self.pass_value(t) for t, n in self.ledger.jobs.items() if n > 0]
            behind = min(active, default=0.0) - self.pass_value(tenant)
            if behind > 0:
                self.lift[tenant] = self.lift.get(tenant, 0.0) + behind * self.weight(tenant)
        self.ledger.arrive(tenant, job.num_gpus)

    def finished(self, ctx: Context, job: Job) -> None:
        self.ledger.leave(self.states[job.idx].group, job.num_gpus)

    def holds(self, ctx: Context, job: Job, gpus: float) -> None:
        self.ledger.hold(self.states[job.idx].group, gpus)

    def group_key(self, ctx: Context, group: str, next_gpus: float) -> float:
        return self.pass_value(group, next_gpus)

    def job_key(self, ctx: Context, job: Job) -> tuple[float, float, int]:
        return (ctx.attained(job), job.submit, job.idx)
