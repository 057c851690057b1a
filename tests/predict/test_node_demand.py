"""Node-demand forecaster of the CES service: SMAPE, skill on a diurnal series, determinism."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedlab.errors import ConfigError
from schedlab.predict.node_demand import NodeDemandForecaster, resample_demand, smape


def test_smape_hand_example() -> None:
    # terms: 2*10/210, 0, and 0/0 counted as a perfect hit -> mean 0.031746 -> 3.1746 %
    assert smape([100.0, 50.0, 0.0], [110.0, 50.0, 0.0]) == pytest.approx(100 * (20 / 210) / 3)
    assert smape([0.0], [5.0]) == pytest.approx(200.0)
    with pytest.raises(ConfigError):
        smape([1.0], [1.0, 2.0])


def _diurnal(days: int, seed: int) -> pd.Series:
    idx = pd.date_range("2021-03-01", periods=days * 144, freq="10min")
    phase = 2 * np.pi * (idx.hour * 60 + idx.minute).to_numpy() / 1440
    noise = np.random.default_rng(seed).normal(0, 2, len(idx))
    return pd.Series(np.round(60 + 30 * np.sin(phase) + noise), index=idx)


def test_beats_naive_last_value_on_diurnal_series_and_is_deterministic() -> None:
    y = _diurnal(16, seed=3)
    test = 3 * 144
    model = NodeDemandForecaster(seed=0).fit(y.iloc[:-test])
    pred = model.predict(y, lead=18).iloc[-test:]  # each row from values 18 steps (3 h) older
    naive = y.shift(18).iloc[-test:]
    actual = y.iloc[-test:]
    assert smape(pred, actual) < 0.6 * smape(naive, actual)  # persistence misses the daily swing
    again = NodeDemandForecaster(seed=0).fit(y.iloc[:-test]).predict(y, lead=18).iloc[-test:]
    pd.testing.assert_series_equal(pred, again)


def test_forecast_follows_history_end_and_rejects_long_horizons() -> None:
    y = _diurnal(8, seed=1)
    model = NodeDemandForecaster(seed=0).fit(y)
    out = model.forecast(y, 6)
    assert len(out) == 6 and out.index[0] == y.index[-1] + pd.Timedelta("10min")
    with pytest.raises(ConfigError):
        model.forecast(y, model.config.lead_steps + 1)


def test_resample_labels_each_step_by_its_end() -> None:
    idx = pd.date_range("2021-01-01 00:01", periods=20, freq="1min")
    out = resample_demand(pd.Series(np.arange(20.0), index=idx))
    assert out.loc[pd.Timestamp("2021-01-01 00:10")] == 9.0  # minutes 00:01..00:10
