"""Hadar (Sultana et al., "Resource Heterogeneity-Aware and Utilization-Enhanced Scheduling for
Deep Learning Clusters", §III): task-level heterogeneity-aware primal-dual scheduling.

Each round (Algorithm 1) the queued jobs are offered the GPUs left free by the running ones; a
job's tasks may sit on different GPU types and servers, each GPU holds at most one job.

* Utility (§III-A): the effective throughput ``f_j = I_j / (finish - a_j)``, ``I_j`` the job's
  total iterations (work x reference throughput), ``finish = now + iterations left /
  throughput``; a job on several types runs at its slowest task's throughput ((1b)).
* Prices (Eq. 5-7, the OASiS form of Bao et al. [22] that §III-B cites): on server ``h`` of
  type ``k`` with ``g`` of its ``c`` GPUs allocated,
  ``p(g) = L_k / (4 eta) * (4 eta U_k / L_k) ** (g / c)``, so ``p(0) = L_k / (4 eta)`` admits
  any job and ``p(c) = U_k`` blocks every one. ``U_k`` (Eq. 6) is the largest per-GPU utility
  ``f_j / N_j`` of a queued job with all tasks on type ``k``; ``L_k`` (Eq. 7) the smallest, with
  the job ending at the horizon ``T`` (its least utility). ``T`` (not given in the text) is
  ``now`` plus the queue's GPU-seconds on its slowest type spread over the cluster, plus the
  longest such job.
* Cost of an allocation: the sum of the marginal prices of the GPUs it takes; payoff
  ``mu_j = f_j - cost`` (§III-B); a job is admitted only with ``mu_j > 0``.
* FIND_ALLOC (Algorithm 2, lines 22-32): the allocation of least ``cost + communication - f_j``
  among all the text allows: consolidated on one server (line 24) or spread over several
  (line 25), any number of GPUs per server, on any of the job's usable types (only one type with
  ``mix_types=False``); admitted if its payoff is positive. A non-consolidated allocation pays a
  communication cost of ``comm_fraction x f_j`` per extra server (lines 26-27; the text gives no
  formula). The search is exact: for each type taken as the slowest one the job may use (which
  fixes ``f_j``), a knapsack over the servers (sorted by the job's throughput, line 23; servers of
  equal throughput by kind, larger and emptier first, then index: equal values go to the earlier
  server) finds the cheapest ``N_j`` GPUs, each server's marginal prices rising with its load
  (Eq. 5). Deviation
  from the text's two candidates (fill the fastest servers in order; one consolidated server):
  §III-B asks for the allocation of minimum cost (Eq. 4, 8), and the fill always pays the
  near-top price of each server's last GPUs where a spread over lightly loaded servers costs less.
  The search is skipped (the job refused) when a lower bound on every allocation's value, each
  server priced at its least mean price per GPU, is positive by a margin far above rounding.
* DP (Algorithm 2, lines 1-21): over the queue in arrival order, each job is either selected
  (FIND_ALLOC on the current server state) or skipped, minimising ``sum(cost - f)`` (Eq. 8),
  memoised on (job position, server state). Deviation: the DP covers the first ``dp_window``
  queued jobs (its state space grows exponentially with the queue); the rest are taken
  greedily in order, each admitted when its payoff is positive.
* Decisions (§IV-B): "dealing with solely newly incoming jobs in each scheduling round, if no
  preemption exists ... without changing the allocated resources of running jobs". In a round
  with an arrival or a completion since the last one, the queued jobs are placed on the free GPUs;
  running jobs keep theirs; other rounds change nothing. ``replan=True`` (an option, not the
  text's default) instead re-decides all unfinished jobs on the whole cluster in such rounds (as
  Fig. 1(b) moves tasks between rounds); a job whose allocation is unchanged keeps running
  without a checkpoint-restart.

Cost per round: O(window states x FIND_ALLOC) for the DP, O(queue x FIND_ALLOC) after; one
FIND_ALLOC is O(types x servers x N_j x GPUs per server), where only the first ``N_j`` servers of
each kind (type, GPUs, free GPUs) count and the knapsack passes over a server that cannot improve
on one of its kind already seen. The servers by kind are kept per state, derived from the
previous state on each allocation. Memos make repeated searches cheap, with the same results:
the knapsack's tables are kept per (GPUs, charge per server) and a server kind's effect on a
table computed once; for HadarE's copies, a job's whole search is memoised on the kinds of its
servers and their counts, which alone decide it (Hadar keeps no such memo: a queued job meets a
new state in every search). The allocator (prices, FIND_ALLOC, the DP) is
:mod:`schedlab.policies.hetero.allocator`.
"""

from __future__ import annotations

from dataclasses import dataclass

from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.policies.hetero.allocator import Allocator, JobView
from schedlab.policies.hetero.rounds import Alloc, RoundPolicy, held, job_speedups
from schedlab.policies.params import help_field
from schedlab.sim.job import PENDING, Job
from schedlab.sim.policy import Context
from schedlab.sim.throughputs import GAVEL_BUILTIN, ThroughputTable


@dataclass(frozen=True)
class HadarParams:
    """Hadar's round length, price scaling, communication cost and DP window."""

    round_s: float = help_field(360.0, "length of a scheduling round in seconds (Hadar §IV: 6 minutes)")
    eta: float = help_field(1.0, "scaling factor eta of the price function (Eq. 5)")
    comm_fraction: float = help_field(0.05, "communication cost per extra server, as a share of the job's utility")
    dp_window: int = help_field(8, "queued jobs the dynamic programme decides jointly; the rest greedily")
    mix_types: bool = help_field(True, "a job's tasks may sit on different GPU types (False: one type per job, "
                                 "an ablation of task-level heterogeneity)")
    replan: bool = help_field(False, "re-decide all unfinished jobs on the whole cluster when a job arrives or ends "
                              "(False, §IV-B: only queued jobs on the free GPUs, running jobs keep theirs)")


def job_view(job: Job, now: float, remaining: float, table: ThroughputTable | None, cluster: ClusterSpec) -> JobView:
    """A queued job's allocator view: iterations from its work and the reference throughput."""
    speed = job_speedups(table, cluster, job)
    if table is not None and job.model in table:
        ref = table.throughput(job.model, job.num_gpus, table.reference)
    else:
        ref = 1.0
    return JobView(job.idx, int(job.num_gpus), job.work * ref, remaining * ref, now - job.submit,
                   {t: s * ref for t, s in speed.items()})  # fmt: skip


class Hadar(RoundPolicy):
    """Task-level heterogeneity-aware primal-dual scheduler (Algorithms 1 and 2)."""

    name = "hadar"
    memo_searches = False  # a queued job meets a new state in every search: nothing to reuse

    def __init__(self, *, round_s: float = 360.0, eta: float = 1.0, comm_fraction: float = 0.05, dp_window: int = 8,
                 replan: bool = False, mix_types: bool = True, table: ThroughputTable | None = GAVEL_BUILTIN) -> None:  # fmt: skip
        super().__init__(round_s)
        self.replan = replan
        self.mix_types = mix_types
        self.dirty = True
        if dp_window < 0 or comm_fraction < 0:
            raise ConfigError("hadar: dp_window and comm_fraction must be non-negative")
        self.eta = eta
        self.comm_fraction = comm_fraction
        self.dp_window = dp_window
        self.table = table

    def on_arrival(self, ctx: Context, job: Job) -> None:
        super().on_arrival(ctx, job)
        self.dirty = True

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.dirty = True

    def plan(self, ctx: Context) -> dict[int, Alloc]:
        """With ``replan``, every unfinished job's allocation; else (§IV-B) only the queued jobs'
        new ones: running jobs keep theirs (:meth:`apply`)."""
        if not self.dirty:  # no job arrived or finished since the last round: nothing to decide
            return {job.idx: held(job) for job in ctx.running.values()} if self.replan else {}
        self.dirty = False
        target: dict[int, Alloc] = {}
        if self.replan:
            queue = list(ctx.active.values())
            state = tuple(n.num_gpus for n in ctx.cluster.nodes)
        else:
            queue = [j for j in ctx.active.values() if j.state == PENDING]
            state = tuple(ctx.state.free)
            if not queue or not any(state):
                return target
        views, alloc = self.allocator(ctx, queue)
        chosen, _ = self.allocate(views, alloc, state)
        target.update(chosen)
        return target

    def apply(self, ctx: Context, target: dict[int, Alloc]) -> None:
        """With ``replan``, as every round-based policy; else start the queued jobs ``target``
        places, leaving the running ones alone (no comparison of what they hold)."""
        if self.replan:
            super().apply(ctx, target)
            return
        for idx, alloc in sorted(target.items()):
            ctx.start(ctx.active[idx], alloc)

    def allocator(self, ctx: Context, queue: list[Job]) -> tuple[list[JobView], Allocator]:
        """The queue's views and the allocator priced on them (horizon: see the module docstring)."""
        views = [job_view(j, ctx.now, ctx.remaining(j), self.table, ctx.cluster) for j in queue]
        slowest = [v.left / min(r for r in v.rate.values() if r > 0) for v in views]
        horizon = sum(v.gpus * s for v, s in zip(views, slowest)) / ctx.cluster.total_gpus + max(slowest)
        alloc = Allocator(ctx.cluster, views, eta=self.eta, comm_fraction=self.comm_fraction, horizon=horizon,
                          mix_types=self.mix_types, memo=self.memo_searches)  # fmt: skip
        return views, alloc

    def allocate(self, views: list[JobView], alloc: Allocator, state: tuple[int, ...]
                 ) -> tuple[dict[int, Alloc], tuple[int, ...]]:  # fmt: skip
        """Algorithm 2 over the queue: the DP over its first ``dp_window`` jobs, then greedily;
        returns the allocations and the server state left."""
        _, chosen = alloc.dp(views[: self.dp_window], state)
        for a in chosen.values():
            state = alloc.take(state, a)
        for v in views[self.dp_window :]:
            if not any(state):
                break
            found = alloc.find_alloc(v, state)
            if found is not None:
                chosen[v.idx] = found[1]
                state = alloc.take(state, found[1])
        return chosen, state

