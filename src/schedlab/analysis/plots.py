"""Figures of the characterisation tables (see :mod:`schedlab.analysis.tables`), drawn off-screen."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from schedlab.analysis.tables import TOP_USER_FRACTIONS, duration_text, top_user_share
from schedlab.figures import FIGSIZE, grid, new_figure, titled_axes
from schedlab.metrics.plots import cdf_points
from schedlab.units import DAY_S, HOUR_S

MAX_VCS = 20
STATE_COLOURS = {"completed": "tab:green", "cancelled": "tab:orange", "failed": "tab:red", "unknown": "tab:gray"}


def plot_hourly(table: pd.DataFrame, basis: str) -> Figure:
    """Two panels over the hour of day: GPUs in use (or % of capacity) and submissions per hour."""
    figure = new_figure((FIGSIZE[0], 6.0))
    top, bottom = figure.subplots(2, 1, sharex=True)
    figure.suptitle("Daily pattern: mean over the trace's days, by hour of day")
    if "utilisation" in table.columns:
        top.plot(table.index, 100.0 * table["utilisation"], marker="o", color="tab:blue")
        top.set_ylabel("GPUs in use\n(% of cluster)")
    else:
        top.plot(table.index, table["gpus_running"], marker="o", color="tab:blue")
        top.set_ylabel("GPUs requested by\nrunning jobs")
    top.set_title(f"Cluster usage ({basis.split(':')[0]})", fontsize="medium")
    bottom.bar(table.index, table["submissions"], color="tab:orange")
    bottom.set_ylabel("jobs submitted\nper hour")
    bottom.set_xlabel("hour of day (trace's local clock)")
    bottom.set_xticks(range(0, 24, 2))
    for axes in (top, bottom):
        grid(axes)
        axes.set_ylim(bottom=0)
    return figure


def plot_monthly(table: pd.DataFrame) -> Figure:
    """Jobs per month split into single- and multi-GPU jobs (bars) and GPU-hours (line)."""
    figure, axes = titled_axes("Monthly trends (by month of submission)")
    x = np.arange(len(table))
    single = table["jobs"] - table["multi_gpu_jobs"]
    axes.bar(x, single, width=0.6, color="tab:blue", label="single-GPU jobs")
    axes.bar(x, table["multi_gpu_jobs"], width=0.6, bottom=single, color="tab:cyan", label="multi-GPU jobs")
    step = math.ceil(len(table) / 24)
    axes.set_xticks(x[::step], table.index[::step], rotation=0 if len(table) <= 6 else 45 if len(table) <= 12 else 90)
    half = max(len(table), 4) / 2
    axes.set_xlim((len(table) - 1) / 2 - half, (len(table) - 1) / 2 + half)
    axes.set_xlabel("month")
    axes.set_ylabel("jobs submitted")
    right = axes.twinx()
    right.plot(x, table["gpu_hours"] / 1000.0, color="tab:red", marker="o", label="GPU time run in the month")
    right.set_ylabel("GPU time (thousand GPU-hours)")
    right.set_ylim(bottom=0)
    figure.legend(loc="outside lower center", ncols=3)
    return figure


def plot_vc_usage(table: pd.DataFrame, *, relative_to_size: bool) -> Figure:
    """Box plot of the daily values of the (up to :data:`MAX_VCS`) VCs with the most use."""
    shown = table[table.mean().sort_values(ascending=False, kind="stable").index[:MAX_VCS]]
    what = "daily utilisation of its GPUs" if relative_to_size else "daily share of cluster GPU time"
    extra = f", top {MAX_VCS} of {table.shape[1]} VCs" if table.shape[1] > MAX_VCS else ""
    figure, axes = titled_axes(f"Per-VC {what} ({table.shape[0]} days{extra})")
    data = [100.0 * shown[c].dropna().to_numpy() for c in shown.columns]
    axes.boxplot(data, tick_labels=[str(c) for c in shown.columns], showfliers=False)
    axes.tick_params(axis="x", labelrotation=45 if len(data) > 6 else 0)
    axes.set_xlabel("virtual cluster (tenant), most used first")
    axes.set_ylabel(("GPU time / VC capacity" if relative_to_size else "share of the day's GPU time") + " (%)")
    axes.set_ylim(bottom=0)
    return figure


def plot_duration_cdf(jobs: pd.DataFrame, cpu_jobs_skipped: int) -> Figure:
    """CDFs of job duration for all, single-GPU and multi-GPU jobs, log time axis."""
    note = f"; {cpu_jobs_skipped:,} CPU jobs skipped by the loader" if cpu_jobs_skipped else ""
    figure, axes = titled_axes(f"Job duration CDF (GPU jobs{note})")
    duration = jobs["duration_s"].to_numpy(dtype=np.float64)
    multi = jobs["num_gpus"].to_numpy(dtype=np.float64) > 1
    for label, values in (("all GPU jobs", duration), ("single-GPU", duration[~multi]), ("multi-GPU", duration[multi])):
        x, y = cdf_points(values, values.size)
        if x.size:
            axes.plot(x, y, drawstyle="steps-post", label=f"{label} ({values.size:,})")
    _log_time_axis(axes)
    axes.set_xlabel("duration (log scale)")
    axes.set_ylabel("fraction of jobs")
    axes.set_ylim(0, 1.02)
    axes.legend(loc="lower right")
    return figure


def plot_gpu_demand(table: pd.DataFrame) -> Figure:
    """Cumulative share of jobs and of GPU time against the GPUs a job requests."""
    figure, axes = titled_axes("GPU demand CDF: by job count and by GPU time")
    x = table.index.to_numpy(dtype=np.float64)
    axes.plot(x, table["cum_job_share"], drawstyle="steps-post", marker=".", label="fraction of jobs")
    axes.plot(x, table["cum_gpu_time_share"], drawstyle="steps-post", marker=".", label="fraction of GPU time")
    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_formatter(lambda v, _: f"{v:g}")
    axes.set_xlabel("GPUs requested per job (log scale)")
    axes.set_ylabel("cumulative fraction")
    axes.set_ylim(0, 1.02)
    axes.legend(loc="lower right")
    return figure


def plot_final_states(table: pd.DataFrame) -> Figure:
    """Stacked bars: share of jobs ending in each final state, per GPU-demand bucket."""
    figure, axes = titled_axes("Final state of jobs by GPU demand")
    x = np.arange(len(table))
    bottom = np.zeros(len(table))
    for state in (c for c in table.columns if c != "jobs"):
        values = 100.0 * table[state].to_numpy(dtype=np.float64)
        axes.bar(x, values, bottom=bottom, color=STATE_COLOURS[state], label=state)
        bottom += values
    labels = [f"{bucket}\n{int(n):,} jobs" for bucket, n in zip(table.index, table["jobs"])]
    axes.set_xticks(x, labels, fontsize="small")
    axes.set_xlabel("GPUs requested per job")
    axes.set_ylabel("share of jobs (%)")
    axes.set_ylim(0, 100)
    axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return figure


def plot_user_gpu_time(table: pd.DataFrame) -> Figure:
    """Cumulative share of GPU time against the fraction of users, heaviest users first."""
    figure, axes = titled_axes(f"GPU time by user ({len(table):,} users, heaviest first)")
    x = np.concatenate(([0.0], 100.0 * table["user_fraction"].to_numpy()))
    y = np.concatenate(([0.0], 100.0 * table["cum_share"].to_numpy()))
    axes.plot(x, y, color="tab:blue", label="cumulative share of GPU time")
    axes.plot([0, 100], [0, 100], color="gray", linestyle=":", label="equal use")
    for fraction in TOP_USER_FRACTIONS:
        share = 100.0 * top_user_share(table, fraction)
        axes.plot(100 * fraction, share, "o", color="tab:red")
        axes.annotate(f"top {fraction:.0%}: {share:.0f}%", (100 * fraction, share), xytext=(8, -12),
                      textcoords="offset points", fontsize="small")  # fmt: skip
    axes.set_xlabel("fraction of users, ranked by GPU time (%)")
    axes.set_ylabel("share of all GPU time (%)")
    axes.set_xlim(0, 100)
    axes.set_ylim(0, 102)
    axes.legend(loc="lower right")
    return figure


def plot_user_queueing(table: pd.DataFrame) -> Figure:
    """Left: CDF over users of their mean queueing delay; right: share of all queueing by top users."""
    figure = new_figure((FIGSIZE[0] * 1.25, FIGSIZE[1]))
    left, right = figure.subplots(1, 2)
    figure.suptitle(f"Queueing delay by user ({len(table):,} users)")
    x, y = cdf_points(table["mean_queue_s"].to_numpy(dtype=np.float64), len(table))
    if x.size:
        left.plot(x, y, drawstyle="steps-post")
        _log_time_axis(left)
    left.set_xlabel("mean queueing delay of the user's jobs (log scale)")
    left.set_ylabel("fraction of users")
    left.set_ylim(0, 1.02)
    right.plot(100.0 * table["user_fraction"], 100.0 * table["cum_share"], color="tab:red")
    right.set_xlabel("fraction of users, ranked by total delay (%)")
    right.set_ylabel("share of all queueing delay (%)")
    right.set_xlim(0, 100)
    right.set_ylim(0, 102)
    for axes in (left, right):
        grid(axes)
    return figure


def _log_time_axis(axes: Axes) -> None:
    """Log-scale seconds labelled in readable units: 1 s, 1 min, 1 h, 1 day, 1 week, 30 days when
    at least two of them fall in range, else five evenly spaced (on the log scale) values."""
    axes.set_xscale("log")
    axes.xaxis.set_minor_formatter(NullFormatter())
    low, high = axes.get_xlim()
    ticks = [t for t in (1.0, 60.0, HOUR_S, DAY_S, 7 * DAY_S, 30 * DAY_S) if low <= t <= high]
    if len(ticks) < 2:
        ticks = [float(f"{t:.2g}") for t in np.geomspace(low, high, 7)[1:-1]]
    axes.set_xticks(ticks, [duration_text(t) for t in ticks])


def plot_vc_queueing(table: pd.DataFrame, delays: dict[str, np.ndarray]) -> Figure:
    """Per VC (``table`` order, at most :data:`MAX_VCS`): mean queueing delay beside mean duration
    (Helios Fig. 4 bottom) and, below, the spread of queueing delays (box p25-p75, whiskers p10-p90)."""
    shown = table.iloc[:MAX_VCS]
    figure = new_figure((FIGSIZE[0] * 1.2, 6.5))
    top, bottom = figure.subplots(2, 1, sharex=True)
    figure.suptitle(f"Queueing delay by VC ({len(shown)} of {len(table)} VCs, longest mean delay first)")
    x = np.arange(len(shown))
    top.bar(x - 0.2, shown["mean_queue_s"] / HOUR_S, width=0.4, color="tab:red", label="mean queueing delay")
    top.bar(x + 0.2, shown["mean_duration_s"] / HOUR_S, width=0.4, color="tab:blue", label="mean duration")
    top.set_ylabel("hours")
    top.legend(loc="upper right", fontsize="small")
    data = [np.asarray(delays[str(vc)], dtype=np.float64) / HOUR_S for vc in shown.index]
    bottom.boxplot(data, positions=x, whis=(10, 90), showfliers=False, widths=0.6)
    bottom.set_yscale("symlog", linthresh=1 / 60)  # linear below one minute: zero delays stay visible
    bottom.set_ylabel("queueing delay (h)")
    bottom.set_xticks(x, [str(v) for v in shown.index], rotation=45 if len(shown) > 6 else 0, ha="right")
    bottom.set_xlabel("VC (tenant)")
    for axes in (top, bottom):
        grid(axes)
    return figure


def plot_queue_over_time(table: pd.DataFrame) -> Figure:
    """Mean and p90 queueing delay of the jobs submitted in each bin (lines) and the share of them that waited."""
    figure, axes = titled_axes(f"Queueing delay over time (by {table.index.name} of submission)")
    x = np.arange(len(table))
    axes.plot(x, table["mean_queue_s"] / HOUR_S, marker=".", color="tab:red", label="mean")
    axes.plot(x, table["p90_queue_s"] / HOUR_S, marker=".", color="tab:orange", label="p90")
    axes.set_ylabel("queueing delay (h)")
    axes.set_ylim(bottom=0)
    step = max(1, math.ceil(len(table) / 16))
    axes.set_xticks(x[::step], [str(v) for v in table.index[::step]], rotation=45, ha="right")
    axes.set_xlabel(table.index.name)
    right = axes.twinx()
    right.bar(x, 100.0 * table["queued_share"].fillna(0.0), color="tab:gray", alpha=0.3, label="jobs that waited")
    right.set_ylabel("jobs that waited (%)")
    right.set_ylim(0, 102)
    axes.set_zorder(right.get_zorder() + 1)
    axes.patch.set_visible(False)
    lines, labels = axes.get_legend_handles_labels()
    bars, bar_labels = right.get_legend_handles_labels()
    axes.legend(lines + bars, labels + bar_labels, loc="upper left", fontsize="small")
    grid(axes)
    return figure
