"""Rolling-origin evaluation of the CES forecaster and the rule that chooses it per series."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedlab.errors import ConfigError
from schedlab.experiments.ces_forecast import forecast_plan, periods
from schedlab.predict.node_demand import ForecastConfig, as_steps
from schedlab.predict import node_demand_eval
from schedlab.predict.node_demand_eval import (ChoiceRule, Score, baseline, choose, forecast_ahead, rolling_gbdt,
                                               score)

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


def _rows(name: str, by_lead: dict[int, tuple[float, float, float]]) -> list[Score]:
    """Validation scores of one series: per lead the SMAPE of gbdt, last and seasonal."""
    return [Score(name, lead, f, v, 0.1, 100) for lead, values in by_lead.items()
            for f, v in zip(("gbdt", "last", "seasonal"), values)]  # fmt: skip


ROWS = (_rows("narrow", {1: (1.94, 2.0, 9.0), 6: (3.88, 4.0, 9.0)})  # 3 % better at both leads
        + _rows("wide", {1: (1.6, 2.0, 9.0), 6: (3.2, 4.0, 9.0)})  # 20 % better at both leads
        + _rows("one_lead", {1: (2.4, 2.0, 9.0), 6: (1.0, 4.0, 9.0)})  # 43 % better on average, worse at lead 1
        + _rows("exact", {1: (0.0, 0.0, 0.0), 6: (0.0, 0.0, 0.0)})
        + _rows("tie", {1: (1.0, 2.0, 1.0), 6: (2.0, 4.0, 2.0)}))  # fmt: skip
ENOUGH = {"train_days": 14.0, "val_days": 7.0}


def test_rule_keeps_the_last_value_unless_a_candidate_wins_by_the_margin_at_every_lead() -> None:
    names = ("narrow", "wide", "one_lead", "exact", "tie")
    got = choose(ROWS, ChoiceRule(), val_days=7.0, train_days={n: 14.0 for n in names})
    assert {n: c.forecaster for n, c in got.items()} == {"narrow": "last", "wide": "gbdt", "one_lead": "last",
                                                         "exact": "last", "tie": "seasonal"}  # fmt: skip
    assert got["narrow"].reason == "last value kept: gbdt beat it by only 3 % on validation (margin 10 %)"
    assert got["wide"].reason.startswith("gbdt chosen: it beat last value by 20 %")
    assert "lost at 1 of 2 leads (worst 1 step ahead: 2.40 % against 2.00 %)" in got["one_lead"].reason
    assert got["narrow"].validation_smape == pytest.approx({"gbdt": 2.91, "last": 3.0, "seasonal": 9.0})
    # without the margin and the every-lead condition the narrow and the one-lead winners would replace it
    loose = choose(ROWS, ChoiceRule(margin=0.0), val_days=7.0, train_days={"narrow": 14.0, "one_lead": 14.0})
    assert loose["narrow"].forecaster == "gbdt" and loose["one_lead"].forecaster == "last"


def test_a_short_validation_window_or_history_keeps_the_last_value() -> None:
    rule = ChoiceRule()
    short_val = choose(ROWS, rule, val_days=2.0, train_days={"wide": 30.0})["wide"]
    assert short_val.forecaster == "last" and "validation window is 2.0 days (the rule needs 7)" in short_val.reason
    short_train = choose(ROWS, rule, val_days=7.0, train_days={"wide": 5.0})["wide"]
    assert short_train.forecaster == "last" and "5.0 days of history" in short_train.reason
    assert choose(ROWS, ChoiceRule(min_val_days=2.0, min_train_days=5.0), val_days=2.0,
                  train_days={"wide": 5.0})["wide"].forecaster == "gbdt"  # fmt: skip


def test_validate_fits_nothing_when_the_window_is_too_short(monkeypatch) -> None:
    def no_fit(*args, **kwargs):
        raise AssertionError("a forecaster was fitted for a window the rule rejects")

    monkeypatch.setattr(node_demand_eval, "rolling_gbdt", no_fit)
    s = {"cycle": _steps(_diurnal(10, seed=0))}
    choices, scores = node_demand_eval.validate(s, pd.Timestamp("2021-03-08"), pd.Timestamp("2021-03-10"), [1, 6],
                                                rule=ChoiceRule(), seed=0, config=SMALL)  # fmt: skip
    assert scores == [] and choices["cycle"].forecaster == "last" and choices["cycle"].validation_smape == {}


def test_forecast_ahead_by_hand() -> None:
    s = _steps(np.arange(300.0))
    np.testing.assert_array_equal(forecast_ahead(s, "last", 3, DAY), [299.0] * 3)
    np.testing.assert_array_equal(forecast_ahead(s, "seasonal", 3, DAY), [300.0 - DAY, 301.0 - DAY, 302.0 - DAY])


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


def test_the_rule_chooses_gbdt_on_a_daily_cycle_and_keeps_persistence_on_a_random_walk() -> None:
    # default rule, enough data for it: 14 days of history, 7 of validation, 1 of test
    series = {"cycle": _steps(_diurnal(22, seed=2)), "walk": _steps(_random_walk(22, seed=3))}
    val_start, test_start, test_end = periods(series["walk"].index, 1.0, 7.0)
    plan = forecast_plan(series, val_start, test_start, test_end, seed=0, future_steps=6, config=SMALL)
    assert plan.chosen == {"cycle": "gbdt", "walk": "last"}
    assert plan.choices["cycle"].reason.startswith("gbdt chosen")
    assert plan.choices["walk"].reason.startswith("last value kept")
    # the walk's CES forecast is the last value at every lead, the cycle's the model's
    walk = plan.ahead["walk"]
    for k in range(6):
        expected = baseline(series["walk"], "last", k + 1, DAY).reindex(walk.index)
        np.testing.assert_array_equal(walk[k].to_numpy(), expected.to_numpy())
    cycle = plan.ahead["cycle"]
    last = baseline(series["cycle"], "last", 6, DAY).reindex(cycle.index)
    assert not np.array_equal(cycle[5].dropna().to_numpy(), last[cycle[5].notna()].to_numpy())
