"""Rank a live queue with any registered policy, through the same interface the simulator
uses: the pending jobs arrive together on an empty copy of the cluster, the policy runs in
the engine, and the order in which it starts them is the ranking.

A policy's own order decides (QSSF's predicted GPU time, SJF's duration - here the users'
time limits -, a fair-share policy's tenant and job order); jobs that do not fit together start
as the policy frees room, in the order it would use. Running jobs are left out: the ranking
orders the queue, and Slurm keeps placing jobs itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from schedlab.cluster.spec import ClusterSpec
from schedlab.sim.job import Job
from schedlab.sim.policy import Context, Policy, WrappedPolicy
from schedlab.workload.schema import SUBMITTED_COLUMNS, Workload

TOP_FACTOR = 1_000_000_000  # the first job's SiteFactor when numbering from the top; Slurm takes +/-2147483645
FACTOR_STEP = 1000  # between neighbours when numbering from the top: room for a million pending jobs


class _RecordingContext:
    """The engine's context, recording the order of the policy's starts."""

    def __init__(self, ctx: Context, order: list[str]) -> None:
        self._ctx = ctx
        self._order = order

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def start(self, job: Job, alloc: Any) -> None:
        self._ctx.start(job, alloc)
        self._order.append(job.id)


class StartOrder(WrappedPolicy):
    """``inner`` as it is, with the ids of the jobs it starts in ``order``."""

    def __init__(self, inner: Policy) -> None:
        super().__init__(inner)
        self.order: list[str] = []

    def _ctx(self, ctx: Context) -> Context:
        return _RecordingContext(ctx, self.order)

    def setup(self, ctx: Context) -> None:
        self.inner.setup(self._ctx(ctx))

    def on_arrival(self, ctx: Context, job: Job) -> None:
        self.inner.on_arrival(self._ctx(ctx), job)

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.inner.on_finish(self._ctx(ctx), job)

    def on_timer(self, ctx: Context, payload: object) -> bool | None:
        return self.inner.on_timer(self._ctx(ctx), payload)

    def schedule(self, ctx: Context) -> None:
        self.inner.schedule(self._ctx(ctx))


def rank(policy: str, pending: Workload, cluster: ClusterSpec, *, params: Any = None,
         history: Workload | None = None, seed: int = 0) -> list[str]:  # fmt: skip
    """Job ids of ``pending`` best first, as ``policy`` would start them on an empty
    ``cluster``; jobs it would never start follow in queue order. ``params``: the policy's
    parameters as :meth:`~schedlab.policies.registry.PolicyInfo.parse` returns them."""
    from schedlab.policies.registry import PolicyOptions, make_policy
    from schedlab.sim.engine import Simulation

    if len(pending) == 0:
        return []
    options = PolicyOptions(history=history, seed=seed, submissions=pending.jobs.loc[:, list(SUBMITTED_COLUMNS)])
    inner = make_policy(policy, rng=np.random.default_rng(seed), params=params, options=options)
    recorder = StartOrder(inner)
    Simulation(pending, cluster, recorder, seed=seed).run()
    started = set(recorder.order)
    return recorder.order + [j for j in pending.jobs["job_id"] if j not in started]


def site_factors(order: list[str], known: Mapping[str, int] | None = None) -> dict[str, int]:
    """The SiteFactor of each ranked job, highest first, keeping the factors already written
    (``known``) wherever they still fall in the new order, so that a cycle writes only the jobs
    whose place among the others changed: a job that leaves the queue or one appended to it
    moves nobody. A job between two kept factors gets their midpoint; when the kept factors
    are out of order or leave no room, the whole queue is numbered again from the top."""
    known = known or {}
    kept = [known.get(job) for job in order]
    held = [f for f in kept if f is not None]
    if any(a <= b for a, b in zip(held, held[1:])):
        kept = [None] * len(order)  # the order changed among the jobs already written: renumber
    out: dict[str, int] = {}
    upper = TOP_FACTOR + FACTOR_STEP  # above the first job
    i = 0
    while i < len(order):
        factor = kept[i]
        if factor is not None:
            out[order[i]] = upper = factor
            i += 1
            continue
        j = i
        while j < len(order) and kept[j] is None:
            j += 1
        below = kept[j] if j < len(order) else None
        lower = below if below is not None else upper - (j - i + 1) * FACTOR_STEP
        gap = (upper - lower) // (j - i + 1)
        if gap < 1:
            return {job: TOP_FACTOR - k * FACTOR_STEP for k, job in enumerate(order)}
        for k in range(i, j):
            out[order[k]] = upper - (k - i + 1) * gap
        upper = out[order[j - 1]]
        i = j
    return out


def history_on_axis(history: Workload, now_epoch: float) -> Workload:
    """A finished-jobs workload (e.g. from ``sacct``) on the ranking's time axis, where the
    queue arrives at 0: its submissions move into the past."""
    if history.origin is None:
        return history
    shift = (history.origin - pd.Timestamp(now_epoch, unit="s")).total_seconds()
    jobs = history.jobs.copy()
    jobs["submit_s"] = jobs["submit_s"].to_numpy() + shift
    done = (jobs["submit_s"].to_numpy() + jobs["duration_s"].to_numpy()) <= 0
    return history.with_jobs(jobs.loc[done])
