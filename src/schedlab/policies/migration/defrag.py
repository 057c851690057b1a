"""Defragmentation by migration: a placement-repair wrapper around any policy.

The post "GPU Pause, Resume, and Migration: The Missing Primitive in Cluster Scheduling"
(yezhisheng.me, 17 May 2026) names the use: "Fragmentation-aware schedulers can migrate jobs to
rebuild contiguous placements for gang-scheduled workloads", and its point: "A slow checkpoint
is a policy that the scheduler cannot afford to use often." :class:`Defrag` is that policy; the
run's checkpoint cost model (:mod:`schedlab.sim.checkpoint`) prices each move.

Each round the inner policy schedules first. Then, per node pool, the oldest pending gang job
(more than one GPU) is *blocked* when its placer cannot place it although the pool has as many
free GPUs as it needs. For a blocked job the wrapper

1. splits its GPUs into per-node slots as the consolidating placer would: ``need // size``
   whole nodes plus the remainder, or one slot of ``need`` when it fits on one node;
2. picks for each slot (largest first) the node that reaches the slot's free GPUs by moving the
   fewest jobs (ties: the cheapest moves, then the lowest node id); only *small* jobs move:
   running, on one node, whole GPUs, fewer than the node holds, not colocated or forked, and
   not inside a restore stall; on a node, the largest of them move first;
3. finds a destination for each moved job outside the chosen nodes (best fit: the node with the
   fewest free GPUs that hold it, counting the moves planned before it); no plan if one has none,
   or if the plan moves more than ``max_moves`` jobs;
4. compares the expected gain with the cost, both in GPU-seconds:
   gain = the job's GPUs x its expected wait, where the wait is the time until the chosen
   number of nodes would have the slots' free GPUs on their own (each running job ends after
   its stall and its remaining work at its current rate; nothing else is placed meanwhile);
   cost = sum over the moved jobs of their GPUs x (the migration stall + the work a kill would
   lose at their rate), as ``ctx.migration_cost`` quotes it for the run's model;
5. when gain > ``gain_ratio`` x cost, migrates the jobs and lets the inner policy schedule
   again, which now finds whole free nodes for the blocked job.

A plan that was declined, or that could not be made, is remembered for its job until an
allocation or a node's power changes (``state.version``) or a running job's restore stall ends
(it becomes movable): until then the same moves would be found, every job's time left only
shrinks, so the gain does too, and the cost stays. Under ``kill`` the cost follows each job's
work since its last periodic checkpoint, so the plan is made again in every blocked round.

Deviations and limits: the post describes the primitive, not a defragmentation algorithm; the
slot choice is greedy per slot, which minimises the moves when slots are chosen independently
(it does not search joint plans). The wait estimate reads remaining work, as the oracle
policies do (``srtf``); it ignores arrivals and jobs the inner policy may start. Only the oldest
blocked gang job of a pool is repaired per round, the one a strict FIFO queue blocks on; the
inner policy may still start another job on the freed nodes.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from schedlab.policies.common.placers import Placer
from schedlab.policies.params import as_dict, help_field
from schedlab.sim.job import PENDING, Job
from schedlab.sim.policy import Context, Policy, WrappedPolicy

@dataclass(frozen=True)
class DefragParams:
    """Parameters of the ``+defrag`` wrappers."""

    gain_ratio: float = help_field(1.0, "migrate when the expected gain exceeds this many times the cost (GPU-seconds)")
    max_moves: int = help_field(16, "most jobs moved to place one gang job")


@dataclass(frozen=True)
class Plan:
    """Moves that free the nodes a blocked gang job needs: (job, destination node) pairs, the
    nodes freed, and the estimate they were chosen on (GPU-seconds)."""

    moves: tuple[tuple[Job, int], ...]
    targets: tuple[int, ...]
    gain: float
    cost: float


class Unchanged(NamedTuple):
    """A plan that was not carried out: for which job, at which state version, until when it
    holds, and whether it was declined (rather than impossible)."""

    job: int
    version: int
    until: float
    declined: bool


class Defrag(WrappedPolicy):
    """Wrap ``inner``: after each of its rounds, migrate small jobs to place a blocked gang job."""

    def __init__(self, inner: Policy, placer: Placer, *, gain_ratio: float = 1.0, max_moves: int = 16) -> None:
        super().__init__(inner)
        self.placer = placer
        self.name = f"{inner.name}+defrag"
        self.gain_ratio = gain_ratio
        self.max_moves = max_moves
        # per pool: a heap of the arrival indices of gang jobs (more than one GPU) not seen
        # running since they last waited; a job that starts leaves it when a round next reads it
        self.waiting: dict[str, list[int]] = {}
        self.repairs = 0
        self.moves = 0
        self.declined = 0  # rounds whose plan was dropped because the cost exceeded the gain
        self.unchanged: dict[str, Unchanged] = {}  # per pool: its last plan not carried out

    # ----- bookkeeping -------------------------------------------------------------------------
    def on_arrival(self, ctx: Context, job: Job) -> None:
        self.inner.on_arrival(ctx, job)
        self._wait(ctx, job)

    def on_stopped(self, ctx: Context, job: Job) -> None:
        self.inner.on_stopped(ctx, job)
        self._wait(ctx, job)

    def _wait(self, ctx: Context, job: Job) -> None:
        if job.num_gpus > 1:
            heapq.heappush(self.waiting.setdefault(ctx.pool_of(job), []), job.idx)

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        return {**self.inner.report(jobs),
                "defrag": {"repairs": self.repairs, "moves": self.moves, "declined": self.declined}}  # fmt: skip

    # ----- the repair -------------------------------------------------------------------------
    def schedule(self, ctx: Context) -> None:
        self.inner.schedule(ctx)
        if self.repair(ctx):
            self.inner.schedule(ctx)

    def repair(self, ctx: Context) -> bool:
        """Migrate for the oldest pending gang job of each pool if it is blocked (pools in the
        order of those jobs' arrival); whether anything moved. A round reads each pool's
        waiting jobs only up to the oldest still pending, and drops those it finds running
        (they come back through ``on_stopped``), so it reads each job once per wait."""
        active = ctx.active
        oldest: list[tuple[int, str]] = []
        for pool, waiting in self.waiting.items():
            while waiting:
                job = active.get(waiting[0])
                if job is not None and job.state == PENDING:
                    oldest.append((job.idx, pool))
                    break
                heapq.heappop(waiting)
        oldest.sort()
        moved = False
        for idx, pool in oldest:
            moved = self._repair_for(ctx, active[idx], pool) or moved
        return moved

    def _repair_for(self, ctx: Context, job: Job, pool: str) -> bool:
        """Migrate for ``job`` if it is blocked and the plan's gain exceeds its cost."""
        if not self.blocked(ctx, job):
            return False
        known = self.unchanged.get(pool)
        if known is not None and known.job == job.idx and known.version == ctx.state.version and ctx.now < known.until:
            self.declined += known.declined
            return False
        plan = self.plan(ctx, job)
        if plan is None or not plan.gain > self.gain_ratio * plan.cost:
            declined = plan is not None
            self.declined += declined
            self.unchanged[pool] = Unchanged(job.idx, ctx.state.version, self.plan_holds_until(ctx), declined)
            return False
        for victim, node in plan.moves:
            ctx.migrate(victim, [(node, int(victim.num_gpus))])
        self.repairs += 1
        self.moves += len(plan.moves)
        return True

    @staticmethod
    def plan_holds_until(ctx: Context) -> float:
        """Until when a plan made now stays the same while no allocation changes: the next end
        of a running job's restore stall; now under ``kill``, whose cost changes with time."""
        if ctx.pause_kills:
            return ctx.now
        now = ctx.now
        return min((j.stall_until for j in ctx.running.values() if j.stall_until > now), default=math.inf)

    def blocked(self, ctx: Context, job: Job) -> bool:
        """Enough GPUs are free in the job's groups, but its placer cannot place it."""
        return ctx.state.free_in(ctx.groups_of(job)) >= job.num_gpus and self.placer.place(ctx, job) is None

    def plan(self, ctx: Context, job: Job) -> Plan | None:
        """The fewest moves that free the slots ``job`` needs, and their gain and cost; None
        when no such moves exist within ``max_moves``."""
        state = ctx.state
        nodes = [n for g in ctx.groups_of(job) for n in g.nodes if state.on[n]]
        if not nodes:
            return None
        slots = node_slots(int(job.num_gpus), max(state.node_gpus[n] for n in nodes))
        small = small_jobs_by_node(ctx)
        ranked: dict[int, list[tuple[tuple[int, float, int], list[Job]]]] = {}
        targets: list[int] = []
        moving: list[Job] = []
        for slot in slots:
            if slot not in ranked:
                ranked[slot] = nodes_to_free(ctx, nodes, slot, small)
            best = next((c for c in ranked[slot] if c[0][2] not in targets), None)
            if best is None:
                return None
            targets.append(best[0][2])
            moving += best[1]
        if not moving or len(moving) > self.max_moves:
            return None
        moves = destinations(ctx, moving, targets)
        if moves is None:
            return None
        gain = job.num_gpus * expected_wait(ctx, nodes, slots, jobs_by_node(ctx))
        return Plan(tuple(moves), tuple(targets), gain, sum(move_cost(ctx, j) for j in moving))


def node_slots(need: int, size: int) -> list[int]:
    """The free GPUs a job of ``need`` GPUs takes per node, largest first, packed as the
    consolidating placer packs it: whole nodes of ``size`` plus a remainder."""
    if need <= size:
        return [need]
    whole, rest = divmod(need, size)
    return [size] * whole + ([rest] if rest else [])


def jobs_by_node(ctx: Context) -> dict[int, list[Job]]:
    """Running jobs by the nodes they hold."""
    out: dict[int, list[Job]] = {}
    for j in ctx.running.values():
        for node, _ in j.alloc:
            out.setdefault(node, []).append(j)
    return out


def small_jobs_by_node(ctx: Context) -> dict[int, list[Job]]:
    """The small jobs of each node, largest first (then by arrival): running there alone on
    whole GPUs, fewer than the node holds, not sharing a GPU, not forked, and past their restore
    stall; the jobs a plan may move."""
    out: dict[int, list[Job]] = {}
    now = ctx.now
    node_gpus = ctx.state.node_gpus
    for j in ctx.running.values():
        if (len(j.alloc) == 1 and not j.fractional and not j.colocated and not j.copies and now >= j.stall_until
                and j.num_gpus < node_gpus[j.alloc[0][0]]):  # fmt: skip
            out.setdefault(j.alloc[0][0], []).append(j)
    for jobs in out.values():
        if len(jobs) > 1:
            jobs.sort(key=lambda j: (-j.num_gpus, j.idx))
    return out


def nodes_to_free(
    ctx: Context, nodes: list[int], slot: int, small: dict[int, list[Job]]
) -> list[tuple[tuple[int, float, int], list[Job]]]:
    """The nodes that can free ``slot`` GPUs by moving small jobs, best first by (moves, their
    cost, node id), each with the jobs it moves. Slot by slot, the plan takes the best node not
    yet taken: the greedy choice, as a node's moves do not depend on the other slots."""
    out = []
    state = ctx.state
    for n in nodes:
        if state.node_gpus[n] < slot:
            continue
        chosen = moves_to_free(slot - state.free[n], small.get(n, ()))
        if chosen is not None:
            out.append(((len(chosen), sum(move_cost(ctx, j) for j in chosen), n), chosen))
    out.sort(key=lambda c: c[0])
    return out


def moves_to_free(short: int, small: Sequence[Job]) -> list[Job] | None:
    """The fewest of a node's ``small`` jobs (largest first) to move for ``short`` more free
    GPUs; None when they cannot free that many."""
    chosen: list[Job] = []
    for j in small:
        if short <= 0:
            break
        chosen.append(j)
        short -= int(j.num_gpus)
    return chosen if short <= 0 else None


def move_cost(ctx: Context, job: Job) -> float:
    """GPU-seconds a migration of ``job`` costs under the run's checkpoint model: its GPUs x
    (the stall + the lost work at its rate)."""
    stall, lost = ctx.migration_cost(job)
    return job.num_gpus * (stall + (lost / job.rate if lost else 0.0))


def destinations(ctx: Context, moving: list[Job], targets: list[int]) -> list[tuple[Job, int]] | None:
    """A node outside ``targets`` for each moved job, best fit, largest job first; None when one
    does not fit anywhere."""
    state = ctx.state
    free: dict[int, int] = {}
    out: list[tuple[Job, int]] = []
    for j in sorted(moving, key=lambda j: (-j.num_gpus, j.idx)):
        need = int(j.num_gpus)
        best = None
        for g in ctx.groups_of(j):
            for n in g.nodes:
                if n in targets or not state.on[n]:
                    continue
                room = free.get(n, state.free[n])
                if room >= need and (best is None or (room, n) < (free.get(best, state.free[best]), best)):
                    best = n
        if best is None:
            return None
        free[best] = free.get(best, state.free[best]) - need
        out.append((j, best))
    return out


def time_left(ctx: Context, job: Job) -> float:
    """Wall seconds until a running job ends: its stall, then its remaining work at its rate."""
    return max(0.0, job.stall_until - ctx.now) + (ctx.remaining(job) / job.rate if job.rate > 0 else math.inf)


def expected_wait(ctx: Context, nodes: list[int], slots: list[int], on_node: dict[int, list[Job]]) -> float:
    """Seconds until as many nodes as ``slots`` would have the largest slot's free GPUs with no
    move: each node is ready when enough of its jobs have ended; the slots take the readiest
    nodes (for a remainder slot this over-asks, so the wait errs long)."""
    state = ctx.state
    ready: list[float] = []
    for n in nodes:
        short = slots[0] - state.free[n]
        if short > state.node_gpus[n] - state.free[n]:
            continue
        t = 0.0
        for end, gpus in sorted((time_left(ctx, j), len(g)) for j in on_node.get(n, []) for node, g in j.alloc
                                if node == n):  # fmt: skip
            if short <= 0:
                break
            t = end
            short -= gpus
        ready.append(t)
    if len(ready) < len(slots):
        return math.inf
    ready.sort()
    return ready[len(slots) - 1]


def defrag_build(base: Callable[[Placer, Any, Any], Policy]) -> Callable[[Placer, DefragParams, Any], Policy]:
    """The registry build of ``<base>+defrag``: the base policy, without parameters, wrapped."""
    return lambda placer, params, options: Defrag(base(placer, None, options), placer, **as_dict(params))
