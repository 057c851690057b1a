"""The spot quota of GFS (§3.3, eqs. 9-11) as an admission gate for the GFS baselines: the
"authors' simulator" setting of ``yarn-cs-preempt``, ``lyra`` and ``fgd``.

§4.1 of the GFS paper (Duan et al., ASPLOS '26) names the baselines only; in the authors'
public simulator each of them calls the base class's quota update and admits a spot job only
if the spot GPUs in use plus its request stay within the forecast quota. With
``spot_quota="forecast"`` the baselines do the same here, with GFS's own pieces
(:mod:`schedlab.policies.gfs.sqa`): the HP demand forecaster (OrgLinear by default, as
``gfs``; ``weekly-peak`` as ``gfs-e``), eq. 9 (:func:`inventory`), eq. 10
(:class:`SpotQuota`, ``S0`` and ``Sa`` from :func:`supply`) and eq. 11's ``eta`` feedback
from the spot eviction rate (:class:`SpotRuns`) and queueing time (:func:`spot_waits`), all
on :class:`SqaConfig`'s defaults (Table 4: ``H`` = 1 h, ``p`` = 0.9, updated every 300 s,
``eta`` once per ``H``, ``l`` the longest spot wait over ``H``; ``quota_eta_every_s=300`` and
``quota_wait_reading=head`` are the authors' simulator's readings). A baseline that evicts more thus has its ``eta`` cut by eq. 11 and
its quota shrinks, as under GFS. ``spot_quota="none"`` (the default) is the paper text's
reading: no quota, the gate is not built.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from schedlab.errors import ConfigError
from schedlab.policies.gfs.sqa import (DemandForecaster, SpotLedger, SpotQuota, SqaConfig, WeeklyPeak, inventory,
                                       spot_waits, supply)  # fmt: skip
from schedlab.sim.job import Job
from schedlab.sim.policy import Context

SPOT = "spot"
SPOT_QUOTAS = ("none", "forecast")
FORECASTERS = ("orglinear", "weekly-peak")
TICK = "spot-quota-tick"


def check_quota(policy: str, spot_quota: str, forecaster: str, eta_every_s: float | None = None,
                wait_reading: str = "longest") -> SqaConfig:  # fmt: skip
    """``spot_quota`` and ``quota_forecaster`` checked against their choices; the gate's
    :class:`SqaConfig` (Table 4's defaults with these two readings of eq. 11)."""
    if spot_quota not in SPOT_QUOTAS:
        raise ConfigError(f"{policy}: spot_quota must be one of {', '.join(SPOT_QUOTAS)} (got {spot_quota!r})")
    if forecaster not in FORECASTERS:
        raise ConfigError(f"{policy}: quota_forecaster must be one of {', '.join(FORECASTERS)} (got {forecaster!r})")
    try:
        return SqaConfig(eta_every_s=eta_every_s, wait_reading=wait_reading)
    except ConfigError as err:
        raise ConfigError(f"{policy}: quota_{str(err).removeprefix('gfs: ')}") from None


def make_gate(policy: str, spot_quota: str, forecaster: str, eta_every_s: float | None, wait_reading: str,
              seed: int) -> QuotaGate | None:  # fmt: skip
    """The gate of ``spot_quota="forecast"``, None for ``"none"``."""
    config = check_quota(policy, spot_quota, forecaster, eta_every_s, wait_reading)
    return QuotaGate(make_forecaster(forecaster, seed), config) if spot_quota == "forecast" else None


def make_forecaster(kind: str, seed: int) -> DemandForecaster:
    if kind == "weekly-peak":
        return WeeklyPeak()
    from schedlab.policies.gfs.forecast import OnlineSettings, OrgLinearForecaster

    return OrgLinearForecaster(OnlineSettings(), seed=seed)


class QuotaGate:
    """GFS's SQA state for a baseline: the HP demand it feeds the forecaster, the spot runs of
    eq. 10-11, and the per-model quota a spot job must fit (:meth:`admits`)."""

    def __init__(self, forecaster: DemandForecaster, config: SqaConfig | None = None) -> None:
        self.forecaster = forecaster
        self.config = config or SqaConfig()
        self.quota = SpotQuota(self.config)
        self.guarantee_s = self.config.guarantee_h * 3600.0
        self.ledger = SpotLedger(self.guarantee_s)
        self.spot_held: dict[str, float] = {}
        self.spot_running: dict[int, tuple[float, str, float]] = {}  # idx -> (start, model, GPUs)
        self.spot_starts: list[tuple[float, str, float]] = []  # (start, model, wait), last H only
        self.model_of: dict[int, str] = {}
        self.eta_trace: list[tuple[float, str, float]] = []
        self.next_eta_s = 0.0

    def setup(self, ctx: Context, pending: Iterable[Job]) -> None:
        self.next_eta_s = ctx.now + self.config.eta_interval_s
        self.update(ctx, pending)
        ctx.set_timer(ctx.now + self.config.update_s, (TICK,))

    def on_timer(self, ctx: Context, payload: object, pending: Iterable[Job]) -> bool:
        """The quota update every ``update_s``; False for a timer that is not the gate's."""
        if payload != (TICK,):
            return False
        self.update(ctx, pending)
        if ctx.arrivals_left or ctx.active:
            ctx.set_timer(ctx.now + self.config.update_s, (TICK,))
        return True

    def update(self, ctx: Context, pending: Iterable[Job]) -> None:
        """Eq. 11 when due (``eta_interval_s``), then eqs. 9-10 per model, as GFS's update."""
        now, state, c = ctx.now, ctx.state, self.config
        self.forecaster.observe(now, self.ledger.unseen_changes())
        capacity = dict(zip(state.type_names, map(float, state.type_gpus_on)))
        if now >= self.next_eta_s - 1e-6:
            self.spot_starts = [s for s in self.spot_starts if s[0] >= now - self.guarantee_s]
            queued = [job for job in pending if job.cls == SPOT]
            waits = spot_waits(now, capacity, self.spot_starts, queued, reading=c.wait_reading,
                               order=lambda job: job.submit)  # the baselines' FCFS order
            self.eta_trace.extend(self.ledger.feedback(self.quota, now, waits, self.spot_running.values()))
            self.next_eta_s = now + c.eta_interval_s
        bounds = self.forecaster.model_bounds(c.guarantee_rate, c.guarantee_h)
        idle, guaranteed = supply(state.groups, capacity, self.spot_running.values(), now,
                                  sa_rule=c.sa_rule, guarantee_s=self.guarantee_s)
        self.quota.allocate(inventory(capacity, bounds), idle, guaranteed)

    def admits(self, job: Job) -> bool:
        """Spot GPUs in use on the job's model (all models for a job that accepts any) plus its
        request within that model's quota."""
        model = job.gpu_type
        held = sum(self.spot_held.values()) if model == "" else self.spot_held.get(model, 0.0)
        return self.quota.admits(model, held, job.num_gpus)

    def started(self, ctx: Context, job: Job) -> None:
        model = job.gpu_type or ctx.state.node_type[job.alloc[0][0]]
        self.model_of[job.idx] = model
        if job.cls == SPOT:
            self.spot_held[model] = self.spot_held.get(model, 0.0) + job.num_gpus
            self.spot_running[job.idx] = (ctx.now, model, job.num_gpus)
            self.spot_starts.append((ctx.now, model, ctx.now - job.queued_since))
        else:
            self.ledger.add_demand((model, job.tenant), job.num_gpus)

    def ended(self, ctx: Context, job: Job, *, evicted: bool) -> None:
        model = self.model_of.pop(job.idx)
        if job.cls == SPOT:
            self.ledger.runs_of(model).end(ctx.now, evicted=evicted)
            self.spot_running.pop(job.idx)
            self.spot_held[model] -= job.num_gpus
        else:
            self.ledger.add_demand((model, job.tenant), -job.num_gpus)

    def report(self) -> dict[str, Any]:
        etas = [eta for _, _, eta in self.eta_trace]
        return {"spot_quota": "forecast", "quota_forecaster": self.forecaster.name,
                "eta_final": {m: round(self.quota.eta_of(m), 4) for m in sorted(self.quota.eta)},
                "eta_min": min(etas, default=None), "eta_max": max(etas, default=None)}  # fmt: skip
