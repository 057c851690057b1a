"""The GFS scheduler (Duan et al., ASPLOS '26, arXiv 2509.11134): SQA quotas (§3.3) over PTS
placement and preemption (§3.4, Algorithm 3).

Queue (§3.4.2): "PTS sorts tasks in the queue based on their GPU requests, pod requests, and
submission times". The direction is not stated; the order here is most GPUs first, then most
pods, then earliest submission (the authors' public simulator orders by size, largest
first). HP jobs are always offered before spot jobs (strict priority, §4.4). Every job is
offered each round; one that cannot be placed stays pending while later ones may start.
Jobs of one shape are interchangeable for placement, so when the first of a shape fails the
rest of that shape are passed over for the round.

Algorithm 3 per job: a spot job must fit its model's quota (Quota_satisfy, eq. 10), then
Algorithm 1 places it; an HP job Algorithm 1 cannot place runs Algorithm 2, whose victims are
evicted (work since their last checkpoint is lost, the engine charges the restart) and go
back to the spot queue. HP jobs are never evicted.

``evict`` (a deviation the paper does not study, issue 14): ``kill`` (the default, the paper's
eviction) or ``pause``, under which a victim is paused instead (``ctx.pause``: checkpointed by
the run's cost model, it resumes later from where it stopped; under the ``kill`` cost model a
pause is a kill). A paused victim goes back to the spot queue like a killed one and is
rescheduled by the same quota (eq. 10) and placement. It counts as an eviction everywhere:
in ``e`` of eq. 11, in the node eviction counts of eq. 15 and as an SLO violation inside the
guarantee. §3.3 defines the guarantee as a spot task running ``H`` without being *preempted*,
and a pause preempts it as much as a kill does (it loses its GPUs and waits again); only the
lost work differs.

SLO: a spot run evicted less than ``H`` after it started breaks its guarantee (recorded per
job). Every ``update_s`` a timer feeds the forecaster the HP demand per (model, organisation
= tenant), recomputes each model's quota and ages the node eviction counts; every ``H`` (or
every ``eta_every_s``, see :mod:`.sqa`) it also applies eq. 11 to each model's ``eta``, with
``l`` read as ``wait_reading`` says.
"""

from __future__ import annotations

import math
import time
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from schedlab.cluster.state import Group, Held
from schedlab.errors import ConfigError
from schedlab.policies.common.queues import ClassQueues, Key, job_shape
from schedlab.policies.gfs import pts
from schedlab.policies.gfs.nodes import NodeBook
from schedlab.policies.gfs.sqa import (DemandForecaster, SpotLedger, SpotQuota, SpotRuns, SqaConfig, inventory, spot_waits,
                                       supply)  # fmt: skip
from schedlab.policies.params import help_field
from schedlab.sim.job import Job
from schedlab.sim.policy import Context, Policy

SPOT = "spot"
EVICT_MODES = ("kill", "pause")
_TICK = "gfs-tick"


@dataclass(frozen=True)
class PtsConfig:
    """PTS parameters; defaults from Table 4 and §3.4.2. Table 4's ``alpha`` weighs the two
    objectives of the MILP of eq. 12, which the heuristic does not solve, so it has no field."""

    gamma: float = help_field(0.8, "gamma of eq. 15: weight of the short-window eviction count (Table 4)")
    penalty_base: float = help_field(3.0, "m of eq. 16: Score3 penalty base (Table 4)")
    beta: float = help_field(0.5, "beta of eq. 19: weight of the usage impact (Table 4)")
    short_h: float = help_field(1.0, "short eviction window of eq. 15, hours (§3.4.2)")
    long_h: float = help_field(24.0, "long eviction window of eq. 15 (T_long), hours (§3.4.2)")
    scored: bool = help_field(True, "Algorithm 1 ranks by Score1-3; off = best fit only (GFS-s)")
    cost_aware: bool = help_field(True, "Algorithm 2 by eq. 17-19; off = random node and cards (GFS-p)")
    evict: str = help_field("kill", "how a spot victim is stopped: kill (the paper) or pause (checkpointed by the cost model)")
    queue: str = help_field("pod", "queue order (§3.4.2 gives the keys, not their direction): 'pod' = most GPUs per pod, "
                            "fewest pods, earliest (the public simulator); 'total' = most GPUs in all, most pods, "
                            "earliest; 'fcfs' = earliest (as the baselines)")  # fmt: skip

    def __post_init__(self) -> None:
        if self.queue not in QUEUE_ORDERS:
            raise ConfigError(f"gfs: queue must be one of {', '.join(QUEUE_ORDERS)} (got {self.queue!r})")
        if self.evict not in EVICT_MODES:
            raise ConfigError(f"gfs: evict must be one of {', '.join(EVICT_MODES)} (got {self.evict!r})")
        if self.penalty_base <= 1 or not 0 <= self.gamma <= 1 or self.beta < 0:
            raise ConfigError("gfs: need penalty_base > 1, 0 <= gamma <= 1 and beta >= 0")
        if not 0 < self.short_h <= self.long_h:
            raise ConfigError("gfs: need 0 < short_h <= long_h")


def _pods(job: Job) -> float:
    gpw = job.gpus_per_worker
    return job.num_gpus / gpw if gpw == gpw and gpw >= 1 else 1.0


def by_pod(job: Job) -> tuple[float, float, float]:
    """PTS's queue key as the public simulator sorts: most GPUs per pod, fewest pods, earliest."""
    return (-(job.num_gpus / _pods(job)), _pods(job), job.submit)


def by_total(job: Job) -> tuple[float, float, float]:
    """Most GPUs in all, most pods, earliest."""
    return (-job.num_gpus, -_pods(job), job.submit)


def by_submit(job: Job) -> tuple[float, float, float]:
    return (job.submit, 0.0, 0.0)


QUEUE_ORDERS: dict[str, Callable[[Job], tuple[float, float, float]]] = {"pod": by_pod, "total": by_total, "fcfs": by_submit}


class GFS(Policy):
    """GFS over an injected HP demand ``forecaster`` (see :class:`.sqa.DemandForecaster`)."""

    book: NodeBook  # made by setup

    def __init__(
        self, name: str, forecaster: DemandForecaster, *, sqa: SqaConfig | None = None,
        pts_config: PtsConfig | None = None, seed: int = 0,
    ) -> None:  # fmt: skip
        self.name = name
        self.forecaster = forecaster
        self.sqa = sqa or SqaConfig()
        self.pts = pts_config or PtsConfig()
        self.rng = np.random.default_rng(seed)  # GFS-p's random choices
        self.quota = SpotQuota(self.sqa)
        self.guarantee_s = self.sqa.guarantee_h * 3600.0
        self.ledger = SpotLedger(self.guarantee_s)
        self.queue_order = QUEUE_ORDERS[self.pts.queue]
        self.pending = ClassQueues(self.queue_order)
        self.blocked: set[Key] = set()  # HP shapes no preemption could place, until a finish
        self.spot_held: dict[str, float] = {}
        self.spot_running: dict[int, tuple[float, str, float]] = {}  # idx -> (start, model, GPUs)
        self.model_of: dict[int, str] = {}  # running jobs' GPU model
        self.alloc_of: dict[int, Held] = {}  # running jobs' allocation
        self.spot_starts: list[tuple[float, str, float]] = []  # (start, model, wait) of spot runs, last H only
        self.violations: dict[int, int] = {}
        self.decision_s = array("d")
        self.eta_trace: list[tuple[float, str, float]] = []
        self.wait_trace: list[tuple[float, str, float]] = []  # (time, model, l fed to eq. 11)
        self.bound_trace: list[tuple[float, str, float, float]] = []  # (time, model, eq. 9 demand bound, HP GPUs in use)
        self.next_eta_s = 0.0
        self.first_arrival = math.inf  # when the first job arrived

    # ----- callbacks -----------------------------------------------------------------------
    def setup(self, ctx: Context) -> None:
        p = self.pts
        self.book = NodeBook(ctx.state, gamma=p.gamma, penalty_base=p.penalty_base, eviction_aware=p.scored,
                             short_h=p.short_h, long_h=p.long_h)  # fmt: skip
        self.next_eta_s = ctx.now + self.sqa.eta_interval_s
        self._update_quota(ctx)
        ctx.set_timer(ctx.now + self.sqa.update_s, (_TICK,))

    def on_arrival(self, ctx: Context, job: Job) -> None:
        self.first_arrival = min(self.first_arrival, ctx.now)
        self._enqueue(job)

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.blocked.clear()
        model = self.model_of.pop(job.idx)
        alloc = self.alloc_of.pop(job.idx)
        if job.cls == SPOT:
            self.ledger.runs_of(model).end(ctx.now, evicted=False)
            self.spot_running.pop(job.idx)
            self.spot_held[model] -= job.num_gpus
            self.book.remove_spot(job, alloc)
        else:
            self.ledger.add_demand((model, job.tenant), -job.num_gpus)
        for node, _gids in alloc:
            self.book.touch(node)

    def on_timer(self, ctx: Context, payload: object) -> bool:
        self._update_quota(ctx)
        if ctx.arrivals_left or ctx.active:
            ctx.set_timer(ctx.now + self.sqa.update_s, (_TICK,))
        return True

    def schedule(self, ctx: Context) -> None:
        self._drain(ctx, spot=False)
        self._drain(ctx, spot=True)

    # ----- SQA -----------------------------------------------------------------------------
    def _update_quota(self, ctx: Context) -> None:
        now = ctx.now
        state = ctx.state
        self.forecaster.observe(now, self.ledger.unseen_changes())
        self.book.decay(now)
        capacity = dict(zip(state.type_names, map(float, state.type_gpus_on)))
        if now >= self.next_eta_s - 1e-6:
            self._feedback(ctx, capacity)
            self.next_eta_s = now + self.sqa.eta_interval_s
        bounds = self.forecaster.model_bounds(self.sqa.guarantee_rate, self.sqa.guarantee_h)
        in_use = dict.fromkeys(capacity, 0.0)
        for (model, _org), level in self.ledger.hp_demand.items():
            in_use[model] = in_use.get(model, 0.0) + level
        self.bound_trace.extend((now, m, bounds.get(m, 0.0), in_use[m]) for m in capacity)
        idle, guaranteed = supply(state.groups, capacity, self.spot_running.values(), now,
                                  sa_rule=self.sqa.sa_rule, guarantee_s=self.guarantee_s)  # S0, Sa of eq. 10
        self.quota.allocate(inventory(capacity, bounds), idle, guaranteed)

    def _feedback(self, ctx: Context, capacity: dict[str, float]) -> None:
        """Eq. 11 per model from ``e`` over the last ``H`` hours and ``l`` (:meth:`spot_wait`)."""
        now = ctx.now
        start = now - self.guarantee_s
        self.spot_starts = [s for s in self.spot_starts if s[0] >= start]
        longest = self.spot_wait(now, capacity)
        self.wait_trace.extend((now, model, wait) for model, wait in longest.items())
        self.eta_trace.extend(self.ledger.feedback(self.quota, now, longest, self.spot_running.values()))

    def spot_wait(self, now: float, capacity: dict[str, float]) -> dict[str, float]:
        """``l`` of eq. 11 per model. ``wait_reading="longest"``: the longest wait of the spot
        runs started in the last ``H`` and of the spot jobs queued now; ``"head"``: the wait so
        far of the first spot job in queue order (``queue``) that may run on the
        model, 0 when none is queued."""
        pending = [job for job in self.pending.waiting.values() if job.cls == SPOT]
        return spot_waits(now, capacity, self.spot_starts, pending, reading=self.sqa.wait_reading, order=self.queue_order)

    @property
    def runs(self) -> dict[str, SpotRuns]:
        """Spot runs per GPU model."""
        return self.ledger.runs

    # ----- PTS (Algorithm 3) ---------------------------------------------------------------
    def _enqueue(self, job: Job) -> None:
        self.pending.add(job, job_shape(job), spot=job.cls == SPOT)

    def _drain(self, ctx: Context, *, spot: bool) -> None:
        self.pending.drain(lambda job, key: self._timed_decide(ctx, job, key, spot), spot=spot)

    def _timed_decide(self, ctx: Context, job: Job, key: Key, spot: bool) -> bool:
        t0 = time.perf_counter()
        started = self._decide(ctx, job, key, spot)
        self.decision_s.append(time.perf_counter() - t0)
        return started

    def _decide(self, ctx: Context, job: Job, key: Key, spot: bool) -> bool:
        groups = ctx.groups_of(job)
        if spot and not self.quota.admits(job.gpu_type, self._held(job.gpu_type), job.num_gpus):
            return False
        alloc = pts.place(self.book, groups, job, spot=spot, scored=self.pts.scored)
        if alloc is None and not spot and key not in self.blocked:
            alloc = self._preempt_for(ctx, job, groups)
            if alloc is None:
                self.blocked.add(key)
        if alloc is None:
            return False
        self._start(ctx, job, alloc)
        return True

    def _span_s(self, ctx: Context) -> float:
        """``T`` of eq. 19: the arrivals' span so far (at least one guarantee period)."""
        return max(self.guarantee_s, ctx.now - self.first_arrival)

    def _held(self, model: str) -> float:
        return sum(self.spot_held.values()) if model == "" else self.spot_held.get(model, 0.0)

    def _preempt_for(self, ctx: Context, job: Job, groups: tuple[Group, ...]) -> list[tuple[int, int]] | None:
        plan = pts.plan_preemption(
            ctx, self.book, groups, job, cost_aware=self.pts.cost_aware,
            finished=sum(r.finished for r in self.runs.values()), evicted=sum(r.evicted for r in self.runs.values()),
            span_s=self._span_s(ctx), beta=self.pts.beta, rng=self.rng,
        )  # fmt: skip
        if plan is None:
            return None
        alloc, victims = plan
        for victim in victims:
            self._evict(ctx, victim)
        return alloc

    def _start(self, ctx: Context, job: Job, alloc: list[tuple[int, int]]) -> None:
        ctx.start(job, alloc)
        self.alloc_of[job.idx] = job.alloc
        model = job.gpu_type or ctx.state.node_type[alloc[0][0]]
        self.model_of[job.idx] = model
        if job.cls == SPOT:
            self.spot_held[model] = self.spot_held.get(model, 0.0) + job.num_gpus
            self.spot_running[job.idx] = (ctx.now, model, job.num_gpus)
            self.book.add_spot(job)
            self.spot_starts.append((ctx.now, model, ctx.now - job.queued_since))
        else:
            self.ledger.add_demand((model, job.tenant), job.num_gpus)
        for node, _count in alloc:
            self.book.touch(node)

    def _evict(self, ctx: Context, victim: Job) -> None:
        inside = ctx.now - victim.run_since < self.guarantee_s
        alloc = victim.alloc
        if self.pts.evict == "pause":
            ctx.pause(victim)
        else:
            ctx.preempt(victim)
        model = self.model_of.pop(victim.idx)
        del self.alloc_of[victim.idx]
        self.spot_running.pop(victim.idx)
        self.spot_held[model] -= victim.num_gpus
        self.book.remove_spot(victim, alloc)
        self.book.record_eviction(ctx.now, tuple(node for node, _ in alloc))
        self.ledger.runs_of(model).end(ctx.now, evicted=True)
        if inside:
            self.violations[victim.idx] = self.violations.get(victim.idx, 0) + 1
        self._enqueue(victim)

    # ----- report ----------------------------------------------------------------------------
    def bound_calibration(self) -> dict[str, float | None]:
        """How the eq. 9 demand bound compared with the HP GPUs then in use over the next
        ``H`` (sampled at each quota update): the share of updates whose bound covered that
        peak (the target is ``p``) and the mean bound over the mean peak."""
        frame = pd.DataFrame(self.bound_trace, columns=["t", "model", "bound", "level"])
        covered, bounds, peaks = [], [], []
        steps = max(1, int(round(self.guarantee_s / self.sqa.update_s)))
        for _, g in frame.groupby("model"):
            level = g["level"].to_numpy()
            ahead = pd.Series(level[::-1]).rolling(steps + 1, min_periods=1).max().to_numpy()[::-1]
            bound = g["bound"].to_numpy()
            keep = ahead > 0
            covered.append(bound[keep] >= ahead[keep])
            bounds.append(bound[keep])
            peaks.append(ahead[keep])
        if not covered or not np.concatenate(covered).size:
            return {"bound_coverage": None, "bound_over_peak": None}
        ratio = np.concatenate(bounds).mean() / np.concatenate(peaks).mean()
        return {"bound_coverage": float(np.concatenate(covered).mean()), "bound_over_peak": float(ratio)}

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        """``{"gfs": ...}``: SLO violations of spot jobs (evictions inside the guarantee),
        evictions, the final and extreme ``eta``, the demand bound's calibration
        (:meth:`bound_calibration`), the decision time per task and the forecaster's
        ``stats`` if it has any (OrgLinear: trainings and their time)."""
        spot = np.asarray(jobs["priority_class"]) == SPOT
        started = int(np.isfinite(np.asarray(jobs["first_start_s"], dtype=float))[spot].sum())
        decisions = np.frombuffer(self.decision_s, dtype=np.float64) * 1000.0
        etas = [eta for _, _, eta in self.eta_trace]
        return {"gfs": {
            "variant": self.name,
            "forecaster": self.forecaster.name,
            **getattr(self.forecaster, "stats", {}),
            "guarantee_h": self.sqa.guarantee_h,
            "evict": self.pts.evict,
            "evictions": sum(r.evicted for r in self.runs.values()),
            "slo_violations": sum(self.violations.values()),
            "slo_violated_jobs": len(self.violations),
            "slo_violated_share": len(self.violations) / started if started else None,
            "eta_final": {m: round(self.quota.eta_of(m), 4) for m in sorted(self.quota.eta)},
            "eta_min": min(etas, default=None),
            "eta_max": max(etas, default=None),
            **self.bound_calibration(),
            "decisions": len(decisions),
            "decision_ms_mean": float(decisions.mean()) if decisions.size else None,
            "decision_ms_p99": float(np.percentile(decisions, 99)) if decisions.size else None,
        }}  # fmt: skip
