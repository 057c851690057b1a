"""The GFS scheduler (Duan et al., ASPLOS '26, arXiv 2509.11134): SQA quotas (§3.3) over PTS
placement and preemption (§3.4).

Queues: one per class (HP = every class but "spot") and job shape, FIFO by submission; a
round serves HP jobs first, then spot jobs, and a shape that cannot start is passed over
(backfill). A spot job starts only within its model's quota (eq. 10). An HP job that fits
nowhere evicts spot jobs chosen by :func:`.pts.plan_preemption` (work since their last
checkpoint is lost, the engine charges the restore) and starts at once; evicted spot jobs go
back to their queue in submission order. HP jobs are never evicted. The queue order (FIFO
with backfill) is an assumption: the public simulator orders by size, largest first.

Guarantee (SLO): a spot run that is evicted less than ``H`` after it started breaks its
guarantee (an SLO violation, recorded per job). The eviction rate of eq. 11 counts guarantee
periods (:class:`.sqa.GuaranteeLedger`): a spot job completes one every ``H`` it runs and
when it finishes, and each eviction fails the period in progress.

Every ``update_s`` a timer feeds the forecaster the HP demand per (model, organisation =
tenant), recomputes each model's ``eta`` and quota and ages the node eviction counts.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from schedlab.sim.policy import Context, Policy
from schedlab.policies.common.queues import ClassQueues, job_shape
from schedlab.policies.gfs import pts
from schedlab.policies.gfs.nodes import NodeBook
from schedlab.policies.gfs.sqa import DemandForecaster, GuaranteeLedger, Key, SpotQuota, SqaConfig, inventory
from schedlab.sim.job import RUNNING, Job

SPOT = "spot"
_TICK = "gfs-tick"
_GUARANTEE = "gfs-guarantee"


@dataclass(frozen=True)
class PtsConfig:
    """PTS parameters: Score3's ``gamma`` and penalty base ``m`` (0.8 and 2 in the public
    simulator), eq. 19's ``beta``, and the two ablation switches."""

    gamma: float = 0.8
    penalty_base: float = 2.0
    beta: float = 5.0
    eviction_aware: bool = True
    preemption_aware: bool = True


class GFS(Policy):
    """GFS over an injected HP demand ``forecaster`` (see :class:`.sqa.DemandForecaster`)."""

    def __init__(
        self, name: str, forecaster: DemandForecaster, *, sqa: SqaConfig | None = None, pts_config: PtsConfig | None = None
    ) -> None:
        self.name = name
        self.forecaster = forecaster
        self.sqa = sqa or SqaConfig()
        self.pts = pts_config or PtsConfig()
        self.quota = SpotQuota(self.sqa)
        self.guarantee_s = self.sqa.guarantee_h * 3600.0
        self.ledgers: dict[str, GuaranteeLedger] = {}  # per GPU model
        self.pending = ClassQueues()
        self.blocked: set[tuple] = set()  # HP shapes no preemption could place, until a finish
        self.spot_held: dict[str, float] = {}
        self.model_of: dict[int, str] = {}
        self.run_no: dict[int, int] = {}
        self.hp_demand: dict[Key, float] = {}
        self.demand_changes: dict[Key, float] = {}
        self.spot_starts: list[tuple[float, str, float]] = []  # (start, model, wait) of spot runs, last H only
        self.violations: dict[int, int] = {}
        self.evictions = 0
        self.decision_s = array("d")
        self.eta_trace: list[tuple[float, str, float]] = []
        self.book: NodeBook | None = None
        self.first_arrival: float | None = None  # eq. 19 normalises by the arrival span so far

    # ----- callbacks -----------------------------------------------------------------------
    def setup(self, ctx: Context) -> None:
        self.book = NodeBook(ctx.state, gamma=self.pts.gamma, penalty_base=self.pts.penalty_base,
                             eviction_aware=self.pts.eviction_aware)  # fmt: skip
        self._update_quota(ctx)
        ctx.set_timer(ctx.now + self.sqa.update_s, (_TICK,))

    def on_arrival(self, ctx: Context, job: Job) -> None:
        if self.first_arrival is None:
            self.first_arrival = ctx.now
        self._enqueue(job)

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.blocked.clear()
        model = self.model_of.pop(job.idx)
        if job.cls == SPOT:
            self._ledger(model).meet(ctx.now)
            self.spot_held[model] -= job.num_gpus
            self.book.remove_spot(job, job.data)
        else:
            self._add_demand((model, job.tenant), -job.num_gpus)
        for node, _gids in job.data:
            self.book.touch(node)

    def on_timer(self, ctx: Context, payload: object) -> bool:
        if payload[0] == _GUARANTEE:
            _, idx, run = payload
            job = ctx.active.get(idx)
            if job is not None and job.state == RUNNING and self.run_no.get(idx) == run:
                self._ledger(self.model_of[idx]).meet(ctx.now)
                ctx.set_timer(ctx.now + self.guarantee_s, payload)
            return False
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
        self.forecaster.observe(now, self.demand_changes)
        self.demand_changes = {}
        self.book.decay(now)
        capacity = dict(zip(state.type_names, map(float, state.type_gpus_on)))
        start = now - self.guarantee_s
        self.spot_starts = [s for s in self.spot_starts if s[0] >= start]
        longest = dict.fromkeys(capacity, 0.0)  # per model: l of eq. 11
        for _, model, wait in self.spot_starts:
            longest[model] = max(longest[model], wait)
        for job in self.pending.waiting.values():
            if job.cls == SPOT:
                for model in [job.gpu_type] if job.gpu_type else capacity:
                    longest[model] = max(longest[model], now - job.queued_since)
        for model, wait in longest.items():
            eta = self.quota.feedback(model, self._ledger(model).rate(now), wait, now)
            self.eta_trace.append((now, model, eta))
        bounds = self.forecaster.model_bounds(self.sqa.guarantee_rate, self.sqa.guarantee_h)
        free = {g.gpu_type: 0.0 for g in state.groups}
        for g in state.groups:
            free[g.gpu_type] += g.free_total
        self.quota.allocate(inventory(capacity, bounds), self.spot_held, free)

    def _ledger(self, model: str) -> GuaranteeLedger:
        ledger = self.ledgers.get(model)
        if ledger is None:
            ledger = self.ledgers[model] = GuaranteeLedger(self.guarantee_s)
        return ledger

    def _add_demand(self, key: Key, gpus: float) -> None:
        level = self.hp_demand.get(key, 0.0) + gpus
        self.hp_demand[key] = level
        self.demand_changes[key] = level

    # ----- PTS -----------------------------------------------------------------------------
    def _enqueue(self, job: Job) -> None:
        self.pending.add(job, job_shape(job), spot=job.cls == SPOT)

    def _drain(self, ctx: Context, *, spot: bool) -> None:
        self.pending.drain(lambda job, key: self._timed_decide(ctx, job, key, spot), spot=spot)

    def _timed_decide(self, ctx: Context, job: Job, key: tuple, spot: bool) -> bool:
        t0 = time.perf_counter()
        started = self._decide(ctx, job, key, spot)
        self.decision_s.append(time.perf_counter() - t0)
        return started

    def _decide(self, ctx: Context, job: Job, key: tuple, spot: bool) -> bool:
        aware = self.pts.eviction_aware
        groups = ctx.groups_of(job)
        if spot and not self.quota.admits(job.gpu_type, self._held(job.gpu_type), job.num_gpus):
            return False
        alloc = pts.place(self.book, groups, job, spot=spot, aware=aware)
        if alloc is None and not spot and key not in self.blocked:
            alloc = self._preempt_for(ctx, job, groups)
            if alloc is None:
                self.blocked.add(key)
        if alloc is None:
            return False
        self._start(ctx, job, alloc)
        return True

    def _span_s(self, ctx: Context) -> float:
        """Eq. 19's normalisation: the arrivals' span so far (the public simulator uses the
        whole trace's span, which a scheduler cannot know), at least one guarantee period."""
        return max(self.guarantee_s, ctx.now - self.first_arrival)

    def _held(self, model: str) -> float:
        return sum(self.spot_held.values()) if model == "" else self.spot_held.get(model, 0.0)

    def _preempt_for(self, ctx: Context, job: Job, groups) -> list[tuple[int, int]] | None:
        ledgers = [self._ledger(m) for m in {g.gpu_type for g in groups}]
        plan = pts.plan_preemption(
            ctx, self.book, groups, job, aware=self.pts.preemption_aware,
            broken=sum(x.total_broken for x in ledgers), met=sum(x.total_met for x in ledgers),
            span_s=self._span_s(ctx), beta=self.pts.beta,
        )  # fmt: skip
        if plan is None:
            return None
        nodes, victims = plan
        for victim in victims:
            self._evict(ctx, victim)
        if job.fractional or any(job.num_gpus <= g.max_gpus for g in groups):
            return pts.free_alloc(ctx.state, nodes[0], job)
        return pts.place(self.book, groups, job, spot=False, aware=self.pts.eviction_aware)

    def _start(self, ctx: Context, job: Job, alloc: list[tuple[int, int]]) -> None:
        ctx.start(job, alloc)
        job.data = job.alloc
        model = job.gpu_type or ctx.state.node_type[alloc[0][0]]
        self.model_of[job.idx] = model
        if job.cls == SPOT:
            self.spot_held[model] = self.spot_held.get(model, 0.0) + job.num_gpus
            self.book.add_spot(job)
            run = self.run_no[job.idx] = self.run_no.get(job.idx, 0) + 1
            self.spot_starts.append((ctx.now, model, ctx.now - job.queued_since))
            ctx.set_timer(ctx.now + self.guarantee_s, (_GUARANTEE, job.idx, run))
        else:
            self._add_demand((model, job.tenant), job.num_gpus)
        for node, _count in alloc:
            self.book.touch(node)

    def _evict(self, ctx: Context, victim: Job) -> None:
        inside = ctx.now - victim.run_since < self.guarantee_s
        alloc = victim.alloc
        ctx.preempt(victim)
        self.evictions += 1
        model = self.model_of.pop(victim.idx)
        self.spot_held[model] -= victim.num_gpus
        self.book.remove_spot(victim, alloc)
        self.book.record_eviction(ctx.now, tuple(node for node, _ in alloc))
        self._ledger(model).fail(ctx.now)
        if inside:
            self.violations[victim.idx] = self.violations.get(victim.idx, 0) + 1
        self._enqueue(victim)

    # ----- report ----------------------------------------------------------------------------
    def report(self, jobs: pd.DataFrame) -> dict[str, Any]:
        """``{"gfs": ...}``: SLO violations of spot jobs (evictions inside the guarantee),
        evictions, guarantee periods met and failed, the final and extreme ``eta``, the decision time per task and the
        forecaster's ``stats`` if it has any (OrgLinear: trainings and their time)."""
        spot = jobs["priority_class"].to_numpy() == SPOT
        started = int(np.isfinite(jobs["first_start_s"].to_numpy(dtype=float))[spot].sum())
        decisions = np.frombuffer(self.decision_s, dtype=np.float64) * 1000.0
        etas = [eta for _, _, eta in self.eta_trace]
        return {"gfs": {
            "variant": self.name,
            "forecaster": self.forecaster.name,
            **getattr(self.forecaster, "stats", {}),
            "guarantee_h": self.sqa.guarantee_h,
            "evictions": self.evictions,
            "slo_violations": sum(self.violations.values()),
            "slo_violated_jobs": len(self.violations),
            "slo_violated_share": len(self.violations) / started if started else None,
            "guarantee_periods_met": sum(x.total_met for x in self.ledgers.values()),
            "guarantee_periods_failed": sum(x.total_broken for x in self.ledgers.values()),
            "eta_final": {m: round(self.quota.eta_of(m), 4) for m in sorted(self.quota.eta)},
            "eta_min": min(etas, default=None),
            "eta_max": max(etas, default=None),
            "decisions": len(decisions),
            "decision_ms_mean": float(decisions.mean()) if decisions.size else None,
            "decision_ms_p99": float(np.percentile(decisions, 99)) if decisions.size else None,
        }}  # fmt: skip
