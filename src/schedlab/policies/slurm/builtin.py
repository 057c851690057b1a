"""``slurm``: Slurm 22.05's main scheduler alone (SchedulerType=sched/builtin).

Rules (slurm.conf(5) and sched_config.html of Slurm 22.05; job_scheduler.c ``_schedule``):

1. Queue order (slurm.conf, PriorityType: "Job priority, Job submit time, Job ID";
   ``sort_job_queue2``): priority descending, then submit time, then job id - here arrival
   order, which is both. Priorities come from :mod:`.priority`.
2. A pass walks the queue in that order and starts each job that fits in its partition now.
   "once any job or job array task in a partition is left pending, no other jobs in that
   partition will be scheduled" (sched_config.html, Overview; slurm.conf, SchedulerType
   sched/builtin). A job its partition can never hold is held and blocks nothing (the
   "partition constraints" exception there).
3. When: a pass at once after every job end (its epilog completing calls ``schedule``), and
   one for the submissions: a submission only queues a request (``queue_job_scheduler``),
   which the background loop, checking every second, serves once ``batch_sched_delay``
   seconds have passed since its own last pass (SchedulerParameters batch_sched_delay,
   default 3; controller.c ``_slurmctld_background``). These passes test
   ``default_queue_depth`` jobs (SchedulerParameters default_queue_depth; ``_schedule`` tests
   one more, "job_depth++ > def_job_limit"), counting jobs skipped in blocked partitions.
   Every ``sched_interval`` seconds from the start (SchedulerParameters sched_interval) the
   background loop runs a pass over the whole queue instead.
4. Submission: a batch job (sbatch) is not allocated at submit (``job_allocate`` with
   allocate=0 only tests it) and waits for the pass its submission triggers. With
   ``interactive_submit``, jobs are salloc/srun allocations: ``job_allocate`` starts one at
   submit if it fits and no pending job of its partition has a strictly higher priority
   (``_top_priority``), before any pass.
5. Nodes: select/cons_tres as in :mod:`.nodes`.

Priorities are recomputed every PriorityCalcPeriod (from the start) while jobs wait, for age,
fair-share or a site factor; a recalculation reorders the queue but triggers no pass.

Cost: a pass reads at most ``default_queue_depth + 1`` jobs (event) or the queue (every
``sched_interval``) and stops once every partition is blocked; a placement reads the free-GPU
buckets, then scans the nodes of the job's partition if they have room; a priority
recalculation re-sorts the pending jobs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from sortedcontainers import SortedList

from schedlab.policies.slurm.nodes import Request, request_of, room_in, select
from schedlab.policies.slurm.params import SlurmParams
from schedlab.policies.slurm.priority import Multifactor, SiteFactor
from schedlab.sim.job import Job
from schedlab.sim.policy import Context, Policy

SCHED, CALC, SUBMIT = "slurm-sched", "slurm-calc", "slurm-submit"  # timer kinds: a full pass; a priority
# recalculation; the background loop's check for queued submissions


class SlurmBuiltin(Policy):
    """Slurm's main scheduler with multifactor priority; ``site_factor(job)`` is the job's
    SiteFactor, ``shares`` the tenants' fair-share shares (None: the cluster's tenant weights)."""

    name = "slurm"

    def __init__(self, params: SlurmParams | None = None, *, site_factor: SiteFactor | None = None,
                 shares: Mapping[str, float] | None = None) -> None:  # fmt: skip
        self.params = params or SlurmParams()
        self.priority = Multifactor(self.params, site_factor, shares)
        self.queue: SortedList = SortedList()  # (-priority, idx) of pending jobs
        self.pending: dict[int, Job] = {}
        self.keys: dict[int, tuple[int, int]] = {}  # each pending job's queue entry
        self.requests: dict[int, Request] = {}
        self.held: set[int] = set()
        self.nodes: dict[tuple[str, str], list[int]] = {}  # node indices of a partition (and GPU type)
        self.arrived: list[Job] = []  # interactive jobs submitted since the last round
        self.event = False  # an event-triggered pass is due
        self.requested = False  # a submission queued a pass for the background loop
        self.last_background = -math.inf  # when the background loop last ran a pass
        self.full = False  # the periodic pass over the whole queue is due
        self.armed: dict[str, float] = {}  # the pending timer of each kind
        self.starts = {"main": 0}

    # -- events ---------------------------------------------------------------------------------
    def setup(self, ctx: Context) -> None:
        self.priority.setup(ctx)

    def on_arrival(self, ctx: Context, job: Job) -> None:
        sizes = [ctx.state.node_gpus[n] for n in self._partition(ctx, job)]
        req = request_of(job, sizes)
        if req is None:
            self.held.add(job.idx)
            return
        self.requests[job.idx] = req
        self._enqueue(ctx, job)
        if self.params.interactive_submit:
            self.arrived.append(job)
        self._request(ctx)
        self.touch(ctx)

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.priority.charge(ctx, job)
        self.event = True
        self.touch(ctx)

    def on_stopped(self, ctx: Context, job: Job) -> None:
        self.priority.charge(ctx, job)
        self._enqueue(ctx, job)
        self.event = True
        self.touch(ctx)

    def on_timer(self, ctx: Context, payload: object) -> bool:
        if not isinstance(payload, str) or self.armed.get(payload) != ctx.now:
            return False  # not ours, or stale
        del self.armed[payload]
        if payload == SCHED:
            self.full = True
            self.requested = False  # the full pass serves the queued submissions too
            self.last_background = ctx.now
            return True
        if payload == SUBMIT:
            if not self.requested:
                return False  # a full pass since served the queued submissions
            due = self.last_background + self.params.batch_sched_delay
            if ctx.now < due:  # a full pass ran meanwhile: wait batch_sched_delay after it
                self.armed[SUBMIT] = due
                ctx.set_timer(due, SUBMIT)
                return False
            self.event = True
            self.requested = False
            self.last_background = ctx.now
            return True
        if payload == CALC:
            self._recalculate(ctx)
        return False

    # -- decisions ------------------------------------------------------------------------------
    def schedule(self, ctx: Context) -> None:
        for job in self.arrived:
            self._submit_attempt(ctx, job)
        self.arrived.clear()
        if self.event or self.full:
            self.main_pass(ctx, full=self.full)
            self.event = self.full = False
        self._arm(ctx)

    def main_pass(self, ctx: Context, *, full: bool) -> None:
        """One pass of ``_schedule``: jobs in queue order, blocking a partition at its first
        job that does not fit."""
        depth = math.inf if full else self.params.default_queue_depth + 1
        partitions = len(ctx.state.pool_gpus_on)
        blocked: set[str] = set()
        queue = self.queue
        i = tested = 0
        while i < len(queue) and tested < depth:
            tested += 1
            job = self.pending[queue[i][1]]
            pool = ctx.pool_of(job)
            if pool in blocked:
                self.touch(ctx)  # Slurm updates the skipped job's record (last_job_update)
                i += 1
                continue
            alloc = self.place(ctx, job)
            if alloc is None:
                blocked.add(pool)
                if len(blocked) == partitions:
                    return
                i += 1
                continue
            self.start(ctx, job, alloc, "main")  # it leaves the queue: the next job is at i

    def place(self, ctx: Context, job: Job) -> list[tuple[int, int]] | None:
        """cons_tres's allocation for ``job`` now on its partition's powered-on nodes (None if
        their free GPUs cannot hold it, read from the free-GPU buckets first)."""
        req = self.requests[job.idx]
        if room_in(req, ctx.groups_of(job)) < req.need:
            return None
        return select(req, self.usable_nodes(ctx, job), ctx.state.free)

    def start(self, ctx: Context, job: Job, alloc: list[tuple[int, int]], by: str) -> None:
        ctx.start(job, alloc)
        self.queue.remove(self.keys.pop(job.idx))
        del self.pending[job.idx]
        self.starts[by] += 1
        self.touch(ctx)

    def usable_nodes(self, ctx: Context, job: Job) -> list[int]:
        """The powered-on nodes of the job's partition (and GPU type), ascending."""
        on = ctx.state.on
        return [n for n in self._partition(ctx, job) if on[n]]

    def touch(self, ctx: Context) -> None:
        """Hook: a job or node record changed (Slurm's last_job_update / last_node_update)."""

    def site_factors_updated(self, ctx: Context, idxs: list[int]) -> None:
        """``scontrol update JobId=X SiteFactor=N`` for the pending jobs ``idxs`` (whose
        ``site_factor`` now returns N): each job's priority is recomputed at once
        (job_mgr.c ``_update_job`` ends with ``set_job_prio``), and the update queues a
        scheduler pass (proc_req.c ``_slurm_rpc_update_job``: ``queue_job_scheduler``)."""
        moved = [idx for idx in idxs if idx in self.pending]
        if not moved:
            return
        for idx in moved:
            self.queue.remove(self.keys[idx])
            self._enqueue(ctx, self.pending[idx])
        self._request(ctx)
        self.touch(ctx)

    def report(self, jobs: object) -> dict[str, int]:
        return {"slurm_started_by_main": self.starts["main"], "slurm_held_jobs": len(self.held)}

    # -- internals ------------------------------------------------------------------------------
    def _partition(self, ctx: Context, job: Job) -> list[int]:
        key = (ctx.pool_of(job), job.gpu_type)
        nodes = self.nodes.get(key)
        if nodes is None:
            nodes = self.nodes[key] = sorted(n for g in ctx.groups_of(job) for n in g.nodes)
        return nodes

    def _enqueue(self, ctx: Context, job: Job) -> None:
        key = (-self.priority.priority(ctx, job, self.requests[job.idx]), job.idx)
        self.keys[job.idx] = key
        self.queue.add(key)
        self.pending[job.idx] = job

    def _submit_attempt(self, ctx: Context, job: Job) -> None:
        """``job_allocate`` for an interactive job: start it now if it is top priority in its partition."""
        pool, prio = ctx.pool_of(job), -self.keys[job.idx][0]
        for neg, idx in self.queue:
            if -neg <= prio:
                break
            if idx < job.idx and ctx.pool_of(self.pending[idx]) == pool:  # later ones were not submitted yet
                return
        alloc = self.place(ctx, job)
        if alloc is not None:
            self.start(ctx, job, alloc, "main")

    def _request(self, ctx: Context) -> None:
        """``queue_job_scheduler``: the background loop runs a pass at its first check (taken at
        whole seconds) at least ``batch_sched_delay`` after its last one."""
        self.requested = True
        if SUBMIT not in self.armed:
            at = max(float(math.ceil(ctx.now)), self.last_background + self.params.batch_sched_delay)
            self.armed[SUBMIT] = at
            ctx.set_timer(at, SUBMIT)

    def _recalculate(self, ctx: Context) -> None:
        """A PriorityCalcPeriod tick: decay and charge usage, recompute every pending job's
        priority (which updates each pending job's record)."""
        self.priority.period(ctx, ctx.running.values())
        if self.pending:
            if self.priority.dynamic:
                for idx, job in self.pending.items():
                    self.keys[idx] = (-self.priority.priority(ctx, job, self.requests[idx]), idx)
                self.queue = SortedList(self.keys.values())
            self.touch(ctx)
        self._arm(ctx)

    def _arm(self, ctx: Context) -> None:
        """Keep the periodic timers set while they can matter: full passes while jobs wait;
        recalculations while jobs wait (age, site factor) or run (fair-share usage)."""
        p = self.params
        if self.pending:
            self._set(ctx, SCHED, p.sched_interval)
        if self.pending or (p.weight_fairshare and ctx.running):
            self._set(ctx, CALC, p.priority_calc_period)

    def _set(self, ctx: Context, kind: str, period: float) -> None:
        """A timer at the next multiple of ``period`` after now (Slurm's loops run from its start)."""
        if kind not in self.armed:
            at = (math.floor(ctx.now / period) + 1) * period
            self.armed[kind] = at
            ctx.set_timer(at, kind)
