"""Tiresias (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning",
NSDI'19), the discretised two-dimensional least-attained-service scheduler (§3.2, §4.2).

* A job's attained service is its GPU-seconds so far (GPUs x executed time: the "2D" of 2D-LAS),
  counted only while it can progress: the stall of a restart (restore) is not service.
* Queues Q0..QK-1 split by ``thresholds_gpu_s``; a job is demoted when its attained service
  crosses its queue's threshold. Lower queues run first; inside a queue, FIFO by arrival.
* Starvation avoidance: a pending job that has waited at least ``promote_knob`` times its last
  executed run is promoted back to Q0 (the paper's PROMOTEKNOB / STARVELIMIT).
* Preemptive: a higher-priority pending job pauses lower-priority running ones
  (checkpointed, so no work is lost; the engine charges the restart cost), but not a restarted
  job before it has progressed as long as its stall (:func:`schedlab.policies.common.queues.guard_ends`). With both
  rules a job whose queue threshold is shorter than the stall (128 GPUs cross 3,600 GPU-s in
  28 s; a pause costs 40 s) still progresses at every run instead of being demoted, paused and
  promoted again without end.

Demotions and promotions happen between events, so each running job sets a timer for the
instant it will cross its next threshold (counted from the end of its stall), and each paused
job one for the instant it starves (after ``promote_knob`` x its last run, stall included).
Deviation: the paper's scheduler runs on a fixed interval; here it runs at every event, every
threshold crossing and every starvation limit, which is the same decisions without the
interval's rounding. Duration is never used: Tiresias is information-agnostic.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from schedlab.errors import ConfigError
from schedlab.policies.common.queues import GUARD_ENDS, PreemptiveScheduler
from schedlab.policies.common.placers import Placer
from schedlab.policies.params import help_field
from schedlab.sim.job import RUNNING, Job
from schedlab.sim.policy import Context

_PROMOTE = -1  # timer id of a starvation check; demotion timers count up from 1


@dataclass(slots=True)
class _LasState:
    level: int = 0
    service_offset: float = 0.0  # attained service at the last promotion
    last_run_s: float = 0.0
    run_started_at: float = 0.0
    timer: int = 0  # id of the job's live demotion timer


@dataclass(frozen=True)
class TiresiasParams:
    """Tiresias' queue thresholds and starvation knob."""

    thresholds_gpu_s: tuple[float, ...] = help_field(
        (3600.0, 36000.0), "attained GPU-seconds at which a job leaves each queue for the next (increasing)")
    promote_knob: float = help_field(8.0, "a paused job waiting this many times its last run returns to Q0")


class Tiresias(PreemptiveScheduler):
    """Discretised 2D-LAS with starvation promotion."""

    def __init__(
        self,
        placer: Placer,
        *,
        thresholds_gpu_s: tuple[float, ...] = (3600.0, 36000.0),
        promote_knob: float = 8.0,
    ) -> None:
        if list(thresholds_gpu_s) != sorted(thresholds_gpu_s) or any(t <= 0 for t in thresholds_gpu_s):
            raise ConfigError("Tiresias thresholds must be positive and increasing")
        super().__init__("tiresias", self._rank, placer)
        self.thresholds = tuple(thresholds_gpu_s)
        self.promote_knob = promote_knob

    def on_arrival(self, ctx: Context, job: Job) -> None:
        job.data = _LasState()
        super().on_arrival(ctx, job)

    @staticmethod
    def _rank(ctx: Context, job: Job) -> tuple[int, float]:
        return (job.data.level, job.submit)

    def started(self, ctx: Context, job: Job) -> None:
        job.data.run_started_at = ctx.now
        self._arm(ctx, job)

    def paused(self, ctx: Context, job: Job) -> None:
        st: _LasState = job.data
        st.level = max(st.level, self._level(ctx, job))
        st.last_run_s = ctx.now - st.run_started_at
        if st.level > 0 and st.last_run_s > 0:
            ctx.set_timer(ctx.now + self.promote_knob * st.last_run_s, (job.idx, _PROMOTE))

    def _promote(self, ctx: Context, job: Job | None) -> bool:
        """Starvation avoidance: back to Q0 once pending for promote_knob x its last run."""
        if job is None or job.state == RUNNING:
            return False
        st: _LasState = job.data
        if st.level == 0 or st.last_run_s <= 0 or ctx.now < job.queued_since + self.promote_knob * st.last_run_s:
            return False
        st.level = 0
        st.service_offset = ctx.attained(job)
        self.rekey(ctx, job)
        return True

    def _level(self, ctx: Context, job: Job, slack: float = 0.0) -> int:
        return bisect.bisect_right(self.thresholds, ctx.attained(job) - job.data.service_offset + slack)

    def _arm(self, ctx: Context, job: Job) -> None:
        """Timer for the instant the job crosses its next threshold (and leaves its queue)."""
        st: _LasState = job.data
        st.timer += 1
        if st.level < len(self.thresholds):
            left = self.thresholds[st.level] - (ctx.attained(job) - st.service_offset)
            ctx.set_timer(max(ctx.now, job.stall_until) + max(left, 0.0) / job.num_gpus, (job.idx, st.timer))

    def on_timer(self, ctx: Context, payload: object) -> bool:
        if payload == GUARD_ENDS:
            return super().on_timer(ctx, payload)
        idx, timer = payload  # type: ignore[misc]
        job = self.active.get(idx)
        if timer == _PROMOTE:
            return self._promote(ctx, job)
        if job is None or job.state != RUNNING or job.data.timer != timer:
            return False
        job.data.level = max(job.data.level, self._level(ctx, job, slack=1e-6))
        self.rekey(ctx, job)
        self._arm(ctx, job)
        return True
