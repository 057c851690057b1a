"""Rolling-origin evaluation of the CES forecaster and the per-series fallback choice."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedlab.errors import ConfigError
from schedlab.experiments.ces_forecast import forecast_plan, periods
from schedlab.predict.node_demand import ForecastConfig, as_steps
from schedlab.predict.node_demand_eval import Score, baseline, choose, rolling_gbdt, score

SMALL = ForecastConfig(rounds=20, lags_steps=(144,), windows_steps=(6, 18), train_leads=(1, 6, 18))
DAY = 144


def _steps(values: np.ndarray, start: str = "2021-03-01") -> pd.DataFrame:
    idx = pd.date_range(start, periods=len(values), freq="10min")
    return as_steps(pd.Series(values.astype(float), index=idx))


def _diurnal(days: int, seed: int) -> np.ndarray:
    t = np.arange(days * DAY)
    noise = np.random.default_rng(seed).normal(0, 1.5, t.size)
    return np.round(40 + 20 * np.sin(2 * np.pi * t / DAY) + noise)


def _random_walk(days: int, seed: int) -> np.ndarray:
    """Steps of a random walk with rare jumps: nothing but the newest value predicts it."""
    rng = np.random.default_rng(seed)
    jumps = rng.choice([-3.0, 0.0, 3.0], size=days * DAY, p=[0.05, 0.9, 0.05])
    return np.clip(60 + np.cumsum(jumps), 5, None)


def test_baselines_by_hand() -> None:
    s = _steps(np.arange(300.0))
    assert baseline(s, "last", 6, DAY).iloc[200] == 194.0  # the value 6 steps before
    assert baseline(s, "seasonal", 6, DAY).iloc[200] == 200.0 - DAY  # same time a day before
    with pytest.raises(ConfigError):
        baseline(s, "seasonal", DAY + 1, DAY)


def test_choose_takes_the_lowest_mean_smape_and_ties_to_the_simpler() -> None:
    rows = [Score("a", 1, "gbdt", 1.0, 0.1, 10), Score("a", 6, "gbdt", 3.0, 0.1, 10),
            Score("a", 1, "last", 1.5, 0.1, 10), Score("a", 6, "last", 2.0, 0.1, 10),  # mean 1.75 < 2.0
            Score("a", 1, "seasonal", 9.0, 0.1, 10), Score("a", 6, "seasonal", 9.0, 0.1, 10),
            Score("b", 1, "gbdt", 1.0, 0.1, 10), Score("b", 1, "last", 2.0, 0.1, 10),
            Score("b", 1, "seasonal", 3.0, 0.1, 10),
            Score("c", 1, "gbdt", 2.0, 0.1, 10), Score("c", 1, "last", 2.0, 0.1, 10),
            Score("c", 1, "seasonal", 2.0, 0.1, 10)]  # fmt: skip
    assert choose(rows) == {"a": "last", "b": "gbdt", "c": "last"}


def test_rolling_origin_has_no_look_ahead() -> None:
    values = _diurnal(8, seed=0)
    start, end = pd.Timestamp("2021-03-07"), pd.Timestamp("2021-03-09")
    base = {"s": _steps(values)}
    changed = values.copy()
    cut = base["s"].index.get_loc(pd.Timestamp("2021-03-08 06:00"))
    changed[cut + 1 :] += 500.0  # everything after 06:00 on the second test day
    moved = {"s": _steps(changed)}
    a = rolling_gbdt(base, start, end, [1, 6], seed=0, config=SMALL)["s"]
    b = rolling_gbdt(moved, start, end, [1, 6], seed=0, config=SMALL)["s"]
    step = pd.Timedelta("10min")
    for lead in (1, 6):
        origin = a.index - lead * step
        before = (origin <= base["s"].index[cut]) & a[lead].notna().to_numpy()
        after = (origin > base["s"].index[cut]) & a[lead].notna().to_numpy()
        assert before.sum() > 100 and after.sum() > 50
        # forecasts issued up to 06:00 cannot see the change; later ones do
        np.testing.assert_array_equal(a[lead].to_numpy()[before], b[lead].to_numpy()[before])
        assert not np.array_equal(a[lead].to_numpy()[after], b[lead].to_numpy()[after])
        # and only origins inside the evaluated period are filled
        assert a[lead][(origin < start) | (origin >= end)].isna().all()


def test_gbdt_beats_persistence_where_a_daily_cycle_predicts() -> None:
    s = {"s": _steps(_diurnal(8, seed=1))}
    start, end = pd.Timestamp("2021-03-07"), pd.Timestamp("2021-03-09")
    gbdt = rolling_gbdt(s, start, end, [6, 18], seed=0, config=SMALL)
    by = {(r.lead, r.forecaster): r.smape for r in score(s, gbdt, start, end, [6, 18], DAY)}
    assert by[(18, "gbdt")] < 0.7 * by[(18, "last")]
    assert by[(6, "gbdt")] < by[(6, "last")]


def test_fallback_to_persistence_is_chosen_and_used() -> None:
    # one diurnal series (GBDT wins) and one random walk (persistence wins), trained together
    series = {"cycle": _steps(_diurnal(9, seed=2)), "walk": _steps(_random_walk(9, seed=3))}
    val_start, test_start, test_end = periods(series["walk"].index, 1.0, 2.0)
    plan = forecast_plan(series, val_start, test_start, test_end, seed=0, future_steps=6, config=SMALL)
    assert plan.chosen == {"cycle": "gbdt", "walk": "last"}
    # the walk's CES forecast is the last value at every lead, the cycle's the model's
    walk = plan.ahead["walk"]
    for k in range(6):
        expected = baseline(series["walk"], "last", k + 1, DAY).reindex(walk.index)
        np.testing.assert_array_equal(walk[k].to_numpy(), expected.to_numpy())
    cycle = plan.ahead["cycle"]
    last = baseline(series["cycle"], "last", 6, DAY).reindex(cycle.index)
    assert not np.array_equal(cycle[5].dropna().to_numpy(), last[cycle[5].notna()].to_numpy())
