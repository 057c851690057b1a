"""Node-demand forecaster of the Helios CES service (Hu et al., SC '21, §4.3).

The CES service predicts how many nodes the cluster will keep busy over the next hours and
powers nodes down only when the forecast agrees that demand is falling. As in §4.3 the model
is a LightGBM regressor over calendar features (hour, weekday, date, holiday), rolling means
and standard deviations over several windows, and lags of the series. It predicts the change
from the newest usable value, which it adds back.

The forecast is *direct*: the row for time ``t`` made ``k`` steps ahead sees only values at
``t - k`` or earlier, and ``k`` is itself a feature; one model, trained on several leads,
predicts every step up to ``lead_steps`` past the last observation from that observation,
without feeding predictions back. Accuracy is SMAPE on a held-out tail at the longest lead.

Deviation: the feature windows, the lead and the LightGBM settings below (10-minute steps,
3-hour lead, 1 h / 3 h / 1 day windows, lags of 1 day and 1 week) are this module's choice,
as is predicting the change rather than the level; the date enters as day of month only
(day of year would make every test day a value the trees never saw).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError
from schedlab.extras import require

if TYPE_CHECKING:
    import lightgbm as lgb


@dataclass(frozen=True)
class ForecastConfig:
    """Shape of the forecaster. Steps are samples of the demand series (default 10 minutes)."""

    step: str = "10min"
    lead_steps: int = 18
    train_leads: tuple[int, ...] = (1, 2, 3, 6, 12, 18)
    windows_steps: tuple[int, ...] = (6, 18, 144)
    lags_steps: tuple[int, ...] = (144, 1008)
    rounds: int = 100
    learning_rate: float = 0.05
    num_leaves: int = 15
    min_data_in_leaf: int = 50

    def __post_init__(self) -> None:
        if self.lead_steps < 1:
            raise ConfigError("lead_steps must be at least 1")
        if any(w < 2 for w in self.windows_steps):
            raise ConfigError("rolling windows need at least 2 steps")
        if any(lag < 1 for lag in self.lags_steps):
            raise ConfigError("lags must be positive")
        if not self.train_leads or not all(1 <= k <= self.lead_steps for k in self.train_leads):
            raise ConfigError(f"train_leads must lie in 1..{self.lead_steps}")


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
    """Peak demand per step: the most nodes busy at any sample inside it (a conservative
    target for a power-down decision). Each step is labelled by its end, the first time its
    value is fully known."""
    if not isinstance(series.index, pd.DatetimeIndex):
        raise ConfigError("the demand series needs a DatetimeIndex")
    return series.resample(step, label="right", closed="right").max().astype(float)


def make_features(y: pd.Series, config: ForecastConfig, holidays: frozenset[pd.Timestamp], lead: int) -> pd.DataFrame:
    """Feature rows for every time of ``y`` (a regular DatetimeIndex; NaN where unknown), for
    a forecast made ``lead`` steps ahead.

    Lags and rolling means are given relative to ``last``, the value ``lead`` steps before
    the row (the newest one such a forecast may use), so that a level never seen in training
    does not throw the trees off; the model learns the change. A lag that is not older than
    ``lead`` is left empty.
    """
    idx = y.index
    last = y.shift(lead)
    cols: dict[str, object] = {
        "lead": np.full(len(idx), lead, dtype=np.int16),
        "hour": idx.hour.to_numpy(),
        "time_of_day": (idx.hour * 60 + idx.minute).to_numpy(),
        "weekday": idx.day_of_week.to_numpy(),
        "day": idx.day.to_numpy(),
        "holiday": np.asarray([d in holidays for d in idx.normalize()], dtype=np.int8),
        "weekend": (idx.day_of_week >= 5).astype(np.int8),
    }
    for extra in (1, 2):
        cols[f"lag_last_{extra}"] = y.shift(lead + extra) - last
    for lag in config.lags_steps:
        cols[f"lag_{lag}"] = y.shift(lag) - last if lag > lead else np.nan
    for w in config.windows_steps:
        roll = last.rolling(w, min_periods=max(2, w // 2))
        cols[f"mean_{w}"] = roll.mean() - last
        cols[f"std_{w}"] = roll.std()
    return pd.DataFrame(cols, index=idx)


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
            "objective": "regression", "learning_rate": c.learning_rate, "num_leaves": c.num_leaves,
            "min_data_in_leaf": c.min_data_in_leaf, "seed": self.seed, "num_threads": 1,
            "deterministic": True, "force_row_wise": True, "verbose": -1,
        }  # fmt: skip

    def fit(self, y: pd.Series) -> "NodeDemandForecaster":
        """Train on a regular series of busy nodes, one copy of the rows per lead in
        ``train_leads`` (rows whose target is unknown are dropped)."""
        lgb = require("lightgbm", "the CES node-demand forecaster")
        frames, labels = [], []
        for lead in self.config.train_leads:
            change = (y - y.shift(lead)).to_numpy()
            keep = np.isfinite(change)
            frames.append(make_features(y, self.config, self.holidays, lead)[keep])
            labels.append(change[keep])
        label = np.concatenate(labels)
        if label.size < 2 * self.config.min_data_in_leaf:
            raise ConfigError(f"too little history to train the node-demand forecaster ({label.size} rows)")
        data = lgb.Dataset(pd.concat(frames), label=label, params={"verbose": -1})
        self.model = lgb.train(self._params(), data, num_boost_round=self.config.rounds)
        return self

    def predict(self, y: pd.Series, lead: int | None = None) -> pd.Series:
        """Prediction for every time of ``y`` made ``lead`` steps ahead (default: the
        longest), each from values at least ``lead`` steps older."""
        if self.model is None:
            raise ConfigError("the forecaster is not trained")
        lead = self.config.lead_steps if lead is None else lead
        features = make_features(y, self.config, self.holidays, lead)
        last = y.shift(lead).to_numpy()
        return pd.Series(np.maximum(last + self.model.predict(features), 0.0), index=y.index, name="forecast")

    def forecast(self, history: pd.Series, steps: int) -> pd.Series:
        """The next ``steps`` values after the end of ``history`` (``steps <= lead_steps``),
        the k-th made k steps ahead from the newest value."""
        if not 1 <= steps <= self.config.lead_steps:
            raise ConfigError(f"can forecast 1..{self.config.lead_steps} steps ahead, asked for {steps}")
        if self.model is None:
            raise ConfigError("the forecaster is not trained")
        future = pd.date_range(history.index[-1], periods=steps + 1, freq=self.config.step)[1:]
        extended = pd.concat([history, pd.Series(np.nan, index=future)])
        n = len(history)
        rows = pd.concat([make_features(extended, self.config, self.holidays, k).iloc[[n - 1 + k]]
                          for k in range(1, steps + 1)])  # fmt: skip
        last = float(history.iloc[-1])
        return pd.Series(np.maximum(last + self.model.predict(rows), 0.0), index=future, name="forecast")


@dataclass(frozen=True)
class Evaluation:
    """Held-out accuracy: the model's SMAPE and that of the naive forecast (the value last
    seen ``lead`` steps before), with the aligned series."""

    smape: float
    naive_smape: float
    prediction: pd.Series
    actual: pd.Series


def evaluate(
    y: pd.Series,
    test_steps: int,
    *,
    seed: int,
    config: ForecastConfig | None = None,
    holidays: Iterable[str | pd.Timestamp] = (),
) -> tuple[NodeDemandForecaster, Evaluation]:
    """Train on all but the last ``test_steps`` of ``y`` and score the tail."""
    if not 0 < test_steps < len(y):
        raise ConfigError(f"test_steps must be between 1 and {len(y) - 1}")
    model = NodeDemandForecaster(config, seed=seed, holidays=holidays)
    train = y.iloc[:-test_steps]
    model.fit(train)
    pred = model.predict(y).iloc[-test_steps:]  # each row sees values >= lead steps older only
    actual = y.iloc[-test_steps:]
    naive = y.shift(model.config.lead_steps).iloc[-test_steps:]
    ok = actual.notna() & naive.notna()
    return model, Evaluation(
        smape(pred[ok].to_numpy(), actual[ok].to_numpy()),
        smape(naive[ok].to_numpy(), actual[ok].to_numpy()),
        pred,
        actual,
    )
