"""The canonical job schema every loader and generator produces, and its validation.

A workload is one job table with the columns of :data:`COLUMNS`, one row per job, sorted by
submit time (ties keep the trace's order), plus a little metadata. The table is held either as
a pandas DataFrame (what the trace loaders build) or as columns (numbers in NumPy arrays, text
in Arrow arrays: what the synthetic generator builds); each form is derived from the other on
first use, so a run that never asks for the DataFrame never imports pandas.

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

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from schedlab import arrow
from schedlab.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

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


# A job table as columns: numbers as NumPy arrays, text (the STR_COLUMNS) as Arrow string arrays.
JobColumns = Mapping[str, Any]


class Workload:
    """A validated job table and where it came from.

    Give the table as ``jobs`` (a canonical DataFrame) or as ``columns`` (every column of
    :data:`COLUMNS`, validated: :func:`canonical_columns`). ``origin`` is the wall-clock time of
    ``submit_s == 0`` when the trace has real dates (used for calendar features; read back as a
    pandas Timestamp); ``skipped`` counts rows a loader deliberately left out, by reason;
    ``fields`` maps a canonical column to the source field it was read from.
    """

    def __init__(
        self,
        jobs: pd.DataFrame | None = None,
        source: str = "",
        origin: datetime | None = None,
        skipped: dict[str, int] | None = None,
        meta: dict[str, Any] | None = None,
        fields: dict[str, str] | None = None,
        *,
        columns: JobColumns | None = None,
    ) -> None:
        if (jobs is None) == (columns is None):
            raise TypeError("a Workload needs its job table as either jobs (a DataFrame) or columns")
        self._frame = jobs
        self._columns: dict[str, Any] = dict(columns or {})
        self._n = len(jobs) if jobs is not None else len(self._columns["source_row"])
        self.source = source
        self._origin = origin
        self.skipped = dict(skipped or {})
        self.meta = dict(meta or {})
        self.fields = dict(fields or {})

    @property
    def jobs(self) -> pd.DataFrame:
        """The job table as a DataFrame, built from the columns on first use; from then on it is
        the table (an edit to it is what :meth:`column` reads)."""
        if self._frame is None:
            import pandas as pd

            self._frame = pd.DataFrame(
                {c: pd.array(self._columns[c], dtype="str") if c in STR_COLUMNS else self._columns[c] for c in COLUMNS}
            )
            self._columns = {}
        return self._frame

    @property
    def origin(self) -> pd.Timestamp | None:
        if self._origin is None:
            return None
        import pandas as pd

        if not isinstance(self._origin, pd.Timestamp):
            self._origin = pd.Timestamp(self._origin)
        return self._origin

    @origin.setter
    def origin(self, value: datetime | None) -> None:
        self._origin = value

    def column(self, name: str) -> Any:
        """One column: a NumPy array for numbers, an Arrow string array for text (no copy once built)."""
        if name not in self._columns:
            values = self.jobs[name]
            self._columns[name] = arrow_text(values) if name in STR_COLUMNS else values.to_numpy()
        return self._columns[name]

    def rows(self, name: str, start: int, stop: int) -> list[Any]:
        """The values of rows ``start:stop`` of one column, as Python objects."""
        values = self.column(name)
        if name in STR_COLUMNS:
            text: list[Any] = values.slice(start, stop - start).to_pylist()
            return text
        numbers: list[Any] = values[start:stop].tolist()
        return numbers

    def __len__(self) -> int:
        return self._n

    def first(self, mask: np.ndarray) -> int | None:
        """The table row, among those where ``mask`` holds, that comes first in the source file."""
        hits = np.flatnonzero(mask)
        if not hits.size:
            return None
        return int(hits[np.argmin(self.column("source_row")[hits])])

    def error(self, i: int, column: str, message: str) -> InputError:
        """An :class:`InputError` about the job in table row ``i``, naming its source row and field."""
        row = int(self.column("source_row")[i])
        return InputError(message, file=self.source, row=row, field=self.fields.get(column, column))

    def with_jobs(self, jobs: pd.DataFrame, **meta: object) -> Workload:
        """A copy with another job table (already canonical), keeping origin and counts."""
        return Workload(
            jobs=jobs.reset_index(drop=True),
            source=self.source,
            origin=self._origin,
            skipped=self.skipped,
            meta={**self.meta, **meta},
            fields=self.fields,
        )

    def renamed(self, source: str) -> Workload:
        """The same jobs under another source name (errors name it)."""
        out = copy.copy(self)
        out.source = source
        out._columns = dict(self._columns)
        return out


def canonical_frame(df: pd.DataFrame, *, source: str) -> pd.DataFrame:
    """Fill defaults, coerce dtypes, validate every row and sort by submit time.

    A missing ``source_row`` column numbers the rows of ``df`` from 1. Raises
    :class:`InputError` naming ``source``, the source row and the field.
    """
    import pandas as pd

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


def canonical_columns(columns: JobColumns, *, source: str) -> dict[str, Any]:
    """Check a complete set of canonical columns (every column of :data:`COLUMNS`, text as Arrow
    ``large_string`` arrays, rows in submit order) and return them as a plain dict."""
    missing = [c for c in COLUMNS if c not in columns]
    if missing:
        raise InputError("required column is missing", file=source, field=missing[0])
    validate(columns, source=source)
    submit = columns["submit_s"]
    if not np.all(submit[1:] >= submit[:-1]):
        raise ValueError(f"{source}: the columns of a workload must be in submit order")
    return {c: columns[c] for c in COLUMNS}


def validate(jobs: JobColumns | pd.DataFrame, *, source: str) -> None:
    """Check a canonical job table (a DataFrame or columns); raise :class:`InputError` at the first bad row."""
    rows = np.asarray(jobs["source_row"])

    def number(col: str) -> np.ndarray:
        return np.asarray(jobs[col], dtype=np.float64)

    def fail(mask: np.ndarray, fld: str, message: str) -> None:
        bad = np.flatnonzero(mask)
        if bad.size:
            i = int(bad[0])
            value = text(fld)[i].as_py() if fld in STR_COLUMNS else number(fld)[i]
            unit = " s" if fld.endswith("_s") and np.isfinite(value) else ""  # times are seconds once loaded
            raise InputError(f"{message} (got {shown(value)}{unit})", file=source, row=int(rows[i]), field=fld)

    def text(col: str) -> Any:
        return arrow_text(jobs[col])

    submit = number("submit_s")
    fail(~np.isfinite(submit), "submit_s", "submit time must be a finite number")
    dur = number("duration_s")
    fail(~np.isfinite(dur), "duration_s", "duration must be a finite number")
    fail(dur <= 0, "duration_s", "duration must be positive")
    gpus = number("num_gpus")
    fail(~np.isfinite(gpus), "num_gpus", "GPU count must be a finite number")
    fail(gpus <= 0, "num_gpus", "GPU count must be positive (skip 0-GPU rows with --skip cpu)")
    fail((gpus > 1) & (gpus != np.floor(gpus)), "num_gpus", "a job above one GPU needs a whole number of GPUs")
    gpw = number("gpus_per_worker")
    has_gpw = ~np.isnan(gpw)
    fail(has_gpw & (gpw <= 0), "gpus_per_worker", "GPUs per worker must be positive")
    with np.errstate(invalid="ignore", divide="ignore"):
        workers = gpus / gpw
    fail(
        has_gpw & (np.abs(workers - np.round(workers)) > 1e-9),
        "gpus_per_worker",
        "num_gpus must be a whole multiple of gpus_per_worker",
    )
    ids = text("job_id")
    if arrow.distinct(ids) < len(ids):
        fail(duplicated(ids), "job_id", "job ids must be unique")
    fail(arrow.byte_lengths(ids) == 0, "job_id", "job id must not be empty")
    known = arrow.is_in(text("final_state"), arrow.text(FINAL_STATES))
    fail(~known, "final_state", f"final state must be one of {FINAL_STATES}")
    for col in ("checkpoint_interval_s", "deadline_s", "num_cpus", "batch_size", "queue_s", "gpu_mem_gib"):
        v = number(col)
        fail(np.isinf(v) | (v < 0), col, "must be a non-negative number or empty")
    limit = number("time_limit_s")
    fail(limit <= 0, "time_limit_s", "time limit must be positive, infinite or empty")


def arrow_text(values: Any) -> Any:
    """A text column (an Arrow array or chunked array, or a pandas ``str`` Series) as one Arrow array."""
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pa.array(values)
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def duplicated(values: Any) -> np.ndarray:
    """For each row of an Arrow array, whether an earlier row holds the same value."""
    codes = arrow.to_numpy(arrow.call("dictionary_encode", values).indices)
    first = np.zeros(codes.size, dtype=bool)
    first[np.unique(codes, return_index=True)[1]] = True
    out: np.ndarray = ~first
    return out


def _to_float(values: np.ndarray, col: str, source: str, rows: np.ndarray) -> np.ndarray:
    if values.dtype.kind in "fiub":
        return values.astype(np.float64, copy=False)
    import pandas as pd

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


def default_column(col: str, n: int) -> Any:
    """A column of ``n`` default values: NumPy for numbers, Arrow for text ("" where the schema has
    no default; no Python string per row)."""
    if col in FLOAT_COLUMNS:
        return np.full(n, DEFAULTS[col], dtype=np.float64)
    return arrow.repeat(str(DEFAULTS.get(col, "")), n)


def _filled(col: str, n: int) -> object:
    """:func:`default_column` for a DataFrame (text as pandas ``str``)."""
    values = default_column(col, n)
    if col in FLOAT_COLUMNS:
        return values
    import pandas as pd

    return pd.array(values, dtype="str")


def check_fits(workload: Workload, *, max_gpus: float, gpu_types: set[str]) -> None:
    """Raise if a job can never run on a cluster: more GPUs than it has, or an unknown GPU type."""
    gpus = workload.column("num_gpus")
    i = workload.first(gpus > max_gpus)
    if i is not None:
        asks = f"job '{workload.column('job_id')[i].as_py()}' asks for {gpus[i]:g} GPUs"
        raise workload.error(i, "num_gpus", f"{asks} but the cluster can give at most {max_gpus:g}")
    types = workload.column("gpu_type")
    known = arrow.text(sorted(gpu_types | {""}))
    i = workload.first(~arrow.is_in(types, known))
    if i is not None:
        raise workload.error(i, "gpu_type", f"unknown GPU type {shown(types[i].as_py())}; the cluster has {sorted(gpu_types)}")
