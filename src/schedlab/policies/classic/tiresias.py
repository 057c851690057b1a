"""Tiresias (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning",
NSDI'19), the discretised two-dimensional least-attained-service scheduler (§3.2, Algorithm 1).

* 2D attained service: a job's GPUs x its executed time, W_J x t_J (§3.2). t_J counts only time
  in which the job can progress: the stall of a restart (restore) is not service.
* Priority discretisation (MLFQ, §3.2): queues Q0..QK-1 split by ``thresholds_gpu_s``; every
  job enters Q0 and is demoted to the next queue when W_J x t_J crosses its queue's upper
  threshold. Lower queues run first.
* Inside a queue, FIFO (§3.2: 2D-LAS schedules a queue's jobs in FIFO order), in the order of
  Tiresias' simulator, which keeps each queue as a list: a job enters at the back (arrival,
  demotion, promotion), and after every round the waiting jobs move behind the running ones,
  each part keeping its order. So a job is never preempted for a job of its own queue; running
  jobs are in the order they (re)started, the latest last; a paused job waits ahead of the jobs
  that were already waiting, the latest paused first; and a demoted job enters its new queue
  behind the jobs waiting there (for the round of its demotion; kept running by that round, it
  goes behind the queue's running jobs).
* Starvation avoidance (§3.2, PROMOTEKNOB): a waiting job J is promoted to Q0 once its waiting
  time delta_J reaches ``promote_knob`` x t_J; both are counted since J's last promotion and
  reset to 0 by it, and delta_J counts only waiting after J has run since then (a job that has
  not run is in Q0 and needs no promotion). ``promote_knob=inf`` disables it.
* Preemptive: a higher-priority waiting job pauses lower-priority running ones (checkpointed,
  so no work is lost; the engine charges the restart cost), but not a restarted job before it
  has progressed as long as its stall (:func:`schedlab.policies.common.preemptive.guard_ends`).
  With both rules a job whose queue threshold is shorter than the stall (128 GPUs cross
  3,250 GPU-s in 25 s; a pause costs 40 s) still progresses at every run instead of being
  demoted, paused and promoted again without end.

Defaults: three queues with thresholds 3,250 and 7,200 GPU-s, as in Tiresias' simulator
(``jobs.py``; the paper leaves K and the thresholds to the operator and finds K = 2 enough in its
sensitivity analysis), and ``promote_knob = 8``, one of the knob values that simulator is run with
(its plain ``dlas-gpu`` has no promotion: ``promote_knob=inf``). The placer is the cluster's
consolidating one: the paper consolidates jobs whose model is skewed (§3.3) and this simulator
has no profiler to tell which are not; Tiresias' simulator counts free GPUs only (no placement).

Demotions and promotions happen between events, so each running job sets a timer for the
instant it will cross its next threshold (counted from the end of its stall), and each paused
job one for the instant it starves; both tell the scheduler through
:meth:`~schedlab.policies.common.preemptive.PreemptiveScheduler.rekey`, as its priority contract
asks (keys change only at a start, a pause, a demotion or a promotion). Deviation: Tiresias' scheduler runs on a fixed interval
(its simulator at every arrival, completion and queue change); here it runs at every event,
every threshold crossing and every starvation limit, which is the same decisions without the
interval's rounding. Duration is never used: Tiresias is information-agnostic.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass

from schedlab.errors import ConfigError
from schedlab.policies.common.placers import Placer
from schedlab.policies.common.preemptive import PreemptiveScheduler
from schedlab.policies.params import help_field
from schedlab.sim.job import RUNNING, Job
from schedlab.sim.policy import Context

_DEMOTE, _PROMOTE = 0, 1  # timer kinds; a timer's payload is (job index, kind, token)


@dataclass(slots=True)
class _LasState:
    """Tiresias' bookkeeping of one active job."""

    level: int = 0
    seq: int = 0  # its place in its queue, among the running or among the waiting jobs
    ahead: bool = False  # running since before this round: ahead of the queue's waiting jobs
    executed_offset: float = 0.0  # executed seconds at the last promotion (t_J counts from there)
    waited_s: float = 0.0  # delta_J up to the last start: waiting since the last promotion
    paused_at: float = math.nan  # start of the current wait, NaN when it does not count
    token: int = 0  # the job's live timer; older ones are stale


@dataclass(frozen=True)
class TiresiasParams:
    """Tiresias' queue thresholds and starvation knob."""

    thresholds_gpu_s: tuple[float, ...] = help_field(
        (3250.0, 7200.0), "attained GPU-seconds at which a job leaves each queue for the next (increasing)")
    promote_knob: float = help_field(
        8.0, "PROMOTEKNOB: a waiting job returns to Q0 once its waiting time reaches this many times its "
             "executed time (both since its last promotion); inf disables")  # fmt: skip


@dataclass(frozen=True)
class TiresiasTwoQueueParams(TiresiasParams):
    """Tiresias as Hadar §IV-B configures its baseline: "two priority queues and its PromoteKnob
    disabled". The text gives no threshold between the two queues; one GPU-hour is ours."""

    thresholds_gpu_s: tuple[float, ...] = help_field(
        (3600.0,), "attained GPU-seconds at which a job leaves Q0 for Q1 (one threshold: two queues)")
    promote_knob: float = help_field(math.inf, "PROMOTEKNOB (inf: disabled, as Hadar §IV-B)")  # fmt: skip


class Tiresias(PreemptiveScheduler):
    """Discretised 2D-LAS with FIFO queues and starvation promotion."""

    static_keys = True  # keys change at a start, pause, demotion or promotion, each re-keyed

    def __init__(
        self,
        placer: Placer,
        *,
        thresholds_gpu_s: tuple[float, ...] = TiresiasParams.thresholds_gpu_s,
        promote_knob: float = TiresiasParams.promote_knob,
    ) -> None:
        if list(thresholds_gpu_s) != sorted(thresholds_gpu_s) or any(t <= 0 for t in thresholds_gpu_s):
            raise ConfigError("Tiresias thresholds must be positive and increasing")
        if not promote_knob > 0:
            raise ConfigError(f"Tiresias promote_knob must be positive (inf disables promotion), got {promote_knob}")
        super().__init__("tiresias", self.queue_key, placer)
        self.thresholds = tuple(thresholds_gpu_s)
        self.promote_knob = promote_knob
        self._las: dict[int, _LasState] = {}  # each active job's state, by arrival index
        self._entries = itertools.count(1)
        self._demoted_running: list[Job] = []  # demoted in this round's events while running

    def queue_key(self, ctx: Context, job: Job) -> tuple[int, int, int]:
        """(queue, 0 for a job ahead of the queue's waiting jobs else 1, place among those)."""
        st = self._las[job.idx]
        return (st.level, 0 if st.ahead else 1, st.seq)

    def on_arrival(self, ctx: Context, job: Job) -> None:
        self._las[job.idx] = _LasState(seq=next(self._entries))
        super().on_arrival(ctx, job)

    def on_finish(self, ctx: Context, job: Job) -> None:
        super().on_finish(ctx, job)
        del self._las[job.idx]

    def schedule(self, ctx: Context) -> None:
        super().schedule(ctx)
        self.settle_demoted(ctx)

    def settle_demoted(self, ctx: Context) -> None:
        """After a round: the jobs demoted while running that it kept running are now ahead of
        their new queue's waiting jobs."""
        for job in self._demoted_running:
            if job.state == RUNNING and not (st := self._las[job.idx]).ahead:
                st.ahead = True
                st.seq = next(self._entries)  # behind the running jobs of its queue
                self.rekey(ctx, job)
        self._demoted_running.clear()

    def started(self, ctx: Context, job: Job) -> None:
        st = self._las[job.idx]
        if st.paused_at == st.paused_at:  # not NaN: this wait counts towards delta_J
            st.waited_s += ctx.now - st.paused_at
        st.paused_at = math.nan
        st.ahead = True
        st.seq = next(self._entries)  # behind the running jobs of its queue
        self._arm(ctx, job)

    def paused(self, ctx: Context, job: Job) -> None:
        st = self._las[job.idx]
        level = self._level(ctx, job)
        if level != st.level:
            self._enter(st, level)  # at the back of its new queue
        elif st.ahead:
            st.seq = -next(self._entries)  # ahead of its queue's waiting jobs, latest pause first
        st.ahead = False
        st.token += 1
        executed = ctx.executed(job) - st.executed_offset
        if executed <= 0:
            return  # not run since its promotion: this wait does not count
        st.paused_at = ctx.now
        if st.level > 0 and math.isfinite(self.promote_knob):  # Q0 needs no promotion
            starves_at = ctx.now + max(self.promote_knob * executed - st.waited_s, 0.0)
            ctx.set_timer(starves_at, (job.idx, _PROMOTE, st.token))

    def _enter(self, st: _LasState, level: int) -> None:
        """Move to queue ``level`` (if it is another), at its back."""
        if level != st.level:
            st.level = level
            st.seq = next(self._entries)

    def _level(self, ctx: Context, job: Job, slack: float = 0.0) -> int:
        """The job's queue by its attained service since its last promotion (never one it has left)."""
        st = self._las[job.idx]
        served = job.num_gpus * (ctx.executed(job) - st.executed_offset)
        return max(st.level, bisect.bisect_right(self.thresholds, served + slack))

    def _arm(self, ctx: Context, job: Job) -> None:
        """Timer for the instant the running job crosses its next threshold (and leaves its queue)."""
        st = self._las[job.idx]
        st.token += 1
        if st.level < len(self.thresholds):
            left = self.thresholds[st.level] / job.num_gpus - (ctx.executed(job) - st.executed_offset)
            ctx.set_timer(max(ctx.now, job.stall_until) + max(left, 0.0), (job.idx, _DEMOTE, st.token))

    def on_timer(self, ctx: Context, payload: object) -> bool:
        if not isinstance(payload, tuple):
            return bool(super().on_timer(ctx, payload))
        idx, kind, token = payload
        st = self._las.get(idx)
        if st is None or st.token != token:
            return False
        job = self.active[idx]
        if kind == _PROMOTE:
            return self._promote(ctx, job)
        level = self._level(ctx, job, slack=1e-6)
        if level != st.level:
            self._enter(st, level)
            st.ahead = False  # at the back of its new queue, behind the jobs waiting there
            self._demoted_running.append(job)
            self.rekey(ctx, job)  # a running job's key rose
        self._arm(ctx, job)
        return True

    def _promote(self, ctx: Context, job: Job) -> bool:
        """Starvation avoidance: back to Q0, t_J and delta_J reset."""
        st = self._las[job.idx]
        if job.state == RUNNING or st.level == 0:
            return False
        self._enter(st, 0)
        st.executed_offset = ctx.executed(job)
        st.waited_s = 0.0
        st.paused_at = math.nan
        st.token += 1
        self.rekey(ctx, job)  # a waiting job's key changed: back into its queue at the new key
        return True
