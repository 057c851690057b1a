"""What a job asks Slurm for, and which nodes select/cons_tres gives it.

**Request.** A job becomes ``-N k --gres=gpu:G`` (``--gres`` counts GPUs per node), as the
sandbox replay submits it: a job with ``gpus_per_worker`` w asks for ``n / w`` nodes of w
GPUs; a job that fits the partition's largest node asks for one node; a larger one for the
fewest nodes k that split it evenly (``n / k`` GPUs each, in whole workers), which is whole
nodes when n is a multiple of the node size. A fractional job asks for one GPU (Slurm's
``--gres`` counts whole GPUs). A shape the partition's nodes can never hold falls back to
``--ntasks=n/w --gpus-per-task=w`` (any split in whole workers); a job that cannot fit even so
is held, as Slurm holds a job whose request its partition can never satisfy (BadConstraints).

**Selection** (:func:`select`), cons_tres's ``_eval_nodes`` for a cluster without topology or
node weights: "a best fit algorithm based on number of consecutive nodes. The same node
allocation approach is used with select/cons_res and select/cons_tres" (cons_res.html,
General Comments). Usable nodes (enough free GPUs for the request) form runs of consecutive
node indices; the run chosen is the first that is sufficient with the fewest free resources,
else the largest; a job needing one more node takes the run's node with the fewest free
resources that fit (best fit), otherwise the run's nodes in index order. Slurm measures free
*CPUs*; here free GPUs stand in for them (the same when jobs ask CPUs in proportion to GPUs).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from schedlab.cluster.state import Group
from schedlab.policies.common.placers import worker_size
from schedlab.sim.job import Job

Free = Mapping[int, int] | Sequence[int]  # whole free GPUs by node index


@dataclass(frozen=True, slots=True)
class Request:
    """``gpus`` GPUs as ``nodes`` nodes of ``per_node`` GPUs each; ``nodes`` 0: any split in
    whole workers of ``per_node`` GPUs."""

    gpus: int
    nodes: int
    per_node: int

    @property
    def min_nodes(self) -> int:
        return self.nodes or 1

    def room(self, free: int) -> int:
        """What a node with ``free`` GPUs offers towards :attr:`need`: 1 usable node, or its
        GPUs in whole workers (any split)."""
        if self.nodes:
            return int(free >= self.per_node)
        return free // self.per_node * self.per_node

    @property
    def need(self) -> int:
        """The request fits exactly when the nodes' :meth:`room` adds up to this."""
        return self.nodes or self.gpus


def request_of(job: Job, sizes: Sequence[int]) -> Request | None:
    """The job's request on a partition whose nodes have ``sizes`` GPUs; None: it can never run there."""
    n = max(1, math.ceil(job.num_gpus))
    w = worker_size(job)
    biggest = max(sizes)

    def holds(k: int, g: int) -> bool:
        return sum(1 for s in sizes if s >= g) >= k

    if job.gpus_per_worker >= 1 and holds(n // w, w):
        return Request(n, n // w, w)
    if n <= biggest:
        return Request(n, 1, n)
    for k in range(math.ceil(n / biggest), n // w + 1):
        if n % k == 0 and (n // k) % w == 0 and holds(k, n // k):
            return Request(n, k, n // k)
    if sum(s // w * w for s in sizes) >= n:
        return Request(n, 0, w)
    return None


def room_in(req: Request, groups: Iterable[Group]) -> int:
    """The :meth:`Request.room` of the groups' powered-on nodes, read from their free-GPU buckets."""
    return sum(len(g.buckets[c]) * req.room(c) for g in groups for c in range(1, g.max_gpus + 1))


def select(req: Request, nodes: Iterable[int], free: Free) -> list[tuple[int, int]] | None:
    """The (node, GPUs) cons_tres would allocate from ``nodes`` (ascending indices) with
    ``free`` GPUs, or None when they cannot hold the request."""
    unit = req.per_node
    runs: list[list[int]] = []
    last = -2
    for node in nodes:
        if free[node] < unit:
            continue
        if node == last + 1:
            runs[-1].append(node)
        else:
            runs.append([node])
        last = node
    nodes_left, gpus_left = req.min_nodes, req.gpus
    alloc: list[tuple[int, int]] = []
    while runs:
        run = _best_run(req, runs, free, nodes_left, gpus_left)
        runs.remove(run)
        if nodes_left <= 1:
            fits = [n for n in run if _share(req, free[n], gpus_left) >= (unit if req.nodes else gpus_left)]
            if fits:
                run = [min(fits, key=lambda n: (free[n], n))]
        for node in run:
            take = _share(req, free[node], gpus_left)
            alloc.append((node, take))
            nodes_left -= 1
            gpus_left -= take
            if gpus_left == 0 and nodes_left <= 0:
                return alloc
    return None


def _share(req: Request, free: int, gpus_left: int) -> int:
    """GPUs a usable node gives: the per-node count, or (any split) its whole workers, up to what is left."""
    if req.nodes:
        return req.per_node
    return min(free // req.per_node * req.per_node, gpus_left)


def _best_run(req: Request, runs: list[list[int]], free: Free, nodes_left: int, gpus_left: int) -> list[int]:
    """cons_tres's choice of a run of consecutive nodes (``_eval_nodes``): the sufficient run with
    the fewest free resources (the first on ties), else the one with the most; as in Slurm, a
    later insufficient run with more free resources than the best so far replaces it."""
    best: list[int] = []
    best_total, best_enough = -1, False
    for run in runs:
        total = sum(free[n] for n in run)
        if req.nodes:
            enough = len(run) >= nodes_left
        else:
            enough = sum(_share(req, free[n], gpus_left) for n in run) >= gpus_left
        if (not best or (enough and not best_enough) or (enough and total < best_total)
                or (not enough and total > best_total)):  # fmt: skip
            best, best_total, best_enough = run, total, enough
    return best
