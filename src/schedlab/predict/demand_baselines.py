"""Baselines for the GFS GPU-demand forecast (Duan et al., ASPLOS '26, §3.2 and the Table 7 /
Figure 10 comparison), all with one interface: ``fit(train)`` then ``predict(series, end)``,
the forecast of the ``horizon`` hours after position ``end`` as a :class:`QuantileForecast`.

* :class:`PreviousWeekPeak` ("GFS-e"): the production rule the paper compares against: every
  future hour gets the organisation's peak demand of the previous 168 hours.
* :class:`SeasonalNaive`: the value one season (default one week) before each future hour.
* :class:`DLinear`: a DLinear-style point model (moving-average decomposition with edge
  replication, one linear layer per part, MSE; ``epochs`` or at least ``min_steps`` Adam
  steps), shared by all organisations, with the same
  per-organisation scaling and window-level normalisation as OrgLinear so that the two differ
  only in what the paper adds (reflection padding, embeddings, attention, variance head).
* :class:`LightGBMQuantile`: gradient-boosted quantile regression on lags, window statistics,
  calendar features, the lead and organisation attributes; one booster per quantile level
  and one at 0.5 for the point forecast.

Point models (the first three) have no spread: their p-quantile forecast is the point
forecast itself. The paper does not give its baselines' settings; these are this module's.
The DeepAR-style baseline is in :mod:`schedlab.predict.deepar`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError
from schedlab.extras import require
from schedlab.predict.demand_series import DemandSeries, org_attributes
from schedlab.predict.orglinear import SeriesDecomposition, window_starts
from schedlab.predict.orglinear_net import deterministic_torch, epochs_for

if TYPE_CHECKING:
    import lightgbm as lgb
    import torch
    from torch import nn
else:
    lgb = require("lightgbm", "the demand-forecast baselines")
    torch = require("torch", "the demand-forecast baselines")
    nn = torch.nn


@dataclass(frozen=True)
class QuantileForecast:
    """Point forecast ``mean`` and p-quantile forecasts ``quantiles[p]``, (organisations x hours)."""

    mean: np.ndarray
    quantiles: dict[float, np.ndarray]


def history_before(series: DemandSeries, end: int, need: int) -> np.ndarray:
    if not need <= end <= len(series):
        raise ConfigError(f"a forecast at hour {end} needs {need} hours of history within the series")
    return series.values[:, :end]


def _point(mean: np.ndarray, levels: tuple[float, ...]) -> QuantileForecast:
    return QuantileForecast(mean, {p: mean for p in levels})


@dataclass
class PreviousWeekPeak:
    """GFS-e: the peak of the previous ``lookback`` hours, for every hour ahead."""

    horizon: int = 24
    lookback: int = 168
    name: str = "GFS-e (prev-week peak)"
    train_seconds: float = 0.0

    def fit(self, train: DemandSeries) -> None:
        """Nothing to learn."""

    def predict(self, series: DemandSeries, end: int, levels: tuple[float, ...]) -> QuantileForecast:
        hist = history_before(series, end, self.lookback)
        peak = hist[:, end - self.lookback :].max(axis=1, keepdims=True)
        return _point(np.repeat(peak, self.horizon, axis=1), levels)


@dataclass
class SeasonalNaive:
    """The value ``season`` hours before each future hour (repeating the last season)."""

    horizon: int = 24
    season: int = 168
    name: str = "seasonal naive (1 week)"
    train_seconds: float = 0.0

    def fit(self, train: DemandSeries) -> None:
        """Nothing to learn."""

    def predict(self, series: DemandSeries, end: int, levels: tuple[float, ...]) -> QuantileForecast:
        hist = history_before(series, end, self.season)
        cols = end - self.season + np.arange(self.horizon) % self.season
        return _point(hist[:, cols], levels)


class _DLinearNet(nn.Module):
    def __init__(self, lookback: int, horizon: int, kernel: int) -> None:
        super().__init__()
        self.decompose = SeriesDecomposition(kernel, "replicate")
        self.trend_head = nn.Linear(lookback, horizon)
        self.cycle_head = nn.Linear(lookback, horizon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        trend, cycle = self.decompose(x)
        out: torch.Tensor = self.trend_head(trend) + self.cycle_head(cycle)
        return out


@dataclass
class DLinear:
    """DLinear-style point forecaster trained by MSE (see the module doc)."""

    horizon: int = 24
    lookback: int = 168
    kernel: int = 25
    epochs: int = 20
    batch_size: int = 1024
    learning_rate: float = 1e-2
    stride: int = 6
    min_steps: int = 0
    seed: int = 0
    name: str = "DLinear"
    train_seconds: float = 0.0
    net: _DLinearNet | None = None
    scale: np.ndarray | None = None

    def _windows(self, values: np.ndarray, org_idx: np.ndarray, pos: np.ndarray,
                 scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        hist = values[org_idx[:, None], pos[:, None] + np.arange(self.lookback)]
        level = hist.mean(axis=1, keepdims=True)
        return (hist - level) / scale[org_idx, None], level

    def fit(self, train: DemandSeries) -> None:
        values = train.values
        self.scale = np.maximum(values.mean(axis=1), 1.0)
        starts = window_starts(values.shape[1], self.lookback, self.horizon, self.stride)
        org_idx, pos = (a.ravel() for a in np.meshgrid(np.arange(values.shape[0]), starts, indexing="ij"))
        x, level = self._windows(values, org_idx, pos, self.scale)
        y = values[org_idx[:, None], pos[:, None] + self.lookback + np.arange(self.horizon)]
        target = (y - level) / self.scale[org_idx, None]
        t0 = time.perf_counter()
        with deterministic_torch(self.seed):
            self.net = _DLinearNet(self.lookback, self.horizon, self.kernel)
            xt, yt = torch.tensor(x, dtype=torch.float32), torch.tensor(target, dtype=torch.float32)
            opt = torch.optim.Adam(self.net.parameters(), lr=self.learning_rate)
            for _ in range(epochs_for(len(xt), self.batch_size, self.epochs, self.min_steps)):
                order = torch.randperm(len(xt))
                for i in range(0, len(xt), self.batch_size):
                    b = order[i : i + self.batch_size]
                    loss = nn.functional.mse_loss(self.net(xt[b]), yt[b])
                    opt.zero_grad()
                    loss.backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward is not annotated
                    opt.step()
        self.train_seconds = time.perf_counter() - t0

    def predict(self, series: DemandSeries, end: int, levels: tuple[float, ...]) -> QuantileForecast:
        if self.net is None or self.scale is None:
            raise ConfigError("DLinear is not trained")
        hist = history_before(series, end, self.lookback)
        org_idx = np.arange(hist.shape[0])
        x, level = self._windows(hist, org_idx, np.full(len(org_idx), end - self.lookback), self.scale)
        with deterministic_torch(self.seed), torch.no_grad():
            out = self.net(torch.tensor(x, dtype=torch.float32)).double().numpy()
        return _point(out * self.scale[:, None] + level, levels)


@dataclass
class LightGBMQuantile:
    """LightGBM quantile regression, direct multi-horizon (the lead is a feature).

    Rows are (organisation, forecast origin, lead); origins every ``stride`` hours of the
    training series. Target and level features are relative to the mean of the last week,
    so that levels never seen in training do not confuse the trees.
    """

    horizon: int = 24
    lookback: int = 168
    stride: int = 24
    rounds: int = 100
    learning_rate: float = 0.05
    num_leaves: int = 31
    seed: int = 0
    levels: tuple[float, ...] = (0.9, 0.95)
    name: str = "LightGBM quantile"
    train_seconds: float = 0.0
    models: dict[float, lgb.Booster] = field(default_factory=dict)
    attributes: pd.DataFrame | None = None

    def _features(self, values: np.ndarray, org_idx: np.ndarray, pos: np.ndarray, cal: pd.DataFrame,
                  attributes: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:  # fmt: skip
        """Feature rows (one per origin x lead, origin-major) and each row's level; ``attributes``
        are the organisations' (:func:`.org_attributes`)."""
        h, L = self.horizon, self.lookback
        hist = values[org_idx[:, None], pos[:, None] + np.arange(L)]
        level = hist.mean(axis=1)
        lead = np.tile(np.arange(h), len(pos))
        rows = np.repeat(np.arange(len(pos)), h)
        rel = hist - level[:, None]

        def lag(back: int) -> np.ndarray:
            col = L - back + lead
            ok = (col >= 0) & (col < L)  # inside the look-back
            return np.where(ok, rel[rows, np.clip(col, 0, L - 1)], np.nan)

        attrs = attributes.iloc[org_idx[rows]]
        frame = pd.DataFrame({
            "lead": lead, "hour": cal["hour"].to_numpy(), "weekday": cal["weekday"].to_numpy(),
            "holiday": cal["holiday"].to_numpy(), "last": rel[rows, -1], "mean_24": rel[:, -24:].mean(axis=1)[rows],
            "max_168": rel.max(axis=1)[rows], "std_168": hist.std(axis=1)[rows] / np.maximum(level[rows], 1.0),
            "lag_24": lag(24), "lag_168": lag(168), "level": level[rows],
            "org": attrs["org_index"].to_numpy(), "size_bucket": attrs["size_bucket"].to_numpy(),
        })  # fmt: skip
        return frame, level[rows]

    def _params(self, alpha: float) -> dict[str, object]:
        return {"objective": "quantile", "alpha": alpha, "learning_rate": self.learning_rate,
                "num_leaves": self.num_leaves, "min_data_in_leaf": 50, "seed": self.seed, "num_threads": 1,
                "deterministic": True, "force_row_wise": True, "verbose": -1}  # fmt: skip

    def fit(self, train: DemandSeries) -> None:
        values = train.values
        self.attributes = org_attributes(values, train.orgs)
        starts = window_starts(values.shape[1], self.lookback, self.horizon, self.stride)
        org_idx, pos = (a.ravel() for a in np.meshgrid(np.arange(values.shape[0]), starts, indexing="ij"))
        future = (pos[:, None] + self.lookback + np.arange(self.horizon)).ravel()
        cal = train.calendar(train.demand.index).iloc[future]
        frame, level = self._features(values, org_idx, pos, cal, self.attributes)
        label = values[np.repeat(org_idx, self.horizon), future] - level
        t0 = time.perf_counter()
        for alpha in (0.5, *self.levels):
            data = lgb.Dataset(frame, label=label, categorical_feature=["org"], params={"verbose": -1})
            self.models[alpha] = lgb.train(self._params(alpha), data, num_boost_round=self.rounds)
        self.train_seconds = time.perf_counter() - t0

    def predict(self, series: DemandSeries, end: int, levels: tuple[float, ...]) -> QuantileForecast:
        if not self.models or self.attributes is None:
            raise ConfigError("the LightGBM model is not trained")
        missing = [p for p in levels if p not in self.models]
        if missing:
            raise ConfigError(f"the LightGBM model was trained for quantiles {sorted(self.models)}, not {missing}")
        hist = history_before(series, end, self.lookback)
        n = hist.shape[0]
        cal = series.calendar(series.hours_after(end, self.horizon))
        frame, level = self._features(hist, np.arange(n), np.full(n, end - self.lookback), pd.concat([cal] * n),
                                      self.attributes)  # fmt: skip

        def run(alpha: float) -> np.ndarray:
            predicted: np.ndarray = (self.models[alpha].predict(frame) + level).reshape(n, self.horizon)
            return predicted

        return QuantileForecast(run(0.5), {p: run(p) for p in levels})
