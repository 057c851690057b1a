"""``slurm-backfill``: Slurm 22.05's main scheduler plus the backfill plugin
(SchedulerType=sched/backfill, Slurm's default).

The main scheduler runs as in :mod:`.builtin` (event passes of ``default_queue_depth`` jobs,
full passes every ``sched_interval``). A backfill cycle (backfill.c ``_attempt_backfill``):

1. When (``backfill_agent``): the cycle runs ``bf_interval`` seconds after the previous one
   (SchedulerParameters bf_interval) if a job, node or partition record changed since
   (``_more_work``: a submission, a start or an end, a priority recalculation, a main pass
   that skipped a job of a blocked partition, or the last cycle delaying a job's planned start
   or starting one); otherwise the agent checks again every second and runs after the next
   change. A cycle with nothing pending does nothing but still counts as the previous one.
2. Jobs in queue order (as the main scheduler), at most ``bf_max_job_test`` of them tested
   (SchedulerParameters bf_max_job_test).
3. Time limits (slurm.conf SchedulerType sched/backfill: "Effectiveness of backfill scheduling
   is dependent upon users specifying job time limits"): a job's ``time_limit`` in whole
   minutes rounded up (MaxTime: "Time resolution is one minute and second values are rounded
   up"), else ``default_time_limit`` (partition DefaultTime, else MaxTime); INFINITE is planned
   as a year. A running job is planned to end at its start plus its limit; one already past
   it, KillWait (30 s) after its limit, and at least a second from now (``_guess_job_end``).
4. Where and when a job can run (cons_tres ``_will_run_test``): now, if it fits; else running
   jobs are released in order of planned end, a batch at a time (jobs ending within 30 s of the
   first, the window doubling each batch: slurm.conf bf_window_linear), until it fits; it starts
   when the last released job ends, on the nodes cons_tres would then pick.
5. Reservations (sched_config.html, Backfill Scheduling: "If the job under consideration can
   start immediately without impacting the expected start time of any higher priority job,
   then it does so. Otherwise the resources required by the job will be reserved during the
   job's expected execution time", and "the backfill scheduler reserves whole nodes for jobs,
   even if jobs don't require whole nodes"): the nodes reserved for higher-priority jobs over
   [start, start + limit] are off limits; a job that can start now on the others starts, else
   its nodes are reserved from its expected start to its end, both rounded down to
   ``bf_resolution`` (at least one slot), if it starts within ``bf_window`` minutes. When
   reserved nodes free up before the job's expected start, or its nodes collide with a later
   reservation, it is tried again from that time (TRY_LATER).

Cost: a cycle sorts the running jobs; each job tested reads the planned records (at most two
per reservation of the cycle) and, unless a job of the same request on the same nodes was
tested since the cycle's last start, the running jobs until it fits, and scans its nodes once.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from schedlab.policies.slurm.nodes import Request, select
from schedlab.policies.slurm.params import DAY_S, SlurmParams
from schedlab.policies.slurm.priority import SiteFactor
from schedlab.policies.slurm.builtin import SlurmBuiltin
from schedlab.sim.job import Job
from schedlab.sim.policy import Context

BACKFILL = "slurm-backfill"  # timer kind: the backfill agent's next check
YEAR_S = 365 * DAY_S  # how Slurm plans an INFINITE limit
KILL_WAIT_S = 30.0  # slurm.conf KillWait default, with OverTimeLimit 0
WILL_RUN_WINDOW_S = 30.0  # cons_tres's first batch window of ending jobs (bf_window_linear unset)

Running = list[tuple[float, int, Job]]  # (planned end, idx, job), sorted
WillRun = tuple[float, list[tuple[int, int]]]  # when and where a request could start


@dataclass(slots=True)
class Record:
    """A span [begin, end) of a node_space and the nodes reserved for pending jobs during it."""

    begin: float
    end: float
    reserved: frozenset[int]


class Plan:
    """A cycle's node_space: contiguous records up to the window's end."""

    def __init__(self, begin: float, end: float, resolution: float) -> None:
        self.records = [Record(begin, end, frozenset())]
        self.resolution = resolution

    def available(self, nodes: set[int], start: float, end: float) -> tuple[set[int], float]:
        """The ``nodes`` not reserved at any time of [start, end], and when more of them free up
        after ``start`` (0: never within the window)."""
        avail, later = set(nodes), 0.0
        records = self.records
        for j, rec in enumerate(records):
            if rec.end > start and j + 1 < len(records) and not later:
                if not (nodes - records[j + 1].reserved) <= (avail - rec.reserved):
                    later = rec.end
            if rec.end <= start:
                continue
            if rec.begin > end:
                break
            avail -= rec.reserved
        return avail, later

    def overlaps(self, chosen: set[int], start: float, end: float) -> bool:
        """Whether nodes of ``chosen`` are reserved at some time of [start, end)."""
        return any(rec.end > start and rec.begin < end and rec.reserved & chosen for rec in self.records)

    def reserve(self, start: float, end: float, chosen: set[int]) -> None:
        """Reserve ``chosen`` over [start, end) (``_add_reservation``)."""
        records = self.records
        start = max(start, records[0].begin)
        end = max(end, start + self.resolution)
        i = next((k for k, rec in enumerate(records) if rec.end > start), None)
        if i is None:
            return
        if records[i].begin < start:
            records.insert(i + 1, Record(start, records[i].end, records[i].reserved))
            records[i].end = start
            i += 1
        while i < len(records) and records[i].begin < end:
            if end < records[i].end:
                records.insert(i + 1, Record(end, records[i].end, records[i].reserved))
                records[i].end = end
            records[i].reserved = records[i].reserved | chosen
            i += 1


class SlurmBackfill(SlurmBuiltin):
    """Slurm's main scheduler and backfill plugin (see the module docstring)."""

    name = "slurm-backfill"

    def __init__(self, params: SlurmParams | None = None, *, site_factor: SiteFactor | None = None,
                 shares: Mapping[str, float] | None = None) -> None:  # fmt: skip
        super().__init__(params, site_factor=site_factor, shares=shares)
        self.last_cycle = 0.0
        self.cycle_due = False
        self.holders: Counter[tuple[int, int]] = Counter()  # jobs on each (node, GPU) during a cycle
        self.memo: dict[tuple[Request, tuple[int, ...]], WillRun | None] = {}  # will-run answers of the cycle since its last start
        self.starts["backfill"] = 0

    def setup(self, ctx: Context) -> None:
        super().setup(ctx)
        self.last_cycle = ctx.now

    def touch(self, ctx: Context) -> None:
        """A record changed: the agent's next check finds work (``_more_work``)."""
        if BACKFILL not in self.armed:
            due = self.last_cycle + self.params.bf_interval
            at = due if ctx.now <= due else due + math.ceil(ctx.now - due)  # it polls every second
            self.armed[BACKFILL] = at
            ctx.set_timer(at, BACKFILL)

    def on_timer(self, ctx: Context, payload: object) -> bool:
        if payload != BACKFILL:
            return super().on_timer(ctx, payload)
        if self.armed.get(BACKFILL) != ctx.now:
            return False
        if self.pending:
            self.cycle_due = True
            return True
        del self.armed[BACKFILL]
        self.last_cycle = ctx.now  # "no jobs to backfill": the cycle ends at once
        return False

    def schedule(self, ctx: Context) -> None:
        super().schedule(ctx)
        if self.cycle_due:
            self.cycle_due = False
            self.cycle(ctx)

    def report(self, jobs: object) -> dict[str, int]:
        return {**super().report(jobs), "slurm_started_by_backfill": self.starts["backfill"]}

    # -- the cycle ------------------------------------------------------------------------------
    def cycle(self, ctx: Context) -> None:
        """One ``_attempt_backfill``."""
        self.armed.pop(BACKFILL, None)  # this cycle covers every change so far
        self.last_cycle = now = ctx.now
        p = self.params
        res = p.bf_resolution
        plan = Plan(math.floor(now / res) * res, math.floor((now + p.bf_window * 60) / res) * res, res)
        running = sorted((self.planned_end(j), j.idx, j) for j in ctx.running.values())
        self.holders = Counter((node, gid) for _, _, j in running for node, gids in j.alloc for gid in gids)
        self.memo.clear()
        queue = self.queue
        i = tested = 0
        while i < len(queue) and tested < p.bf_max_job_test:
            job = self.pending[queue[i][1]]
            tested += self._try(ctx, job, plan, running)
            i += job.idx in self.pending  # a job started leaves the queue: the next one is at i

    def _try(self, ctx: Context, job: Job, plan: Plan, running: Running) -> int:
        """Start ``job`` now or reserve nodes for it; returns 1 if it reached the will-run test
        (what bf_max_job_test counts)."""
        p, now = self.params, ctx.now
        req = self.requests[job.idx]
        nodes = self.usable_nodes(ctx, job)
        partition = set(nodes)
        limit = self.limit(job)
        start, tested = now, 0
        while True:
            avail, later = plan.available(partition, start, start + limit)
            found = None
            if len(avail) >= req.min_nodes:
                tested = 1
                key = (req, tuple(sorted(avail)))
                if key not in self.memo:
                    self.memo[key] = self.will_run(ctx, req, list(key[1]), running)
                found = self.memo[key]
            if found is None:
                if not later:
                    return tested
                start = later
                continue
            at, alloc = found
            if start > at:
                at = start
                self.touch(ctx)  # the job's expected start moved later
            if at <= now:
                self.start(ctx, job, alloc, "backfill")
                bisect.insort(running, (self.planned_end(job), job.idx, job))
                self.holders.update((node, gid) for node, gids in job.alloc for gid in gids)
                self.memo.clear()
                return tested
            if later and at > later:
                start = later
                continue
            if at > now + p.bf_window * 60:
                return tested
            res = p.bf_resolution
            begin, end = math.floor(at / res) * res, math.floor((at + limit) / res) * res
            chosen = {node for node, _ in alloc}
            if plan.overlaps(chosen, begin, end):
                start = at
                continue
            plan.reserve(begin, end, chosen)
            return tested

    def will_run(self, ctx: Context, req: Request, nodes: list[int], running: Running) -> WillRun | None:
        """When and where the request could start on ``nodes`` as running jobs end
        (``_will_run_test``). The nodes' room is tracked as jobs are released, and nodes are
        selected once it suffices (cons_tres selects whenever the free nodes can hold the job)."""
        now = ctx.now
        free = {n: ctx.state.free[n] for n in nodes}
        room = sum(req.room(f) for f in free.values())
        if room >= req.need:
            return now, select(req, nodes, free)  # type: ignore[return-value]  # room >= need: select finds an allocation
        left: dict[tuple[int, int], int] = {}  # jobs still on a GPU after the releases so far
        window, base = WILL_RUN_WINDOW_S, None
        i, n = 0, len(running)
        while i < n:
            last = None
            while i < n:
                end, _, job = running[i]
                i += 1
                if not any(node in free for node, _ in job.alloc):
                    continue
                if base is None:
                    base = end + (window - end % window)
                last = end
                for node, gids in job.alloc:
                    if node in free:
                        before = free[node]
                        for gid in gids:
                            left[node, gid] = left.get((node, gid), self.holders[node, gid]) - 1
                            free[node] += left[node, gid] == 0
                        room += req.room(free[node]) - req.room(before)
                if i == n or running[i][0] > base + window:
                    break
            if last is None or base is None:  # no job left to release on the nodes
                return None
            window *= 2
            while i < n and running[i][0] > base + window:
                window *= 2
            if room >= req.need:
                if last <= now:  # past its limit: KillWait later, or a second from now
                    last = last + KILL_WAIT_S if last + KILL_WAIT_S > now else now + 1.0
                return last, select(req, nodes, free)  # type: ignore[return-value]  # room >= need: select finds an allocation
        return None

    def limit(self, job: Job) -> float:
        """The job's time limit as backfill plans it, seconds."""
        limit = job.time_limit if job.time_limit == job.time_limit else self.params.default_time_limit
        return YEAR_S if math.isinf(limit) else 60.0 * math.ceil(limit / 60.0)

    def planned_end(self, job: Job) -> float:
        return job.run_since + self.limit(job)
