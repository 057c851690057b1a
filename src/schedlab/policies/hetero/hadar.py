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
previous state on each allocation. Memos make repeated searches cheap, with the same results:
the knapsack's tables are kept per (GPUs, charge per server) and a server kind's effect on a
table computed once; for HadarE's copies, a job's whole search is memoised on the kinds of its
servers in search order, which alone decide it (Hadar keeps no such memo: a queued job meets a
new state in every search).
"""

from __future__ import annotations

import math
from bisect import insort
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, filterfalse, islice

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


Search = tuple[bool, tuple[float, list[tuple[int, int]]] | None]  # refused; value, (position, GPUs)


class Allocator:
    """Prices and FIND_ALLOC over a fixed set of servers; states are tuples of free GPUs."""

    def __init__(self, cluster: ClusterSpec, jobs: list[JobView], *, eta: float, comm_fraction: float, horizon: float,
                 mix_types: bool = True, memo: bool = True):  # fmt: skip
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
        self._knapsacks: dict[tuple[int, float], Knapsack] = {}  # (GPUs, per-server charge) -> knapsack
        sizes = {key: i for i, key in enumerate(by_size)}
        span = max(self.cap) + 1
        self._code = [sizes[key] * span for key in zip(self.types, self.cap)]  # plus free GPUs: a server's kind
        self._searches: dict[int, tuple[JobView, dict[tuple[int, ...], Search]]] = {}  # id(job) -> (job, search memo)
        self.memo = memo  # keep each job's searches (:meth:`search`); worth it where a job is searched again

    def cost(self, state: Sequence[int], alloc: Alloc) -> float:
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
        return self.search(job, state, self.usable(job, self.kinds(state), barred))[1]

    def usable(self, job: JobView, kinds: dict[tuple[str, int, int], list[int]], barred: AbstractSet[int] = frozenset()
               ) -> dict[tuple[str, int, int], list[int]]:  # fmt: skip
        """The servers of ``kinds`` (:meth:`kinds`) that ``job`` may use, outside ``barred``: the
        first ``job.gpus`` of each kind (more servers of a kind than the job has GPUs cannot help)."""
        usable_kinds = {}
        for kind, hs in kinds.items():
            if job.rate.get(kind[0], 0) > 0:
                usable = list(islice(filterfalse(barred.__contains__, hs), job.gpus)) if barred else hs[: job.gpus]
                if usable:
                    usable_kinds[kind] = usable
        return usable_kinds

    def refuses(self, job: JobView, kinds: dict[tuple[str, int, int], list[int]]) -> bool:
        """True when no allocation of ``job`` on ``kinds`` (:meth:`usable`) can have a negative
        value: for each type ``k`` taken as the slowest, a lower bound on ``cost +
        communication`` (:func:`least_cost`) is at least the utility, by a margin far above
        rounding errors. With :attr:`rising` prices it holds on any state with fewer free GPUs."""
        for k in {kind[0] for kind in kinds}:
            f = job.utility({k})
            per_server = self.comm_fraction * f
            knapsack = self.knapsack(job.gpus, per_server)
            groups = [(knapsack.least_mean(kind), len(hs)) for kind, hs in kinds.items()
                      if (job.rate[kind[0]] >= job.rate[k] if self.mix_types else kind[0] == k)]  # fmt: skip
            bound = least_cost(job.gpus, groups)
            if not math.isinf(bound) and bound - per_server - f <= 1e-9 * (bound + per_server + f):
                return False
        return True

    def search(self, job: JobView, state: Sequence[int], kinds: dict[tuple[str, int, int], list[int]]
               ) -> tuple[bool, tuple[float, Alloc] | None]:  # fmt: skip
        """FIND_ALLOC on the servers of ``kinds`` (:meth:`usable`): whether :meth:`refuses` refuses
        the job, and else the allocation of least value if negative. The search takes each type
        ``k`` as the slowest (by falling throughput, then name) and runs the knapsack over the
        servers the job may use with it in search order: by falling throughput, then kind (type,
        larger servers, more free GPUs first), then index. The result depends on the kinds and
        their server counts only: it is memoised per job on them, the allocation kept as
        positions in the order (with :attr:`memo`)."""
        groups = sorted(kinds, key=lambda kind: (-job.rate[kind[0]], kind[0], -kind[1], -kind[2]))
        if self.memo:
            memo = self._searches.get(id(job))  # the entry holds the job: its id is not reused
            if memo is None:
                memo = self._searches[id(job)] = (job, {})
            key = tuple([(kind, len(kinds[kind])) for kind in groups])
            known = memo[1].get(key)
            if known is not None:
                if known[1] is None:
                    return known[0], None
                order = list(chain.from_iterable([kinds[kind] for kind in groups]))
                return known[0], (known[1][0], [(order[i], x) for i, x in known[1][1]])
        order = list(chain.from_iterable([kinds[kind] for kind in groups]))
        refused, best = self._search(job, state, kinds, groups, order)
        if self.memo:
            at = {h: i for i, h in enumerate(order)}
            memo[1][key] = (refused, None if best is None else (best[0], [(at[h], x) for h, x in best[1]]))
        return refused, best

    def _search(self, job: JobView, state: Sequence[int], kinds: dict[tuple[str, int, int], list[int]],
                groups: list[tuple[str, int, int]], order: list[int]) -> tuple[bool, tuple[float, Alloc] | None]:
        """:meth:`search` itself, given the kinds and the servers in search order."""
        best: tuple[float, Alloc] | None = None
        refused = self.refuses(job, kinds)
        if refused:
            return refused, best
        upto: dict[float, int] = {}  # throughput -> servers in ``order`` at least that fast
        n = 0
        for kind in groups:
            n += len(kinds[kind])
            upto[job.rate[kind[0]]] = n
        for k in sorted({kind[0] for kind in groups}, key=lambda t: (-job.rate[t], t)):
            if self.mix_types:
                allowed = order[: upto[job.rate[k]]]
            else:
                allowed = list(chain.from_iterable([kinds[kind] for kind in groups if kind[0] == k]))
            alloc = self._cheapest(job.gpus, allowed, state, self.comm_fraction * job.utility({k}))
            if alloc is None:
                continue
            f = job.utility({self.types[h] for h, _ in alloc})  # the types it took may all be faster than k
            value = self.cost(state, alloc) + self.comm_fraction * (len(alloc) - 1) * f - f
            if value < 0 and (best is None or value < best[0]):
                best = (value, alloc)
        return refused, best

    def knapsack(self, gpus: int, per_server: float) -> Knapsack:
        """The memoised :class:`Knapsack` of ``gpus`` GPUs and a charge of ``per_server`` per server."""
        knapsack = self._knapsacks.get((gpus, per_server))
        if knapsack is None:
            knapsack = self._knapsacks[gpus, per_server] = Knapsack(gpus, per_server, self.prices)
        return knapsack

    def _cheapest(self, gpus: int, servers: list[int], state: Sequence[int], per_server: float) -> Alloc | None:
        """The ``gpus`` GPUs of least price plus ``per_server`` for every server used, taken from
        ``servers`` (in order; ties go to the earlier server): a knapsack over the servers, its
        tables and each server kind's effect on them memoised (:class:`Knapsack`). A server of
        the type and size of one that changed nothing, with nothing changed since, and as many
        free GPUs (or, with :attr:`rising` prices, fewer: dearer ones) makes no better offers to
        the same table: it is skipped."""
        knapsack = self.knapsack(gpus, per_server)
        types, cap, rising = self.types, self.cap, self.rising
        table = 0  # the knapsack's table of least costs by GPUs taken
        chosen: list[tuple[tuple[int, int], ...]] = [()] * (gpus + 1)  # its allocations, by GPUs taken
        idle: dict[tuple[str, int], tuple[int, int]] = {}  # (type, GPUs) -> (table, free GPUs) of such a server
        for h in servers:
            t, c, free = types[h], cap[h], state[h]
            quiet = idle.get((t, c))
            if quiet is not None and quiet[0] == table and (free == quiet[1] or rising and free < quiet[1]):
                continue
            after, moves = knapsack.offer(table, (t, c, free))
            if after == table:
                idle[t, c] = (table, free)
                continue
            nxt = list(chosen)
            for m, n, x in moves:
                nxt[m] = (*chosen[n], (h, x))
            chosen, table = nxt, after
        return list(chosen[gpus]) if knapsack.tables[table][gpus] < math.inf else None

    def take(self, state: tuple[int, ...], alloc: Alloc) -> tuple[int, ...]:
        """``state`` less the GPUs of ``alloc``; if ``state``'s kinds are memoised, the new state's
        are derived from them by :meth:`place` on copies of the kinds it changes."""
        free = list(state)
        for h, x in alloc:
            free[h] -= x
        after = tuple(free)
        kinds = self._kinds_of.get(state)
        if kinds is not None and after not in self._kinds_of:
            kinds = dict(kinds)
            for h, x in alloc:
                for kind in ((self.types[h], self.cap[h], state[h]), (self.types[h], self.cap[h], state[h] - x)):
                    if kind in kinds:
                        kinds[kind] = list(kinds[kind])
            self.place(list(state), kinds, alloc)
            self._kinds_of[after] = kinds
        return after

    def place(self, free: list[int], kinds: dict[tuple[str, int, int], list[int]], alloc: Alloc) -> None:
        """Take the GPUs of ``alloc`` from ``free`` and move each of its servers to its new kind in
        ``kinds`` (:meth:`kinds` of ``free``), in place."""
        for h, x in alloc:
            t, c = self.types[h], self.cap[h]
            hs = kinds[t, c, free[h]]
            hs.remove(h)
            if not hs:
                del kinds[t, c, free[h]]
            free[h] -= x
            if free[h]:
                insort(kinds.setdefault((t, c, free[h]), []), h)

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


class Knapsack:
    """The knapsack of :meth:`Allocator._cheapest` for one GPU count and per-server charge, as
    transitions between its tables (least cost by GPUs taken, infinite: unreachable): each table
    is kept once and a server kind's offer to a table computed once (a server's offer depends on
    its prices only). ``prices``: the allocator's marginal prices by (type, GPUs per server)."""

    def __init__(self, gpus: int, per_server: float, prices: dict[tuple[str, int], list[float]]) -> None:
        self.gpus = gpus
        self.per_server = per_server
        self.prices = prices
        start = (0.0, *[math.inf] * gpus)
        self.tables = [start]
        self.ids = {start: 0}
        self.moves: dict[tuple[int, tuple[str, int, int]], tuple[int, tuple[tuple[int, int, int], ...]]] = {}
        self.means: dict[tuple[str, int, int], tuple[float, int]] = {}

    def steps(self, kind: tuple[str, int, int]) -> list[float]:
        """The marginal prices of the GPUs a server of ``kind`` ``(type, GPUs, free GPUs)`` offers."""
        t, c, free = kind
        return self.prices[t, c][c - free : c - free + self.gpus]

    def least_mean(self, kind: tuple[str, int, int]) -> tuple[float, int]:
        """A server of ``kind``: its least mean ``(per_server + first x prices) / x`` over ``x``,
        and how many GPUs it offers."""
        found = self.means.get(kind)
        if found is None:
            steps = self.steps(kind)
            total, mean = self.per_server, math.inf
            for x, p in enumerate(steps, start=1):
                total += p
                mean = min(mean, total / x)
            found = self.means[kind] = (mean, len(steps))
        return found

    def offer(self, table: int, kind: tuple[str, int, int]) -> tuple[int, tuple[tuple[int, int, int], ...]]:
        """The table after a server of ``kind`` offers its GPUs to ``table``, and the entries it
        improved as ``(GPUs, GPUs before it, GPUs it gives)``."""
        key = (table, kind)
        found = self.moves.get(key)
        if found is None:
            after, moves = self.extend(self.tables[table], self.steps(kind))
            if after not in self.ids:
                self.ids[after] = len(self.tables)
                self.tables.append(after)
            found = self.moves[key] = (self.ids[after], moves)
        return found

    def extend(self, best: tuple[float, ...], steps: list[float]
               ) -> tuple[tuple[float, ...], tuple[tuple[int, int, int], ...]]:  # fmt: skip
        """One knapsack step: ``best`` after a server with marginal prices ``steps`` offers its
        GPUs (each entry ``n`` plus the charge plus the first ``x`` prices, added in that order,
        to entry ``n + x`` if strictly cheaper), and the entries it improved."""
        nxt = list(best)
        moves: dict[int, tuple[int, int, int]] = {}
        charge, last = self.per_server, self.gpus
        for n, entry in enumerate(best):
            if entry == math.inf:
                continue
            total = entry + charge
            m = n
            for p in steps[: last - n]:
                total += p
                m += 1
                if total < nxt[m]:
                    nxt[m] = total
                    moves[m] = (m, n, m - n)
        return tuple(nxt), tuple(moves.values())


def least_cost(gpus: int, groups: list[tuple[tuple[float, int], int]]) -> float:
    """A lower bound on the price plus the charge per server used of any ``gpus`` GPUs taken from
    ``groups`` (a server's least mean and GPUs offered, :meth:`Knapsack.least_mean`; how many such
    servers), ``inf`` if they hold fewer: a server giving ``x`` GPUs costs ``x`` times at least its
    least mean ``(per_server + first x prices) / x``, so the GPUs cost at least those means filled
    cheapest first."""
    means = [(mean, count * offered) for (mean, offered), count in groups]
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

