"""Castor's SJF-BSBF (Luo et al., §5.2, Algorithm 1) and the SJF-FFS baseline (§9.1).

Every round, pending jobs are taken in ascending expected time ``L_k = t_iter * I_k`` (the
job's work, line 1; ties by submit time and arrival). A job that fits on free GPUs starts on
the most consolidated ones (lines 6-7, the ``consolidate`` placer by default). Otherwise
(lines 8-19) the running jobs that hold their GPUs alone are candidate partners: for each,
Algorithm 2 (:func:`~schedlab.policies.castor.pair.scale_batch`) tries the new job's
per-step batch ``B, B/2, ...`` with gradient accumulation, Theorem 1 decides whether sharing
beats waiting, and the pair must fit in one GPU's memory; among the partners where sharing
wins, the one with the lowest pair JCT is taken (line 14) and the job is colocated on its
GPUs with that batch. A job that neither fits nor finds a partner waits; later jobs in the
order are still tried (Algorithm 1 loops over every pending job). Never preempts; at most two
jobs per GPU (``C = 2``, Eq. 7); the running job's batch is never changed (§5.2.3).

SJF-FFS is the same loop with the sharing check removed: a job short of free GPUs shares with
the first candidate partner (in GPU order) at the largest per-step batch that fits in memory,
whatever Theorem 1 says.

**Deviations.** The engine colocates a job on the GPUs of *one* running job of the same GPU
count (:meth:`~schedlab.sim.engine.Simulation.colocate`), so Algorithm 1's lines 15-16, which
may gather GPUs from several partners, pick one partner of the new job's size: exactly the
job pair of §5.1. Free GPUs are never mixed with shared ones (§5.2.2 also avoids it). The
jobs' models and batches come from :func:`schedlab.sim.iteration.assign` (seeded by the run's
seed) unless the trace names a catalogue model (then only the batch is drawn), and a job's
iterations are its work over ``t_iter(B, 1)``. A round scans the running jobs once per pending
job that does not fit: O(pending x running).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sortedcontainers import SortedList

from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.policies.castor.pair import SharePlan, concurrent_times, scale_batch, theorem1
from schedlab.policies.common.placers import Placer
from schedlab.sim.colocation import ColocationPerf, JobSetting, XiSource
from schedlab.sim.config import SimConfig
from schedlab.sim.iteration import CATALOGUE, assign, iteration_time, memory_mib
from schedlab.sim.job import Job
from schedlab.sim.policy import Context, Policy

BSBF, FFS = "bsbf", "ffs"


@dataclass(frozen=True)
class Colocation:
    """One sharing decision: the new job, its partner, the per-step batch and Eq. 24's inputs."""

    job: str
    host: str
    batch: float
    steps: int
    solo_jct_s: float  # the job's JCT from now had it waited for the partner's GPUs
    shared_jct_s: float  # its JCT from now sharing them (the pair model, no new arrivals)
    beneficial: bool  # Theorem 1's verdict at this batch (always true for castor)

    @property
    def sharing_benefit(self) -> float:
        """Eq. 24: t_solo-location / t_colocation (> 1: sharing helped this job)."""
        return self.solo_jct_s / self.shared_jct_s


class SjfBsbf(Policy):
    """SJF with best-sharing-benefit-first colocation (``sharing="bsbf"``) or first-fit
    sharing (``sharing="ffs"``). ``truth`` gives the run's interference ratios, ``decide`` the
    ones the policy plans with (the same object, or a predictor)."""

    jobs_per_gpu = 2

    def __init__(
        self,
        placer: Placer,
        *,
        truth: XiSource,
        decide: XiSource,
        sharing: str = BSBF,
        gpu_mem_mib: float = 32768.0,
        seed: int = 0,
    ) -> None:
        if sharing not in (BSBF, FFS):
            raise ConfigError(f"sharing must be '{BSBF}' or '{FFS}', got {sharing!r}")
        if not gpu_mem_mib > 0:
            raise ConfigError(f"gpu_mem_mib must be positive, got {gpu_mem_mib!r}")
        self.name = "castor" if sharing == BSBF else "sjf-ffs"
        self.placer = placer
        self.truth = truth
        self.decide = decide
        self.sharing = sharing
        self.gpu_mem_mib = gpu_mem_mib
        self.seed = seed
        self.perf: ColocationPerf | None = None
        self.queue: SortedList = SortedList()  # (work, submit, idx)
        self.pending: dict[int, Job] = {}
        self.colocations: list[Colocation] = []

    def perf_model(self, cluster: ClusterSpec, config: SimConfig) -> ColocationPerf:
        self.perf = ColocationPerf(cluster, self.truth, cross_node_factor=config.cross_node_factor)
        return self.perf

    def setup(self, ctx: Context) -> None:
        if self.perf is None:
            raise ConfigError(f"{self.name} sets the run's rates itself (Policy.perf_model); run it without perf=")

    @property
    def settings(self) -> dict[int, JobSetting]:
        assert self.perf is not None
        return self.perf.settings

    def on_arrival(self, ctx: Context, job: Job) -> None:
        model, batch = assign(job.id, self.seed, job.model)
        self.settings[job.idx] = JobSetting(CATALOGUE[model], batch, 1, max(1, int(job.num_gpus)))
        self.queue.add((job.work, job.submit, job.idx))
        self.pending[job.idx] = job

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.settings.pop(job.idx, None)

    def schedule(self, ctx: Context) -> None:
        for entry in list(self.queue):
            job = self.pending[entry[2]]
            alloc = self.placer.place(ctx, job)
            if alloc is not None:
                ctx.start(job, alloc)
            elif job.fractional or not self._share(ctx, job):
                continue
            self.queue.remove(entry)
            del self.pending[entry[2]]

    # ----- sharing -----------------------------------------------------------------------------
    def _partners(self, ctx: Context, job: Job) -> list[Job]:
        """Running jobs alone on their GPUs that ``job`` could share: same GPU count, pool and type."""
        pool = ctx.pool_of(job)
        out = []
        for host in ctx.running.values():
            if host.colocated or host.num_gpus != job.num_gpus or ctx.pool_of(host) != pool:
                continue
            if job.gpu_type and any(ctx.state.node_type[n] != job.gpu_type for n in host.nodes):
                continue
            out.append(host)
        return out

    def _share(self, ctx: Context, job: Job) -> bool:
        partners = self._partners(ctx, job)
        if self.sharing == BSBF:
            plans = [(plan.mean_jct, host.idx, host, plan) for host in partners
                     if (plan := self.plan(ctx, job, host)).share]  # fmt: skip
            if not plans:
                return False
            _, _, host, plan = min(plans, key=lambda p: (p[0], p[1]))
        else:
            partners.sort(key=lambda h: h.alloc)
            found = next(((h, b) for h in partners if (b := self._largest_fitting_batch(job, h)) is not None), None)
            if found is None:
                return False
            host, batch = found
            plan = SharePlan(True, batch, float("nan"))
        self._colocate(ctx, job, host, plan.batch)
        return True

    def _fits(self, host: JobSetting, new: JobSetting, sub_batch: float) -> bool:
        return memory_mib(host.profile, host.sub_batch) + memory_mib(new.profile, sub_batch) <= self.gpu_mem_mib

    def _largest_fitting_batch(self, job: Job, host: Job) -> float | None:
        new, running = self.settings[job.idx], self.settings[host.idx]
        b = float(new.batch)
        while b >= 1:
            if self._fits(running, new, b):
                return b
            b /= 2
        return None

    def plan(self, ctx: Context, job: Job, host: Job) -> SharePlan:
        """Algorithm 2 with Theorem 1 for pending ``job`` (B) next to running ``host`` (A)."""
        return scale_batch(self.settings[job.idx].batch, self._evaluator(ctx, job, host))

    def _pair(self, ctx: Context, job: Job, host: Job, b: float) -> tuple[float, float, float, float, float, float]:
        """(t_A, i_A, xi_A, t_B, i_B, xi_B) with the new job at per-step batch ``b``."""
        a, new = self.settings[host.idx], self.settings[job.idx]
        i_a = ctx.remaining(host) / a.t_iter(1)
        i_b = job.work / new.t_iter(1)
        t_b = iteration_time(new.profile, new.batch, round(new.batch / b), new.gpus)
        xi_a = self.decide.xi(a.profile.name, a.sub_batch, new.profile.name, b)
        xi_b = self.decide.xi(new.profile.name, b, a.profile.name, a.sub_batch)
        return a.t_iter(), i_a, xi_a, t_b, i_b, xi_b

    def _evaluator(self, ctx: Context, job: Job, host: Job) -> Callable[[float], tuple[bool, float] | None]:
        a, new = self.settings[host.idx], self.settings[job.idx]

        def evaluate(b: float) -> tuple[bool, float] | None:
            if not self._fits(a, new, b):
                return None
            return theorem1(*self._pair(ctx, job, host, b))

        return evaluate

    def _colocate(self, ctx: Context, job: Job, host: Job, batch: float) -> None:
        new = self.settings[job.idx]
        steps = round(new.batch / batch)
        t_a, i_a, xi_a, t_b, i_b, xi_b = self._pair(ctx, job, host, batch)
        solo = t_a * i_a + new.t_iter(1) * i_b
        shared = concurrent_times(t_a, i_a, xi_a, t_b, i_b, xi_b)[1]
        beneficial = theorem1(t_a, i_a, xi_a, t_b, i_b, xi_b)[0]
        self.colocations.append(Colocation(job.id, host.id, batch, steps, solo, shared, beneficial))
        self.settings[job.idx] = JobSetting(new.profile, new.batch, steps, new.gpus)
        ctx.colocate(job, host)

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        benefit = [c.sharing_benefit for c in self.colocations]
        return {"castor": {
            "colocations": len(self.colocations),
            "accumulating_jobs": sum(c.steps > 1 for c in self.colocations),
            "harmful_colocations": sum(not c.beneficial for c in self.colocations),
            "sharing_benefit_mean": float(np.mean(benefit)) if benefit else None,
            "sharing_benefit_p50": float(np.median(benefit)) if benefit else None,
        }}  # fmt: skip
