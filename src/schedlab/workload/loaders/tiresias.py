"""Tiresias-style job traces and the Philly-derived Chronus traces built on that format.

Schema: README of github.com/SymbioticLab/Tiresias (``job_id, num_gpu, submit_time, iterations,
model_name, duration, interval``; times in seconds, the default ``time_unit``) and
github.com/S-Lab-System-Group/ChronusArtifact, whose ``trace_job_Philly_*.csv`` add ``user`` (the
Philly VC id, prefixed ``vc_``), ``expect_time_list`` (deadlines after submission, several joined by
``-`` for soft jobs), ``expect_value_list``, ``best_effort`` (1 = no deadline) and ``job_type``.

``user`` is both the user and the tenant (it is the VC); a job's deadline is its first (strictest)
expected time; ``model_name`` becomes ``model``. Jobs with ``num_gpu == 0`` are skipped as CPU jobs.

The Chronus ``trace_job_Philly_*.csv`` files are in minutes, not seconds: their ``submit_time`` runs
1-20,151, i.e. 14 days of 1,440 minutes (their repository states no unit), and ``duration`` has a
median of 60. Load them with ``time_unit="min"``; ``time_unit`` scales
``submit_time``, ``duration`` and ``expect_time_list``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from schedlab.workload.loaders import _arrow_csv
from schedlab.workload.loaders._units import seconds_per
from schedlab.workload.schema import Workload

if TYPE_CHECKING:
    import pandas as pd

REQUIRED = ("job_id", "num_gpu", "submit_time", "duration")
_OPTIONAL = ("user", "model_name", "expect_time_list", "best_effort")
_FIELDS = {"submit_s": "submit_time", "tenant": "user", "num_gpus": "num_gpu", "duration_s": "duration",
           "deadline_s": "expect_time_list"}  # fmt: skip


def load_tiresias(path: Path, *, time_unit: str = "s", skip: Sequence[str] = ()) -> Workload:
    """Load a Tiresias/Chronus job CSV (times in ``time_unit`` since the trace start). A plain
    file without skip rules is read with pyarrow alone (:mod:`._arrow_csv`), any other with pandas."""
    scale = seconds_per(time_unit)
    workload = None if skip else _load_plain(path, scale)
    return workload if workload is not None else _load(path, scale, skip)


def _load_plain(path: Path, scale: float) -> Workload | None:
    """:func:`_load` by :mod:`._arrow_csv`, or None where that reader leaves the file to pandas."""
    raw = _arrow_csv.read_plain(path, required=REQUIRED, optional=_OPTIONAL)
    if raw is None:
        return None
    numbers = {col: _arrow_csv.floats(raw[col]) for col in ("num_gpu", "submit_time", "duration")}
    job_id = _arrow_csv.texts(raw["job_id"])
    gpus, submit, duration = numbers["num_gpu"], numbers["submit_time"], numbers["duration"]
    if gpus is None or submit is None or duration is None or job_id is None:
        return None
    keep = gpus != 0  # CPU jobs are skipped
    columns = {"job_id": _arrow_csv.keep(job_id, keep), "submit_s": submit[keep] * scale, "num_gpus": gpus[keep],
               "duration_s": duration[keep] * scale}  # fmt: skip
    if "user" in raw:
        user = _arrow_csv.texts(raw["user"])
        if user is None:
            return None
        columns["user"] = columns["tenant"] = _arrow_csv.keep(user, keep)
    if "model_name" in raw:
        model = _arrow_csv.texts(raw["model_name"])
        if model is None:
            return None
        columns["model"] = _arrow_csv.keep(model, keep)
    if "expect_time_list" in raw:
        first = _arrow_csv.first_numbers(raw["expect_time_list"], "-")
        if first is None:
            return None
        if "best_effort" in raw:
            best_effort = _arrow_csv.floats(raw["best_effort"])
            if best_effort is None:
                return None
            first = np.where(best_effort == 1, np.nan, first)
        columns["deadline_s"] = columns["submit_s"] + first[keep] * scale
    skipped = {"cpu_job": int((~keep).sum())} if not keep.all() else {}
    rows = np.arange(1, len(keep) + 1)[keep]
    return _arrow_csv.finish_plain(columns, source=str(path), rows=rows, skipped=skipped, fields=_FIELDS)


def _load(path: Path, scale: float, skip: Sequence[str]) -> Workload:
    """Read with pandas (every file; errors name the file, row and field)."""
    import pandas as pd

    from schedlab.workload.loaders._common import apply_skips, finish, numbers, read_csv

    source = str(path)
    raw = read_csv(path, required=REQUIRED, optional=_OPTIONAL)
    rows = np.arange(1, len(raw) + 1)
    gpus = numbers(raw["num_gpu"], source=source, rows=rows, field="num_gpu")
    raw, rows, skipped = apply_skips(raw.assign(num_gpu=gpus), rows, [("cpu_job", gpus == 0)])
    submit = numbers(raw["submit_time"], source=source, rows=rows, field="submit_time") * scale
    jobs = pd.DataFrame(
        {
            "job_id": raw["job_id"],
            "submit_s": submit,
            "num_gpus": raw["num_gpu"],
            "duration_s": numbers(raw["duration"], source=source, rows=rows, field="duration") * scale,
        }
    )
    if "user" in raw.columns:
        jobs["user"] = raw["user"]
        jobs["tenant"] = raw["user"]
    if "model_name" in raw.columns:
        jobs["model"] = raw["model_name"]
    if "expect_time_list" in raw.columns:
        jobs["deadline_s"] = submit + _first_deadline(raw, source=source, rows=rows) * scale
    return finish(jobs, source=source, rows=rows, skipped=skipped, fields=_FIELDS, skip=skip)


def _first_deadline(raw: pd.DataFrame, *, source: str, rows: np.ndarray) -> np.ndarray:
    """Time (trace unit) from submission to the first listed deadline; NaN for best-effort jobs."""
    from schedlab.workload.loaders._common import numbers

    first = raw["expect_time_list"].astype(object).where(raw["expect_time_list"].notna(), "")
    first = first.astype(str).str.split("-").str[0]
    seconds = numbers(first, source=source, rows=rows, field="expect_time_list")
    if "best_effort" in raw.columns:
        best_effort = numbers(raw["best_effort"], source=source, rows=rows, field="best_effort") == 1
        seconds = np.where(best_effort, np.nan, seconds)
    return seconds
