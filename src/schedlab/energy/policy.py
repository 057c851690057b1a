"""The CES service (Helios §4.3, Algorithm 2) inside a scheduling simulation.

:class:`CESPolicy` wraps any policy: every callback goes to the inner policy first, then the
service acts through the context with ``ctx.power_off`` (idle, booted nodes only) and
``ctx.power_on`` (usable ``SimConfig.boot_s`` later; jobs waiting for it wait that long).

* JobArrivalCheck runs after each scheduling round, for the jobs that arrived at that
  instant and are still pending: when the job's pool has fewer idle powered nodes plus
  booting nodes than the job needs whole nodes, the missing nodes plus the buffer boot.
* PeriodicCheck runs on a timer every ``check_s``. The running count ``r`` is the number of
  booted nodes holding work. Its samples are the forecaster's history, so the forecaster only
  ever sees the run so far.
* The forecaster is chosen as ``schedlab ces`` chooses it, by
  :func:`schedlab.predict.node_demand_eval.validate` and its :class:`ChoiceRule`: every
  ``val_days`` of simulated time, on the last ``val_days`` of the run (rolling origin, refitted
  daily) with the run before them as history; a chosen GBDT is refitted on the whole run every
  ``retrain_s`` (a simulated day) in between. Last-value persistence is used until a candidate beats it by
  the rule's margin, in particular for as long as the run is shorter than the rule's
  validation window plus its training history (7 + 14 days by default). With persistence
  FutureNodesTrend is 0 and CES acts on RecentNodesTrend with its buffer.

Deviations: the trends and the forecast are cluster-wide, as in §4.3, while nodes belong to
pools (VCs): a power-down takes idle nodes from the pool with the most idle powered nodes
first; no node of a pool with a pending job is powered down, and each check repeats
JobArrivalCheck for the oldest pending job of each pool (a job queued behind others would
otherwise wait for nodes nobody wakes, since only arrivals trigger a wake-up).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd

from schedlab.energy.ces import CESConfig, arrival_check, history_trend, periodic_check
from schedlab.energy.report import plot_nodes, table5
from schedlab.extras import require
from schedlab.sim.policy import Context, Policy, WrappedPolicy
from schedlab.predict import node_demand_eval
from schedlab.predict.node_demand import ForecastConfig, NodeDemandForecaster, as_steps, smape
from schedlab.predict.node_demand_eval import PERSISTENCE, Choice, ChoiceRule, forecast_ahead
from schedlab.sim.job import PENDING, Job

DEFAULT_ORIGIN = "2020-01-06"  # a Monday: calendar features for workloads without dates


@dataclass
class _Log:
    """Samples taken at each PeriodicCheck, before it acts."""

    time_s: list[float] = field(default_factory=list)
    running: list[int] = field(default_factory=list)
    powered: list[int] = field(default_factory=list)
    off_watts: list[float] = field(default_factory=list)


class CESPolicy(WrappedPolicy):
    """Wrap ``inner`` with the CES service (or vanilla DRS when ``config.use_forecast`` is False)."""

    def __init__(
        self,
        inner: Policy,
        config: CESConfig,
        *,
        seed: int,
        forecast: ForecastConfig | None = None,
        rule: ChoiceRule | None = None,
        val_days: float = 7.0,
        retrain_s: float = 86400.0,
    ) -> None:
        if config.use_forecast:
            require("lightgbm", "CES")  # now, not when the forecaster first trains days into the run
        super().__init__(inner)
        self.config = config
        self.name = f"{inner.name}+{'ces' if config.use_forecast else 'drs'}"
        self.forecast_config = forecast or ForecastConfig(step=f"{int(config.check_s)}s")
        self.seed = seed
        self.rule = rule or ChoiceRule()
        self.val_days = val_days
        fc = self.forecast_config
        self._context_steps = fc.context_steps
        self.retrain_s = retrain_s
        self._tick = object()
        self._new: list[Job] = []
        self._waiting: dict[str, deque[Job]] = {}  # per pool, in arrival order
        self._origin = pd.Timestamp(DEFAULT_ORIGIN)
        self._model: NodeDemandForecaster | None = None
        self._choice = Choice(PERSISTENCE, "last value kept: no forecast issued yet", {})
        self.choices: list[dict[str, Any]] = []  # every choice made: time, forecaster, reason
        self._trained_at = -math.inf
        self._chosen_at = -math.inf
        self._booting: dict[str, int] = {}
        self._delayed: set[int] = set()
        self.wakeups: list[int] = []
        self.power_downs = 0
        self.log = _Log()
        self._issued: list[tuple[int, list[float]]] = []  # (sample index, forecast after it)
        self._nodes = 0

    def setup(self, ctx: Context) -> None:
        self.inner.setup(ctx)
        self._nodes = len(ctx.cluster.nodes)
        if ctx.origin is not None:
            self._origin = pd.Timestamp(ctx.origin)
        ctx.set_timer(ctx.now + self.config.check_s, self._tick)

    def on_arrival(self, ctx: Context, job: Job) -> None:
        self.inner.on_arrival(ctx, job)
        self._new.append(job)
        self._waiting.setdefault(ctx.pool_of(job), deque()).append(job)

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.inner.on_finish(ctx, job)

    def on_node_on(self, ctx: Context, node: int) -> None:
        self._booting[ctx.state.node_pool[node]] -= 1
        self.inner.on_node_on(ctx, node)

    def on_timer(self, ctx: Context, payload: object) -> bool | None:
        if payload is not self._tick:
            return self.inner.on_timer(ctx, payload)
        acted = self._periodic(ctx)
        if ctx.arrivals_left or ctx.running or ctx.state.booting:
            ctx.set_timer(ctx.now + self.config.check_s, self._tick)
        return acted

    def schedule(self, ctx: Context) -> None:
        self.inner.schedule(ctx)
        if self._new:
            waiting = [j for j in self._new if j.state == PENDING]
            self._new.clear()
            for job in waiting:
                self._arrival_check(ctx, job)

    # ----- Algorithm 2 ------------------------------------------------------------------------
    def _arrival_check(self, ctx: Context, job: Job) -> bool:
        """JobArrivalCheck for a job the inner policy could not start on arrival."""
        state = ctx.state
        pool = ctx.pool_of(job)
        nodes = [n for g in ctx.groups_of(job) for n in g.nodes]
        size = max(state.node_gpus[n] for n in nodes)
        need = 1 if job.fractional else math.ceil(job.num_gpus / size)
        idle_on = sum(1 for n in nodes if state.on[n] and state.idle(n))
        booting = self._booting.get(pool, 0)
        off = [n for n in nodes if not state.on[n] and n not in state.booting]
        if need > idle_on and (off or booting):
            self._delayed.add(job.idx)  # its start waits for a node that is off or booting
        wake = arrival_check(need, idle_on, booting, len(off), self.config)
        for node in off[:wake]:
            ctx.power_on(node)
        if wake:
            self._booting[pool] = booting + wake
            self.wakeups.append(wake)
        return bool(wake)

    def _periodic(self, ctx: Context) -> bool:
        """PeriodicCheck: sample, retrain when due, power idle nodes down when Algorithm 2's
        condition holds."""
        state = ctx.state
        idle_by_pool: dict[str, list[int]] = {}
        running = 0
        off_watts = 0.0
        for node in range(state.num_nodes):
            if not state.on[node]:
                if node not in state.booting:
                    off_watts += self._idle_w(ctx, node)
            elif state.idle(node):
                idle_by_pool.setdefault(state.node_pool[node], []).append(node)
            else:
                running += 1
        powered = state.nodes_on + len(state.booting)
        log = self.log
        past = log.running[-self.config.history_checks :]
        log.time_s.append(ctx.now)
        log.running.append(running)
        log.powered.append(powered)
        log.off_watts.append(off_watts)
        heads = self._pending_heads()
        woke = False
        for head in heads.values():
            woke |= self._arrival_check(ctx, head)
        falling = bool(past) and history_trend(past, running) >= self.config.history_threshold
        forecast = self._forecast() if self.config.use_forecast and falling else None
        if forecast is not None:
            self._issued.append((len(log.running) - 1, forecast))
        for pool in heads:
            idle_by_pool.pop(pool, None)  # never power down a pool with a job waiting
        idle_on = sum(len(v) for v in idle_by_pool.values())
        count = periodic_check(powered, idle_on, running, past, forecast, self.config)
        if not count:
            return woke
        heap = [(-len(nodes), pool) for pool, nodes in idle_by_pool.items()]
        heapq.heapify(heap)
        for _ in range(count):
            size, pool = heapq.heappop(heap)
            ctx.power_off(idle_by_pool[pool].pop())
            if size + 1 < 0:
                heapq.heappush(heap, (size + 1, pool))
        self.power_downs += 1
        return True

    def _pending_heads(self) -> dict[str, Job]:
        """The oldest job still pending in each pool (jobs that started are dropped)."""
        heads: dict[str, Job] = {}
        for pool, queue in self._waiting.items():
            while queue and queue[0].state != PENDING:
                queue.popleft()
            if queue:
                heads[pool] = queue[0]
        return heads

    def _forecast(self) -> list[float]:
        """The next ``future_steps`` samples of the running count by the chosen forecaster,
        chosen again every ``val_days``; a chosen GBDT is refitted every ``retrain_s``."""
        log = self.log
        history = pd.Series(
            np.asarray(log.running, dtype=float),
            index=self._origin + pd.to_timedelta(np.asarray(log.time_s), unit="s"),
        )
        steps = as_steps(history.asfreq(self.forecast_config.step, method="ffill"))
        now = log.time_s[-1]
        if now - self._chosen_at >= self.val_days * 86400.0:
            self._choose(steps)
            self._chosen_at = self._trained_at = now
        elif self._model is not None and now - self._trained_at >= self.retrain_s:
            self._model = NodeDemandForecaster(self.forecast_config, seed=self.seed).fit(steps)
            self._trained_at = now
        count = min(self.config.future_steps, self.forecast_config.lead_steps)
        ahead: list[float]
        if self._model is not None:
            ahead = self._model.forecast(steps.iloc[-self._context_steps :], count).tolist()
        else:
            day_steps = round(pd.Timedelta("1D") / pd.Timedelta(self.forecast_config.step))
            ahead = forecast_ahead(steps, self._choice.forecaster, count, day_steps).tolist()
        return ahead

    def _choose(self, steps: pd.DataFrame) -> None:
        """Choose the forecaster on the last ``val_days`` of the run by the rule ``schedlab ces``
        uses; fit the GBDT on the whole run when it is chosen."""
        step = pd.Timedelta(self.forecast_config.step)
        val_end = steps.index[-1] + step
        val_start = max(val_end - pd.Timedelta(days=self.val_days), steps.index[0])
        leads = list(range(1, min(self.config.future_steps, self.forecast_config.lead_steps) + 1))
        choices, _ = node_demand_eval.validate({"run": steps}, val_start, val_end, leads, rule=self.rule,
                                               seed=self.seed, config=self.forecast_config)  # fmt: skip
        choice = choices["run"]
        self._model = None
        if choice.forecaster == "gbdt":
            self._model = NodeDemandForecaster(self.forecast_config, seed=self.seed).fit(steps)
        self.choices.append({"time_s": self.log.time_s[-1], "forecaster": choice.forecaster, "reason": choice.reason})
        self._choice = choice

    def _idle_w(self, ctx: Context, node: int) -> float:
        """The node's idle draw, or the configured one when its spec gives none."""
        watts = ctx.cluster.nodes[node].idle_power_w
        return watts if watts > 0 else self.config.idle_power_w

    # ----- results ----------------------------------------------------------------------------
    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        """The inner policy's entries and this service's block (``ces`` or ``vanilla_drs``)."""
        return {**self.inner.report(jobs), self.config.label: self.energy_report(self._nodes)}

    def artifacts(self, out_dir: Path) -> Iterator[Path]:
        """``ces_nodes.png``: active against powered-on nodes over the run."""
        yield self.write_plot(out_dir / "ces_nodes.png", self._nodes)

    def energy_report(self, total_nodes: int) -> dict[str, Any]:
        """The Table 5 block of this run (sampled at every PeriodicCheck)."""
        log = self.log
        total = np.full(len(log.running), total_nodes, dtype=float)
        block = table5(np.asarray(log.running), np.asarray(log.powered), total, step_s=self.config.check_s,
                       wakeups=self.wakeups, jobs_delayed=len(self._delayed), config=self.config,
                       off_watts=np.asarray(log.off_watts))  # fmt: skip
        block.update(power_downs=self.power_downs, policy=self.name, **self._accuracy())
        if self.config.use_forecast:
            block.update(forecaster=self._choice.forecaster, choice_reason=self._choice.reason, choices=self.choices)
        return block

    def _accuracy(self) -> dict[str, float | None]:
        """SMAPE of every forecast issued during the run against the samples that followed,
        and of the naive forecast (the sample at issue time) on the same pairs."""
        running = self.log.running
        pred: list[float] = []
        actual: list[float] = []
        naive: list[float] = []
        for at, values in self._issued:
            for k, value in enumerate(values, start=1):
                if at + k < len(running):
                    pred.append(value)
                    actual.append(running[at + k])
                    naive.append(running[at])
        if not pred:
            return {"smape": None, "naive_smape": None}
        return {"smape": smape(pred, actual), "naive_smape": smape(naive, actual)}

    def write_plot(self, path: Path, total_nodes: int) -> Path:
        """Active vs powered-on nodes over simulated time."""
        t = self._origin + pd.to_timedelta(np.asarray(self.log.time_s), unit="s")
        total = np.full(len(t), total_nodes)
        return plot_nodes(t, np.asarray(self.log.running), total, {self.name: np.asarray(self.log.powered)}, path,
                          title=f"CES in simulation: {self.name}")  # fmt: skip
