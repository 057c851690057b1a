"""``schedlab serve slurm`` in the simulator: the simulated Slurm (``slurm`` or
``slurm-backfill``) with the service beside it, so that what the service does to a real queue
can be predicted on the same jobs.

Every ``interval_s`` from ``first_s``, a cycle does what :meth:`Service.cycle
<schedlab.slurm.service.Service.cycle>` does with ``squeue``: the pending jobs as ``squeue``
shows them (:class:`QueueJob`: name, user, account, GPUs, nodes, time limit, submit time) go
through the same :func:`~schedlab.slurm.live.pending_workload`, :func:`~schedlab.slurm.ranking.rank`
and :func:`~schedlab.slurm.ranking.site_factors`, and each job whose factor changed gets it as
``scontrol update`` gives it (:meth:`SlurmBuiltin.site_factors_updated`).

Deviation: a real cycle takes time (reading the queue, ranking, ``scontrol``) and its factors
land that much after the cycle began; here they land at the cycle's start.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.policies.slurm.builtin import SlurmBuiltin
from schedlab.policies.slurm.params import SlurmParams, params_from_conf, scheduler_policy
from schedlab.slurm.client import QueueJob
from schedlab.slurm.live import pending_workload
from schedlab.slurm.ranking import history_on_axis, rank, site_factors
from schedlab.sim.job import Job
from schedlab.sim.policy import Context, WrappedPolicy
from schedlab.workload.schema import Workload

SERVE = "serve-cycle"  # the timer payload of a service cycle


class ServedSlurm(WrappedPolicy):
    """The Slurm policy ``scheduler`` (``SlurmBuiltin`` or ``SlurmBackfill`` with ``params``)
    reordered every ``interval_s`` by ``policy``'s ranking, as the service would. ``epoch_s`` is
    the wall-clock time of simulated time 0 (the ``history`` is on that clock)."""

    def __init__(self, scheduler: type[SlurmBuiltin], params: SlurmParams, cluster: ClusterSpec, *, policy: str,
                 interval_s: float, first_s: float = 0.0, epoch_s: float = 0.0,
                 ranking_params: Any = None, history: Workload | None = None,
                 seed: int = 0) -> None:  # fmt: skip
        super().__init__(scheduler(params, site_factor=self.factor))
        if not (interval_s > 0 and math.isfinite(interval_s)):
            raise ConfigError(f"the service's interval must be a positive number of seconds (got {interval_s})")
        self.cluster = cluster
        self.policy = policy
        self.interval_s = interval_s
        self.first_s = first_s
        self.epoch_s = epoch_s
        self.ranking_params = ranking_params
        self.history = history
        self.seed = seed
        self.factors: dict[int, int] = {}  # the SiteFactor written for each job, by its index
        self.cycles = self.writes = 0

    def factor(self, job: Job) -> int:
        """The job's SiteFactor (0 until the service writes one)."""
        return self.factors.get(job.idx, 0)

    def setup(self, ctx: Context) -> None:
        self.inner.setup(ctx)
        ctx.set_timer(max(self.first_s, ctx.now), SERVE)

    def on_timer(self, ctx: Context, payload: object) -> bool | None:
        if payload != SERVE:
            return self.inner.on_timer(ctx, payload)
        self.cycle(ctx)
        if ctx.pending_count or ctx.arrivals_left:
            ctx.set_timer(ctx.now + self.interval_s, SERVE)
        return False  # a write queues a pass through the inner policy's own timer

    def cycle(self, ctx: Context) -> None:
        """Rank the pending jobs as ``squeue`` would show them and write the factors that changed."""
        self.cycles += 1
        inner: SlurmBuiltin = self.inner  # type: ignore[assignment]  # built from a SlurmBuiltin in __init__
        now = self.epoch_s + ctx.now
        jobs = list(inner.pending.values())
        queue = [self._as_squeue(job) for job in jobs]
        pending = pending_workload(queue, self.cluster, now)
        history = history_on_axis(self.history, now) if self.history is not None else None
        order = rank(self.policy, pending, self.cluster, params=self.ranking_params, history=history, seed=self.seed)
        known = {str(job.idx): self.factors[job.idx] for job in jobs if job.idx in self.factors}
        wanted = {int(job): f for job, f in site_factors(order, known).items()}
        changed = [idx for idx, f in wanted.items() if self.factors.get(idx) != f]
        self.factors.update(wanted)
        self.writes += len(changed)
        inner.site_factors_updated(ctx, changed)

    def _as_squeue(self, job: Job) -> QueueJob:
        limit = job.time_limit
        gpw = job.gpus_per_worker
        nodes = int(round(job.num_gpus / gpw)) if gpw == gpw and gpw > 0 else 1
        return QueueJob(job_id=job.idx, name=job.name, state="PENDING", partition=job.tenant if
                        self.cluster.partitioned else "", account="" if self.cluster.partitioned else job.tenant,
                        user=job.user, submit=int(self.epoch_s + job.submit),
                        start=0, end=0, time_limit_min=int(round(limit / 60.0)) if math.isfinite(limit) else None,
                        nodes=nodes, gpus=int(math.ceil(job.num_gpus)), priority=0, reason="", node_list="")  # fmt: skip

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.inner.report(jobs) or {})
        out.update({"service_cycles": self.cycles, "service_site_factor_writes": self.writes})
        return out


def served_policy(conf_settings: dict[str, str], cluster: ClusterSpec, **service: Any) -> ServedSlurm:
    """The sandbox's simulated Slurm (from its ``slurm.conf``) with the service beside it."""
    from schedlab.policies.slurm.backfill import SlurmBackfill

    scheduler = SlurmBackfill if scheduler_policy(conf_settings) == "slurm-backfill" else SlurmBuiltin
    return ServedSlurm(scheduler, params_from_conf(conf_settings), cluster, **service)
