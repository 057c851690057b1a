"""The CES forecaster on recorded node series: validation choice, rolling-origin test scores,
and the forecasts a replay uses (Helios §4.3.2-4.3.3).

:func:`forecast_plan` takes one or more step series (a pool: the forecaster trains on all of
them, as on the Earth VCs), scores GBDT, last-value and seasonal-naive forecasts rolling-origin
on a validation period at every lead the CES service reads and chooses per series by the rule
of :mod:`schedlab.predict.node_demand_eval` (:func:`~schedlab.predict.node_demand_eval.validate`;
persistence unless a candidate beats it by the margin), scores all three the same way on the
test period that follows, and returns the chosen forecaster's forecasts over the test period at
every lead the CES service reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError
from schedlab.predict.node_demand import ForecastConfig
from schedlab.predict import node_demand_eval
from schedlab.predict.node_demand_eval import Choice, ChoiceRule, Score, baseline, rolling_gbdt, score

REPORT_LEAD_NAMES = {1: "10 min", 6: "1 h", 18: "3 h"}  # leads reported, in 10-minute steps
REPORT_LEADS = tuple(REPORT_LEAD_NAMES)


@dataclass
class ForecastPlan:
    """What :func:`forecast_plan` found: per series the chosen forecaster (and the rule's
    reason), the validation and test scores, and the chosen forecaster's forecasts for the test
    period (indexed by target step, column ``k - 1`` made ``k`` steps ahead)."""

    chosen: dict[str, str]
    choices: dict[str, Choice]
    validation: list[Score]
    test: list[Score]
    ahead: dict[str, pd.DataFrame]
    val_start: pd.Timestamp
    test_start: pd.Timestamp
    test_end: pd.Timestamp


def periods(index: pd.DatetimeIndex, test_days: float, val_days: float) -> tuple[pd.Timestamp, pd.Timestamp, pd.Timestamp]:
    """Validation start, test start and test end for a series: the test period starts at the
    midnight that leaves at least ``test_days`` to the end, the validation period is the
    ``val_days`` before it."""
    end = index[-1] + pd.Timedelta(index.freq or index[-1] - index[-2])
    test_start = (end - pd.Timedelta(days=test_days)).floor("D")
    val_start = test_start - pd.Timedelta(days=val_days)
    if val_start <= index[0] + pd.Timedelta(days=2):
        raise ConfigError(f"{test_days:g} test days and {val_days:g} validation days leave under 2 days to train on")
    return val_start, test_start, end


def forecast_plan(
    series: Mapping[str, pd.DataFrame],
    val_start: pd.Timestamp,
    test_start: pd.Timestamp,
    test_end: pd.Timestamp,
    *,
    seed: int,
    future_steps: int,
    rule: ChoiceRule | None = None,
    config: ForecastConfig | None = None,
    holidays: Iterable[str | pd.Timestamp] = (),
    leads: Sequence[int] = REPORT_LEADS,
) -> ForecastPlan:
    """Choose per series on ``[val_start, test_start)`` by ``rule`` (default
    :class:`ChoiceRule`) over the leads CES reads (``1..future_steps``), score ``leads`` on
    ``[test_start, test_end)``, and forecast the test period ``1..future_steps`` ahead with each
    series' chosen forecaster."""
    config = config or ForecastConfig()
    day_steps = round(pd.Timedelta("1D") / pd.Timedelta(config.step))
    ahead_leads = list(range(1, future_steps + 1))
    choices, validation = node_demand_eval.validate(series, val_start, test_start, ahead_leads, rule=rule or ChoiceRule(),
                                                    seed=seed, config=config, holidays=holidays)  # fmt: skip
    chosen = {name: c.forecaster for name, c in choices.items()}
    test_leads = sorted(set(leads) | (set(ahead_leads) if "gbdt" in chosen.values() else set()))
    test = rolling_gbdt(series, test_start, test_end, test_leads, seed=seed, config=config, holidays=holidays)
    scores = score(series, {n: f[list(leads)] for n, f in test.items()}, test_start, test_end, leads, day_steps,
                   config.step)  # fmt: skip
    ahead: dict[str, pd.DataFrame] = {}
    for name, steps in series.items():
        window = (steps.index > test_start) & (steps.index <= test_end + pd.Timedelta(hours=24))
        if chosen[name] == "gbdt":
            frame = test[name][ahead_leads]
        else:
            frame = pd.DataFrame({k: baseline(steps, chosen[name], k, day_steps) for k in ahead_leads})
        frame = frame[window]
        frame.columns = range(len(ahead_leads))
        ahead[name] = frame
    return ForecastPlan(chosen, choices, validation, scores, ahead, val_start, test_start, test_end)


def score_table(scores: Sequence[Score]) -> pd.DataFrame:
    """One row per series and lead: SMAPE and MAE of each forecaster, side by side."""
    frame = pd.DataFrame([vars(s) for s in scores])
    wide = frame.pivot_table(index=["series", "lead"], columns="forecaster", values=["smape", "mae"], sort=False)
    wide.columns = [f"{m}_{f}" for m, f in wide.columns]
    return wide.reset_index()


def wins(table: pd.DataFrame, lead: int) -> tuple[int, int]:
    """Series where GBDT's SMAPE is below persistence's at ``lead``, and series scored."""
    rows = table[table["lead"] == lead]
    return int(np.sum(rows["smape_gbdt"] < rows["smape_last"] - 1e-9)), len(rows)
