"""Per-node facts PTS ranks nodes by (GFS §3.4.2): the whole GPUs spot jobs hold on each node,
the spot jobs themselves, and the eviction risk of Score3 with its circuit breaker.

Eviction risk, eq. 15-16: ``e_bar = gamma * e_short + (1 - gamma) * e_long / T_long`` where
``e_short`` / ``e_long`` count the spot evictions on the node in the last ``short_h`` (1 h)
and ``long_h`` (24 h) hours and ``T_long`` is ``long_h`` in hours, so both terms are
evictions per hour; ``risk = 0.01 * m ** e_bar`` (``m`` the penalty base, Table 4: 3).
Score3 is ``min(risk, 1)`` for HP jobs and ``max(1 - risk, 0)`` for spot jobs; when
``risk >= 1`` (spot Score3 = 0) the circuit breaker is open and the node is filtered out for
spot jobs (Algorithm 1, line 9) until old evictions age out. Nodes without evictions all have
``risk = 0.01`` and tie on Score3; they are stored as 0, which ranks them alike.

Index: per (pool, GPU type) group and count of free GPUs, a sorted list of the "special"
nodes - those holding spot GPUs or carrying risk - keyed ``(-spot_gpus, risk, node)``. All
other nodes of a free-GPU bucket are alike for Score2/Score3, so a ranking query reads a few
list ends instead of scanning the bucket.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from sortedcontainers import SortedList

from schedlab.cluster.state import Group
from schedlab.sim.job import Job
from schedlab.sim.policy import ClusterView
from schedlab.units import HOUR_S


class NodeBook:
    """Spot occupancy, eviction risk and the special-node index over a run's cluster view."""

    def __init__(
        self, state: ClusterView, *, gamma: float, penalty_base: float, eviction_aware: bool,
        short_h: float = 1.0, long_h: float = 24.0,
    ) -> None:  # fmt: skip
        self.state = state
        self.gamma = gamma
        self.penalty_base = penalty_base
        self.eviction_aware = eviction_aware
        self.short_s = short_h * HOUR_S
        self.long_s = long_h * HOUR_S
        self.long_h = long_h
        n = state.num_nodes
        self.spot_gpus = [0] * n
        self.spot_jobs: list[dict[int, Job]] = [{} for _ in range(n)]
        self.risk = [0.0] * n
        self.evictions: dict[int, deque[float]] = {}
        self.index: list[dict[int, SortedList]] = [{} for _ in state.groups]
        self._key: list[tuple[int, tuple[int, float, int]] | None] = [None] * n
        self._group_gpus: dict[tuple[int, int], int] = {}

    # ----- queries -----------------------------------------------------------------------------
    def special(self, node: int) -> bool:
        return self._key[node] is not None

    def blocked(self, node: int) -> bool:
        """Circuit breaker open: no spot job may be placed on ``node``."""
        return self.risk[node] >= 1.0

    def gpus_in(self, groups: Iterable[Group]) -> int:
        """GPUs of the powered-on nodes of ``groups`` (cached until a group's node set changes)."""
        total = 0
        for g in groups:
            key = (id(g), len(g.nodes))
            gpus = self._group_gpus.get(key)
            if gpus is None:
                gpus = self._group_gpus[key] = sum(self.state.node_gpus[n] for n in g.nodes)
            total += gpus
        return total

    def same_class_gpus(self, node: int, spot: bool) -> int:
        """Score2's count: whole GPUs of ``node`` held by jobs of the job's class (GPUs not
        held by spot jobs count as HP)."""
        s = self.state
        held = s.node_gpus[node] - s.free[node]
        return self.spot_gpus[node] if spot else held - self.spot_gpus[node]

    # ----- updates -----------------------------------------------------------------------------
    def add_spot(self, job: Job) -> None:
        for node, gids in job.alloc:
            self.spot_jobs[node][job.idx] = job
            if not job.fractional:
                self.spot_gpus[node] += len(gids)
            self.touch(node)

    def remove_spot(self, job: Job, alloc: tuple[tuple[int, tuple[int, ...]], ...]) -> None:
        for node, gids in alloc:
            del self.spot_jobs[node][job.idx]
            if not job.fractional:
                self.spot_gpus[node] -= len(gids)
            self.touch(node)

    def record_eviction(self, now: float, nodes: tuple[int, ...]) -> None:
        if not self.eviction_aware:
            return
        for node in nodes:
            self.evictions.setdefault(node, deque()).append(now)
            self._rescore(node, now)

    def decay(self, now: float) -> None:
        """Forget evictions older than the long window and rescore the nodes that had any."""
        for node in list(self.evictions):
            times = self.evictions[node]
            while times and times[0] < now - self.long_s:
                times.popleft()
            self._rescore(node, now)
            if not times:
                del self.evictions[node]

    def _rescore(self, node: int, now: float) -> None:
        times = self.evictions.get(node, ())
        long = sum(1 for t in times if t >= now - self.long_s)
        short = sum(1 for t in reversed(times) if t >= now - self.short_s) if long else 0
        x = self.gamma * short + (1.0 - self.gamma) * long / self.long_h  # eq. 15
        self.risk[node] = 0.01 * self.penalty_base**x if x > 0 else 0.0  # eq. 16
        self.touch(node)

    def touch(self, node: int) -> None:
        """Re-file ``node`` in the index after its free GPUs, spot GPUs or risk changed."""
        s = self.state
        old = self._key[node]
        spot, risk = self.spot_gpus[node], self.risk[node]
        new = (s.free[node], (-spot, risk, node)) if (spot or risk) and s.on[node] else None
        if new == old:
            return
        lists = self.index[s.node_group[node]]
        if old is not None:
            lists[old[0]].remove(old[1])
        if new is not None:
            lists.setdefault(new[0], SortedList()).add(new[1])
        self._key[node] = new
