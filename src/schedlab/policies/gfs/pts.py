"""PTS, the preemptive task scheduler of GFS (§3.4.2, Algorithms 1-3): where a job's pods go,
and which spot jobs a high-priority (HP) job evicts when it fits nowhere.

A job is ``w`` pods of ``g`` GPUs (``g`` = its GPUs per worker; a job without one is one pod
when it fits a node, else pods of one GPU). Both algorithms place the pods one at a time,
re-ranking the nodes after each (the ``while`` loop of Algorithms 1 and 2), so a gang's pods
may share a node.

Non-preemptive scheduling (Algorithm 1), HP and spot jobs: the candidates are the nodes with
``g`` idle GPUs and, for spot jobs, Score3 > 0 (the circuit breaker of :mod:`.nodes`); the
pod goes to the top node by ``<Score1, Score2, Score3>`` in descending order:

* Score1, eq. 13, packing: fewest idle GPUs (``1 - idle/total``; ranked by the idle count,
  which is the same order when a group's nodes have one size, as in the paper's cluster);
* Score2, eq. 14, homogeneous co-location: most GPUs held by the job's class;
* Score3, eq. 16, eviction awareness: spot prefers the lowest node risk, HP the highest.

GFS-s (§4.6.3) ranks by Score1 alone (best fit), with no breaker. A fractional job (``g < 1``,
0.11 % of HP and 0.82 % of spot tasks in Table 3) goes by the shared-GPU best-fit rule of
:class:`schedlab.policies.common.placers.BestFit` among the nodes with room for it
(Algorithm 1, line 7), without Score2-3 (a simplification: scores count whole GPUs).

Preemptive scheduling (Algorithm 2), HP jobs only, victims only whole-GPU spot jobs: per
node, ``R`` = its idle GPUs plus those of its spot jobs (every spot job virtually preempted);
the spot jobs are sorted by descending waste (eq. 17: ``g * (t - t_ckpt)``, GPUs times wall
seconds since the last checkpoint) and each is spared while ``R`` minus its GPUs still holds
the pod; the rest are the node's victims. The pod goes to the node of least cost (eq. 19):
``(F + |T_k|) / (G + F + |T_k|) + beta * sum(waste) / (sum_k S_k * T)``, ``G`` / ``F`` the spot
jobs finished / evicted so far in the run, ``sum_k S_k`` the GPUs the job may use and ``T``
the arrivals' span so far (the paper's "total execution time" of the GPUs; the whole span
is unknown while the run goes on). A node that needs no victim costs least, so it is used
first (best fit among such nodes). GFS-p (§4.6.3) picks the node and the cards at random:
a random node among those where the pod can fit, its spot jobs evicted in random order until
it does. Algorithm 3 (the policy) runs Algorithm 1 after the quota check and Algorithm 2
for HP jobs Algorithm 1 could not place.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from sortedcontainers import SortedList

from schedlab.cluster.state import Group
from schedlab.policies.gfs.nodes import NodeBook
from schedlab.policies.common.placers import BestFit, worker_room
from schedlab.sim.job import Job
from schedlab.sim.policy import Context

Alloc = list[tuple[int, int]]
RankKey = tuple[int, int, float, int]  # Score1, Score2, Score3 (lower is better), node
Option = tuple[int, int, list[tuple[Job, int]]]  # a node, its room without victims, its spot jobs
_FRACTIONS = BestFit()


def pod_shape(job: Job, groups: tuple[Group, ...]) -> tuple[int, int]:
    """``(g, w)``: GPUs per pod and pods of a whole-GPU job."""
    total = int(job.num_gpus)
    gpw = job.gpus_per_worker
    if gpw == gpw and gpw >= 1:
        pod = int(gpw)
    elif any(total <= g.max_gpus for g in groups):
        pod = total
    else:
        pod = 1
    return pod, total // pod


# ----- Algorithm 1: non-preemptive scheduling ------------------------------------------------
def place(book: NodeBook, groups: tuple[Group, ...], job: Job, *, spot: bool, scored: bool) -> Alloc | None:
    """An allocation for ``job`` by Algorithm 1, or None when it does not fit now."""
    state = book.state
    if job.fractional:
        node = _FRACTIONS.fraction_node(state, groups, job.milli)
        return None if node is None else [(node, 1)]
    pod, pods = pod_shape(job, groups)
    if state.free_in(groups) < pod * pods:
        return None
    if pods == 1:
        node = best_node(book, groups, pod, spot=spot, scored=scored)
        return None if node is None else [(node, pod)]
    return place_pods(book, groups, pod, pods, spot=spot, scored=scored)


def rank_key(book: NodeBook, node: int, free: int, *, spot: bool, scored: bool, own: int = 0) -> RankKey:
    """Algorithm 1, line 12 (lower is better): Score1, Score2, Score3, then the node id.
    ``free`` is the node's idle GPUs and ``own`` the GPUs this job already took there (they
    count for its class)."""
    if not scored:
        return (free, 0, 0.0, node)
    risk = book.risk[node]
    spot_gpus = book.spot_gpus[node] + (own if spot else 0)
    same = spot_gpus if spot else book.state.node_gpus[node] - free - spot_gpus
    return (free, -same, risk if spot else -min(risk, 1.0), node)


def best_node(book: NodeBook, groups: tuple[Group, ...], need: int, *, spot: bool, scored: bool) -> int | None:
    """The top node with ``need`` idle GPUs: buckets are walked by idle count (Score1); inside
    a bucket only a few ends of the special-node index are ranked (Score2, Score3)."""
    if not scored:
        found = [n for g in groups if (n := g.first_with(need)) is not None]
        return min(found, key=lambda n: (book.state.free[n], n)) if found else None
    top = max(g.max_gpus for g in groups)
    for k in range(max(need, 1), top + 1):
        found = [n for g in groups if k <= g.max_gpus and (n := _bucket_best(book, g, k, spot)) is not None]
        if found:
            return min(found, key=lambda n: rank_key(book, n, k, spot=spot, scored=True))
    return None


def _bucket_best(book: NodeBook, g: Group, k: int, spot: bool) -> int | None:
    node: int  # the special-node index holds (-spot GPUs, risk, node)
    gid = book.state.node_group[g.nodes[0]]
    special = book.index[gid].get(k)
    bucket = g.buckets[k]
    if not bucket:
        return None
    if spot:
        if special:
            for neg, risk, node in special:  # most spot GPUs first, then lowest risk
                if neg == 0:
                    break
                if not book.blocked(node):
                    return node
        plain = _first_plain(book, bucket, special)
        if plain is not None:
            return plain
        if special:
            for neg, risk, node in special.irange((0, -float("inf"), -1)):  # spot-free, lowest risk first
                if not book.blocked(node):
                    return node
        return None
    candidates: list[int] = [special[-1][2]] if special else []  # fewest spot GPUs, then highest risk
    plain = _first_plain(book, bucket, special)
    if plain is not None:
        candidates.append(plain)
    if not candidates:
        return None
    return min(candidates, key=lambda n: rank_key(book, n, k, spot=False, scored=True))


def _first_plain(book: NodeBook, bucket: list[int], special: SortedList | None) -> int | None:
    """The lowest-id node of a bucket that holds no spot GPUs and carries no risk."""
    if special is not None and len(special) >= len(bucket):
        return None
    return next((n for n in bucket if not book.special(n)), None)


def place_pods(book: NodeBook, groups: tuple[Group, ...], pod: int, pods: int, *, spot: bool, scored: bool) -> Alloc | None:
    """Algorithm 1's loop for a gang: each pod on the top node given the pods placed so far."""
    if worker_room(groups, pod) < pods:
        return None
    state = book.state
    taken: dict[int, int] = {}
    for _ in range(pods):
        best: RankKey | None = None
        for node, free in _nodes_with(groups, pod, taken, state.free):
            if spot and scored and book.blocked(node):
                continue
            key = rank_key(book, node, free, spot=spot, scored=scored, own=taken.get(node, 0))
            if best is None or key < best:
                best = key
        if best is None:
            return None
        node = best[-1]
        taken[node] = taken.get(node, 0) + pod
    return sorted(taken.items())


def _nodes_with(groups: tuple[Group, ...], pod: int, taken: dict[int, int], free: Sequence[int]) -> Iterator[tuple[int, int]]:
    """``(node, idle GPUs)`` of the nodes with at least ``pod`` idle GPUs once ``taken`` is
    removed: untouched nodes from the buckets, by increasing idle count, then touched ones."""
    for touched, count in taken.items():
        if free[touched] - count >= pod:
            yield touched, free[touched] - count
    for g in groups:
        for k in range(pod, g.max_gpus + 1):
            for node in g.buckets[k]:
                if node not in taken:
                    yield node, k


# ----- Algorithm 2: preemptive scheduling ----------------------------------------------------
def waste(ctx: Context, job: Job) -> float:
    """Eq. 17: GPUs x wall seconds of work since the job's last checkpoint."""
    if job.rate <= 0:
        return 0.0
    progress = job.work - ctx.remaining(job)
    return job.num_gpus * max(0.0, progress - job.checkpointed(progress)) / job.rate


def spared(ctx: Context, spot_on_node: list[tuple[Job, int]], room: int, pod: int) -> list[Job]:
    """Algorithm 2, lines 9-13: victims on a node whose idle GPUs plus every spot job's
    (``room``) must hold ``pod``: by descending waste, each spot job is spared while the rest
    still hold the pod."""
    victims = []
    for job, gpus in sorted(spot_on_node, key=lambda jg: (-waste(ctx, jg[0]), jg[0].idx)):
        if room - gpus >= pod:
            room -= gpus
        else:
            victims.append(job)
    return victims


def node_cost(wastes: list[float], *, finished: int, evicted: int, gpu_time: float, beta: float) -> float:
    """Eq. 19 for a node whose victims would waste ``wastes`` (eq. 17):
    ``(F + |T_k|) / (G + F + |T_k|) + beta * sum(waste) / (sum_k S_k * T)``."""
    n = len(wastes)
    total = finished + evicted + n
    rate = (evicted + n) / total if total else 0.0
    return rate + beta * sum(wastes) / gpu_time


def plan_preemption(
    ctx: Context, book: NodeBook, groups: tuple[Group, ...], job: Job, *, cost_aware: bool,
    finished: int, evicted: int, span_s: float, beta: float, rng: np.random.Generator,
) -> tuple[Alloc, list[Job]] | None:  # fmt: skip
    """Algorithm 2 for HP ``job``: its allocation and the spot victims to evict first, or None
    when evicting every spot job would not make room."""
    state = book.state
    pod, pods = (1, 1) if job.fractional else pod_shape(job, groups)
    gpu_time = float(book.gpus_in(groups)) * span_s
    chosen: dict[int, Job] = {}
    freed: dict[int, int] = {}
    taken: dict[int, int] = {}
    # Per node, its spot jobs not yet chosen (with their GPUs there) and its eq. 19 cost: both
    # change only on the nodes a pod or a victim touches, so they are kept until then.
    spot_of: dict[int, tuple[list[tuple[Job, int]], int]] = {}
    costs: dict[int, tuple[float, list[Job]]] = {}
    for _ in range(pods):
        options: list[Option] = []
        for node in _preemptible_nodes(book, groups, pod, taken):
            known = spot_of.get(node)
            if known is None:
                here = [(j, gpus) for j, gpus in _spot_jobs(book, node) if j.idx not in chosen]
                known = spot_of[node] = (here, sum(g for _, g in here))
            spot_here, spot_gpus = known
            room = state.free[node] + freed.get(node, 0) - taken.get(node, 0)
            if room + spot_gpus >= pod:
                options.append((node, room, spot_here))
        if not options:
            return None
        if cost_aware:
            node, victims = _cheapest(ctx, options, pod, finished, evicted, gpu_time, beta, costs)
        else:
            node, room, spot_here = options[int(rng.integers(len(options)))]
            victims = []
            for i in rng.permutation(len(spot_here)):
                if room >= pod:
                    break
                victims.append(spot_here[i][0])
                room += spot_here[i][1]
        touched = {node}
        for victim in victims:
            chosen[victim.idx] = victim
            for n, gids in victim.alloc:
                freed[n] = freed.get(n, 0) + len(gids)
                touched.add(n)
        taken[node] = taken.get(node, 0) + pod
        for n in touched:
            spot_of.pop(n, None)
            costs.pop(n, None)
    return sorted(taken.items()), list(chosen.values())


def _cheapest(ctx: Context, options: list[Option], pod: int, finished: int, evicted: int, gpu_time: float,
              beta: float, costs: dict[int, tuple[float, list[Job]]]) -> tuple[int, list[Job]]:  # fmt: skip
    """The node of least eq. 19 cost and its victims; nodes needing no victim come first
    (fewest idle GPUs among them). ``costs`` keeps each node's cost and victims between the
    pods of one job (the caller drops a node's entry when the node changes)."""
    free_fit = [(room, node) for node, room, _ in options if room >= pod]
    if free_fit:
        return min(free_fit)[1], []
    best: tuple[float, int, list[Job]] | None = None
    for node, room, spot_here in options:
        known = costs.get(node)
        if known is None:
            victims = spared(ctx, spot_here, room + sum(g for _, g in spot_here), pod)
            wastes = [waste(ctx, v) for v in victims]
            known = costs[node] = (node_cost(wastes, finished=finished, evicted=evicted, gpu_time=gpu_time, beta=beta), victims)
        if best is None or (known[0], node) < (best[0], best[1]):
            best = (known[0], node, known[1])
    assert best is not None  # options is not empty
    return best[1], best[2]


def _spot_jobs(book: NodeBook, node: int) -> list[tuple[Job, int]]:
    """Whole-GPU spot jobs on ``node`` with the GPUs each holds there."""
    return [(j, sum(len(gids) for n, gids in j.alloc if n == node))
            for j in book.spot_jobs[node].values() if not j.fractional]  # fmt: skip


def _preemptible_nodes(book: NodeBook, groups: tuple[Group, ...], pod: int, taken: dict[int, int]) -> Iterator[int]:
    """Nodes where the pod might go: those holding spot GPUs, touched ones, and those with
    ``pod`` idle GPUs."""
    state = book.state
    seen: set[int] = set()
    for g in groups:
        gid = state.node_group[g.nodes[0]] if g.nodes else None
        if gid is not None:
            for lst in book.index[gid].values():
                for neg, _risk, node in lst:
                    if neg < 0 and node not in seen:
                        seen.add(node)
                        yield node
    for node in taken:
        if node not in seen:
            seen.add(node)
            yield node
    for node, _free in _nodes_with(groups, pod, taken, state.free):
        if node not in seen:
            seen.add(node)
            yield node
