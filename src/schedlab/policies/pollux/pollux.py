"""Pollux's scheduler (Qiao et al., OSDI'21, §4) on the engine's elastic resize, as a Castor
§9.1 baseline: every ``interval_s`` (60 s, §4.2) the GPUs are re-divided among the active jobs
to maximise the fairness-weighted mean of their speedups, and each job trains at the batch size
that maximises its goodput on what it gets (:mod:`.goodput`).

**Speedup and fitness (§4.2).** ``SPEEDUP_j(a) = max_M GOODPUT_j(a, M) / max_M
GOODPUT_j(a_f, M)`` with ``a_f`` the job's fair share, an exclusive ``1/J`` of the cluster's
GPUs (below one GPU, that share of one GPU's goodput); ``FITNESS_p = (mean_j SPEEDUP_j^p)^(1/p)``
with ``p = -1`` by default. A job whose allocation changes has its speedup scaled by the
re-allocation penalty ``(T_j - N_j delta) / (T_j + delta)`` (age ``T_j``, re-allocations so
far ``N_j``, ``delta`` the restart delay, here the engine's ``checkpoint_s + restore_s``).

**Search.** Pollux searches allocations with a genetic algorithm. Ours is a documented lighter
search on GPU counts: (1) with ``p < 0`` any job left without GPUs makes the fitness 0, so
every job gets at least one GPU when there are as many GPUs as jobs; when there are fewer, the
earliest-submitted jobs do (the FIFO order Pollux's implementation uses) and the rest wait;
a job that needs a GPU takes a free one or one from the job whose loss costs the fitness least;
(2) starting from the current allocation, single-GPU moves (a free GPU to a job, or one GPU from
one job to another) are applied while the best one raises the fitness. Counts are then placed on
nodes: a job of up to one node's GPUs on one node (its own first, else best fit), a larger one
over its own nodes and then the nodes with the most free GPUs; a job that shrinks keeps GPUs of
its own nodes.

**Mechanics.** A job whose count changes is restarted on its new allocation through
``ctx.resize`` (checkpoint and restore: it stalls ``checkpoint_s + restore_s``); a job dropped to
zero is paused. It then progresses at ``GOODPUT(a, M*) / GOODPUT(a_0, M_0)`` work-seconds per
second, where ``a_0`` GPUs at per-GPU batch ``B_0`` (``M_0 = a_0 B_0``) is how it was submitted:
its work (``duration_s``) is measured at its request. Models and batches are drawn as for castor
(:func:`schedlab.sim.iteration.assign`).

**Missing against full Pollux**: the genetic algorithm over node-level allocations and its
interference avoidance (at most one distributed job per node); ``phi_t`` measured and growing
during training (a constant ``noise_scale x M0`` here); online fitting of the throughput
parameters (the catalogue's fits are used as if known); cluster autoscaling; the agent's
learning-rate scaling (AdaScale), which only matters for real training.
"""

from __future__ import annotations

import heapq
import math
import time
from typing import Any

import pandas as pd

from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.policies.pollux.goodput import Config, GoodputModel, best, best_at
from schedlab.sim.engine import SimConfig
from schedlab.sim.iteration import CATALOGUE, assign, iteration_time
from schedlab.sim.job import RUNNING, Job
from schedlab.sim.perf import PerfModel
from schedlab.sim.policy import Context, Policy

EPS = 1e-12
MIN_PENALTY = 1e-3  # floor of the re-allocation factor, so a forced move stays comparable


class JobModel:
    """A job's goodput model, its goodput as submitted and its current batch configuration."""

    __slots__ = ("model", "base", "config", "reallocations")

    def __init__(self, model: GoodputModel, base: float) -> None:
        self.model = model
        self.base = base
        self.config: Config | None = None
        self.reallocations = 0


class PolluxPerf(PerfModel):
    """Rates of elastic jobs: best goodput on the GPUs the job holds over its goodput as submitted."""

    def __init__(self, spec: ClusterSpec, jobs: dict[int, JobModel]) -> None:
        super().__init__(spec)
        self.jobs = jobs

    def rate(self, job: Job, nodes: tuple[int, ...]) -> float:
        m = self.jobs.get(job.idx)
        if m is None:
            return super().rate(job, nodes)
        gpus = sum(len(g) for _, g in job.alloc)
        m.config = best(m.model, gpus)
        return m.config.goodput / m.base


class Pollux(Policy):
    """Periodic goodput-driven reallocation with batch-size adaptation (module docstring)."""

    name = "pollux"

    def __init__(
        self,
        *,
        interval_s: float = 60.0,
        p: float = -1.0,
        noise_scale: float = 10.0,
        max_batch_x: float = 32.0,
        seed: int = 0,
    ) -> None:
        if not interval_s > 0 or not noise_scale >= 0 or not max_batch_x >= 1:
            raise ConfigError("pollux: need interval_s > 0, noise_scale >= 0, max_batch_x >= 1")
        self.interval_s = interval_s
        self.p = p
        self.noise_scale = noise_scale
        self.max_batch_x = max_batch_x
        self.seed = seed
        self.jobs: dict[int, JobModel] = {}
        self.delta = 0.0
        self.next_round = 0.0
        self.rounds = 0
        self.reallocations = 0
        self.decision_s = 0.0
        self.resizes: list[tuple[float, str, int]] = []  # (time, job, GPUs) of every start or resize

    def perf_model(self, cluster: ClusterSpec, config: SimConfig) -> PerfModel:
        self.delta = config.checkpoint_s + config.restore_s
        return PolluxPerf(cluster, self.jobs)

    def setup(self, ctx: Context) -> None:
        if ctx.cluster.partitioned:
            raise ConfigError(f"pollux schedules one shared pool; cluster '{ctx.cluster.name}' is partitioned")

    def on_arrival(self, ctx: Context, job: Job) -> None:
        gpw = job.gpus_per_worker
        if job.fractional or (gpw == gpw and gpw > 1) or job.gpu_type:
            raise ConfigError(f"pollux: job '{job.id}' must ask for whole GPUs of any type in one-GPU workers")
        name, batch = assign(job.id, self.seed, job.model)
        profile = CATALOGUE[name]
        gpus = max(1, int(job.num_gpus))
        m0 = gpus * batch
        model = GoodputModel(profile, m0, self.noise_scale * m0, self.max_batch_x * m0,
                             float(max(max(profile.batches), batch)))  # fmt: skip
        self.jobs[job.idx] = JobModel(model, m0 / iteration_time(profile, batch, 1, gpus))

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.jobs.pop(job.idx, None)

    def on_timer(self, ctx: Context, payload: object) -> bool:
        return payload == "pollux"

    # ----- the round -------------------------------------------------------------------------
    def schedule(self, ctx: Context) -> None:
        if ctx.now < self.next_round or not ctx.active:
            return
        t0 = time.process_time()
        target = self.plan(ctx)
        self.apply(ctx, target)
        self.decision_s += time.process_time() - t0
        self.rounds += 1
        self.next_round = ctx.now + self.interval_s
        ctx.set_timer(self.next_round, "pollux")

    def utility(self, speedup: float) -> float:
        """A term of the fitness, increasing in the speedup: mean of ``u`` orders allocations as
        ``FITNESS_p`` does (``-s^p`` for ``p < 0``, ``log s`` for 0, ``s^p`` for ``p > 0``)."""
        if speedup <= 0:
            return -math.inf if self.p <= 0 else 0.0
        if self.p < 0:
            return -(speedup**self.p)
        return math.log(speedup) if self.p == 0 else speedup**self.p

    def speedup(self, ctx: Context, job: Job, gpus: int, current: int, fair: float) -> float:
        """§4.2's speedup of ``job`` on ``gpus`` GPUs, with the re-allocation penalty when that
        differs from the ``current`` count of a job that holds GPUs."""
        m = self.jobs[job.idx]
        s = best(m.model, gpus).goodput / best_at(m.model, fair)
        if current > 0 and gpus != current:
            age = ctx.now - job.submit
            s *= max(MIN_PENALTY, (age - m.reallocations * self.delta) / (age + self.delta))
        return s

    def plan(self, ctx: Context) -> dict[int, int]:
        """GPU counts per active job (0 = wait); see the module docstring's search."""
        total = sum(g for g, on in zip(ctx.state.node_gpus, ctx.state.on, strict=True) if on)
        jobs = sorted(ctx.active.values(), key=lambda j: (j.submit, j.idx))
        fair = total / len(jobs)
        admitted = jobs[:total]
        current = {j.idx: (j.held_gpus if j.state == RUNNING else 0) for j in jobs}
        count = {j.idx: current[j.idx] for j in admitted}
        cache: dict[tuple[int, int], float] = {}

        def u(job: Job, k: int) -> float:
            key = (job.idx, k)
            if key not in cache:
                cache[key] = self.utility(self.speedup(ctx, job, k, current[job.idx], fair)) if k else -math.inf
            return cache[key]

        free = total - sum(count.values())
        for job in admitted:  # (1) a GPU for every admitted job
            if count[job.idx]:
                continue
            if free <= 0:
                donors = [d for d in admitted if count[d.idx] >= 2]
                donor = max(donors, key=lambda d: (u(d, count[d.idx] - 1) - u(d, count[d.idx]), -d.idx))
                count[donor.idx] -= 1
                free += 1
            count[job.idx] = 1
            free -= 1
        # (2) single-GPU moves while the best one helps. The best two gains (a GPU more) and the
        # least two losses (a GPU less) are read from heaps; a job's entries are pushed again
        # when its count changes, and older ones are skipped (``stamp``).
        stamp = {j.idx: 0 for j in admitted}
        gains: list[tuple[float, int, int, Job]] = []  # (-gain, idx, stamp, job)
        losses: list[tuple[float, int, int, Job]] = []  # (loss, idx, stamp, job)

        def push(j: Job) -> None:
            c = count[j.idx]
            if c < total:
                heapq.heappush(gains, (-(u(j, c + 1) - u(j, c)), j.idx, stamp[j.idx], j))
            if c >= 2:
                heapq.heappush(losses, (u(j, c) - u(j, c - 1), j.idx, stamp[j.idx], j))

        def best_two(heap: list[tuple[float, int, int, Job]]) -> list[tuple[float, int, int, Job]]:
            top: list[tuple[float, int, int, Job]] = []
            while heap and len(top) < 2:
                entry = heapq.heappop(heap)
                if entry[2] == stamp[entry[1]]:
                    top.append(entry)
            for entry in top:
                heapq.heappush(heap, entry)
            return top

        def change(j: Job, by: int) -> None:
            count[j.idx] += by
            stamp[j.idx] += 1
            push(j)

        for j in admitted:
            push(j)
        for _ in range(2 * total):
            top_gains = best_two(gains)
            if not top_gains:
                break
            if free > 0:
                if -top_gains[0][0] <= EPS:
                    break
                change(top_gains[0][3], 1)
                free -= 1
                continue
            moves = [(-g - loss, gj, lj) for g, _, _, gj in top_gains for loss, _, _, lj in best_two(losses)
                     if gj is not lj]  # fmt: skip
            if not moves:
                break
            delta, to, frm = max(moves, key=lambda m: (m[0], -m[1].idx, -m[2].idx))
            if not delta > EPS:
                break
            change(to, 1)
            change(frm, -1)
        return {j.idx: count.get(j.idx, 0) for j in jobs}

    def apply(self, ctx: Context, target: dict[int, int]) -> None:
        """Pause, shrink, then grow and start jobs to reach ``target`` (counts per job)."""
        running = list(ctx.running.values())
        for job in running:
            want = target.get(job.idx, 0)
            if want == 0:
                ctx.pause(job)
            elif want < job.held_gpus:
                self._resize(ctx, job, self._shrunk(job, want))
        grow = [ctx.active[i] for i, k in target.items() if k > 0
                and (ctx.active[i].state != RUNNING or k > ctx.active[i].held_gpus)]  # fmt: skip
        for job in sorted(grow, key=lambda j: (-target[j.idx], j.submit, j.idx)):
            alloc = self._placed(ctx, job, target[job.idx])
            if alloc and (job.state != RUNNING or sum(c for _, c in alloc) > job.held_gpus):
                self._resize(ctx, job, alloc)

    def _resize(self, ctx: Context, job: Job, alloc: list[tuple[int, int]]) -> None:
        if job.state == RUNNING:
            self.jobs[job.idx].reallocations += 1
            self.reallocations += 1
        self.resizes.append((ctx.now, job.id, sum(c for _, c in alloc)))
        ctx.resize(job, alloc)

    @staticmethod
    def _shrunk(job: Job, want: int) -> list[tuple[int, int]]:
        """``want`` of the job's own GPUs, from its nodes holding the most of them."""
        out = []
        for node, gids in sorted(job.alloc, key=lambda a: (-len(a[1]), a[0])):
            take = min(len(gids), want)
            if take:
                out.append((node, take))
                want -= take
        return out

    @staticmethod
    def _placed(ctx: Context, job: Job, want: int) -> list[tuple[int, int]]:
        """Nodes for ``want`` GPUs, counting the job's own GPUs as free (fewer when the
        cluster has fewer free; empty when none)."""
        s = ctx.state
        free = [f if on else 0 for f, on in zip(s.free, s.on, strict=True)]
        own = [node for node, _ in job.alloc] if job.state == RUNNING else []
        for node, gids in job.alloc if job.state == RUNNING else ():
            free[node] += len(gids)
        want = min(want, sum(free))
        if want <= 0:
            return []
        if want <= max(s.node_gpus):
            fits = [n for n in range(len(free)) if free[n] >= want]
            if fits:
                node = next((n for n in own if free[n] >= want), None)
                if node is None:
                    node = min(fits, key=lambda n: (free[n], n))
                return [(node, want)]
        out = []
        for node in [*own, *sorted((n for n in range(len(free)) if n not in own), key=lambda n: (-free[n], n))]:
            take = min(free[node], want)
            if take:
                out.append((node, take))
                want -= take
            if not want:
                break
        return out

    def report(self, jobs: pd.DataFrame) -> dict[str, Any]:
        return {"pollux": {
            "rounds": self.rounds,
            "reallocations": self.reallocations,
            "decision_cpu_s": self.decision_s,
        }}  # fmt: skip
