"""Replay the CES service (Helios §4.3) on a recorded node-usage series.

A series gives, per minute, the nodes running work (``active``) and the nodes of the cluster
(``total``). The forecaster is trained on everything before the last ``test_days`` and the
service is replayed over those days only, so no decision sees data from its future.

In a replay the recorded demand cannot move, so *delay* is measured, not simulated: a
**shortfall** minute is one where more nodes are active than powered on and booted (the
jobs behind the excess would have waited for a boot). ``jobs_delayed`` counts shortfall
*episodes* (maximal runs of shortfall minutes, each a burst of arrivals that had to wait);
``shortfall_minutes`` and ``delayed_node_minutes`` measure their length and depth.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from schedlab.energy.ces import CESConfig, arrival_check, periodic_check
from schedlab.energy.report import plot_nodes, table5
from schedlab.errors import ConfigError, InputError
from schedlab.metrics.summary import write_summary
from schedlab.predict.node_demand import ForecastConfig, evaluate, resample_demand

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
            if fc_values is not None:
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


def run_replay(
    series: Path,
    out_dir: Path,
    *,
    config: CESConfig,
    seed: int,
    test_days: float = 14.0,
    forecast_config: ForecastConfig | None = None,
    holidays: tuple[str, ...] = (),
    gpus_per_node: int = 8,
) -> dict[str, Any]:
    """Train the forecaster on the head of ``series``, replay CES and vanilla DRS on the last
    ``test_days``; write summary.json and ces_nodes.png to ``out_dir``."""
    fcfg = forecast_config or ForecastConfig()
    frame = load_node_series(series, gpus_per_node=gpus_per_node)
    demand = resample_demand(frame["active"], fcfg.step)
    per_day = round(pd.Timedelta("1D") / pd.Timedelta(fcfg.step))
    test_steps = int(round(test_days * per_day))
    if not 0 < test_steps < len(demand) - per_day:
        raise ConfigError(f"a test period of {test_days:g} days leaves no training data in a {len(demand) / per_day:.1f}-day series")
    model, ev = evaluate(demand, test_steps, seed=seed, config=fcfg, holidays=holidays)
    leads = range(1, min(config.future_steps, fcfg.lead_steps) + 1)
    ahead = pd.DataFrame({k - 1: model.predict(demand, lead=k) for k in leads}).iloc[-test_steps:]
    window = frame[frame.index > demand.index[-test_steps - 1]]
    step_s = _step_seconds(window.index)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {
        "mode": "replay",
        "series": str(series),
        "replay_start": str(window.index[0]),
        "replay_end": str(window.index[-1]),
        "total_nodes_mean": float(window["total"].mean()),
        "smape": ev.smape,
        "naive_smape": ev.naive_smape,
        "seed": seed,
    }
    powered: dict[str, np.ndarray] = {}
    for cfg in (config, replace(config, use_forecast=False)):
        run = replay(window, ahead if cfg.use_forecast else None, cfg)
        block = table5(window["active"].to_numpy(), run.powered, window["total"].to_numpy(), step_s=step_s,
                       wakeups=run.wakeups, jobs_delayed=run.shortfall_episodes, config=cfg)  # fmt: skip
        block.update(power_downs=run.power_downs, shortfall_minutes=run.shortfall_minutes,
                     delayed_node_minutes=run.delayed_node_minutes, config=_config_dict(cfg))  # fmt: skip
        summary[cfg.label] = block
        powered[cfg.label] = run.powered
    write_summary(out_dir / "summary.json", summary)
    plot_nodes(window.index, window["active"].to_numpy(), window["total"].to_numpy(), powered,
               out_dir / "ces_nodes.png", title=f"CES replay: {Path(series).name}")  # fmt: skip
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
