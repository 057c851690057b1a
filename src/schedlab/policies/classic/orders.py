"""Classic baselines: FIFO, SJF, SRTF and SRSF (oracle durations, as in the Helios and
Tiresias evaluations).

* FIFO - submit order, non-preemptive; blocks at the head of each queue (as in Helios) unless
  ``backfill``.
* SJF - shortest job (duration) first, non-preemptive, oracle duration; blocks at the head
  like Helios' SJF unless ``backfill``.
* SRTF - shortest remaining time first, preemptive, oracle remaining work.
* SRSF - shortest remaining GPU service first (remaining time x GPUs), preemptive, oracle;
  the "SRSF" baseline of Tiresias (Gu et al., NSDI'19, §6).
"""

from __future__ import annotations

from schedlab.policies.common.preemptive import PreemptiveScheduler
from schedlab.policies.common.queues import QueueScheduler
from schedlab.policies.common.placers import Placer
from schedlab.sim.job import Job
from schedlab.sim.policy import Context


def _submit_order(ctx: Context, job: Job) -> float:
    return job.submit


def _duration(ctx: Context, job: Job) -> float:
    return job.work


def fifo(placer: Placer, *, backfill: bool = False) -> QueueScheduler:
    return QueueScheduler("fifo-backfill" if backfill else "fifo", _submit_order, placer, backfill=backfill)


def sjf(placer: Placer, *, backfill: bool = False) -> QueueScheduler:
    return QueueScheduler("sjf-backfill" if backfill else "sjf", _duration, placer, backfill=backfill)


def _remaining_time(ctx: Context, job: Job) -> tuple[float, float]:
    return (ctx.remaining(job), job.submit)


def _remaining_service(ctx: Context, job: Job) -> tuple[float, float]:
    return (ctx.remaining(job) * job.num_gpus, job.submit)


def srtf(placer: Placer) -> PreemptiveScheduler:
    return PreemptiveScheduler("srtf", _remaining_time, placer)


def srsf(placer: Placer) -> PreemptiveScheduler:
    return PreemptiveScheduler("srsf", _remaining_service, placer)
