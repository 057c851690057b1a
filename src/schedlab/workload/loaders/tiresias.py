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

import numpy as np
import pandas as pd

from schedlab.workload.loaders._common import apply_skips, finish, numbers, read_csv, seconds_per
from schedlab.workload.schema import Workload

REQUIRED = ("job_id", "num_gpu", "submit_time", "duration")
_OPTIONAL = ("user", "model_name", "expect_time_list", "best_effort")


def load_tiresias(path: Path, *, time_unit: str = "s", skip: Sequence[str] = ()) -> Workload:
    """Load a Tiresias/Chronus job CSV (times in ``time_unit`` since the trace start)."""
    source = str(path)
    scale = seconds_per(time_unit)
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
    return finish(
        jobs,
        source=source,
        rows=rows,
        skipped=skipped,
        fields={
            "submit_s": "submit_time",
            "tenant": "user",
            "num_gpus": "num_gpu",
            "duration_s": "duration",
            "deadline_s": "expect_time_list",
        },
        skip=skip,
    )


def _first_deadline(raw: pd.DataFrame, *, source: str, rows: np.ndarray) -> np.ndarray:
    """Time (trace unit) from submission to the first listed deadline; NaN for best-effort jobs."""
    first = raw["expect_time_list"].astype(object).where(raw["expect_time_list"].notna(), "")
    first = first.astype(str).str.split("-").str[0]
    seconds = numbers(first, source=source, rows=rows, field="expect_time_list")
    if "best_effort" in raw.columns:
        best_effort = numbers(raw["best_effort"], source=source, rows=rows, field="best_effort") == 1
        seconds = np.where(best_effort, np.nan, seconds)
    return seconds
