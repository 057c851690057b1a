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
  fixes ``f_j``), a knapsack over the servers (sorted by the job's throughput, line 23) finds the
  cheapest ``N_j`` GPUs, each server's marginal prices rising with its load (Eq. 5). Deviation
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
previous state on each allocation.
"""

from __future__ import annotations

import math
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice

import numpy as np

from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
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


def price(g: int, c: int, low: float, high: float, eta: float) -> float:
    """Eq. 5: the unit price of a type's GPU on a server with ``g`` of ``c`` allocated."""
    base = low / (4 * eta)
    return float(base * (high / base) ** (g / c))


@dataclass(frozen=True)
class JobView:
    """What the allocator needs of a queued job: GPUs, utility numbers and rate per type."""

    idx: int
    gpus: int
    iterations: float  # I_j
    left: float  # iterations left
    age: float  # now - a_j
    rate: dict[str, float]  # iterations per second with all tasks on a type

    def utility(self, types: set[str]) -> float:
        """Effective throughput if it ran from now on ``types`` (slowest task bounds it)."""
        r = min(self.rate[t] for t in types)
        return self.iterations / (self.age + self.left / r) if r > 0 else 0.0


class Allocator:
    """Prices and FIND_ALLOC over a fixed set of servers; states are tuples of free GPUs."""

    def __init__(self, cluster: ClusterSpec, jobs: list[JobView], *, eta: float, comm_fraction: float, horizon: float,
                 mix_types: bool = True):  # fmt: skip
        if not eta > 0:
            raise ConfigError(f"hadar: eta must be positive, got {eta!r}")
        self.types = [n.gpu_type for n in cluster.nodes]
        self.cap = [n.num_gpus for n in cluster.nodes]
        self.comm_fraction = comm_fraction
        self.mix_types = mix_types
        self.high: dict[str, float] = {}
        self.low: dict[str, float] = {}
        for k in set(self.types):
            best = [j.utility({k}) / j.gpus for j in jobs if j.rate.get(k, 0) > 0]
            worst = [j.iterations / (j.age + horizon) / j.gpus for j in jobs if j.rate.get(k, 0) > 0]
            self.high[k] = max(best, default=1.0)  # Eq. 6
            self.low[k] = min(min(worst, default=1.0), self.high[k])  # Eq. 7
        self.prices = {(k, c): [price(g, c, self.low[k], self.high[k], eta) for g in range(c)]
                       for k, c in set(zip(self.types, self.cap))}  # fmt: skip
        self.rising = all(a <= b for p in self.prices.values() for a, b in zip(p, p[1:]))  # prices never fall with load
        by_size: dict[tuple[str, int], list[int]] = {}
        for h, key in enumerate(zip(self.types, self.cap)):
            by_size.setdefault(key, []).append(h)
        self._servers = {key: np.array(hs) for key, hs in by_size.items()}  # (type, GPUs) -> servers
        self._kinds_of: dict[tuple[int, ...], dict[tuple[str, int, int], list[int]]] = {}  # state -> kinds

    def cost(self, state: tuple[int, ...], alloc: Alloc) -> float:
        """Sum of the marginal prices of the GPUs of ``alloc`` taken from ``state``."""
        total = 0.0
        for h, x in alloc:
            c = self.cap[h]
            g = c - state[h]
            total += sum(self.prices[self.types[h], c][g : g + x])
        return total

    def kinds(self, state: tuple[int, ...]) -> dict[tuple[str, int, int], list[int]]:
        """The servers with free GPUs by kind ``(type, GPUs, free GPUs)``, in index order (servers of
        one kind have the same prices); memoised per state."""
        kinds = self._kinds_of.get(state)
        if kinds is None:
            kinds = {}
            free = np.array(state)
            for (t, c), hs in self._servers.items():
                left = free[hs]
                for f in np.unique(left[left > 0]).tolist():
                    kinds[t, c, f] = hs[left == f].tolist()
            self._kinds_of[state] = kinds
        return kinds

    def find_alloc(self, job: JobView, state: tuple[int, ...], barred: AbstractSet[int] = frozenset()
                   ) -> tuple[float, Alloc] | None:  # fmt: skip
        """Algorithm 2 FIND_ALLOC: (cost + communication - utility, allocation) of the allocation
        of least value among all of ``job``'s allocations on ``state`` outside the ``barred``
        servers, if that value is negative (a positive payoff); else None."""
        kinds = self.usable(job, state, barred)
        return None if self.refuses(job, kinds) else self.best_alloc(job, state, kinds)

    def usable(self, job: JobView, state: tuple[int, ...], barred: AbstractSet[int] = frozenset()
               ) -> dict[tuple[str, int, int], list[int]]:  # fmt: skip
        """The servers of :meth:`kinds` that ``job`` may use, outside ``barred``: the first
        ``job.gpus`` of each kind (more servers of a kind than the job has GPUs cannot help)."""
        kinds = {}
        for kind, hs in self.kinds(state).items():
            if job.rate.get(kind[0], 0) > 0:
                usable = list(islice((h for h in hs if h not in barred), job.gpus)) if barred else hs[: job.gpus]
                if usable:
                    kinds[kind] = usable
        return kinds

    def refuses(self, job: JobView, kinds: dict[tuple[str, int, int], list[int]]) -> bool:
        """True when no allocation of ``job`` on ``kinds`` (:meth:`usable`) can have a negative
        value: for each type ``k`` taken as the slowest, a lower bound on ``cost +
        communication`` (:func:`least_cost`) is at least the utility, by a margin far above
        rounding errors. With :attr:`rising` prices it holds on any state with fewer free GPUs."""
        for k in {kind[0] for kind in kinds}:
            usable = [(kind, len(hs)) for kind, hs in kinds.items()
                      if (job.rate[kind[0]] >= job.rate[k] if self.mix_types else kind[0] == k)]  # fmt: skip
            groups = [(self.prices[t, c][c - free : c - free + job.gpus], n) for (t, c, free), n in usable]
            f = job.utility({k})
            per_server = self.comm_fraction * f
            bound = least_cost(job.gpus, groups, per_server)
            if not math.isinf(bound) and bound - per_server - f <= 1e-9 * (bound + per_server + f):
                return False
        return True

    def best_alloc(self, job: JobView, state: tuple[int, ...], kinds: dict[tuple[str, int, int], list[int]]
                   ) -> tuple[float, Alloc] | None:  # fmt: skip
        """FIND_ALLOC's search over the servers of ``kinds`` (:meth:`usable`)."""
        order = sorted((h for hs in kinds.values() for h in hs), key=lambda h: (-job.rate[self.types[h]], h))
        best: tuple[float, Alloc] | None = None
        for k in dict.fromkeys(self.types[h] for h in order):  # k: the slowest type the job may use
            if self.mix_types:
                allowed = [h for h in order if job.rate[self.types[h]] >= job.rate[k]]
            else:
                allowed = [h for h in order if self.types[h] == k]
            alloc = self._cheapest(job.gpus, allowed, state, self.comm_fraction * job.utility({k}))
            if alloc is None:
                continue
            f = job.utility({self.types[h] for h, _ in alloc})  # the types it took may all be faster than k
            value = self.cost(state, alloc) + self.comm_fraction * (len(alloc) - 1) * f - f
            if value < 0 and (best is None or value < best[0]):
                best = (value, alloc)
        return best

    def _cheapest(self, gpus: int, servers: list[int], state: tuple[int, ...], per_server: float) -> Alloc | None:
        """The ``gpus`` GPUs of least price plus ``per_server`` for every server used, taken from
        ``servers`` (in order; ties go to the earlier server): a knapsack over the servers. A
        server of the type and size of one that changed nothing, with nothing changed since, and
        as many free GPUs (or, with :attr:`rising` prices, fewer: dearer ones) makes no better
        offers to the same table: it is skipped."""
        best: list[tuple[float, Alloc] | None] = [(0.0, [])] + [None] * gpus  # GPUs taken -> (cost, allocation)
        changes = 0
        idle: dict[tuple[str, int], tuple[int, int]] = {}  # (type, GPUs) -> (changes, free GPUs) of such a server
        for h in servers:
            t, c, free = self.types[h], self.cap[h], state[h]
            quiet = idle.get((t, c))
            if quiet is not None and quiet[0] == changes and (free == quiet[1] or self.rising and free < quiet[1]):
                continue
            steps = self.prices[t, c][c - free : c - free + gpus]
            nxt = list(best)
            for n, entry in enumerate(best):
                if entry is None:
                    continue
                total = entry[0] + per_server
                for x, p in enumerate(steps[: gpus - n], start=1):
                    total += p
                    cur = nxt[n + x]
                    if cur is None or total < cur[0]:
                        nxt[n + x] = (total, [*entry[1], (h, x)])
            if nxt == best:
                idle[t, c] = (changes, free)
            else:
                best = nxt
                changes += 1
        last = best[gpus]
        return last[1] if last is not None else None

    def take(self, state: tuple[int, ...], alloc: Alloc) -> tuple[int, ...]:
        """``state`` less the GPUs of ``alloc``; if ``state``'s kinds are memoised, the new state's
        are derived from them by moving each server of ``alloc`` to its new kind."""
        free = list(state)
        for h, x in alloc:
            free[h] -= x
        after = tuple(free)
        kinds = self._kinds_of.get(state)
        if kinds is not None and after not in self._kinds_of:
            kinds = dict(kinds)
            for h, _ in alloc:
                old = (self.types[h], self.cap[h], state[h])
                kinds[old] = list(kinds[old])
                kinds[old].remove(h)
                if not kinds[old]:
                    del kinds[old]
                if free[h]:
                    new = (self.types[h], self.cap[h], free[h])
                    kinds[new] = sorted([*kinds.get(new, ()), h])
            self._kinds_of[after] = kinds
        return after

    def dp(self, jobs: list[JobView], state: tuple[int, ...]) -> tuple[float, dict[int, Alloc]]:
        """Algorithm 2 DP: the subset of ``jobs`` (each allocated by FIND_ALLOC in order) of least
        total ``cost - utility``, as (value, job index -> allocation)."""

        @lru_cache(maxsize=None)
        def solve(i: int, s: tuple[int, ...]) -> tuple[float, tuple[tuple[int, tuple[tuple[int, int], ...]], ...]]:
            if i == len(jobs):
                return 0.0, ()
            best = solve(i + 1, s)  # skip job i
            found = self.find_alloc(jobs[i], s)
            if found is not None:
                value, alloc = found
                rest_value, rest = solve(i + 1, self.take(s, alloc))
                if value + rest_value < best[0]:
                    best = (value + rest_value, ((jobs[i].idx, tuple(alloc)), *rest))
            return best

        value, chosen = solve(0, state)
        return value, {idx: list(alloc) for idx, alloc in chosen}


def least_cost(gpus: int, groups: list[tuple[list[float], int]], per_server: float) -> float:
    """A lower bound on the price plus ``per_server`` per server used of any ``gpus`` GPUs taken from
    ``groups`` (a server's marginal prices, how many such servers), ``inf`` if they hold fewer: a
    server giving ``x`` GPUs costs ``x`` times at least its group's least mean ``(per_server +
    first x prices) / x``, so the GPUs cost at least those means filled cheapest first."""
    means = []
    for steps, count in groups:
        total, mean = per_server, math.inf
        for x, p in enumerate(steps, start=1):
            total += p
            mean = min(mean, total / x)
        means.append((mean, count * len(steps)))
    bound, need = 0.0, gpus
    for mean, room in sorted(means):
        take = min(need, room)
        bound += take * mean
        need -= take
        if not need:
            return bound
    return math.inf


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
        if not self.dirty:  # no job arrived or finished since the last round: nothing to decide
            return {job.idx: held(job) for job in ctx.running.values()}
        self.dirty = False
        if self.replan:
            target: dict[int, Alloc] = {}
            queue = list(ctx.active.values())
            state = tuple(n.num_gpus for n in ctx.cluster.nodes)
        else:
            target = {job.idx: held(job) for job in ctx.running.values()}
            queue = [j for j in ctx.active.values() if j.state == PENDING]
            state = tuple(ctx.state.free)
            if not queue or not any(state):
                return target
        views, alloc = self.allocator(ctx, queue)
        chosen, _ = self.allocate(views, alloc, state)
        target.update(chosen)
        return target

    def allocator(self, ctx: Context, queue: list[Job]) -> tuple[list[JobView], Allocator]:
        """The queue's views and the allocator priced on them (horizon: see the module docstring)."""
        views = [job_view(j, ctx.now, ctx.remaining(j), self.table, ctx.cluster) for j in queue]
        slowest = [v.left / min(r for r in v.rate.values() if r > 0) for v in views]
        horizon = sum(v.gpus * s for v, s in zip(views, slowest)) / ctx.cluster.total_gpus + max(slowest)
        alloc = Allocator(ctx.cluster, views, eta=self.eta, comm_fraction=self.comm_fraction, horizon=horizon,
                          mix_types=self.mix_types)  # fmt: skip
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

