"""Node-demand forecaster of the Helios CES service (Hu et al., SC '21, §4.3.2).

§4.3.2: "we encode repetitive patterns (e.g., hour, day of the week, date) of running nodes
... Node trends are calculated as the average values and standard deviations of active nodes
under different rolling window sizes. Moreover, binary holiday indicators and various time scale
lags are also crucial for prediction", with a GBDT (LightGBM) model scored by SMAPE.

The input is a series of *steps* (10 minutes by default, each labelled by its end, the first
time it is fully known; :func:`to_steps`): ``peak`` (most nodes busy in the step, the target, a
conservative one for a power-down), the ``last``, ``mean`` and ``low`` busy count inside the step,
and ``total`` nodes of the cluster.

The forecast is *direct*: the row for time ``t`` made ``k`` steps ahead sees only steps at
``t - k`` or earlier, and ``k`` is itself a feature, so one model predicts every lead up to
``lead_steps`` from the newest step without feeding predictions back. Every value-like
feature and the target are the *change* from ``last = peak(t - k)``, divided by the cluster's
nodes at ``t - k`` (so a level never seen in training does not throw the trees off, and several
series of different sizes can train one model: :meth:`NodeDemandForecaster.fit` takes a list).
The objective is L1 (the median change, which is 0 when nothing predicts a move, so the model
falls back to persistence rather than chasing the mean of rare jumps); the forecast is rounded
to whole nodes.

Deviations: the paper gives no feature windows, lags, lead or LightGBM settings; those below are
this module's. The date enters as no feature (a month of data holds each date once, so a tree on
it would memorise), the within-step ``last``/``mean``/``low`` features and the change target are
additions, and one model may be trained on several series (the Earth VCs, :mod:`ces_forecast`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError
from schedlab.extras import require

if TYPE_CHECKING:
    import lightgbm as lgb

STEP_COLUMNS = ("peak", "last", "mean", "low", "total")


@dataclass(frozen=True)
class ForecastConfig:
    """Shape of the forecaster. Steps are samples of the demand series (default 10 minutes)."""

    step: str = "10min"
    lead_steps: int = 18
    train_leads: tuple[int, ...] = (1, 2, 3, 6, 9, 12, 18)
    recent_lags: tuple[int, ...] = (1, 2, 3, 6)
    windows_steps: tuple[int, ...] = (6, 18, 144)
    lags_steps: tuple[int, ...] = (144, 1008)
    rounds: int = 200
    learning_rate: float = 0.05
    num_leaves: int = 15
    min_data_in_leaf: int = 50

    def __post_init__(self) -> None:
        if self.lead_steps < 1:
            raise ConfigError("lead_steps must be at least 1")
        if any(w < 2 for w in self.windows_steps):
            raise ConfigError("rolling windows need at least 2 steps")
        if any(lag < 1 for lag in self.lags_steps + self.recent_lags):
            raise ConfigError("lags must be positive")
        if not self.train_leads or not all(1 <= k <= self.lead_steps for k in self.train_leads):
            raise ConfigError(f"train_leads must lie in 1..{self.lead_steps}")

    @property
    def context_steps(self) -> int:
        """Steps of history a forecast reads (the longest lag or window, plus the lead)."""
        return self.lead_steps + max(self.lags_steps + self.windows_steps + self.recent_lags) + 1


def smape(prediction: Iterable[float], actual: Iterable[float]) -> float:
    """Symmetric mean absolute percentage error, in percent (0 to 200).

    ``100 * mean(2 |p - a| / (|p| + |a|))``; a pair where both are 0 counts as a perfect hit.
    """
    p = np.asarray(list(prediction), dtype=float)
    a = np.asarray(list(actual), dtype=float)
    if p.shape != a.shape or p.size == 0:
        raise ConfigError("smape needs two non-empty sequences of the same length")
    denom = np.abs(p) + np.abs(a)
    ratio = np.divide(2.0 * np.abs(p - a), denom, out=np.zeros_like(denom), where=denom > 0)
    return float(100.0 * ratio.mean())


def resample_demand(series: pd.Series, step: str = "10min") -> pd.Series:
    """Peak demand per step: the most nodes busy at any sample inside it. Each step is
    labelled by its end, the first time its value is fully known."""
    if not isinstance(series.index, pd.DatetimeIndex):
        raise ConfigError("the demand series needs a DatetimeIndex")
    return series.resample(step, label="right", closed="right").max().astype(float)


def to_steps(frame: pd.DataFrame, step: str = "10min") -> pd.DataFrame:
    """Steps of a per-sample ``active``/``total`` node frame: ``peak``, ``last``, ``mean``,
    ``low`` busy nodes and the ``total`` at the step's end, each step labelled by its end."""
    if not isinstance(frame.index, pd.DatetimeIndex):
        raise ConfigError("the node series needs a DatetimeIndex")
    bins = frame.resample(step, label="right", closed="right")
    active = bins["active"]
    return pd.DataFrame({"peak": active.max(), "last": active.last(), "mean": active.mean(), "low": active.min(),
                         "total": bins["total"].last()}).astype(float)  # fmt: skip


def as_steps(y: pd.Series | pd.DataFrame) -> pd.DataFrame:
    """A steps frame as is, or one made from a plain series of busy nodes per step (the
    within-step values are the step's value; ``total`` is the largest value seen so far)."""
    if isinstance(y, pd.DataFrame):
        missing = set(STEP_COLUMNS) - set(y.columns)
        if missing:
            raise ConfigError(f"a steps frame needs the columns {', '.join(sorted(missing))}")
        return y
    y = y.astype(float)
    total = y.ffill().cummax().clip(lower=1.0)
    return pd.DataFrame({"peak": y, "last": y, "mean": y, "low": y, "total": total})


def make_features(steps: pd.DataFrame, config: ForecastConfig, holidays: frozenset[pd.Timestamp], lead: int) -> pd.DataFrame:
    """Feature rows for every step of ``steps`` for a forecast made ``lead`` steps ahead
    (see :func:`features_at`)."""
    n = len(steps)
    return features_at(steps, np.arange(n), np.full(n, lead), config, holidays)


def features_at(
    steps: pd.DataFrame, rows: np.ndarray, leads: np.ndarray, config: ForecastConfig, holidays: frozenset[pd.Timestamp]
) -> pd.DataFrame:
    """Feature rows for the targets ``steps.index[rows]``, each forecast ``leads`` steps ahead:
    calendar features of the target time, and every value feature taken at the origin
    ``row - lead`` or earlier, as its change from ``last = peak(origin)`` per node of the
    cluster. A lag not older than the lead is left empty."""
    rows = np.asarray(rows, dtype=np.int64)
    leads = np.asarray(leads, dtype=np.int64)
    idx = steps.index[rows]
    y = steps["peak"].to_numpy(dtype=float)
    origin = rows - leads
    last = _at(y, origin)
    scale = np.maximum(_at(steps["total"].to_numpy(dtype=float), origin), 1.0)
    cols: dict[str, np.ndarray] = {
        "lead": leads.astype(np.int16),
        "hour": idx.hour.to_numpy(),
        "time_of_day": (idx.hour * 60 + idx.minute).to_numpy(),
        "weekday": idx.day_of_week.to_numpy(),
        "holiday": idx.normalize().isin(list(holidays)).astype(np.int8) if holidays else np.zeros(len(idx), np.int8),
        "weekend": (idx.day_of_week >= 5).astype(np.int8),
        "level": last / scale,
    }
    for name in ("last", "mean", "low"):
        cols[f"step_{name}"] = (_at(steps[name].to_numpy(dtype=float), origin) - last) / scale
    for extra in config.recent_lags:
        cols[f"lag_recent_{extra}"] = (_at(y, origin - extra) - last) / scale
    for lag in config.lags_steps:
        old = np.where(lag > leads, _at(y, rows - lag), np.nan)
        cols[f"lag_{lag}"] = (old - last) / scale
        cols[f"lag_{lag}_change"] = (np.where(lag > leads, _at(y, rows - lag + leads), np.nan) - old) / scale
    finite = np.isfinite(y)
    sums = np.concatenate([[0.0], np.cumsum(np.where(finite, y, 0.0))])
    squares = np.concatenate([[0.0], np.cumsum(np.where(finite, y * y, 0.0))])
    counts = np.concatenate([[0], np.cumsum(finite)])
    for w in config.windows_steps:  # mean and std of peak over the w steps up to the origin
        end = np.clip(origin + 1, 0, len(y))
        start = np.clip(origin + 1 - w, 0, len(y))
        c = (counts[end] - counts[start]).astype(float)
        total = sums[end] - sums[start]
        ok = (c >= max(2, w // 2)) & (origin >= 0)
        mean = np.divide(total, c, out=np.full(len(c), np.nan), where=ok)
        var = np.divide(squares[end] - squares[start] - total * mean, c - 1, out=np.full(len(c), np.nan), where=ok)
        cols[f"mean_{w}"] = (mean - last) / scale
        cols[f"std_{w}"] = np.sqrt(np.maximum(var, 0.0)) / scale
    return pd.DataFrame(cols, index=idx)


def _at(values: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``values[positions]``, NaN where a position falls outside."""
    out = np.full(len(positions), np.nan)
    ok = (positions >= 0) & (positions < len(values))
    out[ok] = values[positions[ok]]
    return out


class NodeDemandForecaster:
    """LightGBM forecaster of busy nodes per step; deterministic for a given ``seed``."""

    def __init__(
        self, config: ForecastConfig | None = None, *, seed: int, holidays: Iterable[str | pd.Timestamp] = ()
    ) -> None:
        self.config = config or ForecastConfig()
        self.seed = seed
        self.holidays = frozenset(pd.Timestamp(h).normalize() for h in holidays)
        self.model: lgb.Booster | None = None

    def _params(self) -> dict[str, object]:
        c = self.config
        return {
            "objective": "regression_l1", "learning_rate": c.learning_rate, "num_leaves": c.num_leaves,
            "min_data_in_leaf": c.min_data_in_leaf, "feature_fraction": 0.8, "bagging_fraction": 0.8,
            "bagging_freq": 1, "seed": self.seed, "num_threads": 1, "deterministic": True,
            "force_row_wise": True, "verbose": -1,
        }  # fmt: skip

    def fit(self, series: pd.Series | pd.DataFrame | Sequence[pd.Series | pd.DataFrame]) -> "NodeDemandForecaster":
        """Train on one regular series of steps (or a list of them, pooled), one copy of the
        rows per lead in ``train_leads``; rows whose target is unknown are dropped."""
        lgb = require("lightgbm", "the CES node-demand forecaster")
        parts = list(series) if isinstance(series, (list, tuple)) else [series]
        frames, labels = [], []
        for part in parts:
            steps = as_steps(part)
            for lead in self.config.train_leads:
                change = ((steps["peak"] - steps["peak"].shift(lead)) / steps["total"].shift(lead).clip(lower=1.0)).to_numpy()
                keep = np.isfinite(change)
                frames.append(make_features(steps, self.config, self.holidays, lead)[keep])
                labels.append(change[keep])
        label = np.concatenate(labels)
        if label.size < 2 * self.config.min_data_in_leaf:
            raise ConfigError(f"too little history to train the node-demand forecaster ({label.size} rows)")
        data = lgb.Dataset(pd.concat(frames), label=label, params={"verbose": -1})
        self.model = lgb.train(self._params(), data, num_boost_round=self.config.rounds)
        return self

    def predict(self, series: pd.Series | pd.DataFrame, lead: int | None = None) -> pd.Series:
        """Prediction for every step of ``series`` made ``lead`` steps ahead (default: the
        longest), each from steps at least ``lead`` older, in whole nodes."""
        if self.model is None:
            raise ConfigError("the forecaster is not trained")
        lead = self.config.lead_steps if lead is None else lead
        steps = as_steps(series)
        features = make_features(steps, self.config, self.holidays, lead)
        last = steps["peak"].shift(lead).to_numpy()
        scale = steps["total"].shift(lead).clip(lower=1.0).to_numpy()
        return pd.Series(_nodes(last + scale * np.asarray(self.model.predict(features))), index=steps.index, name="forecast")

    def forecast(self, history: pd.Series | pd.DataFrame, steps: int) -> pd.Series:
        """The next ``steps`` values after the end of ``history`` (``steps <= lead_steps``),
        the k-th made k steps ahead from the newest step."""
        if not 1 <= steps <= self.config.lead_steps:
            raise ConfigError(f"can forecast 1..{self.config.lead_steps} steps ahead, asked for {steps}")
        if self.model is None:
            raise ConfigError("the forecaster is not trained")
        history = as_steps(history)
        future = pd.date_range(history.index[-1], periods=steps + 1, freq=self.config.step)[1:]
        extended = pd.concat([history, pd.DataFrame(np.nan, index=future, columns=history.columns)])
        leads = np.arange(1, steps + 1)
        rows = features_at(extended, len(history) - 1 + leads, leads, self.config, self.holidays)
        last = float(history["peak"].iloc[-1])
        scale = max(1.0, float(history["total"].iloc[-1]))
        return pd.Series(_nodes(last + scale * np.asarray(self.model.predict(rows))), index=future, name="forecast")


def _nodes(values: np.ndarray) -> np.ndarray:
    """Whole, non-negative node counts (NaN stays NaN)."""
    return np.maximum(np.round(values), 0.0)
