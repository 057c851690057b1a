"""Builders of tiny per-job tables and cluster time series in the engine's result format."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

JOB_DEFAULTS: dict[str, object] = {
    "user": "u",
    "tenant": "t1",
    "priority_class": "default",
    "num_gpus": 1.0,
    "gpu_type": "",
    "submit_s": 0.0,
    "duration_s": 10.0,
    "first_start_s": 0.0,
    "end_s": 10.0,
    "finished": True,
    "queue_s": 0.0,
    "run_s": 10.0,
    "preemptions": 0,
    "lost_work_s": 0.0,
    "gpu_seconds": 10.0,
    "final_state": "completed",
}


def build_jobs(**columns: Sequence[object]) -> pd.DataFrame:
    """A job table: given columns as lists, every other column at its default."""
    rows = len(next(iter(columns.values())))
    data: dict[str, object] = {"job_id": [f"j{i}" for i in range(rows)]}
    for name, default in JOB_DEFAULTS.items():
        data[name] = list(columns.get(name, [default] * rows))
    frame = pd.DataFrame(data)
    frame["preemptions"] = frame["preemptions"].astype(np.int64)
    return frame.astype({"finished": bool, "num_gpus": float, "end_s": float, "first_start_s": float})


def build_ts(
    time_s: Sequence[float],
    gpus_busy: Sequence[float],
    gpus_total: float | Sequence[float] = 10.0,
    pending_jobs: Sequence[int] | None = None,
) -> pd.DataFrame:
    """A cluster time series with the given steps."""
    rows = len(time_s)
    totals = list(gpus_total) if isinstance(gpus_total, Sequence) else [gpus_total] * rows
    return pd.DataFrame(
        {
            "time_s": np.asarray(time_s, dtype=float),
            "gpus_total": np.asarray(totals, dtype=float),
            "gpus_busy": np.asarray(gpus_busy, dtype=float),
            "running_jobs": np.zeros(rows, dtype=np.int64),
            "pending_jobs": np.asarray(pending_jobs if pending_jobs is not None else [0] * rows, dtype=np.int64),
            "nodes_on": np.ones(rows, dtype=np.int64),
        }
    )


