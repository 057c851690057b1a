"""Replay the CES service (Helios §4.3) on a recorded node-usage series.

A series gives, per minute, the nodes running work (``active``) and the nodes of the cluster
(``total``). The service is replayed over the last ``test_days`` only; its forecaster is chosen
on the ``val_days`` before them by the rule of :mod:`schedlab.predict.node_demand_eval`
(persistence unless a candidate beats it by a margin) and forecasts rolling-origin (refitted daily on the steps before
each day, :mod:`schedlab.experiments.ces_forecast`), so no decision sees data from its future.

In a replay the recorded demand cannot move, so *delay* is measured, not simulated: a
**shortfall** minute is one where more nodes are active than powered on and booted (the
jobs behind the excess would have waited for a boot). ``jobs_delayed`` counts shortfall
*episodes* (maximal runs of shortfall minutes, each a burst of arrivals that had to wait);
``shortfall_minutes`` and ``delayed_node_minutes`` measure their length and depth.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from schedlab.energy.ces import CESConfig, arrival_check, paper_buffer, periodic_check, vanilla_drs
from schedlab.energy.report import plot_nodes, table5
from schedlab.errors import ConfigError, InputError
from schedlab.metrics.summary import write_summary
from schedlab.experiments.ces_forecast import ForecastPlan, forecast_plan, periods, score_table
from schedlab.predict.node_demand import ForecastConfig, to_steps
from schedlab.predict.node_demand_eval import ChoiceRule

VC_FILE = "cluster_sequence_vc.csv"


def load_node_series(path: Path, *, gpus_per_node: int = 8) -> pd.DataFrame:
    """Per-minute ``active`` and ``total`` nodes from a CSV with columns ``time, active,
    total`` (Philly node sequence), a Helios VC sequence (GPU counts: ``running_gpu_num`` and
    ``total_gpu_num``, converted to nodes as ceil(running / G) and total // G), or a folder of
    VC folders (their node counts summed). The result is put on a regular grid at the median
    step; a gap (Philly has one of 10 h, on 2017-10-25) repeats the sample before it."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob(f"*/{VC_FILE}"))
        if not files:
            raise InputError(f"no */{VC_FILE} inside the folder", file=str(path))
        parts = [load_node_series(f, gpus_per_node=gpus_per_node) for f in files]
        return sum(parts[1:], parts[0]).dropna().astype(int)
    try:
        frame = pd.read_csv(path, parse_dates=["time"], index_col="time")
    except FileNotFoundError as exc:
        raise InputError("file not found", file=str(path)) from exc
    except ValueError as exc:
        raise InputError(f"cannot read a 'time' column ({exc})", file=str(path)) from exc
    _check_cells(frame, path)
    if {"active", "total"} <= set(frame.columns):
        out = frame[["active", "total"]]
    elif {"running_gpu_num", "total_gpu_num"} <= set(frame.columns):
        out = pd.DataFrame(
            {
                "active": np.ceil(frame["running_gpu_num"] / gpus_per_node),
                "total": frame["total_gpu_num"] // gpus_per_node,
            }
        )
    else:
        raise InputError("expected columns active,total or running_gpu_num,total_gpu_num", file=str(path))
    out = out.dropna().sort_index()
    out = out[~out.index.duplicated(keep="last")]
    if len(out) < 2:
        raise InputError("the node series needs at least two samples", file=str(path))
    step = pd.Timedelta(np.median(np.diff(out.index)))
    return out.asfreq(step, method="ffill").astype(int)  # a gap repeats the last sample


def _check_cells(frame: pd.DataFrame, path: Path) -> None:
    """Every time a date and every count a number (an empty cell is a missing sample), or an
    error naming the first bad cell's row and field; the numeric columns become numbers."""
    if not isinstance(frame.index, pd.DatetimeIndex):
        times = pd.Series(frame.index, dtype=object)
        bad = (pd.to_datetime(times, errors="coerce", format="mixed").isna() & times.notna()).to_numpy()
        row = int(np.argmax(bad)) + 1 if bad.any() else 1
        raise InputError(f"not a date: {times.iloc[row - 1]!r}", file=str(path), row=row, field="time")
    for col in [c for c in ("active", "total", "running_gpu_num", "total_gpu_num") if c in frame.columns]:
        values = pd.to_numeric(frame[col], errors="coerce")
        bad = (values.isna() & frame[col].notna()).to_numpy()
        if bad.any():
            row = int(np.argmax(bad)) + 1
            raise InputError(f"not a number: {frame[col].iloc[row - 1]!r}", file=str(path), row=row, field=col)
        frame[col] = values


@dataclass
class Replay:
    """One replayed service: powered and booted nodes per sample, wake-ups, shortfalls."""

    powered: np.ndarray
    available: np.ndarray
    wakeups: list[int]
    power_downs: int
    shortfall_episodes: int
    shortfall_minutes: float
    delayed_node_minutes: float


def replay(frame: pd.DataFrame, forecast: pd.DataFrame | None, config: CESConfig) -> Replay:
    """Run JobArrivalCheck on every sample and PeriodicCheck every ``check_s`` over ``frame``
    (regular ``active``/``total``), starting with every node on. ``forecast`` is indexed by
    the end of each forecast step, column ``k-1`` holding the forecast made ``k`` steps
    ahead; a check at ``t`` uses, for the k-th step after ``t``, the one made k steps ahead."""
    step_s = _step_seconds(frame.index)
    check_every = round(config.check_s / step_s)
    if check_every < 1 or not math.isclose(check_every * step_s, config.check_s):
        raise ConfigError(f"check_s={config.check_s:g} is not a multiple of the series step ({step_s:g} s)")
    boot_steps = math.ceil(config.boot_s / step_s)
    active = frame["active"].to_numpy(dtype=np.int64)
    total = frame["total"].to_numpy(dtype=np.int64)
    times = frame.index
    fc_index = forecast.index if forecast is not None else None
    fc_values = forecast.to_numpy(dtype=float) if forecast is not None else None
    horizon = min(config.future_steps, fc_values.shape[1]) if fc_values is not None else 0
    n = len(frame)
    powered_out = np.zeros(n, dtype=np.int64)
    available_out = np.zeros(n, dtype=np.int64)
    available, booting = int(total[0]), 0
    ready: deque[tuple[int, int]] = deque()
    wakeups: list[int] = []
    past: list[int] = []
    power_downs = episodes = 0
    short_steps = short_nodes = 0
    in_short = False
    for i in range(n):
        while ready and ready[0][0] <= i:
            available += ready[0][1]
            booting -= ready.popleft()[1]
        excess = available + booting - int(total[i])
        if excess > 0:  # nodes left the cluster: drop idle booted ones first, then booting
            cut = min(excess, available)
            available -= cut
            booting -= excess - cut
        a = int(active[i])
        wake = arrival_check(a, available, booting, int(total[i]) - available - booting, config)
        if wake:
            wakeups.append(wake)
            if boot_steps == 0:
                available += wake
            else:
                booting += wake
                ready.append((i + boot_steps, wake))
        short = a > available
        if short:
            short_steps += 1
            short_nodes += a - available
            episodes += not in_short
        in_short = short
        if i % check_every == 0:
            fc = None
            if fc_index is not None and fc_values is not None:
                at = int(fc_index.searchsorted(times[i], side="right"))
                fc = [fc_values[at + k, k] for k in range(horizon) if at + k < len(fc_values)] or None
            off = periodic_check(available + booting, max(0, available - a), a, past[-config.history_checks :], fc, config)
            if off:
                available -= off
                power_downs += 1
            past.append(a)
        powered_out[i] = available + booting
        available_out[i] = available
    minutes = step_s / 60.0
    return Replay(powered_out, available_out, wakeups, power_downs, episodes, short_steps * minutes,
                  short_nodes * minutes)  # fmt: skip


def replay_pool(
    frames: Mapping[str, pd.DataFrame],
    *,
    config: CESConfig,
    seed: int,
    test_days: float = 14.0,
    val_days: float = 7.0,
    buffer: int | None = None,
    replay_step: str | None = "10min",
    forecast_config: ForecastConfig | None = None,
    holidays: tuple[str, ...] = (),
    rule: ChoiceRule | None = None,
) -> tuple[ForecastPlan, dict[str, dict[str, Any]], dict[str, dict[str, np.ndarray]], dict[str, pd.DataFrame]]:
    """Replay CES and vanilla DRS on each per-minute ``active``/``total`` frame over its last
    ``test_days``. One forecaster is trained on all frames (rolling origin, refitted daily);
    each series uses the forecaster chosen for it on the ``val_days`` before by ``rule``.
    ``buffer`` None: :func:`paper_buffer` of each series' mean size. ``replay_step``: the grid
    the checks run on (default 10 minutes, each step's most busy and most total nodes, the grid
    of the authors' artifact behind Table 5; None: the series' own samples). Returns the plan,
    per series the summary blocks, the powered-node arrays and the replayed window."""
    fcfg = forecast_config or ForecastConfig()
    if config.future_steps > fcfg.lead_steps:
        raise ConfigError(f"future_steps={config.future_steps} exceeds the forecaster's {fcfg.lead_steps} steps")
    steps = {name: to_steps(frame, fcfg.step) for name, frame in frames.items()}
    first = next(iter(steps.values())).index
    val_start, test_start, test_end = periods(first, test_days, val_days)
    plan = forecast_plan(steps, val_start, test_start, test_end, seed=seed, future_steps=config.future_steps,
                         rule=rule, config=fcfg, holidays=holidays)  # fmt: skip
    blocks: dict[str, dict[str, Any]] = {}
    powered: dict[str, dict[str, np.ndarray]] = {}
    windows: dict[str, pd.DataFrame] = {}
    for name, frame in frames.items():
        if replay_step is not None:
            frame = on_grid(frame, replay_step)
        window = frame[(frame.index >= test_start) & (frame.index < test_end)]
        step_s = _step_seconds(window.index)
        ces = replace(config, buffer_nodes=paper_buffer(window["total"].mean()) if buffer is None else buffer)
        blocks[name], powered[name], windows[name] = {}, {}, window
        for cfg in (ces, vanilla_drs(ces)):
            run = replay(window, plan.ahead[name] if cfg.use_forecast else None, cfg)
            block = table5(window["active"].to_numpy(), run.powered, window["total"].to_numpy(), step_s=step_s,
                           wakeups=run.wakeups, jobs_delayed=run.shortfall_episodes, config=cfg)  # fmt: skip
            block.update(power_downs=run.power_downs, shortfall_minutes=run.shortfall_minutes,
                         delayed_node_minutes=run.delayed_node_minutes, config=_config_dict(cfg))  # fmt: skip
            if cfg.use_forecast:
                block["forecaster"] = plan.chosen[name]
            blocks[name][cfg.label] = block
            powered[name][cfg.label] = run.powered
    return plan, blocks, powered, windows


def on_grid(frame: pd.DataFrame, step: str) -> pd.DataFrame:
    """The most ``active`` and ``total`` nodes in each step, labelled by its end."""
    bins = frame.resample(step, label="right", closed="right")
    return pd.DataFrame({"active": bins["active"].max(), "total": bins["total"].max()}).dropna().astype(int)


def run_replay(
    series: Path,
    out_dir: Path,
    *,
    config: CESConfig,
    seed: int,
    test_days: float = 14.0,
    val_days: float = 7.0,
    buffer: int | None = None,
    replay_step: str | None = "10min",
    forecast_config: ForecastConfig | None = None,
    holidays: tuple[str, ...] = (),
    gpus_per_node: int = 8,
    rule: ChoiceRule | None = None,
) -> dict[str, Any]:
    """:func:`replay_pool` on one series; write summary.json and ces_nodes.png to ``out_dir``.
    The summary names the forecaster CES used, whether it is a baseline (``fallback``), the
    rule's reason (``choice_reason``) and the rule itself (``choice_rule``)."""
    rule = rule or ChoiceRule()
    frame = load_node_series(series, gpus_per_node=gpus_per_node)
    name = Path(series).name
    plan, blocks, powered, windows = replay_pool({name: frame}, config=config, seed=seed, test_days=test_days,
                                                 val_days=val_days, buffer=buffer, replay_step=replay_step,
                                                 forecast_config=forecast_config, holidays=holidays,
                                                 rule=rule)  # fmt: skip
    window = windows[name]
    table = score_table(plan.test)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {
        "mode": "replay",
        "series": str(series),
        "validation_start": str(plan.val_start),
        "replay_start": str(window.index[0]),
        "replay_end": str(window.index[-1]),
        "total_nodes_mean": float(window["total"].mean()),
        "forecaster": plan.chosen[name],
        "fallback": plan.chosen[name] != "gbdt",
        "choice_reason": plan.choices[name].reason,
        "choice_rule": asdict(rule),
        "validation_smape": plan.choices[name].validation_smape,
        "forecast_scores": table.to_dict(orient="records"),
        "smape": float(table[table["lead"] == max(table["lead"])][f"smape_{plan.chosen[name]}"].iloc[0]),
        "seed": seed,
        **blocks[name],
    }
    write_summary(out_dir / "summary.json", summary)
    plot_nodes(window.index, window["active"].to_numpy(), window["total"].to_numpy(), powered[name],
               out_dir / "ces_nodes.png", title=f"CES replay: {name}")  # fmt: skip
    return summary


def _config_dict(config: CESConfig) -> dict[str, Any]:
    return {k: getattr(config, k) for k in config.__dataclass_fields__}


def _step_seconds(index: pd.DatetimeIndex) -> float:
    if len(index) < 2:
        raise ConfigError("the node series needs at least two samples")
    steps = np.diff(index) / pd.Timedelta(seconds=1)
    step = float(np.median(steps))
    if not np.allclose(steps, step):
        raise ConfigError("the node series must be sampled at a regular step (e.g. every minute)")
    return step
