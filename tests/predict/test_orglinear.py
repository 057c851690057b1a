"""OrgLinear (GFS GDE, §3.2), its demand series, baselines, metrics and the forecast command."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.errors import ConfigError, InputError
from schedlab.predict.demand_baselines import SeasonalNaive
from schedlab.experiments.forecast_eval import mae
from schedlab.predict.demand_series import DemandSeries, calendar_features, from_csv, from_workload, holiday_set
from schedlab.predict.orglinear import OrgLinear, OrgLinearConfig, SeriesDecomposition
from schedlab.workload.schema import Workload, canonical_frame


def _daily_series(days: int = 30, seed: int = 0) -> DemandSeries:
    """Three organisations with a clear daily cycle of different size and phase, plus noise."""
    rng = np.random.default_rng(seed)
    hours = np.arange(24 * days)
    cols = {}
    for k, (level, amp, phase) in enumerate(((40.0, 20.0, 0), (15.0, 8.0, 6), (80.0, 30.0, 12))):
        cols[f"org{k}"] = level + amp * np.sin(2 * np.pi * (hours - phase) / 24) + rng.normal(0, 2.0, hours.size)
    index = pd.date_range("2025-06-02", periods=hours.size, freq="h")
    return DemandSeries(pd.DataFrame(cols, index=index).clip(lower=0), frozenset(), "test")


def test_decomposition_keeps_length_and_reconstructs() -> None:
    x = torch.randn(5, 168, generator=torch.Generator().manual_seed(0))
    trend, cycle = SeriesDecomposition(25)(x)
    assert trend.shape == x.shape == cycle.shape
    torch.testing.assert_close(trend + cycle, x)


def test_decomposition_pads_by_reflection() -> None:
    trend, _ = SeriesDecomposition(3)(torch.tensor([[1.0, 2.0, 4.0]]))
    # reflect-padded [2, 1, 2, 4, 2]; 3-point means
    torch.testing.assert_close(trend, torch.tensor([[5 / 3, 7 / 3, 8 / 3]]))
    with pytest.raises(ConfigError):
        SeriesDecomposition(4)


def test_orglinear_learns_a_daily_cycle_and_beats_seasonal_naive() -> None:
    series = _daily_series()
    test = 72
    config = OrgLinearConfig(lookback=96, horizon=24, epochs=25, stride=2, batch_size=256, learning_rate=3e-3)
    model = OrgLinear(config, seed=3).fit(series.head(len(series) - test))
    assert model.losses[-1] < model.losses[0]
    naive = SeasonalNaive(horizon=24, season=24)
    ours, theirs = [], []
    for end in range(len(series) - test, len(series), 24):
        truth = series.values[:, end : end + 24]
        f = model.forecast(series, end)
        assert (f.var > 0).all()
        ours.append(mae(f.mean, truth))
        theirs.append(mae(naive.predict(series, end, (0.9,)).mean, truth))
    assert np.mean(ours) < np.mean(theirs)


def test_upper_bound_grows_with_p_and_training_is_deterministic() -> None:
    series = _daily_series(days=14)
    config = OrgLinearConfig(lookback=48, horizon=12, epochs=3, stride=4)
    a = OrgLinear(config, seed=1).fit(series).forecast(series)
    b = OrgLinear(config, seed=1).fit(series).forecast(series)
    np.testing.assert_array_equal(a.mean, b.mean)
    bounds = [a.upper_bound(p).to_numpy() for p in (0.5, 0.8, 0.9, 0.95, 0.99)]
    assert all((hi >= lo).all() for lo, hi in zip(bounds, bounds[1:]))
    assert (bounds[-1] > bounds[0]).any()
    top = a.upper_bound(0.9)
    assert list(top.columns) == series.orgs and len(top) == 12 and top.index[0] == series.demand.index[-1] + pd.Timedelta(hours=1)
    with pytest.raises(ConfigError):
        a.upper_bound(1.0)


def test_demand_series_counts_partial_hours_and_classes() -> None:
    jobs = pd.DataFrame({
        "job_id": ["a", "b", "c"], "submit_s": [1800.0, 0.0, 10800.0], "num_gpus": [2.0, 8.0, 1.0],
        "duration_s": [5400.0, 3600.0, 60.0], "tenant": ["x", "y", "x"], "priority_class": ["hp", "spot", "hp"],
    })  # fmt: skip
    w = Workload(canonical_frame(jobs, source="t"), source="t", origin=pd.Timestamp("2025-06-02"))
    hp = from_workload(w, country="CN")
    assert hp.orgs == ["x", "y"] and len(hp) == 3
    np.testing.assert_allclose(hp.demand["x"].to_numpy(), [1.0, 2.0, 0.0])
    np.testing.assert_allclose(hp.demand["y"].to_numpy(), [0.0, 0.0, 0.0])
    every = from_workload(w, classes=None)
    np.testing.assert_allclose(every.demand["y"].to_numpy(), [8.0, 0.0, 0.0])
    cal = hp.calendar(hp.demand.index)
    assert cal["holiday"].tolist() == [1, 1, 1] and cal["weekday"].tolist() == [0, 0, 0]
    assert calendar_features(pd.date_range("2025-06-03", periods=2, freq="h"), holiday_set("CN"))["holiday"].sum() == 0


def test_demand_csv_errors_name_the_row(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("time,org,gpus\n2025-01-01 00:00,a,3\nyesterday,a,4\n")
    with pytest.raises(InputError, match="row 2"):
        from_csv(path)
    path.write_text("time,org\n2025-01-01 00:00,a\n")
    with pytest.raises(InputError, match="gpus"):
        from_csv(path)


def test_forecast_command_writes_the_table(tmp_path: Path) -> None:
    series = _daily_series(days=20)
    rows = series.demand.stack().rename("gpus").reset_index()
    rows.columns = ["time", "org", "gpus"]
    csv = tmp_path / "demand.csv"
    rows.to_csv(csv, index=False)
    out = tmp_path / "fc"
    result = CliRunner().invoke(app, ["forecast", "--series", str(csv), "--out", str(out), "--epochs", "2",
                                      "--lookback", "48", "--test-days", "2", "--seeds", "2", "--deepar-steps", "5", "--min-steps", "0"])  # fmt: skip
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "forecast_comparison.csv")
    assert table["model"].tolist()[0] == "OrgLinear (GDE)" and len(table) == 12 and set(table["seed"]) == {0, 1}
    assert {"mae", "mape_pct", "maqe_0.9", "maqe_0.95", "ql_0.9", "ql_0.95", "train_s"} <= set(table.columns)
    md = (out / "forecast_comparison.md").read_text()
    assert "0.9-MAQE" in md and "28,610.1" in md and "seeds 0, 1" in md
    assert list(out.glob("forecast_*.png"))
    bad = CliRunner().invoke(app, ["forecast", "--out", str(out)])
    assert bad.exit_code == 2 and "exactly one of" in bad.output
