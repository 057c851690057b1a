"""Compare GPU-demand forecasters as in GFS (Duan et al., ASPLOS '26, §4.6.1: Figure 10, Table 7).

Protocol: the last ``test_hours`` of the series are held out; every model trains on the hours
before them only; then, from each forecast origin every ``horizon`` hours of the test span, it
forecasts the next ``horizon`` hours from the true history up to that origin (rolling origin,
no refit, nothing after the origin is seen). Errors are taken over every organisation, origin
and lead. :func:`compare_seeds` repeats this for several seeds (a new synthetic trace and new
training seeds per seed, or only new training seeds for fixed data).

Metrics (§4.6.1):

* MAE, MSE, RMSE of the mean (point) forecast, in GPUs and GPUs²;
* MAPE in percent over the entries whose true demand is at least ``mape_floor`` GPUs (entries
  near zero would make it infinite);
* p-MAQE at p = 0.9 and 0.95, as the paper describes it: the mean absolute error between the
  predicted p-quantile and the actual value, ``mean |q_p - y|``, normalised by the mean actual
  demand ``mean |y|`` (the paper's values, 0.026-0.078, are normalised; its normalisation is
  not stated; this one makes the value independent of the cluster's size);
* p-QL: the normalised quantile (pinball) loss of DeepAR's evaluation,
  ``2 sum max(p (y - q), (p - 1)(y - q)) / sum |y|``. The paper's Table 7 has 0.95-MAQE below
  0.9-MAQE for both models; an absolute error grows as the quantile moves away from the
  centre, a pinball loss usually shrinks, so the paper's numbers may be this quantity.

Point models are scored with their point forecast as every quantile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError
from schedlab.predict.demand_series import DemandSeries
from schedlab.predict.orglinear import OrgForecast, OrgLinear, OrgLinearConfig

if TYPE_CHECKING:  # the baselines import torch and lightgbm
    from schedlab.predict.demand_baselines import QuantileForecast

LEVELS = (0.9, 0.95)
METRICS = ("mae", "mse", "rmse", "mape_pct", "maqe_0.9", "maqe_0.95", "ql_0.9", "ql_0.95", "train_s")
ORGLINEAR = "OrgLinear (GDE)"


class DemandModel(Protocol):
    """What the comparison needs of a forecaster."""

    name: str
    train_seconds: float

    def fit(self, train: DemandSeries) -> None: ...

    def predict(self, series: DemandSeries, end: int, levels: tuple[float, ...]) -> QuantileForecast: ...


def _arrays(pred: np.ndarray, actual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(pred, float), np.asarray(actual, float)


def mae(pred: np.ndarray, actual: np.ndarray) -> float:
    p, a = _arrays(pred, actual)
    return float(np.mean(np.abs(p - a)))


def mse(pred: np.ndarray, actual: np.ndarray) -> float:
    p, a = _arrays(pred, actual)
    return float(np.mean((p - a) ** 2))


def mape(pred: np.ndarray, actual: np.ndarray, floor: float = 1.0) -> float:
    """Mean absolute percentage error (%) over entries with ``actual >= floor``; NaN if none."""
    p, a = _arrays(pred, actual)
    keep = a >= floor
    return float(100.0 * np.mean(np.abs(p[keep] - a[keep]) / a[keep])) if keep.any() else float("nan")


def maqe(quantile: np.ndarray, actual: np.ndarray) -> float:
    """p-MAQE of the p-quantile forecast ``quantile``: ``mean |q - y| / mean |y|`` (module doc)."""
    q, a = _arrays(quantile, actual)
    scale = np.mean(np.abs(a))
    if scale == 0:
        raise ConfigError("p-MAQE is undefined when every actual value is zero")
    return float(np.mean(np.abs(q - a)) / scale)


def quantile_loss(quantile: np.ndarray, actual: np.ndarray, p: float) -> float:
    """p-QL: ``2 sum pinball_p(y, q) / sum |y|`` (module doc)."""
    if not 0.0 < p < 1.0:
        raise ConfigError(f"p must lie strictly between 0 and 1 (got {p})")
    q, a = _arrays(quantile, actual)
    scale = np.sum(np.abs(a))
    if scale == 0:
        raise ConfigError("p-QL is undefined when every actual value is zero")
    diff = a - q
    return float(2.0 * np.sum(np.maximum(p * diff, (p - 1.0) * diff)) / scale)


def score(mean: np.ndarray, quantiles: dict[float, np.ndarray], actual: np.ndarray, mape_floor: float = 1.0) -> dict[str, float]:
    """Every metric of the module doc (not ``train_s``) of one model's forecasts."""
    row = {"mae": mae(mean, actual), "mse": mse(mean, actual), "rmse": float(np.sqrt(mse(mean, actual))),
           "mape_pct": mape(mean, actual, mape_floor)}  # fmt: skip
    for p in LEVELS:
        row[f"maqe_{p}"] = maqe(quantiles[p], actual)
        row[f"ql_{p}"] = quantile_loss(quantiles[p], actual, p)
    return row


class OrgLinearModel:
    """OrgLinear behind the :class:`DemandModel` interface."""

    name = ORGLINEAR

    def __init__(self, config: OrgLinearConfig, seed: int) -> None:
        self.model = OrgLinear(config, seed=seed)
        self.train_seconds = 0.0

    def fit(self, train: DemandSeries) -> None:
        self.model.fit(train)
        self.train_seconds = self.model.train_seconds

    def gaussian(self, series: DemandSeries, end: int) -> OrgForecast:
        return self.model.forecast(series, end)

    def predict(self, series: DemandSeries, end: int, levels: tuple[float, ...]) -> QuantileForecast:
        from schedlab.predict.demand_baselines import QuantileForecast

        f = self.gaussian(series, end)
        return QuantileForecast(f.mean, {p: f.upper_bound(p).to_numpy().T for p in levels})


@dataclass(frozen=True)
class Settings:
    """Shape of the comparison (hours) and the training of the neural models: OrgLinear and
    DLinear train ``epochs`` epochs or at least ``min_steps`` Adam steps (a short series has
    one batch per epoch); OrgLinear at ``orglinear_lr`` (at 0.01, its in-simulation default,
    the NLL training loss oscillated by orders of magnitude on the synthetic trace)."""

    lookback: int = 168
    horizon: int = 24
    test_hours: int = 168
    epochs: int = 20
    min_steps: int = 500
    orglinear_lr: float = 1e-3
    deepar_steps: int = 800


def models(s: Settings, seed: int) -> list[DemandModel]:
    """OrgLinear and the five baselines, all with the comparison's horizon and OrgLinear's look-back."""
    from schedlab.predict.deepar import DeepAR
    from schedlab.predict.demand_baselines import DLinear, LightGBMQuantile, PreviousWeekPeak, SeasonalNaive

    return [
        OrgLinearModel(OrgLinearConfig(lookback=s.lookback, horizon=s.horizon, epochs=s.epochs, min_steps=s.min_steps,
                                       learning_rate=s.orglinear_lr), seed),  # fmt: skip
        PreviousWeekPeak(horizon=s.horizon),
        SeasonalNaive(horizon=s.horizon),
        DLinear(horizon=s.horizon, lookback=s.lookback, epochs=s.epochs, min_steps=s.min_steps, seed=seed),
        LightGBMQuantile(horizon=s.horizon, lookback=s.lookback, seed=seed, levels=LEVELS),
        DeepAR(horizon=s.horizon, steps=s.deepar_steps, seed=seed),
    ]


@dataclass(frozen=True)
class Comparison:
    """One seed: the metric table (one row per model), the test origins and every model's forecasts."""

    table: pd.DataFrame
    origins: list[int]
    forecasts: dict[str, list[QuantileForecast]]
    actual: np.ndarray  # (organisations, origins * horizon)


def compare(series: DemandSeries, candidates: list[DemandModel], *, test_hours: int, horizon: int, lookback: int,
            mape_floor: float = 1.0) -> Comparison:  # fmt: skip
    """Train each model on all but the last ``test_hours`` and score rolling forecasts there."""
    need = max(lookback, 168 + 48) + horizon  # the longest model history (DeepAR's lags) and one window
    if test_hours < horizon:
        raise ConfigError(f"the test span ({test_hours} h) is shorter than the horizon ({horizon} h)")
    if len(series) - test_hours < need + horizon:
        raise ConfigError(f"the series has {len(series)} hours: too short to train on {need + horizon} h and test on {test_hours} h")
    train_end = len(series) - test_hours
    origins = list(range(train_end, len(series) - horizon + 1, horizon))
    actual = np.concatenate([series.values[:, o : o + horizon] for o in origins], axis=1)
    train = series.head(train_end)
    rows, forecasts = [], {}
    for model in candidates:
        model.fit(train)
        preds = [model.predict(series, o, LEVELS) for o in origins]
        forecasts[model.name] = preds
        mean = np.concatenate([f.mean for f in preds], axis=1)
        q = {p: np.concatenate([f.quantiles[p] for f in preds], axis=1) for p in LEVELS}
        rows.append({"model": model.name, **score(mean, q, actual, mape_floor), "train_s": model.train_seconds})
    return Comparison(pd.DataFrame(rows, columns=["model", *METRICS]), origins, forecasts, actual)


def compare_seeds(series_for: Callable[[int], DemandSeries], seeds: list[int], settings: Settings,
                  on_seed: Callable[[int, DemandSeries, Comparison], None] | None = None) -> pd.DataFrame:  # fmt: skip
    """:func:`compare` for each seed on ``series_for(seed)``; one row per (seed, model).
    ``on_seed`` sees each seed's series and comparison (e.g. to plot the first)."""
    tables = []
    for seed in seeds:
        series = series_for(seed)
        result = compare(series, models(settings, seed), test_hours=settings.test_hours, horizon=settings.horizon,
                         lookback=settings.lookback)  # fmt: skip
        if on_seed is not None:
            on_seed(seed, series, result)
        tables.append(result.table.assign(seed=seed))
    return pd.concat(tables, ignore_index=True).loc[:, ["seed", "model", *METRICS]]


def plot_org(series: DemandSeries, comparison: Comparison, org: str, path: Path, *, history_hours: int = 168) -> Path:
    """PNG of one organisation: recent history, the test truth, OrgLinear's mean with its
    central 90 % band (its 0.05 and 0.95 quantiles) and the GFS-e forecast."""
    from schedlab.figures import new_figure, save

    i = series.orgs.index(org)
    first = comparison.origins[0]
    shown = series.demand[org].iloc[max(0, first - history_hours) :]
    fig = new_figure((11, 4), layout=None)
    ax = fig.add_subplot()
    ax.plot(shown.index, shown.to_numpy(), color="black", lw=1, label="demand (truth)")
    ours = comparison.forecasts[ORGLINEAR]
    peak = comparison.forecasts["GFS-e (prev-week peak)"]
    for k, o in enumerate(comparison.origins):
        index = series.hours_after(o, ours[k].mean.shape[1])
        ax.fill_between(index, np.maximum(2 * ours[k].mean[i] - ours[k].quantiles[0.95][i], 0), ours[k].quantiles[0.95][i],
                        color="tab:blue", alpha=0.2, label=None if k else "OrgLinear 90 % band")  # fmt: skip
        ax.plot(index, ours[k].mean[i], color="tab:blue", lw=1.2, label=None if k else "OrgLinear mean")
        ax.plot(index, peak[k].mean[i], color="tab:red", lw=0.8, label=None if k else "GFS-e (prev-week peak)")
    ax.axvline(series.demand.index[first], color="grey", lw=0.8, ls=":")
    ax.set_ylabel("GPUs requested (hourly mean)")
    ax.set_title(f"GPU demand forecast of {org}")
    ax.legend(loc="upper left", fontsize=8)
    fig.autofmt_xdate()
    fig.tight_layout()
    return save(fig, path)
