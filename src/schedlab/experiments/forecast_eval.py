"""Compare GPU-demand forecasters as in GFS (Duan et al., ASPLOS '26, Table 7 / Figure 10).

Protocol: the last ``test_hours`` of the series are held out; every model trains on the hours
before them; then, from each forecast origin every ``horizon`` hours of the test span, it
forecasts the next ``horizon`` hours from the true history up to that origin (rolling origin,
no refit). Errors are taken over every organisation, origin and lead, in GPUs.

Metrics: MAE, MSE, RMSE; MAPE in percent over the entries whose true demand is at least
``mape_floor`` GPUs (entries near zero would make it infinite); and p-MAQE at p = 0.9 and
0.95. The paper's definition of p-MAQE could not be read here; it is taken as the mean
absolute quantile error of the p-quantile forecast q, i.e. the pinball loss
``mean(max(p (y - q), (p - 1) (y - q)))``, so lower is better and a point forecast is scored
as its own quantile.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError
from schedlab.predict.demand_baselines import DLinear, LightGBMQuantile, PreviousWeekPeak, QuantileForecast, SeasonalNaive
from schedlab.predict.demand_series import DemandSeries
from schedlab.predict.orglinear import OrgForecast, OrgLinear, OrgLinearConfig

LEVELS = (0.9, 0.95)
TABLE_COLUMNS = ("model", "mae", "mse", "rmse", "mape_pct", "maqe_0.9", "maqe_0.95", "train_s")


class DemandModel(Protocol):
    """What the comparison needs of a forecaster."""

    name: str
    train_seconds: float

    def fit(self, train: DemandSeries) -> None: ...

    def predict(self, series: DemandSeries, end: int, levels: tuple[float, ...]) -> QuantileForecast: ...


def mae(pred: np.ndarray, actual: np.ndarray) -> float:
    return float(np.mean(np.abs(np.asarray(pred, float) - np.asarray(actual, float))))


def mse(pred: np.ndarray, actual: np.ndarray) -> float:
    return float(np.mean((np.asarray(pred, float) - np.asarray(actual, float)) ** 2))


def mape(pred: np.ndarray, actual: np.ndarray, floor: float = 1.0) -> float:
    """Mean absolute percentage error (%) over entries with ``actual >= floor``; NaN if none."""
    p, a = np.asarray(pred, float), np.asarray(actual, float)
    keep = a >= floor
    return float(100.0 * np.mean(np.abs(p[keep] - a[keep]) / a[keep])) if keep.any() else float("nan")


def maqe(quantile: np.ndarray, actual: np.ndarray, p: float) -> float:
    """p-MAQE: the pinball loss of the p-quantile forecast ``quantile`` (see the module doc)."""
    if not 0.0 < p < 1.0:
        raise ConfigError(f"p must lie strictly between 0 and 1 (got {p})")
    diff = np.asarray(actual, float) - np.asarray(quantile, float)
    return float(np.mean(np.maximum(p * diff, (p - 1.0) * diff)))


class OrgLinearModel:
    """OrgLinear behind the :class:`DemandModel` interface; keeps the last Gaussian forecast."""

    name = "OrgLinear (GDE)"

    def __init__(self, config: OrgLinearConfig, seed: int) -> None:
        self.model = OrgLinear(config, seed=seed)
        self.train_seconds = 0.0

    def fit(self, train: DemandSeries) -> None:
        self.model.fit(train)
        self.train_seconds = self.model.train_seconds

    def gaussian(self, series: DemandSeries, end: int) -> OrgForecast:
        return self.model.forecast(series, end)

    def predict(self, series: DemandSeries, end: int, levels: tuple[float, ...]) -> QuantileForecast:
        f = self.gaussian(series, end)
        return QuantileForecast(f.mean, {p: f.upper_bound(p).to_numpy().T for p in levels})


def baselines(lookback: int, horizon: int, seed: int, epochs: int) -> list[DemandModel]:
    """The four baselines, with OrgLinear's look-back and horizon."""
    return [
        PreviousWeekPeak(horizon=horizon),
        SeasonalNaive(horizon=horizon),
        DLinear(horizon=horizon, lookback=lookback, epochs=epochs, seed=seed),
        LightGBMQuantile(horizon=horizon, lookback=lookback, seed=seed, levels=LEVELS),
    ]


@dataclass(frozen=True)
class Comparison:
    """The metric table (one row per model), the test origins and every model's forecasts."""

    table: pd.DataFrame
    origins: list[int]
    forecasts: dict[str, list[QuantileForecast]]
    actual: np.ndarray  # (organisations, origins * horizon)


def compare(series: DemandSeries, models: list[DemandModel], *, test_hours: int, horizon: int, lookback: int,
            mape_floor: float = 1.0) -> Comparison:  # fmt: skip
    """Train each model on all but the last ``test_hours`` and score rolling forecasts there."""
    need = max(lookback, 168) + horizon
    if test_hours < horizon:
        raise ConfigError(f"the test span ({test_hours} h) is shorter than the horizon ({horizon} h)")
    if len(series) - test_hours < need + horizon:
        raise ConfigError(f"the series has {len(series)} hours: too short to train on {need + horizon} h and test on {test_hours} h")
    train_end = len(series) - test_hours
    origins = list(range(train_end, len(series) - horizon + 1, horizon))
    values = series.values
    actual = np.concatenate([values[:, o : o + horizon] for o in origins], axis=1)
    train = series.head(train_end)
    rows, forecasts = [], {}
    for model in models:
        model.fit(train)
        preds = [model.predict(series, o, LEVELS) for o in origins]
        forecasts[model.name] = preds
        mean = np.concatenate([f.mean for f in preds], axis=1)
        q = {p: np.concatenate([f.quantiles[p] for f in preds], axis=1) for p in LEVELS}
        rows.append({
            "model": model.name, "mae": mae(mean, actual), "mse": mse(mean, actual),
            "rmse": float(np.sqrt(mse(mean, actual))), "mape_pct": mape(mean, actual, mape_floor),
            "maqe_0.9": maqe(q[0.9], actual, 0.9), "maqe_0.95": maqe(q[0.95], actual, 0.95),
            "train_s": model.train_seconds,
        })  # fmt: skip
    return Comparison(pd.DataFrame(rows, columns=list(TABLE_COLUMNS)), origins, forecasts, actual)


def markdown_table(table: pd.DataFrame) -> str:
    """The comparison as a Markdown table (GPUs; MAPE in %; training time in s)."""
    head = ["model", "MAE", "MSE", "RMSE", "MAPE %", "0.9-MAQE", "0.95-MAQE", "train s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.itertuples(index=False):
        cells = [r[0], *(f"{v:.4g}" if np.isfinite(v) else "-" for v in r[1:-1]), f"{r[-1]:.2f}"]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def plot_org(series: DemandSeries, comparison: Comparison, model: OrgLinearModel, org: str, path: Path,
             *, history_hours: int = 168) -> Path:  # fmt: skip
    """PNG of one organisation: recent history, the test truth, OrgLinear's mean with its
    central 90 % band (5 %-95 % quantiles), its 0.9 upper bound and the GFS-e forecast."""
    from schedlab.figures import new_figure, save

    i = series.orgs.index(org)
    first = comparison.origins[0]
    shown = series.demand[org].iloc[max(0, first - history_hours) :]
    fig = new_figure((11, 4), layout=None)
    ax = fig.add_subplot()
    ax.plot(shown.index, shown.to_numpy(), color="black", lw=1, label="demand (truth)")
    for k, o in enumerate(comparison.origins):
        f = model.gaussian(series, o)
        lo, hi, ub = (f.upper_bound(p)[org].to_numpy() for p in (0.05, 0.95, 0.9))
        kw = {"label": None} if k else {}
        ax.fill_between(f.index, lo, hi, color="tab:blue", alpha=0.2, **({"label": "OrgLinear 90 % band"} | kw))
        ax.plot(f.index, f.mean[i], color="tab:blue", lw=1.2, **({"label": "OrgLinear mean"} | kw))
        ax.plot(f.index, ub, color="tab:blue", lw=0.8, ls="--", **({"label": "OrgLinear upper_bound(0.9)"} | kw))
        peak = comparison.forecasts["GFS-e (prev-week peak)"][k].mean[i]
        ax.plot(f.index, peak, color="tab:red", lw=0.8, **({"label": "GFS-e (prev-week peak)"} | kw))
    ax.axvline(series.demand.index[first], color="grey", lw=0.8, ls=":")
    ax.set_ylabel("GPUs requested (hourly mean)")
    ax.set_title(f"GPU demand forecast of {org}")
    ax.legend(loc="upper left", fontsize=8)
    fig.autofmt_xdate()
    fig.tight_layout()
    return save(fig, path)


def run_comparison(series: DemandSeries, out: Path, *, seed: int, lookback: int = 168, horizon: int = 24,
                   test_hours: int = 168, epochs: int = 20) -> tuple[pd.DataFrame, list[Path]]:  # fmt: skip
    """Compare all models on ``series`` and write forecast_comparison.csv / .md and the PNG of
    the organisation with the highest mean demand; returns the table and the files written."""
    gde = OrgLinearModel(OrgLinearConfig(lookback=lookback, horizon=horizon, epochs=epochs), seed)
    models = [gde, *baselines(lookback, horizon, seed, epochs)]
    result = compare(series, models, test_hours=test_hours, horizon=horizon, lookback=lookback)
    out.mkdir(parents=True, exist_ok=True)
    csv, md = out / "forecast_comparison.csv", out / "forecast_comparison.md"
    result.table.to_csv(csv, index=False)
    md.write_text(markdown_table(result.table))
    org = str(series.demand.iloc[: result.origins[0]].mean().idxmax())
    png = plot_org(series, result, gde, org, out / f"forecast_{org}.png")
    return result.table, [csv, md, png]
