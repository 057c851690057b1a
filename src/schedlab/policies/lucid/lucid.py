"""Lucid (Hu et al., "Lucid: A Non-intrusive, Scalable and Interpretable Scheduler for Deep
Learning Training Jobs", ASPLOS'23): priority order by estimated GPU time and affine-pair
packing by sharing score, as its public simulator (``simulation/policy/lucid.py`` of the
artifact) defines them. A Castor §9.1 baseline.

Every round the pending jobs are taken in ascending estimated GPU time (the Workload Estimate
Model's duration x GPUs; ties by submit time). With packing on, each job of at most one node's
GPUs first looks for an *affine partner* (the Affine-pair Job Binder, §4.2) among the running
jobs in start order and takes the first one that

1. holds its GPUs alone and has the same GPU count (Lucid never spreads a shared job over
   nodes, the network contention §9.1 of Castor mentions);
2. is compatible: the two sharing scores (:mod:`.scores`) sum to at most ``max_score_sum``
   = 2 (Tiny with anything, Medium with Medium, never Jumbo with Medium or Jumbo);
3. fits: both jobs' memory in one GPU (``gpu_mem_gib``);
4. is time-aware: the newcomer's estimated GPU time is at most ``time_factor`` = 2 times the
   partner's, so a long job never rides on a short one's GPUs.

A job with no affine partner takes free GPUs (consolidated); one that finds neither waits, and
later jobs are still tried. With packing off, jobs start strictly in order and the first that
does not fit blocks the queue (the artifact's two loops). Never preempts; at most two jobs per
GPU; the pair runs at the measured speeds (the run's rates are those of
:class:`~schedlab.sim.colocation.ColocationPerf`, as for castor).

**Prescient Adaptive Sharing (§4.3).** Packing is on while the forecast job submissions per
10 minutes exceed ``pas_threshold`` (the artifact: 2, on its Venus trace; other traces always
pack). The artifact forecasts with its Throughput Predict Model (an EBM on the cluster's
history); we have no such series for a synthetic workload, so the forecast is persistence: the
mean submissions per 10-minute bin over the last ``pas_window_s`` (the artifact averages its
next five bins, 50 minutes). ``pas_threshold = 0`` packs always.

**Deviations.** The estimated duration is the job's true work (an oracle, as ``sjf`` and
``ssf`` use), not the Workload Estimate Model's GA2M prediction. The Non-intrusive Job Profiler
(jobs first run for a few minutes on a profiling partition) and its auto-scaling are not
modelled: a job's profile is known at submission. Models and batches are drawn as for castor
(:func:`schedlab.sim.iteration.assign`, the same job gets the same model), so the two run on
identical jobs. The artifact re-checks packing every 100 s; we do it every scheduling round.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

from sortedcontainers import SortedList

from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.policies.common.placers import Placer
from schedlab.policies.lucid.scores import Scores, lookup
from schedlab.sim.colocation import ColocationPerf, JobSetting, XiSource
from schedlab.sim.config import SimConfig
from schedlab.sim.iteration import CATALOGUE, assign, memory_mib
from schedlab.sim.job import Job
from schedlab.sim.policy import Context, Policy

BIN_S = 600.0  # the artifact's throughput series: 10-minute bins


@dataclass(frozen=True)
class Packing:
    """One packing decision: the newcomer, its partner and their sharing scores."""

    job: str
    host: str
    scores: tuple[int, int]


class Lucid(Policy):
    """Lucid's scheduling loop; ``truth`` gives the run's interference ratios and ``scores`` the
    sharing score of each (model, profiled batch)."""

    name = "lucid"
    jobs_per_gpu = 2

    def __init__(
        self,
        placer: Placer,
        *,
        truth: XiSource,
        scores: Scores,
        max_score_sum: int = 2,
        time_factor: float = 2.0,
        gpu_mem_mib: float = 48 * 1024.0,
        pas_threshold: float = 2.0,
        pas_window_s: float = 3000.0,
        seed: int = 0,
    ) -> None:
        if not gpu_mem_mib > 0 or not time_factor > 0 or pas_threshold < 0 or not pas_window_s > 0:
            raise ConfigError("lucid: gpu_mem_gib, time_factor and pas_window_s must be positive, pas_threshold >= 0")
        self.placer = placer
        self.truth = truth
        self.scores = scores
        self.max_score_sum = max_score_sum
        self.time_factor = time_factor
        self.gpu_mem_mib = gpu_mem_mib
        self.pas_threshold = pas_threshold
        self.pas_window_s = pas_window_s
        self.seed = seed
        self.perf: ColocationPerf | None = None
        self.queue: SortedList = SortedList()  # (estimated GPU time, submit, idx)
        self.pending: dict[int, Job] = {}
        self.recent: deque[float] = deque()  # submit times within the PAS window
        self.node_gpus = 0
        self.packings: list[Packing] = []
        self.rounds = 0
        self.packing_rounds = 0

    def perf_model(self, cluster: ClusterSpec, config: SimConfig) -> ColocationPerf:
        self.perf = ColocationPerf(cluster, self.truth, cross_node_factor=config.cross_node_factor)
        return self.perf

    def setup(self, ctx: Context) -> None:
        if self.perf is None:
            raise ConfigError("lucid sets the run's rates itself (Policy.perf_model); run it without perf=")
        self.node_gpus = max(ctx.state.node_gpus)

    def estimate(self, job: Job) -> float:
        """Estimated GPU time: duration x GPUs (the artifact's ``priority x gpu_num``)."""
        return job.work * job.num_gpus

    def score(self, job: Job) -> int:
        assert self.perf is not None
        s = self.perf.settings[job.idx]
        return lookup(self.scores, s.profile.name, s.batch)

    def on_arrival(self, ctx: Context, job: Job) -> None:
        assert self.perf is not None
        model, batch = assign(job.id, self.seed, job.model)
        self.perf.settings[job.idx] = JobSetting(CATALOGUE[model], batch, 1, max(1, int(job.num_gpus)))
        self.queue.add((self.estimate(job), job.submit, job.idx))
        self.pending[job.idx] = job
        self.recent.append(job.submit)

    def on_finish(self, ctx: Context, job: Job) -> None:
        assert self.perf is not None
        self.perf.settings.pop(job.idx, None)

    def packing_on(self, now: float) -> bool:
        """Prescient Adaptive Sharing with a persistence forecast (module docstring); a
        threshold of 0 packs always."""
        if self.pas_threshold == 0:
            return True
        while self.recent and self.recent[0] <= now - self.pas_window_s:
            self.recent.popleft()
        forecast = len(self.recent) * BIN_S / self.pas_window_s
        return forecast > self.pas_threshold

    def schedule(self, ctx: Context) -> None:
        if not self.queue:
            return
        pack = self.packing_on(ctx.now)
        self.rounds += 1
        self.packing_rounds += pack
        for entry in list(self.queue):
            job = self.pending[entry[2]]
            host = self.partner(ctx, job) if pack else None
            if host is not None:
                self.packings.append(Packing(job.id, host.id, (self.score(job), self.score(host))))
                ctx.colocate(job, host)
            else:
                alloc = self.placer.place(ctx, job)
                if alloc is None:
                    if pack:
                        continue
                    break
                ctx.start(job, alloc)
            self.queue.remove(entry)
            del self.pending[entry[2]]

    def partner(self, ctx: Context, job: Job) -> Job | None:
        """The first running job (in start order) that is an affine partner of ``job``."""
        if job.fractional or job.num_gpus > self.node_gpus:
            return None
        for host in ctx.running.values():
            if self.affine(ctx, job, host):
                return host
        return None

    def affine(self, ctx: Context, job: Job, host: Job) -> bool:
        """Rules 1-4 of the module docstring."""
        if host.colocated or host.num_gpus != job.num_gpus or ctx.pool_of(host) != ctx.pool_of(job):
            return False
        if job.gpu_type and any(ctx.state.node_type[n] != job.gpu_type for n in host.nodes):
            return False
        if self.score(job) + self.score(host) > self.max_score_sum:
            return False
        assert self.perf is not None
        a, b = self.perf.settings[job.idx], self.perf.settings[host.idx]
        if memory_mib(a.profile, a.batch) + memory_mib(b.profile, b.batch) > self.gpu_mem_mib:
            return False
        return self.estimate(job) <= self.time_factor * self.estimate(host)

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        by_pair: dict[str, int] = {}
        for p in self.packings:
            key = "+".join(str(s) for s in sorted(p.scores))
            by_pair[key] = by_pair.get(key, 0) + 1
        return {"lucid": {
            "packings": len(self.packings),
            "packings_by_scores": by_pair,
            "packing_round_share": self.packing_rounds / self.rounds if self.rounds else None,
        }}  # fmt: skip
