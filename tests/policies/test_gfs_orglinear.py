"""GFS with OrgLinear inside the simulation: no look-ahead, fallback, and gfs != gfs-e."""

from __future__ import annotations

import pandas as pd
import pytest

from schedlab.cluster.spec import ClusterSpec, NodeSpec, gpu_type
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.policies.gfs import build_gfs, forecast
from schedlab.policies.gfs.forecast import OnlineSettings, OrgLinearForecaster
from schedlab.policies.gfs.sqa import WeeklyPeak
from schedlab.predict.demand_series import NOMINAL_START
from schedlab.predict.orglinear import OrgLinearConfig

TINY = OnlineSettings(
    OrgLinearConfig(lookback=6, horizon=4, kernel=3, dim=4, epochs=1, stride=1), retrain_h=5, train_h=20, refresh_h=2
)
KEYS = (("A", "o1"), ("A", "o2"), ("B", "o1"))


def _level(key_no: int, t: float) -> float:
    return float(4 + key_no + (int(t // 1800) % 5))


def _drive(fc: OrgLinearForecaster, from_h: float, until_h: float, peak: WeeklyPeak | None = None) -> None:
    t = from_h * 3600
    while t <= until_h * 3600:
        changes = {k: _level(i, t) for i, k in enumerate(KEYS)}
        fc.observe(t, changes)
        if peak is not None:
            peak.observe(t, changes)
        t += 300.0


def test_trains_only_on_hours_before_now(monkeypatch: pytest.MonkeyPatch) -> None:
    fc = OrgLinearForecaster(TINY, seed=3)
    seen: list[tuple[float, pd.Timestamp]] = []
    fit = forecast.OrgLinear.fit

    def spy(self, series):  # noqa: ANN001, ANN202
        seen.append((fc.now, series.demand.index[-1]))
        return fit(self, series)

    monkeypatch.setattr(forecast.OrgLinear, "fit", spy)
    _drive(fc, 0, 30)
    assert len(seen) == len(fc.trained_hours) >= 4
    for now, last_hour in seen:  # the last hour in training ends no later than now
        assert last_hour + pd.Timedelta(hours=1) <= NOMINAL_START + pd.Timedelta(seconds=now)
    assert fc.trained_hours[0] == TINY.model.lookback + TINY.model.horizon
    assert all(b - a == TINY.retrain_h for a, b in zip(fc.trained_hours, fc.trained_hours[1:]))


def test_falls_back_to_the_weekly_peak_before_enough_history() -> None:
    fc, peak = OrgLinearForecaster(TINY, seed=0), WeeklyPeak()
    _drive(fc, 0, 9.5, peak)  # 9 complete hours < lookback + horizon = 10
    assert fc.model is None
    assert fc.upper_bound(0.9, 1.0) == peak.upper_bound(0.9, 1.0)
    _drive(fc, 9.5 + 1 / 12, 12, peak)
    assert fc.model is not None
    bounds = fc.upper_bound(0.9, 1.0)
    assert set(bounds) == set(KEYS) and bounds != peak.upper_bound(0.9, 1.0)
    assert all(v >= 0 for v in bounds.values())


def test_model_bounds_pool_the_organisations_or_sum_their_quantiles() -> None:
    from dataclasses import replace
    from statistics import NormalDist

    import numpy as np

    pooled = OrgLinearForecaster(replace(TINY, pooling="model"), seed=0)
    summed = OrgLinearForecaster(TINY, seed=0)  # the default: eq. 9's sum
    for fc in (pooled, summed):
        _drive(fc, 0, 12)
    per_key = summed.upper_bound(0.9, 1.0)
    assert summed.model_bounds(0.9, 1.0) == pytest.approx({"A": per_key[KEYS[0]] + per_key[KEYS[1]], "B": per_key[KEYS[2]]})
    f, first, last = pooled._window(1.0)
    rows = [i for i, col in enumerate(f.orgs) if KEYS[int(col)][0] == "A"]
    z = NormalDist().inv_cdf(0.9)
    expect = (f.mean[rows].sum(axis=0) + z * np.sqrt(f.var[rows].sum(axis=0)))[first : last + 1].max()
    bounds = pooled.model_bounds(0.9, 1.0)
    assert bounds["A"] == pytest.approx(max(expect, 0.0))
    assert bounds["A"] < per_key[KEYS[0]] + per_key[KEYS[1]]  # pooling is tighter than summing quantiles


def test_variants_pick_their_forecaster() -> None:
    assert build_gfs("gfs", seed=1).forecaster.name == "orglinear"
    assert build_gfs("gfs-e").forecaster.name == "weekly-peak"
    assert build_gfs("gfs-d").forecaster.name == "orglinear"
    assert build_gfs("gfs", {"forecaster": "weekly-peak"}).forecaster.name == "weekly-peak"


def test_gfs_differs_from_gfs_e_once_trained() -> None:
    wspec = WorkloadSpec(synthetic="gfs-a100", jobs=4000, seed=2, options={"spot_scale": 4})  # 2.2 days
    out = {p: simulate_run(RunSpec(wspec, "gfs-a100", p, seed=2), None) for p in ("gfs", "gfs-e")}
    assert out["gfs"]["gfs"]["forecaster"] == "orglinear"
    assert out["gfs"]["gfs"]["forecaster_trainings"] > 0
    spot = {p: (s["classes"]["spot"]["queue_mean_s"], s["gfs"]["bound_over_peak"]) for p, s in out.items()}
    assert spot["gfs"] != spot["gfs-e"]
