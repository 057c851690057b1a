"""Headline and breakdown metrics of one simulation run, as a JSON-ready dict.

Definitions (times in seconds):

- **JCT** (job completion time) = ``end_s - submit_s``, over finished jobs only.
- **queueing delay** = ``queue_s`` (every pending segment, re-queues after preemption
  included), over *all* jobs: an unfinished job counts its wait up to the horizon.
  ``queued_jobs`` counts jobs whose ``queue_s > 0``.
- **slowdown** = JCT / ``duration_s`` (work on the reference GPU, alone), over finished jobs
  with ``duration_s > 0``. It can fall below 1 when a job ran on a GPU faster than the
  reference.
- **percentiles** interpolate linearly between order statistics (numpy's default).
- **makespan_s** = last ``end_s`` - first ``submit_s``.
- **gpu_alloc_rate** = time-weighted mean of ``gpus_busy / gpus_total`` over the arrival
  window, from the first to the last ``submit_s``: the share of the cluster the workload kept
  allocated while jobs were arriving (None when all jobs arrive at once). Each time-series
  row holds until the next row; the last row holds until :func:`span_end_s`. Intervals with
  no GPUs at all are left out.
- **gpu_alloc_rate_run** = the same over the whole series, the drain after the last arrival
  included.
- **gpu_alloc_rate_by_model** = ``gpu_alloc_rate`` per GPU model, from the time series'
  per-model columns ``gpus_busy[<model>]`` / ``gpus_total[<model>]`` (empty when the series
  has none).
- **eviction_rate** (evictable classes only) = evictions / runs, where evictions is the
  class's sum of ``preemptions`` and runs = evictions + jobs that ever started.
- ``classes`` always lists every priority class present, even a lone ``"default"``.
- ``sizes`` and ``duration_buckets`` list every bucket in a fixed order, empty ones too.
- the fairness keys (LTGF, finish-time fairness ρ, Jain's index) and ``tenant_fairness`` are
  defined in :mod:`schedlab.metrics.fairness`; the cluster's GPU count is ``extra["cluster_gpus"]``
  when given, else the time series' largest ``gpus_total``.

A statistic over an empty set is ``None`` (``null`` in JSON), never NaN. Every key is in
:mod:`schedlab.metrics.catalogue`, in the order the result has. Sums and means over groups are
exactly rounded (``math.fsum``). The tables may be pandas DataFrames or plain columns
(:mod:`schedlab.metrics.columns`): a run is summarised without pandas.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.errors import ConfigError, InputError
from schedlab.metrics.columns import Groups, Table, flags, labels, numbers
from schedlab.metrics.fairness import fairness_metrics

JOB_COLUMNS = (
    "tenant",
    "priority_class",
    "num_gpus",
    "submit_s",
    "duration_s",
    "first_start_s",
    "end_s",
    "finished",
    "queue_s",
    "preemptions",
    "gpu_seconds",
)
TIMESERIES_COLUMNS = ("time_s", "gpus_total", "gpus_busy")

SIZE_LABELS = ("<1", "1", "2-4", "5-8", "9-32", ">32")
SIZE_UPPER_EDGES = (1.0, 4.0, 8.0, 32.0)
DURATION_LABELS = ("short", "middle", "long")
SHORT_MAX_S = 15 * 60.0
LONG_MIN_S = 6 * 3600.0


def summarize(
    jobs: Table,
    ts: Table,
    *,
    policy: str,
    evictable_classes: Iterable[str] = ("spot",),
    extra: Mapping[str, Any] | None = None,
    fairness: bool = False,
    shares: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Summarise one run's per-job table and cluster time series (see the module doc).

    The fairness metrics are computed with ``fairness`` or with ``shares`` (each tenant's
    weight; equal weights when None): they cost O(time points x tenants) in time and memory
    (about 2.5 s for 200,000 jobs in 16 tenants, 5 s and 1 GB for 70,000 jobs in 119), so
    plain runs leave them out.

    ``extra`` entries (e.g. ``sim_wall_s``, ``peak_rss_mb``, ``placer``, ``workload``) are
    added to the result; one that would overwrite a computed metric raises ``ConfigError``.
    A missing column raises ``InputError`` naming it.
    """
    _require_columns(jobs, JOB_COLUMNS, "jobs table")
    _require_columns(ts, TIMESERIES_COLUMNS, "time series")
    stats = _JobStats(jobs)
    queue = stats.queue_s
    end_s = numbers(jobs["end_s"])
    window = arrival_window(stats.submit_s)
    finished = int(stats.finished.sum())
    summary: dict[str, Any] = {
        "policy": policy,
        "jobs": stats.n,
        "finished": finished,
        "unfinished": stats.n - finished,
        **_distribution("jct", stats.jct_s, (50, 95, 99)),
        **_distribution("queue", queue, (50, 99)),
        "queued_jobs": int(np.count_nonzero(queue > 0)),
        "slowdown_mean": _mean(stats.slowdown),
        "makespan_s": makespan_s(stats.submit_s, end_s),
        "gpu_alloc_rate": gpu_alloc_rate(ts, end_s, window),
        "gpu_alloc_rate_run": gpu_alloc_rate(ts, end_s),
        "gpu_alloc_rate_by_model": gpu_alloc_rate_by_model(ts, end_s, window),
        "preemptions": int(stats.preemptions.sum()),
        "migrations": int(np.nansum(numbers(jobs["migrations"]))) if "migrations" in jobs else 0,
        "colocated_jobs": int((numbers(jobs["colocated_s"]) > 0).sum()) if "colocated_s" in jobs else 0,
        "gpu_seconds": float(np.nansum(stats.gpu_seconds)),
        "classes": stats.classes(frozenset(evictable_classes)),
        "tenants": stats.tenants(),
        "sizes": stats.buckets(size_bucket(stats.num_gpus), SIZE_LABELS),
        "duration_buckets": stats.buckets(duration_bucket(stats.work_s), DURATION_LABELS),
        **(_fairness(jobs, ts, end_s, extra or {}, shares) if fairness or shares is not None else {}),
    }
    clash = sorted(set(extra or {}) & set(summary))
    if clash:
        raise ConfigError(f"extra summary keys clash with computed metrics: {', '.join(clash)}")
    summary.update(extra or {})
    plain: dict[str, Any] = to_jsonable(summary)
    return plain


def size_bucket(num_gpus: np.ndarray) -> np.ndarray:
    """Index into :data:`SIZE_LABELS` of each job's GPU count (-1 where unknown)."""
    gpus = np.asarray(num_gpus, dtype=float)
    codes = np.searchsorted(np.asarray(SIZE_UPPER_EDGES), gpus, side="left") + 1
    codes[gpus < 1] = 0
    codes[~np.isfinite(gpus)] = -1
    return codes


def duration_bucket(duration_s: np.ndarray) -> np.ndarray:
    """Index into :data:`DURATION_LABELS`: short < 15 min <= middle <= 6 h < long (-1 if unknown)."""
    work = np.asarray(duration_s, dtype=float)
    codes = (work >= SHORT_MAX_S).astype(np.int64) + (work > LONG_MIN_S)
    codes[~np.isfinite(work)] = -1
    return codes


def makespan_s(submit_s: np.ndarray, end_s: np.ndarray) -> float | None:
    """Last job end minus first submit; None when no job ended."""
    ends = end_s[np.isfinite(end_s)]
    if ends.size == 0 or submit_s.size == 0:
        return None
    return float(ends.max() - np.nanmin(submit_s))


def span_end_s(time_s: np.ndarray, end_s: np.ndarray) -> float:
    """Where the time series' last row stops: the later of its own time and the last job end."""
    ends = end_s[np.isfinite(end_s)]
    last_row = float(time_s[-1])
    return max(last_row, float(ends.max())) if ends.size else last_row


def arrival_window(submit_s: np.ndarray) -> tuple[float, float]:
    """First and last finite submit time; ``(0.0, 0.0)`` (an empty window) when there are none."""
    submits = submit_s[np.isfinite(submit_s)]
    return (float(submits.min()), float(submits.max())) if submits.size else (0.0, 0.0)


def gpu_alloc_rate(
    ts: Table, end_s: np.ndarray, window: tuple[float, float] | None = None
) -> float | None:
    """Time-weighted mean of ``gpus_busy / gpus_total`` over the series' span, or over its part
    inside ``window`` = ``(start_s, end_s)`` (see the module doc)."""
    return _alloc_rate(ts, end_s, "gpus_busy", "gpus_total", window)


def gpu_alloc_rate_by_model(
    ts: Table, end_s: np.ndarray, window: tuple[float, float] | None = None
) -> dict[str, float | None]:
    """Per GPU model: :func:`gpu_alloc_rate` from the ``gpus_busy[<model>]`` and
    ``gpus_total[<model>]`` columns."""
    models = [c[len("gpus_busy["):-1] for c in ts if c.startswith("gpus_busy[") and c.endswith("]")]
    return {m: _alloc_rate(ts, end_s, f"gpus_busy[{m}]", f"gpus_total[{m}]", window) for m in models
            if f"gpus_total[{m}]" in ts}  # fmt: skip


def _alloc_rate(
    ts: Table, end_s: np.ndarray, busy_column: str, total_column: str, window: tuple[float, float] | None
) -> float | None:
    time_s = numbers(ts["time_s"])
    if time_s.size == 0:
        return None
    edges = np.append(time_s, span_end_s(time_s, end_s))
    widths = np.diff(edges if window is None else np.clip(edges, *window))
    total = numbers(ts[total_column])
    busy = numbers(ts[busy_column])
    usable = total > 0
    weight = widths[usable].sum()
    if weight <= 0:
        return None
    return float(np.dot(busy[usable] / total[usable], widths[usable]) / weight)


def window_classes(
    jobs: Table, start_s: float, end_s: float, evictable_classes: Iterable[str] = ("spot",)
) -> dict[str, dict[str, Any]]:
    """The ``classes`` breakdown over the jobs submitted in ``[start_s, end_s]`` only: a
    steady-state measurement that leaves out a warm-up (jobs submitted while the cluster was
    still filling) and the drain after the last arrival."""
    _require_columns(jobs, JOB_COLUMNS, "jobs table")
    submit = numbers(jobs["submit_s"])
    stats = _JobStats(jobs, (submit >= start_s) & (submit <= end_s))
    breakdown: dict[str, dict[str, Any]] = to_jsonable(stats.classes(frozenset(evictable_classes)))
    return breakdown


class _JobStats:
    """The per-job columns the statistics need (of the rows in ``keep``), derived once."""

    def __init__(self, jobs: Table, keep: np.ndarray | None = None) -> None:
        def rows(values: np.ndarray) -> np.ndarray:
            return values if keep is None else values[keep]

        self.finished = rows(flags(jobs["finished"]))
        self.submit_s = rows(numbers(jobs["submit_s"]))
        self.work_s = rows(numbers(jobs["duration_s"]))
        self.num_gpus = rows(numbers(jobs["num_gpus"]))
        self.jct_s = np.where(self.finished, rows(numbers(jobs["end_s"])) - self.submit_s, np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.slowdown = np.where(self.work_s > 0, self.jct_s / self.work_s, np.nan)
        self.started = np.isfinite(rows(numbers(jobs["first_start_s"])))
        self.queue_s = rows(numbers(jobs["queue_s"]))
        self.preemptions = np.nan_to_num(rows(numbers(jobs["preemptions"]))).astype(np.int64)
        self.gpu_seconds = rows(numbers(jobs["gpu_seconds"]))
        self.n = int(self.submit_s.size)
        self._text = {c: jobs[c] for c in ("tenant", "priority_class")}
        self._keep = keep

    def _labels(self, column: str) -> tuple[np.ndarray, list[str]]:
        codes, names = labels(self._text[column])
        return (codes if self._keep is None else codes[self._keep]), names

    def classes(self, evictable: frozenset[str]) -> dict[str, dict[str, Any]]:
        """Per priority class: counts, JCT and queue statistics, preemptions, eviction rate."""
        codes, names = self._labels("priority_class")
        groups = Groups(codes, len(names))
        result = _present(groups, _records(names, jobs=groups.counts(), finished=groups.total(self.finished),
                          jct_mean_s=groups.mean(self.jct_s), jct_p99_s=groups.quantile(self.jct_s, 0.99),
                          queue_mean_s=groups.mean(self.queue_s), preemptions=groups.total(self.preemptions)))  # fmt: skip
        for name, started in zip(names, groups.total(self.started)):
            if name in result and name in evictable:
                runs = result[name]["preemptions"] + started
                result[name]["eviction_rate"] = result[name]["preemptions"] / runs if runs else None
        return result

    def tenants(self) -> dict[str, dict[str, Any]]:
        """Per tenant: jobs, mean JCT (finished jobs), mean queueing delay, GPU-seconds."""
        codes, names = self._labels("tenant")
        groups = Groups(codes, len(names))
        return _present(groups, _records(names, jobs=groups.counts(), jct_mean_s=groups.mean(self.jct_s),
                        queue_mean_s=groups.mean(self.queue_s), gpu_seconds=groups.sum(self.gpu_seconds)))  # fmt: skip

    def buckets(self, codes: np.ndarray, names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
        """Per bucket, every bucket in order (empty ones too); rows of code -1 are left out."""
        groups = Groups(codes, len(names))
        return _records(list(names), jobs=groups.counts(), jct_mean_s=groups.mean(self.jct_s),
                        queue_mean_s=groups.mean(self.queue_s))  # fmt: skip


def _present(groups: Groups, records: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The records of the groups that hold rows (a label seen only outside the kept rows has none)."""
    return {name: row for (name, row), count in zip(records.items(), groups.counts()) if count}


def write_summary(path: Path, summary: Mapping[str, Any]) -> Path:
    """Write a summary as strict JSON (NaN and infinities become null)."""
    path = Path(path)
    path.write_text(json.dumps(to_jsonable(summary), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return path


def read_summary(path: Path) -> dict[str, Any]:
    """Read a summary written by :func:`write_summary`."""
    path = Path(path)
    try:
        summary: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError("file not found", file=str(path)) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg}, line {exc.lineno})", file=str(path)) from exc
    return summary


def to_jsonable(value: Any) -> Any:
    """Plain Python copy of ``value``: numpy scalars unboxed, NaN / infinities / NA as None."""
    if isinstance(value, Mapping):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, np.ndarray):
        return [to_jsonable(item) for item in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Path):
        return str(value)
    if type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing values, without importing pandas
        return None
    return value


def _require_columns(table: Table, columns: tuple[str, ...], what: str) -> None:
    missing = [name for name in columns if name not in table]
    if missing:
        raise InputError(f"{what} lacks column(s) {', '.join(missing)}", field=missing[0])


def _records(names: list[str], **columns: list[Any]) -> dict[str, dict[str, Any]]:
    """One record per group name from per-group columns, keys in the columns' order."""
    records: dict[str, dict[str, Any]] = to_jsonable(
        {name: dict(zip(columns, row)) for name, row in zip(names, zip(*columns.values()))}
    )
    return records


def _distribution(name: str, values: np.ndarray, percentiles: tuple[int, ...]) -> dict[str, float | None]:
    """``<name>_mean_s`` and ``<name>_p<q>_s`` over the finite values."""
    finite = values[np.isfinite(values)]
    stats: dict[str, float | None] = {f"{name}_mean_s": _mean(finite)}
    points = np.percentile(finite, percentiles) if finite.size else [None] * len(percentiles)
    stats.update({f"{name}_p{q}_s": point for q, point in zip(percentiles, points)})
    return stats


def _mean(values: np.ndarray) -> float | None:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else None


def _fairness(
    jobs: Table, ts: Table, end_s: np.ndarray, extra: Mapping[str, Any], shares: Mapping[str, float] | None
) -> dict[str, Any]:
    time_s = numbers(ts["time_s"])
    horizon_s = span_end_s(time_s, end_s) if time_s.size else None
    gpus = extra.get("cluster_gpus") or (float(numbers(ts["gpus_total"]).max()) if time_s.size else 0.0)
    return fairness_metrics(jobs, gpus, shares=shares, horizon_s=horizon_s)
