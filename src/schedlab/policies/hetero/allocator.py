"""Hadar's allocator (Sultana et al., §III-B, Algorithm 2): prices, FIND_ALLOC and the DP.

* Prices (Eq. 5-7, the OASiS form of Bao et al. [22] that §III-B cites): on server ``h`` of
  type ``k`` with ``g`` of its ``c`` GPUs allocated,
  ``p(g) = L_k / (4 eta) * (4 eta U_k / L_k) ** (g / c)``; ``U_k`` (Eq. 6) is the largest
  per-GPU utility of a queued job on type ``k``, ``L_k`` (Eq. 7) the smallest, with the job
  ending at the horizon.
* FIND_ALLOC (Algorithm 2, lines 22-32): the allocation of least ``cost + communication - f_j``
  among all allocations, by a knapsack over the servers for each type taken as the slowest;
  admitted if negative. The search order is the job's throughput (line 23), then the servers'
  kind (type, larger servers, more free GPUs first), then index: equal values go to the earlier
  server in that order. The search is skipped when a lower bound shows no allocation pays.
* DP (Algorithm 2, lines 1-21): over the first jobs of the queue, each either selected
  (FIND_ALLOC on the current state) or skipped, minimising ``sum(cost - f)`` (Eq. 8), memoised
  on (job position, server state).

How the policies use it, and the deviations from the text, are in :mod:`.hadar`. This module is
plain typed Python; a compiled install (``SCHEDLAB_COMPILE=1``, ``setup.py``) compiles it with the
simulator's core.
"""

from __future__ import annotations

import math
from bisect import insort
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import chain, filterfalse, islice

import numpy as np

from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.policies.hetero.rounds import Alloc


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
Kinds = tuple[tuple[tuple[str, int, int], int], ...]  # the kinds of a search's servers, in order, and how many of each
Plan = tuple[float, tuple[tuple[int, tuple[tuple[int, int], ...]], ...]]  # value, (job index, allocation) chosen


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
        self._searches: dict[int, tuple[JobView, dict[Kinds, Search]]] = {}  # id(job) -> (job, search memo)
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
        order = list(chain.from_iterable([kinds[kind] for kind in groups]))
        if not self.memo:
            return self._search(job, state, kinds, groups, order)
        memo = self._searches.get(id(job))  # the entry holds the job: its id is not reused
        if memo is None:
            memo = self._searches[id(job)] = (job, {})
        key = tuple([(kind, len(kinds[kind])) for kind in groups])
        known = memo[1].get(key)
        if known is None:
            refused, best = self._search(job, state, kinds, groups, order)
            at = {h: i for i, h in enumerate(order)}
            memo[1][key] = (refused, None if best is None else (best[0], [(at[h], x) for h, x in best[1]]))
            return refused, best
        return known[0], None if known[1] is None else (known[1][0], [(order[i], x) for i, x in known[1][1]])

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

        memo: dict[tuple[int, tuple[int, ...]], Plan] = {}

        def solve(i: int, s: tuple[int, ...]) -> Plan:
            if i == len(jobs):
                return 0.0, ()
            known = memo.get((i, s))
            if known is not None:
                return known
            best = solve(i + 1, s)  # skip job i
            found = self.find_alloc(jobs[i], s)
            if found is not None:
                value, alloc = found
                rest_value, rest = solve(i + 1, self.take(s, alloc))
                if value + rest_value < best[0]:
                    best = (value + rest_value, ((jobs[i].idx, tuple(alloc)), *rest))
            memo[i, s] = best
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
