"""Placers: which GPUs a job gets. A placer proposes; the engine checks and applies.

``place(ctx, job)`` returns a list of (node, GPUs) pairs, or None when the job cannot be
placed now. A job that fits on one node always gets one node. Gang workers
(``gpus_per_worker``) are never split across nodes. Placers read the per-group free-GPU
buckets of the read-only cluster view (:class:`schedlab.sim.policy.ClusterView`), so a query costs at most a walk over
the bucket sizes, except where a docstring says it scans.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from schedlab.cluster.state import Group, Held
from schedlab.errors import ConfigError
from schedlab.sim.job import Job
from schedlab.sim.policy import ClusterView, Context

Alloc = list[tuple[int, int]]


class Placer:
    """Base placer: subclasses choose the single node and the order in which a job that
    needs several nodes collects them."""

    name = "base"

    def place(self, ctx: Context, job: Job) -> Alloc | None:
        state = ctx.state
        groups = ctx.groups_of(job)
        if job.fractional:
            node = self.fraction_node(state, groups, job.milli)
            return None if node is None else [(node, 1)]
        need = int(job.num_gpus)
        if state.free_in(groups) < need:
            return None
        node = self.single_node(state, groups, need)
        if node is not None:
            return [(node, need)]
        if any(need <= g.max_gpus for g in groups) and not self.split_small_jobs:
            return None
        return self.spread(state, groups, need, worker_size(job))

    split_small_jobs = True

    def fewest_releases(self, state: ClusterView, groups: tuple[Group, ...], need: int, worker: int,
                        allocs: list[Held]) -> int | None | bool:  # fmt: skip
        """How many leading ``allocs`` (the GPUs of running jobs) must be released before this
        placer places a job of ``need`` whole GPUs, counted instead of found by trial
        placements; None if all of them are not enough, False where the count does not apply
        (then trial placements decide). Here: a placer that splits any job over nodes places
        single-GPU workers exactly when the free GPUs of the groups number ``need``."""
        if not self.split_small_jobs or worker != 1 or type(self).spread is not Placer.spread:
            return False
        free = state.free_in(groups)
        if free >= need:
            return False
        eligible = {id(g) for g in groups}
        all_groups, node_group = state.groups, state.node_group
        for k, step in enumerate(released_in_order(state, allocs)):
            if step is None:
                return False
            for node, before, after in step:
                if id(all_groups[node_group[node]]) in eligible:
                    free += after - before
            if free >= need:
                return k + 1
        return None

    def single_node(self, state: ClusterView, groups: tuple[Group, ...], need: int) -> int | None:
        """Best-fit by default: the node with the fewest free GPUs that still fit, lowest id first."""
        best: int | None = None
        for g in groups:
            if need > g.max_gpus or g.free_total < need:
                continue
            node = g.first_with(need)
            if node is not None and (best is None or (state.free[node], node) < (state.free[best], best)):
                best = node
        return best

    def spread_order(self, state: ClusterView, groups: tuple[Group, ...], worker: int) -> Iterable[int]:
        """Nodes with room for a ``worker``, in the order a job that spans nodes fills them
        (default: most free first)."""
        max_gpus = max(g.max_gpus for g in groups)
        for k in range(max_gpus, worker - 1, -1):
            for g in groups:
                if k <= g.max_gpus:
                    yield from g.buckets[k]

    def spread(self, state: ClusterView, groups: tuple[Group, ...], need: int, worker: int) -> Alloc | None:
        if worker_room(groups, worker) * worker < need:
            return None
        return take_workers(state, self.spread_order(state, groups, worker), need, worker)

    def fraction_node(self, state: ClusterView, groups: tuple[Group, ...], milli: int) -> int | None:
        """A node for a fractional request: the lowest-id partly used node with room, else a
        single-GPU best fit. Scans the partly used nodes of the groups."""
        for g in groups:
            for node in sorted(g.partial):
                if state.fraction_room(node, milli) and state.free[node] < state.node_gpus[node]:
                    if any(0 < u <= 1000 - milli for u in state.gpu_used[node]):
                        return node
        return self.single_node(state, groups, 1)


class Consolidate(Placer):
    """Helios' consolidated placement: as few nodes as possible. A job that fits on one node
    waits for one (best fit); a larger job takes whole free nodes (lowest ids first), plus the
    node with the most free GPUs for a remainder, as Helios' placer does (or, if the cluster's
    node sizes or GPU types can never give it that shape, the nodes with the most free GPUs)."""

    name = "consolidate"
    split_small_jobs = False

    def __init__(self) -> None:
        self._sizes: dict[int, tuple[Group, list[int]]] = {}

    def spread(self, state: ClusterView, groups: tuple[Group, ...], need: int, worker: int) -> Alloc | None:
        for g in groups:
            size = g.max_gpus
            whole, rest = divmod(need, size)
            full = g.buckets[size]
            if len(full) < whole or g.free_total < need:
                continue
            nodes = list(full[:whole])
            alloc: Alloc = [(n, size) for n in nodes]
            if rest:
                tail = next((n for k in range(size, rest - 1, -1) for n in g.buckets[k] if n not in nodes), None)
                if tail is None:
                    continue
                alloc.append((tail, rest))
            if worker > 1 and any(c % worker for _, c in alloc):
                continue
            return alloc
        if any(self._could_hold(state, g, need, worker) for g in groups):
            return None
        return super().spread(state, groups, need, worker)

    def _could_hold(self, state: ClusterView, g: Group, need: int, worker: int) -> bool:
        """Whether whole free nodes (plus one remainder node) of ``g`` could ever hold the job;
        when no group could, the job spreads over the nodes with the most free GPUs instead."""
        whole, rest = divmod(need, g.max_gpus)
        if worker > 1 and (g.max_gpus % worker or rest % worker):
            return False
        sizes = self._node_sizes(state, g)
        if len(sizes) < whole or any(size != g.max_gpus for size in sizes[:whole]):
            return False
        return rest == 0 or (len(sizes) > whole and sizes[whole] >= rest)

    def fewest_releases(self, state: ClusterView, groups: tuple[Group, ...], need: int, worker: int,
                        allocs: list[Held]) -> int | None | bool:  # fmt: skip
        """:meth:`Placer.fewest_releases` from free-GPU counts: a job that fits on a node is
        placed exactly when some node has ``need`` free GPUs; a larger one when enough whole
        nodes are free, plus one with room for the remainder. False also for a larger job over
        several groups, mixed node sizes or a shape the group can never hold, and for GPUs
        shared by several jobs."""
        small = [g for g in groups if need <= g.max_gpus]
        if small:
            if any(g.first_with(need) is not None for g in small):
                return False  # it fits already
            return self._one_node_releases(state, {id(g) for g in small}, need, allocs)
        if len(groups) != 1:
            return False
        g = groups[0]
        size = g.max_gpus
        if self._node_sizes(state, g)[-1] != size or not self._could_hold(state, g, need, worker):
            return False
        whole, rest = divmod(need, size)
        full = len(g.buckets[size])
        roomy = sum(len(g.buckets[k]) for k in range(rest, size)) if rest else 0  # room for the remainder

        def fits() -> bool:
            return full >= whole and (rest == 0 or full > whole or roomy > 0)

        if fits():
            return False
        for k, step in enumerate(released_in_order(state, allocs)):
            if step is None:
                return False
            for node, before, after in step:
                if state.groups[state.node_group[node]] is not g:
                    continue
                if rest and rest <= before < size:
                    roomy -= 1
                if after == size:
                    full += 1
                elif rest and after >= rest:
                    roomy += 1
            if fits():
                return k + 1
        return None

    @staticmethod
    def _one_node_releases(state: ClusterView, eligible: set[int], need: int, allocs: list[Held]) -> int | None | bool:
        """How many leading ``allocs`` free ``need`` GPUs on one node of the ``eligible`` groups
        (ids); the placer puts such a job on one node, so that is exactly when it fits."""
        for k, step in enumerate(released_in_order(state, allocs)):
            if step is None:
                return False
            for node, _, after in step:
                if after >= need and id(state.groups[state.node_group[node]]) in eligible:
                    return k + 1
        return None

    def _node_sizes(self, state: ClusterView, g: Group) -> list[int]:
        """The GPU counts of the group's nodes, largest first (fixed: sorted once per group)."""
        held = self._sizes.get(id(g))
        if held is None or held[0] is not g:  # the group itself is kept, so its id is not reused
            held = self._sizes[id(g)] = (g, sorted((state.node_gpus[n] for n in g.nodes), reverse=True))
        return held[1]


class BestFit(Placer):
    """Best fit: the single node with the fewest free GPUs that fit; a job too large for one
    node is spread over the nodes with the most free GPUs (fewest pieces)."""

    name = "best-fit"


class FirstFit(Placer):
    """First fit: the lowest-id node with enough free GPUs; a larger job takes free GPUs from
    the lowest-id nodes up (scans the nodes that have free GPUs)."""

    name = "first-fit"

    def single_node(self, state: ClusterView, groups: tuple[Group, ...], need: int) -> int | None:
        best: int | None = None
        for g in groups:
            for k in range(need, g.max_gpus + 1):
                bucket = g.buckets[k]
                if bucket and (best is None or bucket[0] < best):
                    best = bucket[0]
        return best

    def spread_order(self, state: ClusterView, groups: tuple[Group, ...], worker: int) -> Iterable[int]:
        return sorted(n for g in groups for k in range(worker, g.max_gpus + 1) for n in g.buckets[k])


class RandomFit(Placer):
    """Random: a uniformly random node among those with enough free GPUs; a larger job takes
    nodes in random order (scans the candidate nodes). Draws from the run's seeded RNG."""

    name = "random"

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def single_node(self, state: ClusterView, groups: tuple[Group, ...], need: int) -> int | None:
        candidates = [n for g in groups for k in range(need, g.max_gpus + 1) for n in g.buckets[k]]
        if not candidates:
            return None
        return candidates[int(self.rng.integers(len(candidates)))]

    def spread_order(self, state: ClusterView, groups: tuple[Group, ...], worker: int) -> Iterable[int]:
        nodes = [n for g in groups for k in range(worker, g.max_gpus + 1) for n in g.buckets[k]]
        return [nodes[i] for i in self.rng.permutation(len(nodes))]


def released_in_order(state: ClusterView, allocs: list[Held]) -> Iterator[list[tuple[int, int, int]] | None]:
    """Release ``allocs`` one after another, on paper: for each, the (node, free GPUs before,
    free GPUs after) of its nodes; None for an allocation with a GPU that another job shares
    (releasing it frees no whole GPU), after which nothing more is yielded."""
    free = state.free
    holders = state.gpu_jobs
    gained: dict[int, int] = {}
    for alloc in allocs:
        for node, gids in alloc:
            held = holders[node]
            for gid in gids:
                if held[gid] != 1:
                    yield None
                    return
        step = []
        for node, gids in alloc:
            before = gained.get(node, free[node])
            after = gained[node] = before + len(gids)
            step.append((node, before, after))
        yield step


def worker_room(groups: tuple[Group, ...], worker: int) -> int:
    """How many workers of ``worker`` GPUs the free GPUs of ``groups`` could hold (reads the
    bucket sizes only)."""
    return sum(len(g.buckets[k]) * (k // worker) for g in groups for k in range(worker, g.max_gpus + 1))


def take_workers(state: ClusterView, nodes: Iterable[int], need: int, worker: int) -> Alloc | None:
    """Whole workers of ``worker`` GPUs from ``nodes`` in order until ``need`` GPUs are
    taken, or None if the nodes cannot hold them."""
    alloc: Alloc = []
    for node in nodes:
        take = min(state.free[node], need) // worker * worker
        if take:
            alloc.append((node, take))
            need -= take
            if need == 0:
                return alloc
    return None


def worker_size(job: Job) -> int:
    """GPUs per worker of a job that spans nodes (1 when any split will do)."""
    gpw = job.gpus_per_worker
    return int(gpw) if gpw == gpw and gpw >= 1 else 1


PLACERS: dict[str, tuple[type[Placer], str | None]] = {
    "consolidate": (Consolidate, Consolidate.__doc__),
    "best-fit": (BestFit, BestFit.__doc__),
    "first-fit": (FirstFit, FirstFit.__doc__),
    "random": (RandomFit, RandomFit.__doc__),
}


def make_placer(name: str, rng: np.random.Generator) -> Placer:
    if name not in PLACERS:
        raise ConfigError(f"unknown placer '{name}'; choose one of {', '.join(PLACERS)}")
    if name == "random":
        return RandomFit(rng)
    return PLACERS[name][0]()
