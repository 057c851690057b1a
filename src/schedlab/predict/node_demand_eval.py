"""Rolling-origin evaluation of node-demand forecasters and the per-series fallback choice.

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

**Fallback.** :func:`choose` scores the three on a validation period before the test period
and keeps, per series, the one with the lowest SMAPE averaged over the leads; a tie goes to the
simpler one (``last``, then ``seasonal``). The CES service then uses that forecaster for that
series and reports the choice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError
from schedlab.predict.node_demand import ForecastConfig, NodeDemandForecaster, smape

FORECASTERS = ("gbdt", "last", "seasonal")
PREFERENCE = ("last", "seasonal", "gbdt")  # the order ties are broken in


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


def choose(scores: Iterable[Score]) -> dict[str, str]:
    """Per series, the forecaster with the lowest SMAPE averaged over the leads (ties to the
    simpler one, in :data:`PREFERENCE` order)."""
    table = pd.DataFrame([vars(s) for s in scores])
    if table.empty:
        raise ConfigError("no validation scores to choose a forecaster from")
    mean = table.groupby(["series", "forecaster"])["smape"].mean().round(9)
    chosen: dict[str, str] = {}
    for name, by in mean.groupby(level="series"):
        by = by.droplevel("series")
        best = by.min()
        chosen[str(name)] = next(f for f in PREFERENCE if f in by.index and by[f] == best)
    return chosen
