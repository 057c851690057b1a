"""PNG plots of one run or a policy comparison, drawn off-screen with matplotlib.

Figures are built as :class:`matplotlib.figure.Figure` objects and saved with the Agg
renderer, so no display and no pyplot global state are involved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from schedlab.errors import InputError
from schedlab.figures import save, titled_axes
from schedlab.metrics.summary import read_summary, span_end_s
from schedlab.tables import read_parquet

RUN_FILES = ("jobs.parquet", "timeseries.parquet", "summary.json")
JOB_PLOT_COLUMNS = ("submit_s", "end_s", "finished", "queue_s")
TS_PLOT_COLUMNS = ("time_s", "gpus_total", "gpus_busy", "pending_jobs")
PLOT_POINTS = 2000
TIME_UNITS = ((3 * 86400.0, 86400.0, "days"), (3 * 3600.0, 3600.0, "hours"), (180.0, 60.0, "minutes"))


@dataclass(frozen=True, slots=True)
class RunData:
    """What the plots need from one run directory."""

    label: str
    jobs: pd.DataFrame
    ts: pd.DataFrame
    end_s: float


def report(run_dir: Path) -> list[Path]:
    """Draw the standard plots of a run or comparison directory into it; return the PNG paths."""
    run_dir = Path(run_dir)
    run_dirs = find_runs(run_dir)
    single = run_dirs == [run_dir]
    runs = [load_run(path, label=None if single else path.name) for path in run_dirs]
    drawings = (
        ("jct_cdf.png", plot_jct_cdf),
        ("queue_cdf.png", plot_queue_cdf),
        ("queue_length.png", plot_queue_length),
        ("gpu_allocation.png", plot_gpu_allocation),
    )
    written = []
    for name, draw in drawings:
        written.append(save(draw(runs), run_dir / name))
    return written


def find_runs(run_dir: Path) -> list[Path]:
    """``[run_dir]`` for a single run, else its per-policy subdirectories holding run files."""
    if any((run_dir / name).exists() for name in RUN_FILES):
        return [run_dir]
    subdirs = sorted(path for path in run_dir.iterdir() if path.is_dir()) if run_dir.is_dir() else []
    runs = [path for path in subdirs if any((path / name).exists() for name in RUN_FILES)]
    if not runs:
        raise InputError(
            "not a run directory (no run files here nor in any subdirectory)", file=str(run_dir / RUN_FILES[0])
        )
    return runs


def load_run(run_dir: Path, *, label: str | None = None) -> RunData:
    """Read the plot columns of one run; ``label`` defaults to the summary's policy."""
    for name in RUN_FILES:
        if not (run_dir / name).is_file():
            raise InputError("run file missing", file=str(run_dir / name))
    jobs = read_parquet(run_dir / "jobs.parquet", JOB_PLOT_COLUMNS)
    ts = read_parquet(run_dir / "timeseries.parquet", TS_PLOT_COLUMNS)
    summary = read_summary(run_dir / "summary.json")
    end_s = span_end_s(ts["time_s"].to_numpy(dtype=float), jobs["end_s"].to_numpy(dtype=float)) if len(ts) else 0.0
    return RunData(label=label or str(summary.get("policy") or run_dir.name), jobs=jobs, ts=ts, end_s=end_s)


def cdf_points(values: np.ndarray, total: int, points: int = PLOT_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Positive ``values`` sorted, with the fraction of ``total`` at or below each; thinned to ``points``.

    Values <= 0 are not drawn (a log axis cannot show them) but count in the fractions, so
    the curve starts at the share of jobs with a zero value.
    """
    ordered = np.sort(values[np.isfinite(values)])
    fractions = np.arange(1, ordered.size + 1) / max(total, 1)
    keep = ordered > 0
    ordered, fractions = ordered[keep], fractions[keep]
    if ordered.size > points:
        picks = np.unique(np.linspace(0, ordered.size - 1, points).round().astype(np.int64))
        ordered, fractions = ordered[picks], fractions[picks]
    return ordered, fractions


def resample_step(
    time_s: np.ndarray, values: np.ndarray, end_s: float, points: int = PLOT_POINTS
) -> tuple[np.ndarray, np.ndarray]:
    """Bin edges and the time-weighted mean of a step function per bin (``points`` bins).

    A row's value holds from its time to the next row's time, the last one to ``end_s``.
    Short series come back unchanged as edges (the row times plus ``end_s``) and values.
    """
    if time_s.size <= points or end_s <= time_s[0]:
        return np.append(time_s, max(end_s, time_s[-1])), values
    widths = np.diff(time_s, append=end_s)
    area_before = np.concatenate(([0.0], np.cumsum(values * widths)))
    edges = np.linspace(time_s[0], end_s, points + 1)
    row = np.clip(np.searchsorted(time_s, edges, side="right") - 1, 0, time_s.size - 1)
    area = area_before[row] + values[row] * (edges - time_s[row])
    return edges, np.diff(area) / np.diff(edges)


def plot_jct_cdf(runs: Sequence[RunData]) -> Figure:
    """CDF of job completion time over finished jobs, log time axis."""
    figure, axes = titled_axes("Job completion time CDF (finished jobs)")
    drawn = False
    for run in runs:
        finished = run.jobs["finished"].fillna(False).to_numpy(dtype=bool)
        jct = (run.jobs["end_s"].to_numpy(dtype=float) - run.jobs["submit_s"].to_numpy(dtype=float))[finished]
        x, y = cdf_points(jct, int(finished.sum()))
        drawn |= _draw_cdf(axes, x, y, run.label)
    _finish_cdf(axes, drawn, "job completion time (s, log scale)", "fraction of finished jobs")
    return figure


def plot_queue_cdf(runs: Sequence[RunData]) -> Figure:
    """CDF of total queueing delay over all jobs, log time axis."""
    figure, axes = titled_axes("Queueing delay CDF (all jobs; curve starts at the share that never waited)")
    drawn = False
    for run in runs:
        queue = run.jobs["queue_s"].to_numpy(dtype=float)
        total = int(np.isfinite(queue).sum())
        x, y = cdf_points(queue, total)
        waited = np.count_nonzero(queue > 0) / total if total else 0.0
        drawn |= _draw_cdf(axes, x, y, f"{run.label} ({waited:.0%} waited)")
    _finish_cdf(axes, drawn, "queueing delay (s, log scale)", "fraction of jobs")
    return figure


def plot_queue_length(runs: Sequence[RunData]) -> Figure:
    """Pending jobs over time (time-weighted bin means for long series)."""
    figure, axes = titled_axes("Queue length over time")
    scale, unit = _time_unit(runs)
    for run in runs:
        if len(run.ts) == 0:
            continue
        time_s = run.ts["time_s"].to_numpy(dtype=float)
        edges, pending = resample_step(time_s, run.ts["pending_jobs"].to_numpy(dtype=float), run.end_s)
        _draw_step(axes, edges / scale, pending, run.label)
    axes.set_xlabel(f"simulated time ({unit})")
    axes.set_ylabel("pending jobs")
    axes.set_ylim(bottom=0)
    _legend(axes)
    return figure


def plot_gpu_allocation(runs: Sequence[RunData]) -> Figure:
    """Share of GPUs allocated over time: allocated / available GPU-seconds per bin."""
    figure, axes = titled_axes("GPU allocation over time")
    scale, unit = _time_unit(runs)
    for run in runs:
        if len(run.ts) == 0:
            continue
        time_s = run.ts["time_s"].to_numpy(dtype=float)
        edges, busy = resample_step(time_s, run.ts["gpus_busy"].to_numpy(dtype=float), run.end_s)
        _, total = resample_step(time_s, run.ts["gpus_total"].to_numpy(dtype=float), run.end_s)
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = np.where(total > 0, busy / total, np.nan)
        _draw_step(axes, edges / scale, 100.0 * rate, run.label)
    axes.set_xlabel(f"simulated time ({unit})")
    axes.set_ylabel("GPUs allocated (% of total)")
    axes.set_ylim(0, 105)
    _legend(axes)
    return figure


def _draw_cdf(axes: Axes, x: np.ndarray, y: np.ndarray, label: str) -> bool:
    if x.size == 0:
        return False
    axes.plot(x, y, drawstyle="steps-post", label=label)
    return True


def _draw_step(axes: Axes, edges: np.ndarray, values: np.ndarray, label: str) -> None:
    axes.plot(edges, np.append(values, values[-1]), drawstyle="steps-post", label=label, linewidth=1.0)


def _finish_cdf(axes: Axes, drawn: bool, xlabel: str, ylabel: str) -> None:
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_ylim(0, 1.02)
    if drawn:
        axes.set_xscale("log")
        axes.legend(loc="lower right")
    else:
        axes.text(0.5, 0.5, "no positive values to draw", ha="center", va="center", transform=axes.transAxes)


def _legend(axes: Axes) -> None:
    if axes.lines:
        axes.legend(loc="best")
    else:
        axes.text(0.5, 0.5, "empty time series", ha="center", va="center", transform=axes.transAxes)


def _time_unit(runs: Sequence[RunData]) -> tuple[float, str]:
    """Divisor and name of the time unit that suits the longest run."""
    span = max((run.end_s for run in runs), default=0.0)
    return next(((scale, unit) for limit, scale, unit in TIME_UNITS if span >= limit), (1.0, "seconds"))
