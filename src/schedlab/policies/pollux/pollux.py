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
import operator
import time
from collections.abc import Callable, Mapping
from itertools import chain, compress
from typing import Any


from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.policies.pollux.goodput import Config, GoodputModel, best, best_at
from schedlab.sim.config import SimConfig
from schedlab.sim.iteration import CATALOGUE, assign, iteration_time
from schedlab.sim.job import RUNNING, Job
from schedlab.sim.perf import PerfModel
from schedlab.sim.policy import Context, Policy

EPS = 1e-12
MIN_PENALTY = 1e-3  # floor of the re-allocation factor, so a forced move stays comparable


class JobModel:
    """A job's goodput model, its goodput as submitted, its current batch configuration, the
    GPUs of the allocation it was last seen holding and its best goodput on the last fair share
    asked for."""

    __slots__ = ("model", "base", "config", "reallocations", "alloc", "gpus", "fair", "fair_goodput")

    def __init__(self, model: GoodputModel, base: float) -> None:
        self.model = model
        self.base = base
        self.config: Config | None = None
        self.reallocations = 0
        self.alloc: tuple[tuple[int, tuple[int, ...]], ...] = ()
        self.gpus = 0
        self.fair = math.nan
        self.fair_goodput = math.nan

    def share(self, fair: float) -> float:
        """Best goodput on ``fair`` GPUs (:func:`best_at`), recomputed when the fair share changes."""
        if fair != self.fair:
            self.fair, self.fair_goodput = fair, best_at(self.model, fair)
        return self.fair_goodput

    def held(self, job: Job) -> int:
        """GPUs of ``job``'s allocation, recounted when the engine gives it another (a new tuple)."""
        if job.alloc is not self.alloc:
            self.alloc = job.alloc
            self.gpus = sum(len(g) for _, g in job.alloc)
        return self.gpus


class Term:
    """One job in a round: the GPU ``count`` planned for it and its term of the fitness by count,
    the utility of §4.2's speedup (memoised; -inf on no GPU), with the re-allocation ``penalty``
    on a count other than the ``current`` one of a job that holds GPUs. ``below``, ``at`` and
    ``above`` are the utilities at ``count - 1``, ``count`` and ``count + 1``."""

    __slots__ = ("idx", "count", "stamp", "current", "model", "base", "penalty", "utility", "memo",
                 "below", "at", "above")  # fmt: skip

    def __init__(self, job: Job, current: int, model: GoodputModel, base: float, penalty: float,
                 utility: Callable[[float], float]) -> None:  # fmt: skip
        self.idx = job.idx
        self.stamp = 0  # count changes so far, to tell a job's latest heap entries
        self.current = current
        self.model = model
        self.base = base  # best goodput on the fair share
        self.penalty = penalty
        self.utility = utility
        self.memo = {0: -math.inf}
        self.set(current)

    def u(self, gpus: int) -> float:
        """The utility on ``gpus`` GPUs."""
        value = self.memo.get(gpus)
        if value is None:
            speedup = best(self.model, gpus).goodput / self.base
            if self.current > 0 and gpus != self.current:
                speedup *= self.penalty
            value = self.memo[gpus] = self.utility(speedup)
        return value

    def set(self, count: int) -> None:
        """Plan ``count`` GPUs."""
        self.count = count
        self.below = self.u(count - 1) if count else -math.inf
        self.at, self.above = self.u(count), self.u(count + 1)

    def step(self, by: int) -> None:
        """One GPU more (``by`` = 1) or less (-1)."""
        self.count += by
        self.stamp += 1
        if by > 0:
            self.below, self.at, self.above = self.at, self.above, self.u(self.count + 1)
        else:
            self.below, self.at, self.above = self.u(self.count - 1), self.below, self.at

    def gain(self) -> float:
        """The utility of a GPU more."""
        return self.above - self.at

    def loss(self) -> float:
        """The utility of a GPU less."""
        return self.at - self.below


class PolluxPerf(PerfModel):
    """Rates of elastic jobs: best goodput on the GPUs the job holds over its goodput as submitted."""

    def __init__(self, spec: ClusterSpec, jobs: dict[int, JobModel]) -> None:
        super().__init__(spec)
        self.jobs = jobs

    def rate(self, job: Job, nodes: tuple[int, ...]) -> float:
        m = self.jobs.get(job.idx)
        if m is None:
            return super().rate(job, nodes)
        m.config = best(m.model, m.held(job))
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
        self.models: dict[GoodputModel, GoodputModel] = {}  # one per distinct model, so jobs share its memo
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
        model = self.models.setdefault(model, model)
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
            return -float(speedup**self.p)
        return math.log(speedup) if self.p == 0 else float(speedup**self.p)

    def term(self, ctx: Context, job: Job, current: int, fair: float) -> Term:
        """``job``'s term of the fitness at this instant, at its ``current`` count."""
        m = self.jobs[job.idx]
        penalty = 1.0
        if current > 0:
            age = ctx.now - job.submit
            penalty = max(MIN_PENALTY, (age - m.reallocations * self.delta) / (age + self.delta))
        return Term(job, current, m.model, m.share(fair), penalty, self.utility)

    def plan(self, ctx: Context) -> dict[int, int]:
        """GPU counts per active job (0 = wait); see the module docstring's search."""
        total = sum(compress(ctx.state.node_gpus, ctx.state.on))
        jobs = sorted(ctx.active.values(), key=lambda j: (j.submit, j.idx))
        fair = total / len(jobs)
        terms = [self.term(ctx, j, self.jobs[j.idx].held(j) if j.state == RUNNING else 0, fair)
                 for j in jobs[:total]]  # fmt: skip
        free = total - sum(t.count for t in terms)
        for t in terms:  # (1) a GPU for every admitted job
            if t.count:
                continue
            if free <= 0:
                donor = max((d for d in terms if d.count >= 2), key=lambda d: (-d.loss(), -d.idx))
                donor.set(donor.count - 1)
                free += 1
            t.set(1)
            free -= 1
        self._move(terms, free, total)
        target = {j.idx: 0 for j in jobs}
        target.update((t.idx, t.count) for t in terms)
        return target

    @staticmethod
    def _move(terms: list[Term], free: int, total: int) -> None:
        """(2) single-GPU moves while the best one helps, at most ``2 total`` of them: each free
        GPU to the job that gains most from it, then one GPU from a job to another. The best two
        gains (a GPU more) and the least two losses (a GPU less) are read from heaps, ties to the
        lower idx; a job's entries are pushed again when its count changes, and older ones are
        skipped (``stamp``)."""
        gains = [(-t.gain(), t.idx, 0, t) for t in terms if t.count < total]  # (-gain, idx, stamp, term)
        heapq.heapify(gains)
        budget = 2 * total
        while free > 0 and budget:
            if not gains or -gains[0][0] <= EPS:
                return
            t = gains[0][3]
            t.step(1)
            free -= 1
            budget -= 1
            if t.count < total:
                heapq.heapreplace(gains, (-t.gain(), t.idx, t.stamp, t))
            else:
                heapq.heappop(gains)
        losses = [(t.loss(), t.idx, t.stamp, t) for t in terms if t.count >= 2]  # (loss, idx, stamp, term)
        heapq.heapify(losses)

        def best_two(heap: list[tuple[float, int, int, Term]]) -> list[tuple[float, int, int, Term]]:
            while heap and heap[0][2] != heap[0][3].stamp:
                heapq.heappop(heap)
            if len(heap) < 2:
                return heap[:]
            first = heapq.heappop(heap)
            while heap and heap[0][2] != heap[0][3].stamp:
                heapq.heappop(heap)
            top = [first, heap[0]] if heap else [first]
            heapq.heappush(heap, first)
            return top

        def change(t: Term, by: int) -> None:
            t.step(by)
            if t.count < total:
                heapq.heappush(gains, (-t.gain(), t.idx, t.stamp, t))
            if t.count >= 2:
                heapq.heappush(losses, (t.loss(), t.idx, t.stamp, t))

        for _ in range(budget):
            top_gains, top_losses = best_two(gains), best_two(losses)
            moves = [(-g - lost, to, frm) for g, _, _, to in top_gains for lost, _, _, frm in top_losses
                     if to is not frm]  # fmt: skip
            if not moves:
                return
            delta, to, frm = max(moves, key=lambda m: (m[0], -m[1].idx, -m[2].idx))
            if not delta > EPS:
                return
            change(to, 1)
            change(frm, -1)

    def apply(self, ctx: Context, target: dict[int, int]) -> None:
        """Pause, shrink, then grow and start jobs to reach ``target`` (counts per job)."""
        running = list(ctx.running.values())
        for job in running:
            want = target.get(job.idx, 0)
            if want == 0:
                ctx.pause(job)
            elif want < self.jobs[job.idx].held(job):
                self._resize(ctx, job, self._shrunk(job, want))
        grow = [ctx.active[i] for i, k in target.items() if k > 0
                and (ctx.active[i].state != RUNNING or k > self.jobs[i].held(ctx.active[i]))]  # fmt: skip
        for job in sorted(grow, key=lambda j: (-target[j.idx], j.submit, j.idx)):
            alloc = self._placed(ctx, job, target[job.idx])
            if alloc and (job.state != RUNNING or sum(c for _, c in alloc) > self.jobs[job.idx].held(job)):
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
        free = list(map(operator.mul, s.free, s.on))  # 0 on nodes that are off
        own = [node for node, _ in job.alloc] if job.state == RUNNING else []
        for node, gids in job.alloc if job.state == RUNNING else ():
            free[node] += len(gids)
        want = min(want, sum(free))
        if want <= 0:
            return []
        if want <= max(s.node_gpus):
            fit = next((n for n in own if free[n] >= want), None)
            if fit is None:  # best fit: the fewest free GPUs that suffice, on the lowest node
                fit = next((free.index(f) for f in range(want, max(free) + 1) if f in free), None)
            if fit is not None:
                return [(fit, want)]
        out = []
        owned = set(own)
        by_free = sorted(range(len(free)), key=free.__getitem__, reverse=True)  # stable: ties by node
        for node in chain(own, (n for n in by_free if n not in owned)):
            take = min(free[node], want)
            if take:
                out.append((node, take))
                want -= take
            if not want:
                break
        return out

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        return {"pollux": {
            "rounds": self.rounds,
            "reallocations": self.reallocations,
            "decision_cpu_s": self.decision_s,
        }}  # fmt: skip
