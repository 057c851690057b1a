"""Characterisation tables after Hu et al., SC '21 (Helios) §3: pure pandas/numpy computations.

Table functions take the canonical job table (plus the origin or capacities they need) and return
small pandas frames, vectorised so a million jobs take seconds.

Running intervals: a job runs from ``submit_s + queue_s`` for ``duration_s`` when the job table has
the optional column ``queue_s`` (queueing delay recorded by the trace, seconds; NaN = unknown,
taken as 0), else from ``submit_s`` -- a no-queue lower bound that starts every job at submission.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError
from schedlab.units import DAY_S, HOUR_S
from schedlab.workload.schema import FINAL_STATES

QUEUE_COLUMN = "queue_s"
TOP_USER_FRACTIONS = (0.01, 0.05, 0.10)
DEMAND_UPPERS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
DEMAND_LABELS = ("<1", "1", "2", "3-4", "5-8", "9-16", "17-32", "33-64", ">64")
NO_QUEUE_BASIS = "no-queue lower bound: each job runs from its submit time (the trace records no queueing)"
QUEUE_BASIS = "submit time + recorded queueing delay"


# ---------------------------------------------------------------- running time and time bins


def running_intervals(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, bool]:
    """Start and end time of each job, and whether the start includes recorded queueing."""
    submit = jobs["submit_s"].to_numpy(dtype=np.float64)
    queue = recorded_queue(jobs)
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


def recorded_queue(jobs: pd.DataFrame) -> np.ndarray | None:
    """Each job's recorded queueing delay (s, NaN = unknown), or None when the trace records none."""
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
    assert first is not None
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
    queue = recorded_queue(jobs)
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


# ---------------------------------------------------------------- queueing tables


def _queue_stats(queue: np.ndarray, duration: np.ndarray) -> dict[str, float]:
    """Queueing statistics of a group of jobs (all with a recorded delay)."""
    p50, p90, p99 = np.quantile(queue, (0.5, 0.9, 0.99))
    return {
        "jobs": int(queue.size),
        "mean_queue_s": float(queue.mean()),
        "p50_queue_s": float(p50),
        "p90_queue_s": float(p90),
        "p99_queue_s": float(p99),
        "queued_share": float(np.mean(queue > 0)),
        "mean_duration_s": float(duration.mean()),
        "queue_share_of_jct": float(queue.sum() / (queue.sum() + duration.sum())),
    }


def _with_queue(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Jobs with a recorded delay (a boolean mask) and the delays of all jobs; ConfigError without any."""
    queue = recorded_queue(jobs)
    if queue is None:
        raise ConfigError(f"the job table has no recorded queueing delay (column {QUEUE_COLUMN!r})")
    return np.isfinite(queue), queue


def queue_summary(jobs: pd.DataFrame) -> dict[str, float]:
    """Over the jobs with a recorded delay: ``jobs``, mean / p50 / p90 / p99 queueing (s), the share
    of jobs that waited at all, mean duration and queueing's share of JCT (Σ queue / Σ (queue + run))."""
    known, queue = _with_queue(jobs)
    return _queue_stats(queue[known], jobs["duration_s"].to_numpy(dtype=np.float64)[known])


def vc_queueing(jobs: pd.DataFrame) -> pd.DataFrame:
    """Per tenant (VC), jobs with a recorded delay, by mean queueing delay, longest first (Helios
    Fig. 4 bottom: mean queueing and mean duration per VC), with the columns of :func:`queue_summary`."""
    known, queue = _with_queue(jobs)
    frame = pd.DataFrame({"tenant": jobs["tenant"].to_numpy(dtype=object)[known], "queue": queue[known],
                          "duration": jobs["duration_s"].to_numpy(dtype=np.float64)[known]})  # fmt: skip
    frame["queued"] = frame["queue"] > 0
    grouped = frame.groupby("tenant")
    q, total_queue, total_run = grouped["queue"], grouped["queue"].sum(), grouped["duration"].sum()
    table = pd.DataFrame(
        {
            "jobs": grouped.size(),
            "mean_queue_s": q.mean(),
            "p50_queue_s": q.median(),
            "p90_queue_s": q.quantile(0.9),
            "p99_queue_s": q.quantile(0.99),
            "queued_share": grouped["queued"].mean(),
            "mean_duration_s": grouped["duration"].mean(),
            "queue_share_of_jct": total_queue / (total_queue + total_run),
        }
    )
    return table.sort_values("mean_queue_s", ascending=False, kind="stable")


def queue_over_time(jobs: pd.DataFrame, origin: pd.Timestamp | None) -> pd.DataFrame:
    """Queueing of the jobs (with a recorded delay) submitted in each day, or each hour when they
    span under three days: ``jobs``, mean / p50 / p90 queueing (s), ``queued_share``; bins without
    such jobs have 0 jobs and NaN statistics. The index labels the bins (dates with an origin)."""
    known, queue = _with_queue(jobs)
    submit = jobs["submit_s"].to_numpy(dtype=np.float64)[known]
    queue = queue[known]
    unit = DAY_S if submit.max() - submit.min() >= 3 * DAY_S else HOUR_S
    edges, first = clock_edges(origin, float(submit.min()), float(submit.max()), unit)
    bins = np.clip(np.searchsorted(edges, submit, side="right") - 1, 0, edges.size - 2)
    frame = pd.DataFrame({"bin": bins, "queue_s": queue, "queued": queue > 0})
    grouped = frame.groupby("bin")
    table = pd.DataFrame(
        {
            "jobs": grouped.size(),
            "mean_queue_s": grouped["queue_s"].mean(),
            "p50_queue_s": grouped["queue_s"].median(),
            "p90_queue_s": grouped["queue_s"].quantile(0.9),
            "queued_share": grouped["queued"].mean(),
        }
    ).reindex(range(edges.size - 1))
    table["jobs"] = table["jobs"].fillna(0).astype(np.int64)
    if unit == DAY_S:
        labels = _day_labels(first, edges.size - 1)
    elif first is None:
        labels = [f"hour {round(e / HOUR_S)}" for e in edges[:-1]]
    else:
        labels = [str(t) for t in pd.date_range(first, periods=edges.size - 1, freq="h")]
    table.index = pd.Index(labels, name="day" if unit == DAY_S else "hour")
    return table


# ---------------------------------------------------------------- readable durations


def duration_text(seconds: float) -> str:
    """Seconds in the largest unit that fits: ``45 s``, ``19.1 min``, ``3.1 h``, ``1 day``, ``7 days``."""
    for limit, unit, name in ((DAY_S, DAY_S, "day"), (HOUR_S, HOUR_S, "h"), (60.0, 60.0, "min")):
        if seconds >= limit:
            value = f"{seconds / unit:.1f}".removesuffix(".0")
            return f"{value} {name}" + ("s" if name == "day" and value != "1" else "")
    return f"{seconds:.3g} s"
