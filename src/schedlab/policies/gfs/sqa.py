"""SQA, spot quota allocation (GFS: Duan et al., ASPLOS '26, arXiv 2509.11134, §3.3).

Every ``update_s`` (300 s) GFS sets, per GPU model, how many GPUs spot jobs may hold:

* inventory (eq. 9): ``f(p, H) = C - sum_org U_org(p, H)``, the model's GPUs ``C`` minus the
  sum over organisations of an upper bound of their high-priority (HP) demand over the next
  ``H`` hours at confidence ``p`` (the forecaster's inverse CDF), floored at 0;
* quota (eq. 10): ``Q_H = min(f * eta, S0 + Sa)``;
* safety coefficient ``eta`` (eq. 11), fed back from the spot eviction rate ``e`` and the
  longest spot queueing time ``l`` over the last ``H`` hours.

Only the paper's abstract could be read here, not §3.3 itself; the rules below follow the
brief's description and the authors' public simulator, and these details are assumptions:

* ``S0`` = GPUs of the model held by running spot jobs, ``Sa`` = its free GPUs now (the quota
  never promises more than spot already holds plus what is idle);
* ``eta``, ``e`` and ``l`` are per GPU model (the public simulator's per-cluster ``eta``);
* eq. 11: when ``e >= hi * (1 - p)``, ``eta <- eta * (1 - p) / e`` (the target eviction
  rate is ``1 - p``); when ``e <= lo * (1 - p)`` and ``l > l_max``, ``eta <- eta * raise_``;
  ``eta`` stays within ``eta_bounds``. ``e`` = failed guarantee periods / all periods ended
  over the last ``H`` hours (0 when none ended), counted as the public simulator does: a
  running spot job completes a period every ``H`` and when it finishes, and every eviction
  fails the period in progress (see :class:`GuaranteeLedger`); the public simulator's
  raise, ``eta * (1.5 - (1 - p) / e)``, is negative whenever its condition holds (and
  undefined at ``e = 0``), so a plain factor is used instead;
* after a change ``eta`` holds for ``eta_hold_h`` (default ``H``) before it may change
  again: ``e`` and ``l`` are measured over the last ``H`` hours, and re-applying the rule at
  every 300 s update while the same evictions stay in that window drives ``eta`` to its
  bounds within the hour (observed in dense runs; the public simulator re-applies it);
* the demand bound of a model comes from the forecaster's ``model_bounds``; OrgLinear pools
  the organisations' Gaussians by default (see :mod:`.forecast`);
* defaults (the paper's Table 4 could not be read): ``H`` = 1 h, ``p`` = 0.9, ``hi`` = 1.5,
  ``lo`` = 0.5, ``l_max`` = 1 h (the public simulator's values), ``raise_`` = 1.5 and
  ``eta_bounds`` = (0.05, 4) (this module's choice).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from schedlab.errors import ConfigError

Key = tuple[str, str]  # (GPU model, organisation)
WEEK_S = 7 * 86400.0


class DemandForecaster(Protocol):
    """What SQA needs from a demand forecaster (e.g. the OrgLinear model)."""

    name: str

    def observe(self, now: float, changes: Mapping[Key, float]) -> None:
        """HP GPUs in use per (model, organisation) whose level changed since the last call."""

    def upper_bound(self, p: float, horizon_h: float) -> Mapping[Key, float]:
        """Per (model, organisation): HP demand not exceeded with probability ``p`` over the
        next ``horizon_h`` hours (the inverse CDF of eq. 9)."""

    def model_bounds(self, p: float, horizon_h: float) -> Mapping[str, float]:
        """Per GPU model: the organisations' HP demand bound of eq. 9, summed."""


class WeeklyPeak:
    """The production rule of "GFS-e": an organisation's upper bound is its peak HP demand
    (per GPU model) over the previous week of the run, whatever ``p`` and the horizon.
    Keeps, per key, a monotone queue of past levels: O(1) amortised per change."""

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
        """Per model, the sum of its organisations' weekly peaks."""
        return sum_by_model(self.upper_bound(p, horizon_h))


def sum_by_model(bounds: Mapping[Key, float]) -> dict[str, float]:
    """Per GPU model, the sum of the per-(model, organisation) ``bounds``."""
    out: dict[str, float] = {}
    for (model, _org), bound in bounds.items():
        out[model] = out.get(model, 0.0) + bound
    return out


def inventory(capacity: Mapping[str, float], demand: Mapping[str, float]) -> dict[str, float]:
    """Eq. 9: per GPU model, its GPUs minus the bound on its HP demand (>= 0)."""
    return {model: max(0.0, cap - demand.get(model, 0.0)) for model, cap in capacity.items()}


@dataclass(frozen=True)
class SqaConfig:
    """SQA parameters (see the module doc for which are the paper's and which assumed)."""

    guarantee_h: float = 1.0
    guarantee_rate: float = 0.9
    update_s: float = 300.0
    eta0: float = 1.0
    eta_bounds: tuple[float, float] = (0.05, 4.0)
    eviction_high: float = 1.5
    eviction_low: float = 0.5
    eta_raise: float = 1.5
    queue_limit_s: float = 3600.0
    eta_hold_h: float | None = None
    dynamic_eta: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.guarantee_rate < 1:
            raise ConfigError("gfs: guarantee_rate must lie in (0, 1)")
        if self.guarantee_h <= 0 or self.update_s <= 0:
            raise ConfigError("gfs: guarantee_h and update_s must be positive")
        if self.eta_hold_h is not None and self.eta_hold_h < 0:
            raise ConfigError("gfs: eta_hold_h must be >= 0")
        lo, hi = self.eta_bounds
        if not 0 < lo <= self.eta0 <= hi:
            raise ConfigError("gfs: need 0 < eta_bounds[0] <= eta0 <= eta_bounds[1]")


class GuaranteeLedger:
    """Guarantee periods of spot jobs met and failed, with their times: the eviction rate
    ``e`` of eq. 11 over a sliding window, and run totals. A running spot job completes a
    period every ``H`` it runs and when it finishes; an eviction fails the period in progress
    (the public simulator's "guarantee hours")."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.met: deque[float] = deque()
        self.broken: deque[float] = deque()
        self.total_met = 0
        self.total_broken = 0

    def meet(self, now: float) -> None:
        self.met.append(now)
        self.total_met += 1

    def fail(self, now: float) -> None:
        self.broken.append(now)
        self.total_broken += 1

    def rate(self, now: float) -> float:
        start = now - self.window_s
        for times in (self.met, self.broken):
            while times and times[0] < start:
                times.popleft()
        total = len(self.met) + len(self.broken)
        return len(self.broken) / total if total else 0.0


class SpotQuota:
    """The safety coefficients and the quotas of eqs. 10-11, per GPU model: each model has its
    own ``eta``, fed back from its own evictions and queueing (as the public simulator keeps
    one per virtual cluster, i.e. per model), so a burst of evictions on one model does not
    shrink the quota of the others."""

    def __init__(self, config: SqaConfig) -> None:
        self.config = config
        self.eta: dict[str, float] = {}
        self.quota: dict[str, float] = {}
        hold_h = config.guarantee_h if config.eta_hold_h is None else config.eta_hold_h
        self.hold_s = hold_h * 3600.0
        self.changed_at: dict[str, float] = {}

    def eta_of(self, model: str) -> float:
        return self.eta.get(model, self.config.eta0)

    def feedback(self, model: str, eviction_rate: float, max_queue_s: float, now: float | None = None) -> float:
        """Eq. 11 for ``model``: lower its ``eta`` after too many evictions, raise it when its
        spot jobs queue long while evictions are rare. After a change ``eta`` holds for
        ``hold_s`` (by default ``H``, the window ``e`` and ``l`` are measured over), so that
        one burst of evictions is acted on once, not at every update while it stays in the
        window (without ``now`` there is no hold). Returns the model's new ``eta`` (unchanged
        without ``dynamic_eta``)."""
        c = self.config
        old = self.eta_of(model)
        if not c.dynamic_eta or (now is not None and now - self.changed_at.get(model, -math.inf) < self.hold_s):
            return old
        target = 1.0 - c.guarantee_rate
        lo, hi = c.eta_bounds
        eta = old
        if eviction_rate >= c.eviction_high * target:
            eta = max(lo, old * target / eviction_rate)
        elif eviction_rate <= c.eviction_low * target and max_queue_s > c.queue_limit_s:
            eta = min(hi, old * c.eta_raise)
        self.eta[model] = eta
        if eta != old and now is not None:
            self.changed_at[model] = now
        return eta

    def allocate(
        self, inventory_gpus: Mapping[str, float], spot_held: Mapping[str, float], free: Mapping[str, float]
    ) -> dict[str, float]:
        """Eq. 10 per model: ``min(f * eta, S0 + Sa)``; the key "" holds the sum (for jobs
        that accept any model)."""
        quota = {
            m: min(f * self.eta_of(m), spot_held.get(m, 0.0) + free.get(m, 0.0)) for m, f in inventory_gpus.items()
        }
        quota[""] = sum(quota.values())
        self.quota = quota
        return quota

    def admits(self, model: str, held: float, gpus: float) -> bool:
        """Whether a spot job of ``gpus`` fits under the model's quota with ``held`` in use."""
        return held + gpus <= self.quota.get(model, 0.0)
