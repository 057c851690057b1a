"""SQA, spot quota allocation (GFS: Duan et al., ASPLOS '26, arXiv 2509.11134, §3.3, Table 4).

Every ``update_s`` (300 s, Table 4) GFS sets, per GPU model, how many GPUs spot jobs may hold:

* inventory, eq. 9: ``f(p, H) = C - min(C, sum_o max(y_o|p[1:H]))``: the model's GPUs ``C``
  minus the sum over organisations of each one's peak p-quantile of HP demand over the next
  ``H`` hours (:func:`inventory`). As printed, eq. 9 reads ``C - max(C, .)``, which is never
  positive (a test shows it); the text says "when the aggregated demand exceeds C, we set
  f(p, H) = 0", so ``max`` is read as ``min`` (the smallest repair);
* quota, eq. 10: ``Q_H = min(f * eta, S0 + Sa)`` (:meth:`SpotQuota.allocate`), ``S0`` the
  model's idle GPUs now, ``Sa`` "the allocated spot GPUs with a guaranteed duration of at
  least H hours", read here as the GPUs of spot runs that have already run for ``H`` (their
  guarantee is delivered); ``sa_rule="all"`` counts every spot GPU instead (what this
  module did before, and what a reading "spot GPUs admitted under an H-hour guarantee" gives);
* safety coefficient, eq. 11 (:func:`next_eta`), from the spot eviction rate ``e`` and the
  longest spot queueing time ``l`` over the past ``H`` hours: ``eta * p/e`` when
  ``e > 1.5 p``; ``eta * (1.5 - e/p)`` when ``e < 0.5 p`` and ``l > theta``. With ``p`` the
  guarantee rate as printed (0.9) the first case needs ``e > 1.35`` and never fires, and the
  second raises ``eta`` whenever spot queues (a test shows it). The text calls ``p = 0.95``
  "an eviction rate that does not exceed 0.05", so eq. 11 is applied with the target
  eviction rate ``1 - p`` in place of ``p`` (the smallest repair).

``e`` is the §4.2 eviction rate over the window: evictions in the last ``H`` hours over the
spot runs of that window (running now, or ended in it) (:class:`SpotRuns`).

Two readings of §3.3.2 are options, because the text does not settle them:

* when eq. 11 runs (``eta_every_s``): §3.3.2 says the quota is computed every 300 s (Table 4)
  and that ``eta`` "is updated based on [...] the real eviction rate e and the maximum queuing
  time l of spot tasks over the past H hours"; it does not say how often. The default
  (``None``) updates ``eta`` once per ``H``, the window its evidence covers, so that one burst of evictions is
  counted once; re-applying eq. 11 every 300 s to the same window compounds it (it drove
  ``eta`` to its bounds within the hour in dense runs). ``eta_every_s=300`` is the authors'
  public simulator's reading: ``eta`` is updated with every quota update;
* what ``l`` is (``wait_reading``): ``"longest"`` (the default, the text's "maximum queuing
  time [...] over the past H hours") is the longest wait among the spot runs that
  started in the last ``H`` and the spot jobs still queued; ``"head"`` is the authors' public
  simulator's reading: the wait so far of the job at the head of the spot queue (PTS's
  queue order, time since it last entered the queue), 0 when the queue is empty.

``eta`` stays within ``eta_bounds`` (not in the paper: without them a cluster whose spot jobs
queue for days raises ``eta`` by 1.5 every hour without limit, and values above
``(S0 + Sa) / f`` have no effect). Each GPU model has its own ``eta`` and quota (the paper
simulates one A100 cluster; on several models a burst of evictions on one must not shrink the
quota of the others).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from schedlab.cluster.state import Group
from schedlab.errors import ConfigError
from schedlab.policies.params import help_field
from schedlab.sim.job import Job

Key = tuple[str, str]  # (GPU model, organisation)
WEEK_S = 7 * 86400.0
WAIT_READINGS = ("longest", "head")


class DemandForecaster(Protocol):
    """What SQA needs from a demand forecaster (e.g. the OrgLinear model)."""

    name: str

    def observe(self, now: float, changes: Mapping[Key, float]) -> None:
        """HP GPUs in use per (model, organisation) whose level changed since the last call."""

    def upper_bound(self, p: float, horizon_h: float) -> Mapping[Key, float]:
        """Per (model, organisation): the peak p-quantile of its HP demand over the next
        ``horizon_h`` hours (``max(y_o|p[1:H])`` of eq. 9)."""

    def model_bounds(self, p: float, horizon_h: float) -> Mapping[str, float]:
        """Per GPU model: the HP demand bound of eq. 9 (by default the organisations' peaks summed)."""


class WeeklyPeak:
    """The production rule of "GFS-e" (§4.6.1): an organisation's forecast is its peak HP
    demand (per GPU model) over the previous week, whatever ``p`` and the horizon. Keeps, per
    key, a monotone queue of past levels: O(1) amortised per change."""

    name = "weekly-peak"

    def __init__(self, window_s: float = WEEK_S) -> None:
        self.window_s = window_s
        self.now = 0.0
        self._level: dict[Key, float] = {}
        self._past: dict[Key, deque[tuple[float, float]]] = {}  # (held until, level), levels decreasing

    def observe(self, now: float, changes: Mapping[Key, float]) -> None:
        self.now = now
        for key, value in changes.items():
            old = self._level.get(key, 0.0)
            if value == old:
                continue
            past = self._past.setdefault(key, deque())
            while past and past[-1][1] <= old:
                past.pop()
            past.append((now, old))
            self._level[key] = value

    def upper_bound(self, p: float, horizon_h: float) -> dict[Key, float]:
        start = self.now - self.window_s
        out: dict[Key, float] = {}
        for key, level in self._level.items():
            past = self._past[key]
            while past and past[0][0] < start:
                past.popleft()
            out[key] = max(level, past[0][1]) if past else level
        return out

    def model_bounds(self, p: float, horizon_h: float) -> dict[str, float]:
        """Per model, the sum of its organisations' weekly peaks (eq. 9's spatial sum)."""
        return sum_by_model(self.upper_bound(p, horizon_h))


def sum_by_model(bounds: Mapping[Key, float]) -> dict[str, float]:
    """Eq. 9's spatial aggregation: per GPU model, the sum of the per-(model, organisation) bounds."""
    out: dict[str, float] = {}
    for (model, _org), bound in bounds.items():
        out[model] = out.get(model, 0.0) + bound
    return out


def inventory(capacity: Mapping[str, float], demand: Mapping[str, float]) -> dict[str, float]:
    """Eq. 9 (repaired, see the module doc): per GPU model ``C - min(C, demand)``."""
    return {model: cap - min(cap, demand.get(model, 0.0)) for model, cap in capacity.items()}


def next_eta(eta: float, e: float, l_s: float, *, target: float, theta_s: float) -> float:
    """Eq. 11 with target eviction rate ``target`` (SQA passes ``1 - p``, see the module doc):
    ``eta * target / e`` if ``e > 1.5 target``; ``eta * (1.5 - e / target)`` if
    ``e < 0.5 target`` and ``l > theta``; else ``eta``."""
    if e > 1.5 * target:
        return eta * target / e
    if e < 0.5 * target and l_s > theta_s:
        return eta * (1.5 - e / target)
    return eta


@dataclass(frozen=True)
class SqaConfig:
    """SQA parameters; defaults from Table 4 unless said otherwise."""

    guarantee_h: float = help_field(1.0, "H, guarantee hours of eq. 9-11 (Table 4: 1, 2 or 4)")
    guarantee_rate: float = help_field(0.9, "p, target guarantee rate of eq. 9 (Table 4)")
    update_s: float = help_field(300.0, "spot quota update interval, seconds (Table 4)")
    queue_limit_s: float = help_field(3600.0, "theta, spot queueing threshold of eq. 11, seconds (Table 4)")
    eta0: float = help_field(1.0, "initial safety coefficient eta (§3.3.2)")
    eta_bounds: tuple[float, float] = help_field((0.05, 4.0), "eta is kept within these (not in the paper)")
    dynamic_eta: bool = help_field(True, "apply eq. 11; off = eta fixed at eta0 (GFS-d)")
    sa_rule: str = help_field("ran-h", "Sa of eq. 10: spot GPUs of runs that ran >= H ('ran-h') or all spot GPUs ('all')")
    eta_every_s: float | None = help_field(None, "eq. 11 interval, seconds, a multiple of update_s; none = once per H (§3.3.2 reading; the authors' simulator: 300)")
    wait_reading: str = help_field("longest", "l of eq. 11: longest spot wait over the past H ('longest', §3.3.2) or the spot queue head's wait now ('head', the authors' simulator)")

    def __post_init__(self) -> None:
        if not 0 < self.guarantee_rate < 1:
            raise ConfigError("gfs: guarantee_rate must lie in (0, 1)")
        if self.guarantee_h <= 0 or self.update_s <= 0 or self.queue_limit_s < 0:
            raise ConfigError("gfs: guarantee_h and update_s must be positive, queue_limit_s >= 0")
        lo, hi = self.eta_bounds
        if not 0 < lo <= self.eta0 <= hi:
            raise ConfigError("gfs: need 0 < eta_bounds[0] <= eta0 <= eta_bounds[1]")
        if self.sa_rule not in ("ran-h", "all"):
            raise ConfigError(f"gfs: sa_rule must be 'ran-h' or 'all' (got {self.sa_rule!r})")
        if self.wait_reading not in WAIT_READINGS:
            raise ConfigError(f"gfs: wait_reading must be 'longest' or 'head' (got {self.wait_reading!r})")
        if self.eta_every_s is not None:
            steps = self.eta_every_s / self.update_s
            if not self.eta_every_s > 0 or abs(steps - round(steps)) > 1e-9 or round(steps) < 1:
                raise ConfigError(f"gfs: eta_every_s must be none or a positive multiple of update_s "
                                  f"({self.update_s:g} s), as eta changes only at quota updates (got {self.eta_every_s!r})")

    @property
    def eta_interval_s(self) -> float:
        """Seconds between two applications of eq. 11: ``eta_every_s``, else ``H``."""
        return self.guarantee_h * 3600.0 if self.eta_every_s is None else float(self.eta_every_s)


class SpotRuns:
    """Spot runs that ended (finished or evicted), with their times: the eviction rate ``e``
    of eq. 11 over a sliding window, and the run totals ``G`` (finished) and ``F`` (evicted)
    of eq. 19."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.ends: deque[tuple[float, bool]] = deque()  # (time, evicted)
        self.evicted_in_window = 0
        self.finished = 0
        self.evicted = 0

    def end(self, now: float, *, evicted: bool) -> None:
        self.ends.append((now, evicted))
        self.evicted_in_window += evicted
        if evicted:
            self.evicted += 1
        else:
            self.finished += 1

    def rate(self, now: float, running: int) -> float:
        """Evictions in the window over the runs of the window: ``running`` now plus those
        that ended in it (0 when there were none)."""
        start = now - self.window_s
        while self.ends and self.ends[0][0] < start:
            self.evicted_in_window -= self.ends.popleft()[1]
        runs = running + len(self.ends)
        return self.evicted_in_window / runs if runs else 0.0


class SpotLedger:
    """The run state the spot quota reads, kept by GFS and by the baselines' quota gate: spot
    runs per GPU model (``e`` of eq. 11) and HP GPUs held per (model, organisation), with the
    changes the demand forecaster has not seen yet."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.runs: dict[str, SpotRuns] = {}
        self.hp_demand: dict[Key, float] = {}
        self.demand_changes: dict[Key, float] = {}

    def runs_of(self, model: str) -> SpotRuns:
        runs = self.runs.get(model)
        if runs is None:
            runs = self.runs[model] = SpotRuns(self.window_s)
        return runs

    def add_demand(self, key: Key, gpus: float) -> None:
        level = self.hp_demand.get(key, 0.0) + gpus
        self.hp_demand[key] = level
        self.demand_changes[key] = level

    def unseen_changes(self) -> dict[Key, float]:
        """The HP levels changed since the last call (for the forecaster's ``observe``)."""
        changes, self.demand_changes = self.demand_changes, {}
        return changes

    def feedback(self, quota: SpotQuota, now: float, waits: Mapping[str, float],
                 spot_running: Iterable[tuple[float, str, float]]) -> list[tuple[float, str, float]]:  # fmt: skip
        """Eq. 11 per model with ``e`` over the window and ``l`` from ``waits``; the (time,
        model, eta) entries it set."""
        running = dict.fromkeys(waits, 0)
        for _, model, _ in spot_running:
            running[model] += 1
        return [(now, model, quota.feedback(model, self.runs_of(model).rate(now, running[model]), wait))
                for model, wait in waits.items()]  # fmt: skip


class SpotQuota:
    """The safety coefficients and quotas of eqs. 10-11, per GPU model."""

    def __init__(self, config: SqaConfig) -> None:
        self.config = config
        self.eta: dict[str, float] = {}
        self.quota: dict[str, float] = {}

    def eta_of(self, model: str) -> float:
        return self.eta.get(model, self.config.eta0)

    def feedback(self, model: str, eviction_rate: float, max_queue_s: float) -> float:
        """Eq. 11 for ``model`` (unless ``dynamic_eta`` is off); returns its new ``eta``."""
        c = self.config
        old = self.eta_of(model)
        if not c.dynamic_eta:
            return old
        lo, hi = c.eta_bounds
        eta = next_eta(old, eviction_rate, max_queue_s, target=1.0 - c.guarantee_rate, theta_s=c.queue_limit_s)
        self.eta[model] = min(hi, max(lo, eta))
        return self.eta[model]

    def allocate(self, inventory_gpus: Mapping[str, float], idle: Mapping[str, float], guaranteed: Mapping[str, float]) -> dict[str, float]:
        """Eq. 10 per model: ``min(f * eta, S0 + Sa)`` with ``S0`` = ``idle`` and ``Sa`` =
        ``guaranteed``; the key "" holds the sum (for jobs that accept any model)."""
        quota = {m: min(f * self.eta_of(m), idle.get(m, 0.0) + guaranteed.get(m, 0.0)) for m, f in inventory_gpus.items()}
        quota[""] = sum(quota.values())
        self.quota = quota
        return quota

    def admits(self, model: str, held: float, gpus: float) -> bool:
        """Quota_satisfy of Algorithm 3: a spot job of ``gpus`` fits under the model's quota
        with ``held`` spot GPUs in use."""
        return held + gpus <= self.quota.get(model, 0.0)



def supply(groups: Iterable[Group], capacity: Mapping[str, float], spot_running: Iterable[tuple[float, str, float]],
           now: float, *, sa_rule: str, guarantee_s: float) -> tuple[dict[str, float], dict[str, float]]:
    """``S0`` and ``Sa`` of eq. 10 per GPU model: the free GPUs of the cluster's ``groups``, and
    the GPUs of the spot runs ``(start, model, GPUs)`` that count as guaranteed under ``sa_rule``."""
    idle = dict.fromkeys(capacity, 0.0)
    for g in groups:
        idle[g.gpu_type] += g.free_total
    guaranteed = dict.fromkeys(capacity, 0.0)
    for start, model, gpus in spot_running:
        if sa_rule == "all" or now - start >= guarantee_s:
            guaranteed[model] += gpus
    return idle, guaranteed


def spot_waits(now: float, capacity: Mapping[str, float], starts: Iterable[tuple[float, str, float]],
               pending: list[Job], *, reading: str, order: Callable[[Job], object]) -> dict[str, float]:
    """``l`` of eq. 11 per GPU model. ``reading="longest"``: the longest wait of the spot runs
    ``starts`` (``(start, model, wait)``, those of the last ``H``) and of the ``pending`` spot
    jobs; ``"head"``: the wait so far of the first pending spot job in ``order`` that may run
    on the model, 0 when none is queued."""
    wait = dict.fromkeys(capacity, 0.0)
    if reading == "head":
        heads: dict[str, Job] = {}
        for job in sorted(pending, key=lambda job: (order(job), job.idx)):
            for model in [job.gpu_type] if job.gpu_type else capacity:
                heads.setdefault(model, job)
        for model, job in heads.items():
            wait[model] = now - job.queued_since
        return wait
    for _, model, w in starts:
        wait[model] = max(wait[model], w)
    for job in pending:
        for model in [job.gpu_type] if job.gpu_type else capacity:
            wait[model] = max(wait[model], now - job.queued_since)
    return wait
