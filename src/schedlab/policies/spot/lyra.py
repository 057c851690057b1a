"""``lyra``: capacity loaning with least-cost reclaiming (Li et al., EuroSys '23), as a GFS
baseline (Duan et al., ASPLOS '26, §4.1).

Lyra loans idle inference servers to training jobs and, when inference needs them back,
reclaims servers greedily by their preemption cost. Mapping assumed here: every node is HP
capacity; spot jobs run only on *loaned* nodes, and a node is loaned only when it is idle
(no GPU in use). HP jobs run only on nodes that are not loaned. When an HP job fits on no HP
node, loaned nodes are reclaimed: all their spot jobs are evicted and the node returns to HP.
The node chosen is the one with the least preemption cost, the work its spot jobs lose,
``sum g * (t - t_ckpt)`` (GPUs times wall seconds since the last checkpoint, as
:func:`schedlab.policies.gfs.pts.waste`), among those large enough for the job; ties go to
the smaller node, then the lowest id. A job spanning nodes reclaims the nodes of least cost
per GPU until the HP nodes of its groups have enough free GPUs. A loaned node whose spot jobs
have all left returns to HP at once.

Deviations: jobs are rigid here, so Lyra's elastic scaling (the knapsack over extra workers)
is not modelled; reclaiming is per node, as in Lyra, so a whole node's spot jobs are evicted
even when part of it would do. Queues are those of :mod:`schedlab.policies.spot.spot_fcfs` (FCFS,
HP first). Placement inside each side is best fit over its own free-count buckets, so no
decision scans the nodes; reclaiming looks at the loaned nodes of the job's groups, and only
when an HP job fits nowhere. Fractional jobs take a whole GPU's slot of the index (no GPU
sharing between them).
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, ClassVar

from sortedcontainers import SortedList

from schedlab.cluster.state import Group, Held
from schedlab.policies.gfs.pts import waste
from schedlab.policies.common.placers import Alloc, Placer, take_workers, worker_size
from schedlab.policies.params import help_field
from schedlab.policies.spot.spot_fcfs import SPOT, QuotaParams, SpotFCFS
from schedlab.sim.job import Job
from schedlab.sim.policy import ClusterView, Context


class NodeSet:
    """A subset of the nodes, bucketed per group by whole free GPUs (like the cluster state)."""

    def __init__(self, state: ClusterView) -> None:
        self.state = state
        self.buckets = [[SortedList() for _ in range(g.max_gpus + 1)] for g in state.groups]
        self.sizes = [sorted({state.node_gpus[n] for n in g.nodes}) for g in state.groups]
        self.free_at: dict[int, int] = {}
        self.free_gpus = [0] * len(state.groups)  # per group: free GPUs of the set's nodes
        self.idle = [[0] * (g.max_gpus + 1) for g in state.groups]  # per group and size: idle nodes

    def __contains__(self, node: int) -> bool:
        return node in self.free_at

    def add(self, node: int) -> None:
        free = self.state.free[node]
        gid = self.state.node_group[node]
        self.free_at[node] = free
        self.buckets[gid][free].add(node)
        self.free_gpus[gid] += free
        if free == self.state.node_gpus[node]:
            self.idle[gid][free] += 1

    def remove(self, node: int) -> None:
        free = self.free_at.pop(node)
        gid = self.state.node_group[node]
        self.buckets[gid][free].remove(node)
        self.free_gpus[gid] -= free
        if free == self.state.node_gpus[node]:
            self.idle[gid][free] -= 1

    def refresh(self, node: int) -> None:
        if node in self.free_at and self.free_at[node] != self.state.free[node]:
            self.remove(node)
            self.add(node)

    def free_in(self, groups: tuple[Group, ...]) -> int:
        """Free GPUs of the set's nodes in ``groups``."""
        return sum(self.free_gpus[self.state.node_group[g.nodes[0]]] for g in groups)

    def room(self, groups: tuple[Group, ...], worker: int, *, idle_only: bool = False) -> int:
        """GPUs that whole workers of ``worker`` GPUs could take on the set's nodes in
        ``groups`` (only its idle nodes with ``idle_only``): what :meth:`Lyra._spread` can find."""
        total = 0
        for g in groups:
            gid = self.state.node_group[g.nodes[0]]
            counts = self.idle[gid] if idle_only else [len(b) for b in self.buckets[gid]]
            total += sum(n * (free // worker * worker) for free, n in enumerate(counts) if free >= worker)
        return total

    def best_fit(self, groups: tuple[Group, ...], need: int) -> int | None:
        """The node with the fewest free GPUs >= ``need``, lowest id on ties."""
        best: tuple[int, int] | None = None
        for g in groups:
            buckets = self.buckets[self.state.node_group[g.nodes[0]]]
            node = next((b[0] for b in buckets[max(need, 1):] if b), None)
            if node is not None and (best is None or (self.free_at[node], node) < best):
                best = (self.free_at[node], node)
        return None if best is None else best[1]

    def smallest_idle(self, groups: tuple[Group, ...], need: int) -> int | None:
        """The smallest idle node with at least ``need`` GPUs, lowest id on ties (looks only at
        the buckets whose free count is a node size of the group)."""
        best: tuple[int, int] | None = None
        state = self.state
        for g in groups:
            gid = state.node_group[g.nodes[0]]
            for size in self.sizes[gid]:
                if size < need:
                    continue
                node = next((n for n in self.buckets[gid][size] if state.node_gpus[n] == size), None)
                if node is not None:
                    if best is None or (size, node) < best:
                        best = (size, node)
                    break
        return None if best is None else best[1]

    def by_free(self, groups: tuple[Group, ...]) -> list[int]:
        """Nodes of the groups with free GPUs, most free first."""
        gids = [self.state.node_group[g.nodes[0]] for g in groups]
        top = max(g.max_gpus for g in groups)
        return [n for free in range(top, 0, -1) for gid in gids if free < len(self.buckets[gid])
                for n in self.buckets[gid][free]]  # fmt: skip


@dataclass(frozen=True)
class LyraParams(QuotaParams):
    """The spot quota (:mod:`schedlab.policies.spot.spot_fcfs`); reclaiming has no parameter."""

    policy: ClassVar[str] = "lyra"


class Lyra(SpotFCFS):
    """Spot jobs on loaned idle HP nodes; HP reclaims the loaned nodes of least lost work."""

    name = "lyra"
    hp: NodeSet  # made by setup
    loaned: NodeSet  # made by setup

    def __init__(self, placer: Placer, *, spot_quota: str = "none", quota_forecaster: str = "orglinear",
                 quota_eta_every_s: float | None = None, quota_wait_reading: str = "longest", seed: int = 0) -> None:  # fmt: skip
        super().__init__(placer, spot_quota=spot_quota, quota_forecaster=quota_forecaster,
                         quota_eta_every_s=quota_eta_every_s, quota_wait_reading=quota_wait_reading, seed=seed)  # fmt: skip
        self.fractions_on: dict[int, dict[int, Job]] = {}  # node -> fractional spot jobs
        self.reclaims = 0

    def setup(self, ctx: Context) -> None:
        super().setup(ctx)
        self.hp = NodeSet(ctx.state)
        self.loaned = NodeSet(ctx.state)
        for node in range(ctx.state.num_nodes):
            self.hp.add(node)

    def place(self, ctx: Context, job: Job) -> Alloc | None:
        groups = ctx.groups_of(job)
        need = 1 if job.fractional else int(job.num_gpus)
        if not any(need <= g.max_gpus for g in groups):
            return self._spread(ctx, job, groups, need)
        if job.cls != SPOT:
            node = self.hp.best_fit(groups, need)
        else:
            node = self.loaned.best_fit(groups, need)
            if node is None:
                node = self.hp.smallest_idle(groups, need)
        return None if node is None else [(node, need)]

    def _spread(self, ctx: Context, job: Job, groups: tuple[Group, ...], need: int) -> Alloc | None:
        """Whole workers of a job larger than a node: HP on HP nodes, spot on loaned nodes then
        idle HP nodes, most free GPUs first; the room counts rule out a hopeless scan."""
        worker = worker_size(job)
        if job.cls != SPOT:
            if self.hp.room(groups, worker) < need:
                return None
            return take_workers(ctx.state, self.hp.by_free(groups), need, worker)
        if self.loaned.room(groups, worker) + self.hp.room(groups, worker, idle_only=True) < need:
            return None
        idle = [n for n in self.hp.by_free(groups) if ctx.state.idle(n)]
        return take_workers(ctx.state, self.loaned.by_free(groups) + idle, need, worker)

    def started(self, ctx: Context, job: Job) -> None:
        for node, _gids in job.alloc:
            if job.cls == SPOT and node in self.hp:
                self.hp.remove(node)
                self.loaned.add(node)
            if job.cls == SPOT and job.fractional:
                self.fractions_on.setdefault(node, {})[job.idx] = job
            self.hp.refresh(node)
            self.loaned.refresh(node)

    def released(self, ctx: Context, job: Job, alloc: Held) -> None:
        super().released(ctx, job, alloc)
        for node, _gids in alloc:
            if job.cls == SPOT and job.fractional:
                on_node = self.fractions_on[node]
                del on_node[job.idx]
                if not on_node:
                    del self.fractions_on[node]
            self.hp.refresh(node)
            self.loaned.refresh(node)
            if node in self.loaned and ctx.state.idle(node):
                self.loaned.remove(node)
                self.hp.add(node)

    def evictable(self) -> bool:
        return bool(self.spot_on or self.fractions_on)

    def make_room(self, ctx: Context, job: Job) -> Alloc | None:
        state = ctx.state
        groups = ctx.groups_of(job)
        gids = {state.node_group[g.nodes[0]] for g in groups}
        need = 1 if job.fractional else int(job.num_gpus)
        loaned = [n for n in self.loaned.free_at if state.node_group[n] in gids]
        if any(need <= g.max_gpus for g in groups):
            fitting = [n for n in loaned if state.node_gpus[n] >= need]
            if not fitting:
                return None
            self._reclaim(ctx, min(fitting, key=lambda n: (self.cost(ctx, n), state.node_gpus[n], n)))
            return self.place(ctx, job)
        hp_free = self.hp.free_in(groups)
        if hp_free + sum(state.node_gpus[n] for n in loaned) < need:
            return None
        for node in sorted(loaned, key=lambda n: (self.cost(ctx, n) / state.node_gpus[n], n)):
            if hp_free >= need:
                break
            self._reclaim(ctx, node)
            hp_free += state.free[node]
        return self.place(ctx, job)

    def cost(self, ctx: Context, node: int) -> float:
        """Lyra's server preemption cost: the work lost by evicting the node's spot jobs."""
        jobs = [*self.spot_on.get(node, {}).values(), *self.fractions_on.get(node, {}).values()]
        return sum(waste(ctx, j) for j in jobs)

    def _reclaim(self, ctx: Context, node: int) -> None:
        """Evict every spot job of a loaned node; the node, now idle, returns to HP."""
        self.reclaims += 1
        for victim in [*self.spot_on.get(node, {}).values(), *self.fractions_on.get(node, {}).values()]:
            self.evict(ctx, victim)

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        """``{"lyra": {"evictions", "reclaims"}}``: spot jobs evicted, nodes reclaimed."""
        out = {"evictions": self.evictions, "reclaims": self.reclaims}
        return {self.name: out if self.gate is None else {**out, **self.gate.report()}}
