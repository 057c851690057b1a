"""Alibaba PAI 2020 job and task tables (MLaaS in the Wild, NSDI '22).

Schema: github.com/alibaba/clusterdata, ``cluster-trace-gpu-v2020`` (README and ``data/*.header``):
headerless CSVs ``pai_job_table`` (``job_name, inst_id, user, status, start_time, end_time``) and
``pai_task_table`` (``job_name, task_name, inst_num, status, start_time, end_time, plan_cpu, plan_mem,
plan_gpu, gpu_type``). ``plan_cpu``/``plan_gpu`` are percentages of a core/GPU per instance; times are
seconds shifted by a constant (time of day and weekday are real in UTC+8, dates are not).

A job's GPUs = Σ over its tasks of ``inst_num × plan_gpu / 100`` (a missing ``inst_num`` counts as one
instance, a missing ``plan_gpu`` as none); totals above one GPU that are not whole are rounded up
(counted in ``meta["rounded_up_gpus"]``). ``gpus_per_worker`` is the per-instance share when all GPU
tasks agree. ``gpu_type`` is the tasks' type, or "" when they disagree (``meta["mixed_gpu_type_jobs"]``).
Submit = job ``start_time`` (submission); duration = job ``end_time`` − earliest task ``start_time``
(run time without queueing; job ``start_time`` when no task start is known, counted in
``meta["duration_includes_queueing"]``). Skipped: jobs without tasks, CPU-only jobs, jobs with no end
time (still running or waiting), jobs that ran for 0 s. ``queue_s`` = earliest task start − job
``start_time`` (NaN when no task start is known). ``time_unit`` scales every time of both tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.errors import InputError
from schedlab.workload.loaders._common import (
    apply_skips,
    blank,
    finish,
    map_states,
    numbers,
    read_csv,
)
from schedlab.workload.loaders._units import seconds_per
from schedlab.workload.schema import Workload

JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
_STATES = {"terminated": "completed", "failed": "failed"}
# Workload seconds are shifted Unix seconds; read in UTC+8 they keep the real time of day and weekday.
_EPOCH_UTC8 = pd.Timestamp("1970-01-01 08:00:00")


def load_pai(
    path: Path, *, task_table: str | Path | None = None, time_unit: str = "s", skip: Sequence[str] = ()
) -> Workload:
    """Load PAI jobs from a directory with both tables, or from the job table plus ``task_table``.

    Without ``task_table`` the task table is ``pai_task_table.csv`` next to the job table.
    """
    scale = seconds_per(time_unit)
    job_path, task_path = _table_paths(Path(path), task_table)
    source = str(job_path)
    raw = read_csv(job_path, required=JOB_COLUMNS, names=JOB_COLUMNS)
    rows = np.arange(1, len(raw) + 1)
    per_job = _aggregate_tasks(task_path)
    agg = per_job.reindex(raw["job_name"].astype(str).to_numpy())
    gpus = agg["gpus"].to_numpy()
    end = numbers(raw["end_time"], source=source, rows=rows, field="end_time") * scale
    submit = numbers(raw["start_time"], source=source, rows=rows, field="start_time") * scale
    run_start = agg["run_start"].to_numpy() * scale
    queued = np.isnan(run_start)
    duration = end - np.where(queued, submit, run_start)
    frame = pd.DataFrame(
        {
            "job_id": raw["job_name"],
            "submit_s": submit,
            "user": raw["user"],
            "num_gpus": gpus,
            "gpus_per_worker": agg["per_instance"].to_numpy(),
            "gpu_type": agg["gpu_type"].to_numpy(),
            "duration_s": duration,
            "num_cpus": agg["cpus"].to_numpy(),
            "final_state": map_states(raw["status"], _STATES),
            "queue_s": run_start - submit,
            "mixed": agg["mixed"].to_numpy(),
            "queued": queued,
        }
    )
    frame, rows, skipped = apply_skips(
        frame,
        rows,
        [
            ("no_tasks", np.isnan(gpus)),
            ("cpu_job", gpus == 0),
            ("no_end_time", blank(raw["end_time"])),
            ("zero_duration", duration == 0),
        ],
    )
    frame, rounded = _round_up_gpus(frame)
    meta = {
        "rounded_up_gpus": rounded,
        "mixed_gpu_type_jobs": int(frame["mixed"].sum()),
        "duration_includes_queueing": int(frame["queued"].sum()),
        "task_table": str(task_path),
        "calendar": "time of day and weekday are real (UTC+8); dates are shifted",
    }
    return finish(
        frame.drop(columns=["mixed", "queued"]),
        source=source,
        rows=rows,
        origin=_EPOCH_UTC8,
        skipped=skipped,
        meta=meta,
        fields={
            "job_id": "job_name",
            "submit_s": "start_time",
            "duration_s": "end_time",
            "num_gpus": "plan_gpu",
            "gpus_per_worker": "plan_gpu",
            "final_state": "status",
            "queue_s": "start_time",
        },
        skip=skip,
    )


def _table_paths(path: Path, task_table: str | Path | None) -> tuple[Path, Path]:
    job_path = path / "pai_job_table.csv" if path.is_dir() else path
    task_path = Path(task_table) if task_table is not None else job_path.parent / "pai_task_table.csv"
    for p in (job_path, task_path):
        if not p.is_file():
            raise InputError("PAI table not found", file=str(p))
    return job_path, task_path


def _aggregate_tasks(path: Path) -> pd.DataFrame:
    """Per job name: total GPUs and CPUs, earliest task start, per-instance GPU share, GPU type."""
    source = str(path)
    tasks = read_csv(path, required=TASK_COLUMNS, names=TASK_COLUMNS)
    rows = np.arange(1, len(tasks) + 1)
    inst = numbers(tasks["inst_num"], source=source, rows=rows, field="inst_num")
    inst = np.where(np.isnan(inst), 1.0, inst)
    share = numbers(tasks["plan_gpu"], source=source, rows=rows, field="plan_gpu") / 100.0
    share = np.where(np.isnan(share), 0.0, share)
    cpu = numbers(tasks["plan_cpu"], source=source, rows=rows, field="plan_cpu") / 100.0
    parts = pd.DataFrame(
        {
            "job": tasks["job_name"].astype(str).to_numpy(),
            "gpus": inst * share,
            "cpus": inst * cpu,
            "start": numbers(tasks["start_time"], source=source, rows=rows, field="start_time"),
            "share": np.where(share > 0, share, np.nan),
            "type": tasks["gpu_type"].astype(object).where(share > 0).to_numpy(),
        }
    )
    grouped = parts.groupby("job", sort=False)
    out = pd.DataFrame(
        {
            "gpus": grouped["gpus"].sum(),
            "cpus": grouped["cpus"].sum(min_count=1),
            "run_start": grouped["start"].min(),
        }
    )
    low, high = grouped["share"].min(), grouped["share"].max()
    out["per_instance"] = low.where(low == high)
    kinds = grouped["type"].nunique()
    out["mixed"] = kinds > 1
    out["gpu_type"] = grouped["type"].first().where(kinds == 1, "").fillna("")
    return out


def _round_up_gpus(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Round totals above one GPU that are not whole up to whole GPUs (dropping the worker share)."""
    gpus = np.round(frame["num_gpus"].to_numpy(dtype=np.float64), 6)
    partial = (gpus > 1) & (gpus != np.floor(gpus))
    frame = frame.assign(
        num_gpus=np.where(partial, np.ceil(gpus), gpus),
        gpus_per_worker=np.where(partial, np.nan, frame["gpus_per_worker"].to_numpy(dtype=np.float64)),
    )
    return frame, int(partial.sum())
