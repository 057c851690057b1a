"""Round-based scheduling shared by Gavel and Hadar.

Every ``round_s`` seconds the policy computes the allocation of the next round (``plan``: job
index -> list of ``(node, GPUs)``) and applies the difference: a running job whose allocation
changes, or that gets none, is paused (checkpointed); a job with a new allocation starts on it.
The engine charges the checkpoint-restart stall (``checkpoint_s + restore_s``) when a paused job
starts again, so a job that keeps its allocation pays nothing and every change costs one
checkpoint-restart (Hadar §IV: 10 s, i.e. ``--checkpoint-s 0 --restore-s 10``). GPUs freed by a
job finishing mid-round stay idle until the next round, as in a round-based scheduler.

The wall time of every ``plan`` call is recorded; :meth:`RoundPolicy.report` gives the mean,
maximum and count, and how many rounds changed some running job's allocation.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any

from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.sim.job import RUNNING, Job
from schedlab.sim.policy import Context, Policy
from schedlab.sim.throughputs import ThroughputTable

Alloc = list[tuple[int, int]]


def job_speedups(table: ThroughputTable | None, cluster: ClusterSpec, job: Job) -> dict[str, float]:
    """Work-seconds per second of ``job`` with all its tasks on each GPU type of ``cluster``: the
    measured throughput ratio for a model in ``table`` (as :class:`~schedlab.sim.perf.PerfModel`),
    else the catalogue speed."""
    types = [t for t in cluster.gpu_types if not job.gpu_type or t == job.gpu_type]  # a typed job: its type only
    if table is not None and job.model in table:
        return {t: table.speedup(job.model, job.num_gpus, t) for t in types}
    native = cluster.gpu_types[job.gpu_type].speed if job.gpu_type in cluster.gpu_types else 1.0
    return {t: cluster.gpu_types[t].speed / native for t in types}


def held(job: Job) -> Alloc:
    """A running job's allocation as sorted ``(node, GPUs)``."""
    return sorted((node, len(gids)) for node, gids in job.alloc)


class RoundPolicy(Policy, ABC):
    """Base of the round-based policies: subclasses implement :meth:`plan`."""

    name = "rounds"

    def __init__(self, round_s: float) -> None:
        if not round_s > 0:
            raise ConfigError(f"{self.name}: round_s must be positive, got {round_s!r}")
        self.round_s = round_s
        self.next_round = 0.0
        self.decision_s: list[float] = []
        self.changed_rounds = 0

    def setup(self, ctx: Context) -> None:
        if ctx.cluster.partitioned:
            raise ConfigError(f"{self.name} schedules one shared pool; cluster '{ctx.cluster.name}' is partitioned")

    def on_arrival(self, ctx: Context, job: Job) -> None:
        gpw = job.gpus_per_worker
        if job.fractional or (gpw == gpw and gpw > 1):
            raise ConfigError(
                f"{self.name}: job '{job.id}' asks for {job.num_gpus:g} GPUs in workers of {gpw:g}; "
                "only whole-GPU jobs whose tasks may go to any GPU are supported"
            )

    def on_timer(self, ctx: Context, payload: object) -> bool:
        return payload == "round"

    @abstractmethod
    def plan(self, ctx: Context) -> dict[int, Alloc]:
        """The allocation every job should hold this round (jobs left out are paused or wait; a
        policy whose :meth:`apply` keeps running jobs may leave them out)."""

    def schedule(self, ctx: Context) -> None:
        if ctx.now < self.next_round or not ctx.active:
            return
        t0 = time.perf_counter()
        target = self.plan(ctx)
        self.decision_s.append(time.perf_counter() - t0)
        self.apply(ctx, target)
        if not target and not ctx.running:  # nothing runs: the next arrival starts the next round
            return
        self.next_round = ctx.now + self.round_s
        ctx.set_timer(self.next_round, "round")

    def apply(self, ctx: Context, target: dict[int, Alloc]) -> None:
        """Pause running jobs whose allocation changes, then start every job on its new one."""
        changed = False
        for job in list(ctx.running.values()):
            alloc = target.get(job.idx)
            if alloc is None or sorted(alloc) != held(job):
                ctx.pause(job)
                changed = True
        self.changed_rounds += changed
        for idx, alloc in sorted(target.items()):
            job = ctx.active[idx]
            if job.state != RUNNING:
                ctx.start(job, alloc)

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        d = self.decision_s
        return {
            "rounds": len(d),
            "round_s": self.round_s,
            "decision_s_mean": sum(d) / len(d) if d else 0.0,
            "decision_s_max": max(d, default=0.0),
            "rounds_with_reallocation": self.changed_rounds,
        }


def free_by_node(cluster: ClusterSpec, keep: Iterable[Alloc] = ()) -> list[int]:
    """GPUs per node of the whole cluster, less those in ``keep``."""
    free = [n.num_gpus for n in cluster.nodes]
    for alloc in keep:
        for node, count in alloc:
            free[node] -= count
    return free
