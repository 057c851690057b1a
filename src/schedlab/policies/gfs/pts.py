"""PTS, preemptive task scheduling (GFS §3.4, Algorithms 1-3): where a job goes, and which
spot jobs a high-priority (HP) job evicts when it fits nowhere.

Only the paper's abstract could be read here; the rules follow the brief and the authors'
public simulator, and the details below are stated as this module's assumptions.

Non-preemptive placement (Algorithm 2) ranks the nodes that can hold the job lexicographically:

* Score1, packing: fewest free GPUs that still fit (best fit);
* Score2, homogeneous co-location: most GPUs already held by the job's own class (spot with
  spot, HP with HP);
* Score3, eviction awareness (eqs. 13-16, see :mod:`.nodes`): a spot job prefers the node with
  the lowest eviction risk, an HP job the highest (HP churn is kept where spot already lost
  work, as in the public simulator); nodes whose circuit breaker is open take no spot job.

Without eviction awareness (the "-s" ablations) Score3 and the breaker are off. A job that
fits on one node gets one node; a larger (gang) job takes whole workers from the nodes with
the most free GPUs, skipping blocked nodes for spot (no scores: an assumption). A fractional
job uses the shared-GPU rule of :class:`schedlab.policies.common.placers.BestFit`, without scores.

Preemption (Algorithm 3), HP jobs only, victims only spot jobs:

* waste of a victim (eq. 17): ``theta = g * (t - t_ckpt)``, its GPUs times the wall seconds
  of work since its last periodic checkpoint (what an eviction throws away);
* victim scan per candidate node: spot jobs by increasing waste, taken until the node frees
  enough GPUs, then one backward pass drops those no longer needed (linear in the node's spot
  jobs);
* node cost (eq. 19): ``(F + v) / (F + S + v) + beta * sum(theta) / (C * T)``: the spot
  eviction rate after evicting the ``v`` victims, each of which fails its guarantee period in
  progress (``F``, ``S`` = guarantee periods failed / met so far in the run, of the job's
  model(s)), plus the waste normalised by ``C`` = GPUs of those models times ``T`` = the
  arrivals' span so far in seconds (at least ``H``). The paper (eq. 19) divides by
  ``sum_k S_k * T``, "the total execution time of GPUs"; the public simulator uses the whole
  trace's span, which a scheduler cannot know before the last arrival, so ``T`` is the span
  seen so far. The cheapest node wins; ``beta`` = 5 as in that simulator (the paper's
  Table 4 gives 0.5).

Without preemption awareness (the "-p" ablations) the node is the best fit by free plus
spot GPUs and the victims are its newest spot jobs. A job larger than one node evicts every
spot job on the cheapest nodes until enough GPUs are free (an assumption; the public
simulator preempts per worker on one node).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from schedlab.cluster.state import ClusterState, Group
from schedlab.policies.gfs.nodes import NodeBook
from schedlab.policies.common.placers import BestFit, take_workers, worker_room, worker_size
from schedlab.sim.job import Job
from schedlab.sim.policy import Context

Alloc = list[tuple[int, int]]
_FRACTIONS = BestFit()


# ----- non-preemptive placement (Algorithm 2) -------------------------------------------------
def place(book: NodeBook, groups: tuple[Group, ...], job: Job, *, spot: bool, aware: bool) -> Alloc | None:
    """An allocation for ``job`` by Score1-3, or None when it does not fit now."""
    state = book.state
    if job.fractional:
        node = _FRACTIONS.fraction_node(state, groups, job.milli)
        return None if node is None else [(node, 1)]
    need = int(job.num_gpus)
    if state.free_in(groups) < need:
        return None
    if any(need <= g.max_gpus for g in groups):
        node = best_node(book, groups, need, spot=spot, aware=aware)
        return None if node is None else [(node, need)]
    return spread(book, groups, need, worker_size(job), spot=spot)


def rank_key(book: NodeBook, node: int, *, spot: bool, aware: bool) -> tuple[int, int, float, int]:
    """Lexicographic rank of a node (lower is better): Score1, Score2, Score3, node id."""
    risk = book.risk[node] if aware else 0.0
    return (book.state.free[node], -book.same_class_gpus(node, spot), risk if spot else -risk, node)


def best_node(book: NodeBook, groups: tuple[Group, ...], need: int, *, spot: bool, aware: bool) -> int | None:
    """The best single node with ``need`` free GPUs: buckets are walked by free count
    (Score1); inside a bucket only a few index ends are ranked (Score2, Score3)."""
    top = max(g.max_gpus for g in groups)
    for k in range(max(need, 1), top + 1):
        found = [
            n for g in groups if k <= g.max_gpus and (n := _bucket_best(book, g, k, spot, aware)) is not None
        ]
        if found:
            return min(found, key=lambda n: rank_key(book, n, spot=spot, aware=aware))
    return None


def _bucket_best(book: NodeBook, g: Group, k: int, spot: bool, aware: bool) -> int | None:
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
                if not (aware and risk >= 1.0):
                    return node
        plain = _first_plain(book, bucket, special)
        if plain is not None:
            return plain
        if special:
            for neg, risk, node in special.irange((0, -math.inf, -1)):  # spot-free, lowest risk first
                if not (aware and risk >= 1.0):
                    return node
        return None
    candidates = [special[-1][2]] if special else []  # fewest spot GPUs, then highest risk
    plain = _first_plain(book, bucket, special)
    if plain is not None:
        candidates.append(plain)
    if not candidates:
        return None
    return min(candidates, key=lambda n: rank_key(book, n, spot=False, aware=aware))


def _first_plain(book: NodeBook, bucket: Iterable[int], special) -> int | None:
    """The lowest-id node of a bucket that holds no spot GPUs and carries no risk."""
    if special is not None and len(special) >= len(bucket):
        return None
    return next((n for n in bucket if not book.special(n)), None)


def spread(book: NodeBook, groups: tuple[Group, ...], need: int, worker: int, *, spot: bool) -> Alloc | None:
    """Whole workers from the nodes with the most free GPUs (blocked nodes skipped for spot)."""
    state = book.state
    if worker_room(groups, worker) * worker < need:
        return None
    nodes = (node for k in range(max(g.max_gpus for g in groups), worker - 1, -1)
             for g in groups if k <= g.max_gpus
             for node in g.buckets[k] if not (spot and book.blocked(node)))  # fmt: skip
    return take_workers(state, nodes, need, worker)


# ----- preemption (Algorithm 3) ---------------------------------------------------------------
def waste(ctx: Context, job: Job) -> float:
    """Eq. 17: GPUs x wall seconds of work since the job's last periodic checkpoint."""
    if job.rate <= 0:
        return 0.0
    progress = job.work - ctx.remaining(job)
    return job.num_gpus * max(0.0, progress - job.checkpointed(progress)) / job.rate


def victims_on(ctx: Context, book: NodeBook, node: int, short: int, *, aware: bool) -> list[Job] | None:
    """Spot jobs of ``node`` whose eviction frees ``short`` more whole GPUs there: least
    waste first then a backward pruning pass (aware), or newest first (not aware)."""
    held = {idx: sum(len(gids) for n, gids in j.alloc if n == node)
            for idx, j in book.spot_jobs[node].items() if not j.fractional}  # fmt: skip
    jobs = [book.spot_jobs[node][idx] for idx in held]
    if aware:
        jobs.sort(key=lambda j: (waste(ctx, j), j.idx))
    else:
        jobs.sort(key=lambda j: (-j.run_since, j.idx))
    chosen: list[Job] = []
    freed = 0
    for job in jobs:
        if freed >= short:
            break
        chosen.append(job)
        freed += held[job.idx]
    if freed < short:
        return None
    if aware:
        for job in reversed(chosen[:-1]):
            if freed - held[job.idx] >= short:
                chosen.remove(job)
                freed -= held[job.idx]
    return chosen


def node_cost(ctx: Context, victims: list[Job], *, broken: int, met: int, span_s: float, gpus: float, beta: float) -> float:
    """Eq. 19: the eviction rate after these evictions plus ``beta`` x normalised waste. Each
    victim fails its guarantee period in progress (as :class:`.sqa.GuaranteeLedger` counts
    them), so the rate is ``(broken + victims) / (broken + met + victims)``."""
    n = len(victims)
    total = broken + met + n
    rate = (broken + n) / total if total else 0.0
    return rate + beta * sum(waste(ctx, v) for v in victims) / (gpus * span_s)


def plan_preemption(
    ctx: Context, book: NodeBook, groups: tuple[Group, ...], job: Job, *, aware: bool, broken: int, met: int,
    span_s: float, beta: float,
) -> tuple[list[int], list[Job]] | None:  # fmt: skip
    """Nodes and spot victims that make room for HP ``job``, or None when evicting every spot
    job would not."""
    state = book.state
    need = 1 if job.fractional else int(job.num_gpus)
    gpus = float(book.gpus_in(groups))
    spot_nodes = [(k, -neg, node) for g in groups for k, lst in book.index[state.node_group[g.nodes[0]]].items()
                  for neg, _risk, node in lst if neg < 0]  # fmt: skip

    def cost(victims: list[Job]) -> float:
        return node_cost(ctx, victims, broken=broken, met=met, span_s=span_s, gpus=gpus, beta=beta)

    if any(need <= g.max_gpus for g in groups):
        best: tuple[tuple, int, list[Job]] | None = None
        for free, spot, node in spot_nodes:
            if free + spot < need:
                continue
            victims = victims_on(ctx, book, node, need - free, aware=aware)
            if victims is None:
                continue
            rank = (cost(victims), free + spot, node) if aware else (free + spot, node)
            if best is None or rank < best[0]:
                best = (rank, node, victims)
        return None if best is None else ([best[1]], best[2])
    ranked = []
    for free, spot, node in spot_nodes:
        victims = victims_on(ctx, book, node, spot, aware=False)
        if victims:
            ranked.append(((cost(victims), node) if aware else (-spot, node), node, spot, victims))
    ranked.sort(key=lambda r: r[0])
    room = state.free_in(groups)
    nodes: list[int] = []
    chosen: dict[int, Job] = {}
    for _rank, node, spot, victims in ranked:
        if room >= need:
            break
        nodes.append(node)
        room += spot
        chosen.update((v.idx, v) for v in victims)
    return (nodes, list(chosen.values())) if room >= need else None


def free_alloc(state: ClusterState, node: int, job: Job) -> Alloc | None:
    """The allocation on ``node`` once its victims are gone (None if it still does not fit)."""
    if job.fractional:
        return [(node, 1)] if state.fraction_room(node, job.milli) else None
    need = int(job.num_gpus)
    return [(node, need)] if state.free[node] >= need else None
