"""Rolling-origin evaluation of node-demand forecasters and the rule that chooses one.

Three forecasters of the busy nodes ``k`` steps ahead (the ``peak`` column of a steps frame,
:func:`schedlab.predict.node_demand.to_steps`):

* ``gbdt`` - :class:`NodeDemandForecaster` (Helios §4.3.2), refitted at every origin block;
* ``last`` - persistence: the newest step, ``peak(t - k)``;
* ``seasonal`` - seasonal naive: the same time a day earlier, ``peak(t - 1 day)`` (``k`` up
  to a day).

**Rolling origin, no look-ahead.** The evaluated period is cut into blocks of ``refit`` (one
day); a forecast whose *origin* ``t - k`` lies in the block starting at ``d`` comes from a
model fitted only on steps labelled ``<= d`` (of every series of the pool), and its features
read steps ``<= t - k``. So no forecast uses a value after its origin.

**The choice rule** (:class:`ChoiceRule`, applied by :func:`choose`; :func:`validate` scores a
validation window and applies it; ``schedlab ces``, ``simulate --ces`` and the forecast plan
all go through :func:`validate`). Last-value persistence is the default; a candidate
(``seasonal`` or ``gbdt``) replaces it for a series only when all of these hold:

1. the validation window is at least ``min_val_days`` (7: every weekday once; the weekday is
   a feature) and the series has at least ``min_train_days`` of history before it (14: twice
   the longest lag, one week, so at least half the training rows carry every feature);
2. its SMAPE averaged over the leads CES reads is at least ``margin`` (10 %) below
   persistence's on the validation window;
3. its SMAPE is not above persistence's at any single one of those leads.

Among the candidates that pass, the lowest mean SMAPE wins (a tie goes to the simpler,
``seasonal``). The margin is a round value fixed before any measurement, not fitted: a learnt
model can fail where persistence cannot (a level or pattern it never saw), so a gain smaller
than a tenth of persistence's error does not pay for that risk. Condition 3 asks on the
validation window what the acceptance check (docs/helios-ces.md) asks on the test days: a
model that already loses at some lead there is not trusted to win later. When persistence is
exact on the validation window (SMAPE 0) nothing can beat it and it is kept.

The paper is silent on all of this: §4.3.2 reports that GBDT did better than ARIMA, Prophet and
LSTM and uses it, with no persistence baseline, no validation protocol and no fallback. §6.1
says the accuracy "is mainly determined by" the size of the training set and "the seasonal
utilization trends of the cluster", which is what conditions 1 and 2 guard.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError
from schedlab.predict.node_demand import ForecastConfig, NodeDemandForecaster, smape

FORECASTERS = ("gbdt", "last", "seasonal")
PERSISTENCE = "last"
CANDIDATES = ("seasonal", "gbdt")  # simplest first: ties between candidates go to the first


def baseline(steps: pd.DataFrame, name: str, lead: int, day_steps: int) -> pd.Series:
    """Forecast of ``peak`` at every step made ``lead`` steps ahead by a baseline."""
    y = steps["peak"]
    if name == "last":
        return y.shift(lead)
    if name == "seasonal":
        if lead > day_steps:
            raise ConfigError(f"the seasonal-naive forecast reaches {day_steps} steps ahead, asked for {lead}")
        return y.shift(day_steps)
    raise ConfigError(f"unknown baseline {name!r}: last or seasonal")


def rolling_gbdt(
    series: Mapping[str, pd.DataFrame],
    start: pd.Timestamp,
    end: pd.Timestamp,
    leads: Sequence[int],
    *,
    seed: int,
    config: ForecastConfig | None = None,
    holidays: Iterable[str | pd.Timestamp] = (),
    refit: str = "1D",
) -> dict[str, pd.DataFrame]:
    """GBDT forecasts with origins in ``[start, end)``: one model per ``refit`` block, fitted on
    every series of ``series`` up to the block's start. Per series a frame indexed by target
    step, one column per lead (NaN where the origin lies outside the period)."""
    config = config or ForecastConfig()
    if max(leads) > config.lead_steps:
        raise ConfigError(f"leads reach {max(leads)} steps, the forecaster {config.lead_steps}")
    step = pd.Timedelta(config.step)
    out = {name: pd.DataFrame(np.nan, index=s.index, columns=list(leads)) for name, s in series.items()}
    for block in pd.date_range(start, end, freq=refit, inclusive="left"):
        block_end = min(block + pd.Timedelta(refit), end)
        model = NodeDemandForecaster(config, seed=seed, holidays=holidays)
        model.fit([s[s.index <= block] for s in series.values()])
        for name, s in series.items():
            for lead in leads:
                origin = s.index - lead * step
                rows = (origin >= block) & (origin < block_end)
                if rows.any():
                    out[name].loc[rows, lead] = model.predict(s, lead).to_numpy()[rows]
    return out


@dataclass(frozen=True)
class Score:
    """SMAPE (%) and MAE (nodes) of one forecaster on one series at one lead."""

    series: str
    lead: int
    forecaster: str
    smape: float
    mae: float
    n: int


def score(
    series: Mapping[str, pd.DataFrame],
    gbdt: Mapping[str, pd.DataFrame],
    start: pd.Timestamp,
    end: pd.Timestamp,
    leads: Sequence[int],
    day_steps: int,
    step: str = "10min",
) -> list[Score]:
    """Every forecaster on every series and lead, on the targets whose origin lies in
    ``[start, end)`` and where all three forecasts and the actual value are known."""
    rows: list[Score] = []
    delta = pd.Timedelta(step)
    for name, s in series.items():
        for lead in leads:
            origin = s.index - lead * delta
            preds = {"gbdt": gbdt[name][lead], **{b: baseline(s, b, lead, day_steps) for b in ("last", "seasonal")}}
            keep = (origin >= start) & (origin < end) & s["peak"].notna().to_numpy()
            for p in preds.values():
                keep &= p.notna().to_numpy()
            if not keep.any():
                raise ConfigError(f"no forecast to score for {name} at lead {lead} in {start} .. {end}")
            actual = s["peak"].to_numpy()[keep]
            for fname, p in preds.items():
                values = p.to_numpy()[keep]
                rows.append(Score(name, lead, fname, smape(values, actual), float(np.mean(np.abs(values - actual))),
                                  int(keep.sum())))  # fmt: skip
    return rows


@dataclass(frozen=True)
class ChoiceRule:
    """When a candidate replaces last-value persistence (the module docstring gives the why).

    ``margin``: relative SMAPE gain over persistence on the validation window, averaged over
    the leads; ``min_val_days`` / ``min_train_days``: the shortest validation window and
    history before it on which a candidate is considered at all."""

    margin: float = 0.10
    min_val_days: float = 7.0
    min_train_days: float = 14.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.margin < 1.0:
            raise ConfigError(f"the choice margin must lie in [0, 1), got {self.margin:g}")
        if self.min_val_days < 0 or self.min_train_days < 0:
            raise ConfigError("min_val_days and min_train_days must be >= 0")

    def too_little_data(self, val_days: float, train_days: float) -> str | None:
        """Why persistence is kept without looking at scores, or None when there is enough data."""
        if val_days < self.min_val_days:
            return f"last value kept: the validation window is {val_days:.1f} days (the rule needs {self.min_val_days:g})"
        if train_days < self.min_train_days:
            return (f"last value kept: {train_days:.1f} days of history before the validation window "
                    f"(the rule needs {self.min_train_days:g})")  # fmt: skip
        return None


@dataclass(frozen=True)
class Choice:
    """The forecaster chosen for one series, why, and the validation SMAPE (averaged over the
    leads) of each forecaster (empty when the window was too short to score)."""

    forecaster: str
    reason: str
    validation_smape: dict[str, float]


def choose(
    scores: Iterable[Score], rule: ChoiceRule, *, val_days: float, train_days: Mapping[str, float]
) -> dict[str, Choice]:
    """Apply ``rule`` to the validation ``scores`` of every series in ``train_days`` (its days
    of history before a validation window of ``val_days``)."""
    table = pd.DataFrame([vars(s) for s in scores])
    chosen: dict[str, Choice] = {}
    for name, days in train_days.items():
        short = rule.too_little_data(val_days, days)
        if short is not None:
            chosen[name] = Choice(PERSISTENCE, short, {})
            continue
        rows = table[table["series"] == name] if not table.empty else table
        if rows.empty:
            raise ConfigError(f"no validation scores for {name} to choose a forecaster from")
        chosen[name] = decide(rows.pivot_table(index="lead", columns="forecaster", values="smape"), rule)
    return chosen


def decide(by_lead: pd.DataFrame, rule: ChoiceRule) -> Choice:
    """The rule's conditions 2 and 3 on one series' validation SMAPE (rows: leads, columns:
    forecasters)."""
    mean = {str(f): float(v) for f, v in by_lead.mean().round(9).items()}
    last = by_lead[PERSISTENCE]
    if mean[PERSISTENCE] == 0.0:
        return Choice(PERSISTENCE, "last value kept: it was exact on the validation window", mean)
    margin = f"margin {rule.margin * 100:.0f} %"
    candidates = [f for f in CANDIDATES if f in by_lead.columns]
    gain = {f: 1.0 - mean[f] / mean[PERSISTENCE] for f in candidates}
    worse = {f: by_lead.index[by_lead[f].round(9) > last.round(9)].tolist() for f in candidates}
    passed = [f for f in candidates if gain[f] >= rule.margin and not worse[f]]
    if passed:
        best = min(passed, key=lambda f: mean[f])  # min keeps the first, simpler one on a tie
        return Choice(best, f"{best} chosen: it beat last value by {gain[best] * 100:.0f} % on validation "
                            f"({margin}) and at every lead", mean)  # fmt: skip
    best = min(candidates, key=lambda f: mean[f])
    if gain[best] <= 0.0:
        why = f"{best} did not beat it on validation ({mean[best]:.2f} % against {mean[PERSISTENCE]:.2f} % SMAPE)"
    elif gain[best] < rule.margin:
        why = f"{best} beat it by only {gain[best] * 100:.0f} % on validation ({margin})"
    else:
        lead = max(worse[best], key=lambda k: by_lead.at[k, best] / last[k])
        why = (f"{best} beat it by {gain[best] * 100:.0f} % on validation on average but lost at {len(worse[best])} "
               f"of {len(by_lead)} leads (worst {lead} step{'s' if lead != 1 else ''} ahead: {by_lead.at[lead, best]:.2f} % against "
               f"{last[lead]:.2f} %)")  # fmt: skip
    return Choice(PERSISTENCE, f"last value kept: {why}", mean)


def validate(
    series: Mapping[str, pd.DataFrame],
    val_start: pd.Timestamp,
    val_end: pd.Timestamp,
    leads: Sequence[int],
    *,
    rule: ChoiceRule,
    seed: int,
    config: ForecastConfig | None = None,
    holidays: Iterable[str | pd.Timestamp] = (),
) -> tuple[dict[str, Choice], list[Score]]:
    """Score the three forecasters rolling-origin on ``[val_start, val_end)`` at ``leads`` and
    choose per series by ``rule``. When the window or every series' history is too short for
    the rule, nothing is fitted and persistence is kept."""
    config = config or ForecastConfig()
    val_days = (val_end - val_start) / pd.Timedelta(days=1)
    train_days = {name: (val_start - s["peak"].first_valid_index()) / pd.Timedelta(days=1) for name, s in series.items()}
    if all(rule.too_little_data(val_days, d) for d in train_days.values()):
        return choose([], rule, val_days=val_days, train_days=train_days), []
    day_steps = round(pd.Timedelta("1D") / pd.Timedelta(config.step))
    gbdt = rolling_gbdt(series, val_start, val_end, leads, seed=seed, config=config, holidays=holidays)
    scores = score(series, gbdt, val_start, val_end, leads, day_steps, config.step)
    return choose(scores, rule, val_days=val_days, train_days=train_days), scores


def forecast_ahead(steps: pd.DataFrame, name: str, count: int, day_steps: int) -> np.ndarray:
    """The next ``count`` steps after the newest one by a baseline (``last`` or ``seasonal``)."""
    y: np.ndarray = steps["peak"].to_numpy(dtype=float)
    if name == "last":
        return np.full(count, y[-1])
    if name == "seasonal":
        if count > day_steps or len(y) < day_steps:
            raise ConfigError(f"the seasonal-naive forecast needs a day of history and reaches {day_steps} steps")
        return y[len(y) - day_steps : len(y) - day_steps + count]
    raise ConfigError(f"unknown baseline {name!r}: last or seasonal")
