"""The forecast comparison's metrics (GFS §4.6.1) and baselines on tiny series with known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.errors import InputError
from schedlab.experiments.forecast_eval import mae, mape, maqe, mse, quantile_loss, score
from schedlab.experiments.forecast_report import reduction_table, summary_table
from schedlab.predict.deepar import DeepAR
from schedlab.predict.demand_baselines import DLinear, LightGBMQuantile, PreviousWeekPeak, SeasonalNaive
from schedlab.predict.demand_series import DemandSeries, from_vc_sequences


def _series(values: dict[str, np.ndarray], start: str = "2025-06-02") -> DemandSeries:
    n = len(next(iter(values.values())))
    return DemandSeries(pd.DataFrame(values, index=pd.date_range(start, periods=n, freq="h")), frozenset(), "t")


def test_point_metrics_on_hand_values() -> None:
    pred, actual = np.array([110.0, 90.0, 5.0]), np.array([100.0, 100.0, 0.0])
    assert mae(pred, actual) == pytest.approx(25 / 3)
    assert mse(pred, actual) == pytest.approx(225 / 3)
    assert mape(pred, actual) == pytest.approx(10.0)  # the zero is below the 1-GPU floor
    row = score(pred, {0.9: pred, 0.95: pred}, actual)
    assert row["rmse"] == pytest.approx(np.sqrt(75.0))


def test_maqe_is_the_normalised_absolute_quantile_error_and_ql_the_pinball_loss() -> None:
    actual = np.array([100.0, 100.0])
    assert maqe(np.array([110.0, 90.0]), actual) == pytest.approx(10 / 100)
    assert maqe(np.array([130.0, 110.0]), actual) == pytest.approx(20 / 100)
    # pinball at 0.9: over by 10 costs 1, under by 10 costs 9; 2 * sum / sum |y|
    assert quantile_loss(np.array([110.0, 90.0]), actual, 0.9) == pytest.approx(2 * 10 / 200)
    assert quantile_loss(np.array([110.0, 110.0]), actual, 0.9) == pytest.approx(2 * 2 / 200)
    assert quantile_loss(np.array([110.0, 110.0]), actual, 0.95) == pytest.approx(2 * 1 / 200)


def test_seasonal_naive_repeats_the_last_season() -> None:
    series = _series({"a": np.arange(1.0, 10.0), "b": 10 * np.arange(1.0, 10.0)})
    f = SeasonalNaive(horizon=4, season=3).predict(series, 6, (0.9,))
    np.testing.assert_array_equal(f.mean, [[4, 5, 6, 4], [40, 50, 60, 40]])
    np.testing.assert_array_equal(f.quantiles[0.9], f.mean)


def test_previous_week_peak_holds_the_peak_of_the_look_back() -> None:
    series = _series({"a": np.array([9.0, 1, 5, 2, 3, 0, 7, 7])})
    f = PreviousWeekPeak(horizon=3, lookback=4).predict(series, 6, (0.95,))  # hours 2-5: 5, 2, 3, 0
    np.testing.assert_array_equal(f.mean, [[5, 5, 5]])


def test_learnt_baselines_forecast_a_constant_series_as_that_constant() -> None:
    series = _series({"a": np.full(400, 12.0), "b": np.full(400, 3.0)})
    train = series.head(376)
    models = [DLinear(horizon=24, lookback=48, kernel=5, epochs=3, seed=0),
              LightGBMQuantile(horizon=24, lookback=48, stride=12, rounds=10, seed=0),
              DeepAR(horizon=24, context=24, steps=80, samples=50, seed=0)]  # fmt: skip
    for model in models:
        model.fit(train)
        f = model.predict(series, 376, (0.9, 0.95))
        np.testing.assert_allclose(f.mean, [[12.0] * 24, [3.0] * 24], rtol=0.15, err_msg=model.name)
        assert (f.quantiles[0.95] >= f.quantiles[0.9] - 1e-9).all()


def test_deepar_is_deterministic_for_a_seed_and_its_quantiles_are_ordered() -> None:
    rng = np.random.default_rng(1)
    hours = np.arange(400)
    series = _series({"a": 20 + 5 * np.sin(2 * np.pi * hours / 24) + rng.normal(0, 1, 400)})
    runs = []
    for seed in (3, 3, 4):
        model = DeepAR(horizon=12, context=24, steps=30, samples=40, seed=seed)
        model.fit(series.head(380))
        runs.append(model.predict(series, 380, (0.9, 0.95)))
    np.testing.assert_array_equal(runs[0].mean, runs[1].mean)
    np.testing.assert_array_equal(runs[0].quantiles[0.95], runs[1].quantiles[0.95])
    assert not np.array_equal(runs[0].mean, runs[2].mean)
    assert (runs[0].quantiles[0.95] >= runs[0].quantiles[0.9]).all()


def test_vc_sequences_give_hourly_means_of_running_plus_pending(tmp_path: Path) -> None:
    head = "time,running_gpu_num,pending_gpu_num,idle_gpu_num\n"
    for vc, rows in {"vcA": [(0, 4, 0), (30, 4, 4), (60, 2, 0)], "vcB": [(0, 1, 1), (70, 3, 0)]}.items():
        (tmp_path / vc).mkdir()
        lines = [f"2020-05-01 00:{m:02d}:00,{r},{p},0" if m < 60 else f"2020-05-01 01:{m - 60:02d}:00,{r},{p},0" for m, r, p in rows]
        (tmp_path / vc / "cluster_sequence_vc.csv").write_text(head + "\n".join(lines) + "\n")
    s = from_vc_sequences(tmp_path, country="CN")
    assert s.orgs == ["vcA", "vcB"] and len(s) == 2
    np.testing.assert_allclose(s.demand["vcA"], [(4 + 8) / 2, 2])
    np.testing.assert_allclose(s.demand["vcB"], [2, 3])
    assert s.calendar(s.demand.index)["holiday"].tolist() == [1, 1]  # 1 May 2020 is a CN holiday
    (tmp_path / "vcB" / "cluster_sequence_vc.csv").write_text(head + "2020-05-01 00:00:00,-1,0,0\n")
    with pytest.raises(InputError, match="row 1"):
        from_vc_sequences(tmp_path)


def test_report_tables_average_over_seeds_and_count_wins() -> None:
    rows = pd.DataFrame([
        {"seed": s, "model": m, "mae": v, "mse": v, "rmse": v, "mape_pct": v, "maqe_0.9": v, "maqe_0.95": v,
         "ql_0.9": v, "ql_0.95": v, "train_s": 1.0}
        for s, pairs in ((0, (("OrgLinear (GDE)", 1.0), ("DeepAR (LSTM)", 2.0))), (1, (("OrgLinear (GDE)", 3.0), ("DeepAR (LSTM)", 2.0))))
        for m, v in pairs
    ])  # fmt: skip
    table = summary_table(rows)
    assert "| OrgLinear (GDE) | 2.000 ± 1.414 |" in table and "| DeepAR (LSTM) | 2.000 ± 0.000 |" in table
    assert "| MAE | 2 | 2 (DeepAR (LSTM)) | +0.0 % | 1 of 2 | -24.30 % vs second best |" in reduction_table(rows)
