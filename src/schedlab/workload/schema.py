"""The canonical job schema every loader and generator produces, and its validation.

A workload is one pandas DataFrame with the columns of :data:`COLUMNS`, one row per job,
sorted by submit time (ties keep the trace's order), plus a little metadata.

| column | dtype | meaning |
|---|---|---|
| job_id | str | unique id |
| submit_s | float64 | submit time, seconds since the workload's origin (>= 0) |
| user | str | submitting user ("" when unknown) |
| tenant | str | virtual cluster / organisation ("default" when unknown) |
| name | str | job name ("" when unknown) |
| num_gpus | float64 | total GPUs (> 0; below 1 = a fraction of one GPU) |
| gpus_per_worker | float64 | GPUs each gang worker needs on one node; NaN = any split |
| gpu_type | str | required GPU type ("" = any) |
| duration_s | float64 | work: seconds of run time alone, consolidated, on the reference GPU |
| priority_class | str | "default", or e.g. "hp" / "spot" |
| num_cpus | float64 | CPU cores requested (NaN when unknown) |
| checkpoint_interval_s | float64 | seconds between checkpoints (NaN = engine default) |
| model | str | model name ("" when unknown) |
| batch_size | float64 | batch size (NaN when unknown) |
| final_state | str | completed / cancelled / failed / unknown, as the trace recorded |
| deadline_s | float64 | absolute deadline in workload seconds (NaN = none) |
| queue_s | float64 | queueing delay the trace recorded: start − submit, seconds (NaN = not recorded) |
| gpu_mem_gib | float64 | active GPU memory per GPU, GiB (NaN = unknown: the checkpoint cost models draw a default) |
| time_limit_s | float64 | the run-time limit the user asked for, seconds (NaN = none; Slurm's `--time`) |
| source_row | int64 | the job's 1-based data row in the source file (errors name it) |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from schedlab.errors import InputError

STR_COLUMNS = ("job_id", "user", "tenant", "name", "gpu_type", "priority_class", "model", "final_state")
FLOAT_COLUMNS = (
    "submit_s",
    "num_gpus",
    "gpus_per_worker",
    "duration_s",
    "num_cpus",
    "checkpoint_interval_s",
    "batch_size",
    "deadline_s",
    "queue_s",
    "gpu_mem_gib",
    "time_limit_s",
)
DATA_COLUMNS = (
    "job_id",
    "submit_s",
    "user",
    "tenant",
    "name",
    "num_gpus",
    "gpus_per_worker",
    "gpu_type",
    "duration_s",
    "priority_class",
    "num_cpus",
    "checkpoint_interval_s",
    "model",
    "batch_size",
    "final_state",
    "deadline_s",
    "queue_s",
    "gpu_mem_gib",
    "time_limit_s",
)
COLUMNS = (*DATA_COLUMNS, "source_row")  # the columns a trace supplies, then where each job came from
REQUIRED = ("job_id", "submit_s", "num_gpus", "duration_s")
# What is known about a job when it is submitted (no outcome: duration, final state, deadline use).
SUBMITTED_COLUMNS = ("job_id", "submit_s", "user", "tenant", "name", "num_gpus", "num_cpus", "gpu_type",
                     "priority_class", "model")  # fmt: skip
DEFAULTS: dict[str, object] = {
    "user": "",
    "tenant": "default",
    "name": "",
    "gpus_per_worker": np.nan,
    "gpu_type": "",
    "priority_class": "default",
    "num_cpus": np.nan,
    "checkpoint_interval_s": np.nan,
    "model": "",
    "batch_size": np.nan,
    "final_state": "unknown",
    "deadline_s": np.nan,
    "queue_s": np.nan,
    "gpu_mem_gib": np.nan,
    "time_limit_s": np.nan,
}
FINAL_STATES = ("completed", "cancelled", "failed", "unknown")


@dataclass
class Workload:
    """A validated job table and where it came from.

    ``origin`` is the wall-clock time of ``submit_s == 0`` when the trace has real dates
    (used for calendar features); ``skipped`` counts rows a loader deliberately left out,
    by reason; ``fields`` maps a canonical column to the source field it was read from.
    """

    jobs: pd.DataFrame
    source: str
    origin: pd.Timestamp | None = None
    skipped: dict[str, int] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.jobs)

    def first(self, mask: np.ndarray) -> int | None:
        """The table row, among those where ``mask`` holds, that comes first in the source file."""
        hits = np.flatnonzero(mask)
        if not hits.size:
            return None
        return int(hits[np.argmin(self.jobs["source_row"].to_numpy()[hits])])

    def error(self, i: int, column: str, message: str) -> InputError:
        """An :class:`InputError` about the job in table row ``i``, naming its source row and field."""
        row = int(self.jobs["source_row"].iat[i])
        return InputError(message, file=self.source, row=row, field=self.fields.get(column, column))

    def with_jobs(self, jobs: pd.DataFrame, **meta: object) -> "Workload":
        """A copy with another job table (already canonical), keeping origin and counts."""
        return Workload(
            jobs=jobs.reset_index(drop=True),
            source=self.source,
            origin=self.origin,
            skipped=dict(self.skipped),
            meta={**self.meta, **meta},
            fields=dict(self.fields),
        )


def canonical_frame(df: pd.DataFrame, *, source: str) -> pd.DataFrame:
    """Fill defaults, coerce dtypes, validate every row and sort by submit time.

    A missing ``source_row`` column numbers the rows of ``df`` from 1. Raises
    :class:`InputError` naming ``source``, the source row and the field.
    """
    rows = _source_rows(df)
    for col in REQUIRED:
        if col not in df.columns:
            raise InputError("required column is missing", file=source, field=col)
    data: dict[str, object] = {"source_row": rows}
    for col in DATA_COLUMNS:
        if col not in df.columns:
            data[col] = _filled(col, len(df))
        elif col in FLOAT_COLUMNS:
            data[col] = _to_float(df[col].to_numpy(), col, source, rows)
        else:
            data[col] = _to_str(df[col], DEFAULTS.get(col, ""))
    jobs = pd.DataFrame(data, columns=list(COLUMNS))
    validate(jobs, source=source)
    submit = jobs["submit_s"].to_numpy()
    if not np.all(submit[1:] >= submit[:-1]):
        jobs = jobs.take(np.argsort(submit, kind="stable")).reset_index(drop=True)
    return jobs


def validate(jobs: pd.DataFrame, *, source: str) -> None:
    """Check a canonical job table; raise :class:`InputError` at the first bad row."""
    rows = jobs["source_row"].to_numpy()

    def fail(mask: np.ndarray, fld: str, message: str) -> None:
        bad = np.flatnonzero(mask)
        if bad.size:
            i = int(bad[0])
            value = jobs[fld].iloc[i]
            unit = " s" if fld.endswith("_s") and np.isfinite(value) else ""  # times are seconds once loaded
            raise InputError(f"{message} (got {shown(value)}{unit})", file=source, row=int(rows[i]), field=fld)

    submit = jobs["submit_s"].to_numpy()
    fail(~np.isfinite(submit), "submit_s", "submit time must be a finite number")
    dur = jobs["duration_s"].to_numpy()
    fail(~np.isfinite(dur), "duration_s", "duration must be a finite number")
    fail(dur <= 0, "duration_s", "duration must be positive")
    gpus = jobs["num_gpus"].to_numpy()
    fail(~np.isfinite(gpus), "num_gpus", "GPU count must be a finite number")
    fail(gpus <= 0, "num_gpus", "GPU count must be positive (skip 0-GPU rows with --skip cpu)")
    fail((gpus > 1) & (gpus != np.floor(gpus)), "num_gpus", "a job above one GPU needs a whole number of GPUs")
    gpw = jobs["gpus_per_worker"].to_numpy()
    has_gpw = ~np.isnan(gpw)
    fail(has_gpw & (gpw <= 0), "gpus_per_worker", "GPUs per worker must be positive")
    with np.errstate(invalid="ignore", divide="ignore"):
        workers = gpus / gpw
    fail(
        has_gpw & (np.abs(workers - np.round(workers)) > 1e-9),
        "gpus_per_worker",
        "num_gpus must be a whole multiple of gpus_per_worker",
    )
    ids = jobs["job_id"]
    if len(ids.unique()) < len(ids):  # about twice as fast as duplicated() on millions of ids
        fail(ids.duplicated().to_numpy(), "job_id", "job ids must be unique")
    fail((ids == "").to_numpy(), "job_id", "job id must not be empty")
    states = jobs["final_state"]
    fail(~states.isin(FINAL_STATES).to_numpy(), "final_state", f"final state must be one of {FINAL_STATES}")
    for col in ("checkpoint_interval_s", "deadline_s", "num_cpus", "batch_size", "queue_s", "gpu_mem_gib"):
        v = jobs[col].to_numpy()
        fail(np.isinf(v) | (v < 0), col, "must be a non-negative number or empty")
    limit = jobs["time_limit_s"].to_numpy()
    fail(limit <= 0, "time_limit_s", "time limit must be positive, infinite or empty")


def _to_float(values: np.ndarray, col: str, source: str, rows: np.ndarray) -> np.ndarray:
    if values.dtype.kind in "fiub":
        return values.astype(np.float64, copy=False)
    parsed: np.ndarray = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)
    missing = np.flatnonzero(np.isnan(parsed))
    if missing.size:
        candidates = pd.Series(values[missing])
        blank = candidates.isna().to_numpy() | (candidates.astype(str).str.strip() == "").to_numpy()
        bad = missing[~blank]
        if bad.size:
            i = int(bad[0])
            raise InputError(f"not a number: {shown(values[i])}", file=source, row=int(rows[i]), field=col)
    return parsed


def _source_rows(df: pd.DataFrame) -> np.ndarray:
    if "source_row" not in df.columns:
        return np.arange(1, len(df) + 1, dtype=np.int64)
    rows: np.ndarray = df["source_row"].to_numpy(dtype=np.int64)
    return rows


def shown(value: object) -> str:
    """A value as a user would write it: numbers plain (``-600``, not ``np.float64(-600.0)``), text quoted."""
    if isinstance(value, str):
        return repr(str(value))
    if isinstance(value, (float, np.floating)):
        text = repr(float(value))
        return text.removesuffix(".0")
    return str(value)


def _to_str(values: pd.Series, default: object) -> pd.api.extensions.ExtensionArray:
    """Values as the ``str`` dtype, missing ones as ``default``; text read by pyarrow stays in Arrow."""
    if values.dtype != "str":  # numbers or Python objects: each value through str()
        values = values.astype(object)
    return values.where(values.notna(), default).astype(str).array


def _filled(col: str, n: int) -> object:
    """A column of ``n`` default values (built in Arrow for text: no Python string per row)."""
    if col in FLOAT_COLUMNS:
        return np.full(n, DEFAULTS[col], dtype=np.float64)
    return pd.array(pa.repeat(pa.scalar(DEFAULTS[col], pa.large_string()), n), dtype="str")


def check_fits(workload: Workload, *, max_gpus: float, gpu_types: set[str]) -> None:
    """Raise if a job can never run on a cluster: more GPUs than it has, or an unknown GPU type."""
    jobs = workload.jobs
    gpus = jobs["num_gpus"].to_numpy()
    i = workload.first(gpus > max_gpus)
    if i is not None:
        asks = f"job '{jobs['job_id'].iat[i]}' asks for {gpus[i]:g} GPUs"
        raise workload.error(i, "num_gpus", f"{asks} but the cluster can give at most {max_gpus:g}")
    types = jobs["gpu_type"]
    i = workload.first(((types != "") & ~types.isin(gpu_types)).to_numpy())
    if i is not None:
        known = sorted(gpu_types)
        raise workload.error(i, "gpu_type", f"unknown GPU type {shown(types.iat[i])}; the cluster has {known}")
