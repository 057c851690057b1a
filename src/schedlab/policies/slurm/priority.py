"""priority/multifactor (priority_multifactor.html, Slurm 22.05) with classic fair-share.

``Priority = site_factor + PriorityWeightAge * age + PriorityWeightFairshare * fair_share
+ PriorityWeightJobSize * job_size + PriorityWeightPartition * partition``, each factor in
[0, 1]; a result below 1 is 1 (0 means held) and the stored priority is its integer part,
at most 2^32 - 1 (``_get_priority_internal``). The summation order is Slurm's.

* Age (Age Factor): ``min(wait / PriorityMaxAge, 1)``, the wait counted from submission
  (accrue time = eligible time for a job without dependencies or holds).
* Job size (Job Size Factor; ``set_priority_factors``): ``(nodes / cluster nodes + CPUs /
  cluster CPUs) / 2``, with PriorityFavorSmall ``((N - nodes) / N + (C - CPUs) / C) / 2``;
  the job's GPUs stand in for its CPUs and the cluster's GPUs for its CPUs.
* Partition (Partition Factor): the partition's PriorityJobFactor normalised by the largest;
  every partition has the default PriorityJobFactor=1 here, so the factor is 1.
* Fair-share, classic (classic_fair_share.html, "Simplified Fair-Share Formula" with
  FairShareDampeningFactor 1): ``F = 2^(-U/S)`` per tenant account directly under root, S its
  share of the sibling shares, U its share of the decayed usage of all accounts (GPU-seconds,
  i.e. TRESBillingWeights GRES/gpu=1). Usage decays by the factor ``1 - 0.693 / half-life`` per
  second, the decay thread's approximation of ``2^(-t / half-life)``.
* Site factor: an optional ``site_factor(job) -> int`` (Site Factor; a site_factor plugin sets
  it at submit and updates it every PriorityCalcPeriod).

When (``_decay_thread``, ``priority_p_set``): a job's priority is set at submit and recomputed
for pending jobs every PriorityCalcPeriod. Each period the decay thread first takes the
accounts' effective usage, then decays all usage and charges the running jobs' new usage, then
recomputes the priorities, so fair-share lags usage by one period; a job charges its last
stretch when it ends (``priority_p_job_end``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from schedlab.policies.slurm.nodes import Request
from schedlab.policies.slurm.params import MAX_WEIGHT, SlurmParams
from schedlab.sim.job import Job
from schedlab.sim.policy import Context

SiteFactor = Callable[[Job], int]


class Multifactor:
    """Job priorities and the tenants' fair-share usage. ``shares`` are the tenants' raw shares
    (None: the cluster's tenant weights); a tenant without one has 1."""

    def __init__(self, params: SlurmParams, site_factor: SiteFactor | None = None,
                 shares: Mapping[str, float] | None = None) -> None:  # fmt: skip
        self.params = params
        self.site_factor = site_factor
        self.shares = dict(shares) if shares is not None else None
        self.usage: dict[str, float] = {}  # decayed GPU-seconds per tenant
        self.fair: dict[str, float] = {}  # fair-share factors as of the last period
        self.last_calc = 0.0
        hl = params.priority_decay_half_life
        self.decay = 1.0 - 0.693 / hl if 0 < hl < math.inf else 1.0
        self.nodes = self.gpus = 1

    @property
    def dynamic(self) -> bool:
        """Whether priorities change while jobs wait (age, fair-share or a site factor)."""
        p = self.params
        return bool(p.weight_age or p.weight_fairshare or self.site_factor)

    def setup(self, ctx: Context) -> None:
        cluster = ctx.cluster
        self.nodes, self.gpus = len(cluster.nodes), cluster.total_gpus
        if self.shares is None:
            self.shares = {name: t.weight for name, t in cluster.tenants.items()}
        self.last_calc = ctx.now

    def priority(self, ctx: Context, job: Job, req: Request) -> int:
        """The job's priority now, from the fair-share factors of the last period."""
        p = self.params
        wait = ctx.now - job.submit
        age = 1.0 if wait >= p.priority_max_age else wait / p.priority_max_age
        fair = self.fair.get(job.tenant, 1.0) if p.weight_fairshare else 0.0
        nodes, cpus = req.min_nodes, req.gpus
        if p.priority_favor_small:
            size = ((self.nodes - nodes) / self.nodes + (self.gpus - cpus) / self.gpus) / 2
        else:
            size = (nodes / self.nodes + cpus / self.gpus) / 2
        size = min(max(size, 0.0), 1.0)
        site = self.site_factor(job) if self.site_factor else 0
        value = age * p.weight_age + fair * p.weight_fairshare + size * p.weight_job_size + p.weight_partition + site
        return int(min(max(value, 1.0), MAX_WEIGHT))

    def period(self, ctx: Context, running: Iterable[Job]) -> None:
        """One PriorityCalcPeriod tick of the decay thread (before the priorities are recomputed)."""
        if self.params.weight_fairshare:
            self.fair = self._factors()
            factor = self.decay ** (ctx.now - self.last_calc)
            for tenant in self.usage:
                self.usage[tenant] *= factor
            for job in running:
                self.charge(ctx, job)
        self.last_calc = ctx.now

    def charge(self, ctx: Context, job: Job) -> None:
        """Charge a running job's usage since the last period (or its start); also when it ends."""
        if not self.params.weight_fairshare:
            return
        delta = ctx.now - max(self.last_calc, job.run_since)
        if delta > 0:
            gpus = max(1, math.ceil(job.num_gpus))
            self.usage[job.tenant] = self.usage.get(job.tenant, 0.0) + delta * self.decay**delta * gpus

    def _factors(self) -> dict[str, float]:
        """``2^(-U/S)`` per tenant from the usage as it stands."""
        shares = self.shares or {}
        tenants = set(shares) | set(self.usage)
        total_shares = sum(shares.get(t, 1.0) for t in tenants)
        total_usage = sum(self.usage.values())
        out = {}
        for t in tenants:
            share = shares.get(t, 1.0) / total_shares
            use = self.usage.get(t, 0.0) / total_usage if total_usage > 0 else 0.0
            out[t] = 2.0 ** (-use / share) if share > 0 else 0.0
        return out
