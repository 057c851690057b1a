"""Workload characterisation after Hu et al., SC '21 (Helios) §3: cluster, job and user views.

Table functions take the canonical job table (plus the origin or capacities they need) and return
small pandas frames, vectorised so a million jobs take seconds; ``plot_*`` functions draw a table
on an off-screen matplotlib figure; :func:`characterize` runs every analysis the workload supports
and writes ``DIR/*.png``, ``DIR/summary.json`` and ``DIR/index.html``.

Running intervals: a job runs from ``submit_s + queue_s`` for ``duration_s`` when the job table has
the optional column ``queue_s`` (queueing delay recorded by the trace, seconds; NaN = unknown,
taken as 0), else from ``submit_s`` -- a no-queue lower bound that starts every job at submission.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.metrics.plots import DPI, FIGSIZE, cdf_points
from schedlab.workload.schema import FINAL_STATES, Workload

HOUR_S = 3600.0
DAY_S = 86400.0
QUEUE_COLUMN = "queue_s"
TOP_USER_FRACTIONS = (0.01, 0.05, 0.10)
MAX_VCS = 20
DEMAND_UPPERS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
DEMAND_LABELS = ("<1", "1", "2", "3-4", "5-8", "9-16", "17-32", "33-64", ">64")
STATE_COLOURS = {"completed": "tab:green", "cancelled": "tab:orange", "failed": "tab:red", "unknown": "tab:gray"}
NO_QUEUE_BASIS = "no-queue lower bound: each job runs from its submit time (the trace records no queueing)"
QUEUE_BASIS = "submit time + recorded queueing delay"


# ---------------------------------------------------------------- running time and time bins


def running_intervals(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, bool]:
    """Start and end time of each job, and whether the start includes recorded queueing."""
    submit = jobs["submit_s"].to_numpy(dtype=np.float64)
    queue = _recorded_queue(jobs)
    start = submit if queue is None else submit + np.nan_to_num(queue, nan=0.0)
    return start, start + jobs["duration_s"].to_numpy(dtype=np.float64), queue is not None


def gpu_seconds_per_bin(start: np.ndarray, end: np.ndarray, gpus: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """GPU-seconds that jobs running over ``[start, end)`` with ``gpus`` spend inside each bin of ``edges``."""
    used_by = _ramp(edges, start, gpus) - _ramp(edges, end, gpus)
    return np.diff(used_by)


def clock_edges(
    origin: pd.Timestamp | None, first_s: float, last_s: float, unit_s: float
) -> tuple[np.ndarray, pd.Timestamp | None]:
    """Edges (trace seconds) of whole clock hours or days covering ``[first_s, last_s]``, and the
    wall-clock start of the first bin (``None`` without an origin: bins start at trace time 0)."""
    offset = 0.0 if origin is None else (origin - origin.floor(pd.Timedelta(seconds=unit_s))).total_seconds()
    first = math.floor((first_s + offset) / unit_s)
    count = math.floor((last_s + offset) / unit_s) - first + 1
    edges = (first + np.arange(count + 1)) * unit_s - offset
    label = None if origin is None else origin + pd.Timedelta(seconds=float(edges[0]))
    return edges, label


def _ramp(edges: np.ndarray, times: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum(w * max(0, t - time))`` at each edge ``t`` (cumulative sums over sorted times)."""
    order = np.argsort(times, kind="stable")
    t, w = times[order], weights[order]
    cum_w = np.concatenate(([0.0], np.cumsum(w)))
    cum_wt = np.concatenate(([0.0], np.cumsum(w * t)))
    k = np.searchsorted(t, edges, side="right")
    return edges * cum_w[k] - cum_wt[k]


def _recorded_queue(jobs: pd.DataFrame) -> np.ndarray | None:
    if QUEUE_COLUMN not in jobs.columns:
        return None
    queue = pd.to_numeric(jobs[QUEUE_COLUMN], errors="coerce").to_numpy(dtype=np.float64)
    return queue if np.isfinite(queue).any() else None


# ---------------------------------------------------------------- cluster tables


def hourly_profile(jobs: pd.DataFrame, origin: pd.Timestamp, *, capacity_gpus: float | None = None) -> pd.DataFrame:
    """Mean per hour of day (0-23, wall clock) over the submission span: ``submissions`` per hour,
    ``gpus_running`` (time-averaged requested GPUs of running jobs) and, with a capacity,
    ``utilisation`` (``gpus_running / capacity_gpus``)."""
    submit = jobs["submit_s"].to_numpy(dtype=np.float64)
    start, end, _ = running_intervals(jobs)
    edges, first = clock_edges(origin, float(submit.min()), float(submit.max()), HOUR_S)
    bins = edges.size - 1
    submitted = np.bincount(((submit - edges[0]) // HOUR_S).astype(np.int64), minlength=bins)
    running = gpu_seconds_per_bin(start, end, jobs["num_gpus"].to_numpy(dtype=np.float64), edges) / HOUR_S
    hour = (first.hour + np.arange(bins)) % 24
    seen = np.bincount(hour, minlength=24)
    with np.errstate(invalid="ignore", divide="ignore"):
        table = pd.DataFrame(
            {
                "submissions": np.bincount(hour, weights=submitted, minlength=24) / seen,
                "gpus_running": np.bincount(hour, weights=running, minlength=24) / seen,
            },
            index=pd.RangeIndex(24, name="hour"),
        )
    if capacity_gpus:
        table["utilisation"] = table["gpus_running"] / capacity_gpus
    return table


def monthly_trends(jobs: pd.DataFrame, origin: pd.Timestamp, *, capacity_gpus: float | None = None) -> pd.DataFrame:
    """Per calendar month of submission: ``jobs``, ``multi_gpu_jobs`` (more than one GPU),
    ``gpu_hours`` run inside the month and, with a capacity, ``utilisation``."""
    submit = jobs["submit_s"].to_numpy(dtype=np.float64)
    base = np.datetime64(origin.tz_localize(None) if origin.tzinfo else origin, "ms")
    month = (base + (submit * 1000.0).astype("timedelta64[ms]")).astype("datetime64[M]")
    months = np.arange(month.min(), month.max() + np.timedelta64(2, "M"))
    edges = (months.astype("datetime64[ms]") - base) / np.timedelta64(1, "s")
    index = (month - months[0]).astype(np.int64)
    multi = jobs["num_gpus"].to_numpy(dtype=np.float64) > 1
    start, end, _ = running_intervals(jobs)
    gpu_s = gpu_seconds_per_bin(start, end, jobs["num_gpus"].to_numpy(dtype=np.float64), edges)
    table = pd.DataFrame(
        {
            "jobs": np.bincount(index, minlength=months.size - 1),
            "multi_gpu_jobs": np.bincount(index[multi], minlength=months.size - 1),
            "gpu_hours": gpu_s / HOUR_S,
        },
        index=pd.Index(months[:-1].astype(str), name="month"),
    )
    if capacity_gpus:
        table["utilisation"] = gpu_s / (capacity_gpus * np.diff(edges))
    return table


def vc_daily_usage(
    jobs: pd.DataFrame, origin: pd.Timestamp | None, *, vc_gpus: Mapping[str, float] | None = None
) -> pd.DataFrame:
    """One row per day of the submission span, one column per tenant (VC): the VC's share of that
    day's GPU time, or with ``vc_gpus`` its GPU time over its capacity (VCs without one left out).
    Days are calendar days with an origin, else 24-hour blocks from trace time 0."""
    submit = jobs["submit_s"].to_numpy(dtype=np.float64)
    start, end, _ = running_intervals(jobs)
    gpus = jobs["num_gpus"].to_numpy(dtype=np.float64)
    edges, first = clock_edges(origin, float(submit.min()), float(submit.max()), DAY_S)
    codes, names = pd.factorize(jobs["tenant"], sort=True)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    usage = {
        str(name): gpu_seconds_per_bin(start[rows], end[rows], gpus[rows], edges)
        for name, rows in ((n, order[bounds[i] : bounds[i + 1]]) for i, n in enumerate(names))
    }
    days = pd.Index(_day_labels(first, edges.size - 1), name="day")
    table = pd.DataFrame(usage, index=days)
    if vc_gpus is None:
        total = table.sum(axis=1)
        return table.div(total.where(total > 0), axis=0)
    sized = [c for c in table.columns if vc_gpus.get(c, 0) > 0]
    return table[sized] / (np.array([vc_gpus[c] for c in sized]) * DAY_S)


def _day_labels(first: pd.Timestamp | None, days: int) -> list[str]:
    if first is None:
        return [f"day {d}" for d in range(days)]
    return [str(d.date()) for d in pd.date_range(first, periods=days, freq="D")]


# ---------------------------------------------------------------- job tables


def duration_summary(jobs: pd.DataFrame) -> pd.DataFrame:
    """Duration quantiles (s) of all GPU jobs, single-GPU (at most one GPU) and multi-GPU jobs."""
    duration = jobs["duration_s"].to_numpy(dtype=np.float64)
    multi = jobs["num_gpus"].to_numpy(dtype=np.float64) > 1
    rows = {}
    for group, values in (("all GPU jobs", duration), ("single-GPU", duration[~multi]), ("multi-GPU", duration[multi])):
        if values.size:
            p50, p90, p99 = np.quantile(values, (0.5, 0.9, 0.99))
            rows[group] = {"jobs": values.size, "p50_s": p50, "p90_s": p90, "p99_s": p99, "mean_s": values.mean()}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("group")


def gpu_demand(jobs: pd.DataFrame) -> pd.DataFrame:
    """Per GPU count: ``jobs``, ``gpu_hours``, their shares and cumulative shares (ascending GPUs)."""
    gpu_s = jobs["num_gpus"].to_numpy(dtype=np.float64) * jobs["duration_s"].to_numpy(dtype=np.float64)
    frame = pd.DataFrame({"num_gpus": jobs["num_gpus"].to_numpy(dtype=np.float64), "gpu_hours": gpu_s / HOUR_S})
    table = frame.groupby("num_gpus").agg(jobs=("gpu_hours", "size"), gpu_hours=("gpu_hours", "sum"))
    table["job_share"] = table["jobs"] / table["jobs"].sum()
    table["gpu_time_share"] = table["gpu_hours"] / table["gpu_hours"].sum()
    table["cum_job_share"] = table["job_share"].cumsum()
    table["cum_gpu_time_share"] = table["gpu_time_share"].cumsum()
    return table


def demand_buckets(num_gpus: np.ndarray) -> pd.Categorical:
    """GPU-demand bucket of each job: ``<1``, ``1``, ``2``, ``3-4``, ``5-8``, ... ``>64``."""
    index = np.where(num_gpus < 1, 0, np.searchsorted(DEMAND_UPPERS, num_gpus, side="left") + 1)
    return pd.Categorical.from_codes(index, categories=list(DEMAND_LABELS), ordered=True)


def final_states_by_demand(jobs: pd.DataFrame) -> pd.DataFrame:
    """Per non-empty GPU-demand bucket: ``jobs`` and the share of jobs in each final state present."""
    frame = pd.DataFrame({"bucket": demand_buckets(jobs["num_gpus"].to_numpy(dtype=np.float64)),
                          "state": jobs["final_state"].to_numpy(dtype=object)})  # fmt: skip
    counts = frame.groupby(["bucket", "state"], observed=True).size().unstack(fill_value=0)
    counts = counts[[s for s in FINAL_STATES if s in counts.columns]]
    table = counts.div(counts.sum(axis=1), axis=0)
    table.insert(0, "jobs", counts.sum(axis=1))
    table.columns.name = None
    return table


def final_state_gpu_time(jobs: pd.DataFrame) -> pd.Series:
    """Share of all GPU time spent by jobs of each final state."""
    gpu_s = jobs["num_gpus"].to_numpy(dtype=np.float64) * jobs["duration_s"].to_numpy(dtype=np.float64)
    totals = pd.Series(gpu_s).groupby(jobs["final_state"].to_numpy(dtype=object)).sum()
    return (totals / totals.sum()).reindex([s for s in FINAL_STATES if s in totals.index])


# ---------------------------------------------------------------- user tables


def user_gpu_time(jobs: pd.DataFrame) -> pd.DataFrame:
    """Users (known ones) by GPU time, largest first: ``jobs``, ``gpu_hours``, ``share``,
    ``cum_share`` and ``user_fraction`` (rank / users)."""
    known = (jobs["user"] != "").to_numpy()
    gpu_h = jobs["num_gpus"].to_numpy(dtype=np.float64)[known] * jobs["duration_s"].to_numpy(dtype=np.float64)[known]
    frame = pd.DataFrame({"user": jobs["user"].to_numpy(dtype=object)[known], "gpu_hours": gpu_h / HOUR_S})
    table = frame.groupby("user").agg(jobs=("gpu_hours", "size"), gpu_hours=("gpu_hours", "sum"))
    return _ranked(table, "gpu_hours")


def user_queueing(jobs: pd.DataFrame) -> pd.DataFrame:
    """Users (known ones, jobs with a recorded delay) by total queueing delay, largest first:
    ``jobs``, ``mean_queue_s``, ``total_queue_s``, ``share``, ``cum_share``, ``user_fraction``."""
    queue = _recorded_queue(jobs)
    if queue is None:
        raise ConfigError(f"the job table has no recorded queueing delay (column {QUEUE_COLUMN!r})")
    keep = (jobs["user"] != "").to_numpy() & np.isfinite(queue)
    frame = pd.DataFrame({"user": jobs["user"].to_numpy(dtype=object)[keep], "queue_s": queue[keep]})
    table = frame.groupby("user").agg(
        jobs=("queue_s", "size"), mean_queue_s=("queue_s", "mean"), total_queue_s=("queue_s", "sum")
    )
    return _ranked(table, "total_queue_s")


def top_user_share(ranked: pd.DataFrame, fraction: float) -> float:
    """Share held by the top ``fraction`` of users of a ranked user table (at least one user)."""
    count = max(1, math.ceil(fraction * len(ranked) - 1e-9))
    return float(ranked["cum_share"].iloc[min(count, len(ranked)) - 1])


def _ranked(table: pd.DataFrame, column: str) -> pd.DataFrame:
    table = table.sort_values(column, ascending=False, kind="stable")
    total = table[column].sum()
    table["share"] = table[column] / total if total > 0 else 0.0
    table["cum_share"] = table["share"].cumsum()
    table["user_fraction"] = np.arange(1, len(table) + 1) / len(table)
    return table


# ---------------------------------------------------------------- plots


def plot_hourly(table: pd.DataFrame, basis: str) -> Figure:
    """Two panels over the hour of day: GPUs in use (or % of capacity) and submissions per hour."""
    figure = Figure(figsize=(FIGSIZE[0], 6.0), layout="constrained")
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
        _grid(axes)
        axes.set_ylim(bottom=0)
    return figure


def plot_monthly(table: pd.DataFrame) -> Figure:
    """Jobs per month split into single- and multi-GPU jobs (bars) and GPU-hours (line)."""
    figure, axes = _figure("Monthly trends (by month of submission)")
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
    figure, axes = _figure(f"Per-VC {what} ({table.shape[0]} days{extra})")
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
    figure, axes = _figure(f"Job duration CDF (GPU jobs{note})")
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
    figure, axes = _figure("GPU demand CDF: by job count and by GPU time")
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
    figure, axes = _figure("Final state of jobs by GPU demand")
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
    figure, axes = _figure(f"GPU time by user ({len(table):,} users, heaviest first)")
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
    figure = Figure(figsize=(FIGSIZE[0] * 1.25, FIGSIZE[1]), layout="constrained")
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
        _grid(axes)
    return figure


def _figure(title: str) -> tuple[Figure, Axes]:
    figure = Figure(figsize=FIGSIZE, layout="constrained")
    axes = figure.add_subplot()
    axes.set_title(title)
    _grid(axes)
    return figure, axes


def _grid(axes: Axes) -> None:
    axes.grid(True, alpha=0.3)


def _log_time_axis(axes: Axes) -> None:
    """Log-scale seconds labelled in readable units: 1 s, 1 min, 1 h, 1 day, 1 week, 30 days when
    at least two of them fall in range, else five evenly spaced (on the log scale) values."""
    axes.set_xscale("log")
    axes.xaxis.set_minor_formatter(NullFormatter())
    low, high = axes.get_xlim()
    ticks = [t for t in (1.0, 60.0, HOUR_S, DAY_S, 7 * DAY_S, 30 * DAY_S) if low <= t <= high]
    if len(ticks) < 2:
        ticks = [float(f"{t:.2g}") for t in np.geomspace(low, high, 7)[1:-1]]
    axes.set_xticks(ticks, [_duration_text(t) for t in ticks])


# ---------------------------------------------------------------- the report


@dataclass
class Section:
    """One analysis in the report: its figure (None when skipped) and the text and numbers behind it."""

    key: str
    title: str
    text: str
    figure: Figure | None = None
    numbers: dict[str, Any] = field(default_factory=dict)

    @property
    def png(self) -> str:
        return f"{self.key}.png"


@dataclass(frozen=True)
class _Trace:
    """What the analyses share: the job table, its dates, skipped rows and cluster capacity."""

    workload: Workload
    capacity_gpus: float | None
    vc_gpus: Mapping[str, float] | None

    @property
    def jobs(self) -> pd.DataFrame:
        return self.workload.jobs

    @property
    def basis(self) -> str:
        return QUEUE_BASIS if self.queue_known else NO_QUEUE_BASIS

    @property
    def queue_known(self) -> bool:
        return _recorded_queue(self.jobs) is not None


def characterize(workload: Workload, out_dir: Path, *, cluster: ClusterSpec | None = None) -> list[Path]:
    """Run every analysis the workload supports; write ``<analysis>.png`` files, ``summary.json`` and
    ``index.html`` into ``out_dir`` and return their paths. ``cluster`` turns GPU counts into
    utilisation (of the whole cluster, and of each VC for partitioned or quota'd tenants)."""
    if len(workload) == 0:
        raise ConfigError("the workload has no jobs to characterise")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    trace = _Trace(workload, None if cluster is None else float(cluster.total_gpus), _vc_capacity(cluster))
    sections = [build(trace) for build in SECTIONS]
    written = []
    for section in sections:
        path = out_dir / section.png
        if section.figure is not None:
            section.figure.savefig(path, dpi=DPI)
            written.append(path)
        else:
            path.unlink(missing_ok=True)
    summary = _summary(trace, sections)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    (out_dir / "index.html").write_text(_html(summary, sections))
    return [*written, out_dir / "summary.json", out_dir / "index.html"]


def _vc_capacity(cluster: ClusterSpec | None) -> dict[str, float] | None:
    """GPUs of each VC: its node pool in a partitioned cluster, else its quota (None if none)."""
    if cluster is None:
        return None
    if cluster.partitioned:
        return {pool: float(g) for pool, g in cluster.gpus_by_pool().items() if pool}
    quotas = {t.name: float(t.quota_gpus) for t in cluster.tenants.values() if t.quota_gpus}
    return quotas or None


def _hourly_section(trace: _Trace) -> Section:
    title = "Hourly cluster usage and submissions"
    if trace.workload.origin is None:
        return Section("hourly", title, "Skipped: the trace has no wall-clock dates, so hours of day are unknown.")
    table = hourly_profile(trace.jobs, trace.workload.origin, capacity_gpus=trace.capacity_gpus)
    subs = table["submissions"].dropna()
    ratio = float(subs.max() / subs.min()) if len(subs) and subs.min() > 0 else None
    numbers = {
        "peak_submit_hour": int(subs.idxmax()),
        "trough_submit_hour": int(subs.idxmin()),
        "peak_trough_submit_ratio": ratio,
        "mean_submissions_per_hour": float(subs.mean()),
        "mean_gpus_running": float(table["gpus_running"].mean()),
        "peak_usage_hour": int(table["gpus_running"].idxmax()),
        "mean_utilisation": float(table["utilisation"].mean()) if "utilisation" in table.columns else None,
        "running_basis": trace.basis,
        "table": _records(table),
    }
    ratio_text = f"{ratio:.1f}x" if ratio is not None else "undefined (an hour without submissions)"
    util = f" ({numbers['mean_utilisation']:.0%} of the cluster)" if numbers["mean_utilisation"] is not None else ""
    text = (
        f"Submissions peak at {numbers['peak_submit_hour']}:00 and bottom out at {numbers['trough_submit_hour']}:00 "
        f"(peak/trough ratio {ratio_text}). Running jobs request {numbers['mean_gpus_running']:,.0f} GPUs on "
        f"average{util}, most at {numbers['peak_usage_hour']}:00."
    )
    return Section("hourly", title, text, plot_hourly(table, trace.basis), numbers)


def _monthly_section(trace: _Trace) -> Section:
    title = "Monthly trends"
    if trace.workload.origin is None:
        return Section("monthly", title, "Skipped: the trace has no wall-clock dates, so months are unknown.")
    table = monthly_trends(trace.jobs, trace.workload.origin, capacity_gpus=trace.capacity_gpus)
    busiest = str(table["gpu_hours"].idxmax())
    numbers = {"months": len(table), "busiest_month": busiest, "table": _records(table)}
    text = (
        f"{len(table)} month(s), {table['jobs'].min():,}-{table['jobs'].max():,} jobs per month; most GPU time in "
        f"{busiest} ({table['gpu_hours'].max():,.0f} GPU-hours). Multi-GPU jobs: "
        f"{table['multi_gpu_jobs'].sum() / table['jobs'].sum():.1%} of all jobs."
    )
    return Section("monthly", title, text, plot_monthly(table), numbers)


def _vc_section(trace: _Trace) -> Section:
    title = "Per-VC utilisation"
    tenants = trace.jobs["tenant"].nunique()
    if tenants < 2:
        return Section("vc_usage", title, f"Skipped: the trace has {tenants} tenant (VC), so there is no spread.")
    table = vc_daily_usage(trace.jobs, trace.workload.origin, vc_gpus=trace.vc_gpus)
    sized = trace.vc_gpus is not None and table.shape[1] > 0
    if not sized:
        table = vc_daily_usage(trace.jobs, trace.workload.origin)
    medians = table.median().sort_values(ascending=False)
    numbers = {
        "vcs": int(tenants),
        "vcs_shown": int(min(table.shape[1], MAX_VCS)),
        "relative_to_size": sized,
        "days": int(table.shape[0]),
        "median_by_vc": {str(k): _clean(v) for k, v in medians.items()},
    }
    what = "daily utilisation of its own GPUs" if sized else "daily share of the cluster's GPU time"
    left_out = f" {tenants - table.shape[1]} VC(s) have no size in the cluster and are left out." if sized else ""
    text = (
        f"{tenants} VCs over {table.shape[0]} days; per-VC median {what} ranges from {medians.min():.1%} to "
        f"{medians.max():.1%} ({medians.index[0]} highest).{left_out}"
    )
    return Section("vc_usage", title, text, plot_vc_usage(table, relative_to_size=sized), numbers)


def _duration_section(trace: _Trace) -> Section:
    table = duration_summary(trace.jobs)
    cpu = int(trace.workload.skipped.get("cpu_job", 0))
    total = len(trace.jobs) + sum(trace.workload.skipped.values())
    overall = table.loc["all GPU jobs"]
    numbers = {"cpu_jobs_skipped": cpu, "cpu_job_share_of_rows": cpu / total if total else 0.0,
               "table": _records(table)}  # fmt: skip
    cpu_text = (
        f" The loader skipped {cpu:,} CPU jobs ({numbers['cpu_job_share_of_rows']:.1%} of the trace's rows); their "
        "durations are not kept, so only GPU jobs are shown."
        if cpu
        else " The trace has no CPU jobs (or the loader recorded none), so only GPU jobs are shown."
    )
    text = (
        f"Median GPU-job duration {_duration_text(overall['p50_s'])}, p90 {_duration_text(overall['p90_s'])}, "
        f"mean {_duration_text(overall['mean_s'])}.{cpu_text}"
    )
    return Section("durations", "Job duration", text, plot_duration_cdf(trace.jobs, cpu), numbers)


def _demand_section(trace: _Trace) -> Section:
    table = gpu_demand(trace.jobs)
    gpus = table.index.to_numpy(dtype=np.float64)
    numbers = {
        "single_gpu_job_share": float(table["job_share"][gpus == 1].sum()),
        "at_most_one_gpu_job_share": float(table["job_share"][gpus <= 1].sum()),
        "single_gpu_time_share": float(table["gpu_time_share"][gpus <= 1].sum()),
        "ge8_gpu_job_share": float(table["job_share"][gpus >= 8].sum()),
        "ge8_gpu_time_share": float(table["gpu_time_share"][gpus >= 8].sum()),
        "table": _records(table),
    }
    text = (
        f"{numbers['single_gpu_job_share']:.1%} of jobs use a single GPU but take only "
        f"{numbers['single_gpu_time_share']:.1%} of GPU time (jobs with at most one GPU); jobs with 8+ GPUs are "
        f"{numbers['ge8_gpu_job_share']:.1%} of jobs and {numbers['ge8_gpu_time_share']:.1%} of GPU time."
    )
    return Section("gpu_demand", "GPU demand", text, plot_gpu_demand(table), numbers)


def _state_section(trace: _Trace) -> Section:
    title = "Final states by GPU demand"
    if (trace.jobs["final_state"] == "unknown").all():
        return Section("final_states", title, "Skipped: the trace records no final states.")
    table = final_states_by_demand(trace.jobs)
    job_shares = trace.jobs["final_state"].value_counts(normalize=True)
    time_shares = final_state_gpu_time(trace.jobs)
    numbers = {
        "job_share": {str(k): float(v) for k, v in job_shares.items()},
        "gpu_time_share": {str(k): float(v) for k, v in time_shares.items()},
        "table": _records(table),
    }
    parts = ", ".join(
        f"{s} {job_shares.get(s, 0.0):.1%} of jobs / {time_shares.get(s, 0.0):.1%} of GPU time"
        for s in time_shares.index
    )
    return Section("final_states", title, f"{parts[0].upper()}{parts[1:]}.", plot_final_states(table), numbers)


def _user_section(trace: _Trace) -> Section:
    title = "GPU time by user (marquee users)"
    if (trace.jobs["user"] == "").all():
        return Section("user_gpu_time", title, "Skipped: the trace has no user column.")
    table = user_gpu_time(trace.jobs)
    shares = {f"top_{round(100 * f)}pct_users_gpu_time_share": top_user_share(table, f) for f in TOP_USER_FRACTIONS}
    numbers = {"users": len(table), **shares}
    text = (
        f"{len(table):,} users. The top 1 % / 5 % / 10 % of users consume "
        + " / ".join(f"{v:.1%}" for v in shares.values())
        + " of all GPU time."
    )
    return Section("user_gpu_time", title, text, plot_user_gpu_time(table), numbers)


def _queue_section(trace: _Trace) -> Section:
    title = "Queueing delay by user"
    if not trace.queue_known:
        return Section("user_queueing", title, "Skipped: the trace records no queueing delay.")
    if (trace.jobs["user"] == "").all():
        return Section("user_queueing", title, "Skipped: the trace has no user column.")
    table = user_queueing(trace.jobs)
    top5 = top_user_share(table, 0.05)
    numbers = {
        "users": len(table),
        "median_user_mean_queue_s": float(table["mean_queue_s"].median()),
        "top_5pct_users_queue_share": top5,
    }
    text = (
        f"The median user waits {_duration_text(numbers['median_user_mean_queue_s'])} per job on average; the 5 % "
        f"of users who wait longest account for {top5:.1%} of all queueing delay."
    )
    return Section("user_queueing", title, text, plot_user_queueing(table), numbers)


SECTIONS: tuple[Callable[[_Trace], Section], ...] = (
    _hourly_section,
    _monthly_section,
    _vc_section,
    _duration_section,
    _demand_section,
    _state_section,
    _user_section,
    _queue_section,
)


def _summary(trace: _Trace, sections: list[Section]) -> dict[str, Any]:
    w = trace.workload
    submit = w.jobs["submit_s"].to_numpy(dtype=np.float64)
    gpu_h = float((w.jobs["num_gpus"] * w.jobs["duration_s"]).sum() / HOUR_S)
    return _clean(
        {
            "source": w.source,
            "origin": None if w.origin is None else w.origin.isoformat(),
            "jobs": len(w),
            "skipped": dict(w.skipped),
            "span_days": float((submit.max() - submit.min()) / DAY_S),
            "gpu_hours": gpu_h,
            "cluster_gpus": trace.capacity_gpus,
            "running_basis": trace.basis,
            "key_figures": _key_figures(sections),
            "analyses": {
                s.key: {"title": s.title, "figure": s.png if s.figure is not None else None, "text": s.text,
                        **s.numbers}  # fmt: skip
                for s in sections
            },
        }
    )


def _key_figures(sections: list[Section]) -> list[str]:
    """The headline numbers of the analyses that ran, one short line each."""
    n = {s.key: s.numbers for s in sections if s.figure is not None}
    lines = []
    if n.get("hourly", {}).get("peak_trough_submit_ratio") is not None:
        h = n["hourly"]
        lines.append(f"peak/trough hourly submissions: {h['peak_trough_submit_ratio']:.1f}x "
                     f"({h['peak_submit_hour']}:00 vs {h['trough_submit_hour']}:00)")  # fmt: skip
    p50 = n["durations"]["table"]["all GPU jobs"]["p50_s"]
    lines.append(f"median GPU-job duration: {_duration_text(p50)}")
    d = n["gpu_demand"]
    lines.append(f"single-GPU jobs: {d['single_gpu_job_share']:.1%} of jobs")
    lines.append(f"jobs with 8+ GPUs: {d['ge8_gpu_job_share']:.1%} of jobs, {d['ge8_gpu_time_share']:.1%} of GPU time")
    if "final_states" in n:
        shares = n["final_states"]["job_share"]
        lines.append(", ".join(f"{s} {shares.get(s, 0.0):.1%}" for s in FINAL_STATES if s in shares) + " of jobs")
    if "user_gpu_time" in n:
        lines.append(f"GPU-time share of the top 5 % users: {n['user_gpu_time']['top_5pct_users_gpu_time_share']:.1%}")
    if "user_queueing" in n:
        lines.append(f"queueing share of the 5 % longest-waiting users: "
                     f"{n['user_queueing']['top_5pct_users_queue_share']:.1%}")  # fmt: skip
    return lines


def _records(table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """A table as ``{row label: {column: value}}`` for JSON."""
    return {str(k): {str(c): v for c, v in row.items()} for k, row in table.to_dict(orient="index").items()}


def _clean(value: Any) -> Any:
    """JSON-ready copy: numpy scalars to Python, NaN and infinities to None."""
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def _duration_text(seconds: float) -> str:
    """Seconds in the largest unit that fits: ``45 s``, ``19.1 min``, ``3.1 h``, ``1 day``, ``7 days``."""
    for limit, unit, name in ((DAY_S, DAY_S, "day"), (HOUR_S, HOUR_S, "h"), (60.0, 60.0, "min")):
        if seconds >= limit:
            value = f"{seconds / unit:.1f}".removesuffix(".0")
            return f"{value} {name}" + ("s" if name == "day" and value != "1" else "")
    return f"{seconds:.3g} s"


def _html(summary: dict[str, Any], sections: list[Section]) -> str:
    """A self-contained page: the key figures, then each analysis with its text and image."""
    esc = html.escape
    facts = [
        f"{summary['jobs']:,} GPU jobs over {summary['span_days']:.1f} days, {summary['gpu_hours']:,.0f} GPU-hours",
        f"time zero: {summary['origin'] or 'unknown (no dates)'}",
        *(f"skipped by the loader: {n:,} {reason}" for reason, n in sorted(summary["skipped"].items())),
        f"running intervals: {summary['running_basis']}",
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Workload characterisation: {esc(summary['source'])}</title>",
        "<style>body{font-family:sans-serif;max-width:960px;margin:2em auto;line-height:1.4}"
        "img{max-width:100%;border:1px solid #ddd}.skipped{color:#777;font-style:italic}</style>",
        "</head><body>",
        f"<h1>Workload characterisation: {esc(summary['source'])}</h1>",
        "<p>Analyses after Hu et al., <i>Characterization and Prediction of Deep Learning Workloads in "
        "Large-Scale GPU Datacenters</i> (SC '21), section 3.</p>",
        "<ul>" + "".join(f"<li>{esc(f)}</li>" for f in facts) + "</ul>",
        "<h2>Key figures</h2><ul>" + "".join(f"<li>{esc(f)}</li>" for f in summary["key_figures"]) + "</ul>",
    ]
    for s in sections:
        parts.append(f'<h2 id="{s.key}">{esc(s.title)}</h2>')
        if s.figure is None:
            parts.append(f'<p class="skipped">{esc(s.text)}</p>')
        else:
            parts.append(f"<p>{esc(s.text)}</p>")
            parts.append(f'<img src="{s.png}" alt="{esc(s.title)}">')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
