"""SenseTime Helios ``cluster_log.csv`` (SC '21).

Schema: README of github.com/S-Lab-System-Group/HeliosData — columns ``job_id, user, vc, gpu_num,
cpu_num, node_num, state, submit_time, start_time, end_time, duration, queue``; times are
``YYYY-MM-DD HH:MM:SS`` strings, ``duration`` = end − start in seconds; states ``COMPLETED``,
``CANCELLED``, ``FAILED``, ``TIMEOUT``, ``NODE_FAIL`` (the last two count as failed).

Skipped: CPU jobs (``gpu_num == 0``), jobs that never started (no ``start_time``), jobs that ran for
0 s. Helios gives only the total GPU count, so ``gpus_per_worker`` is left to the placer.
``queue_s`` = ``start_time − submit_time`` (the recorded queueing delay); ``time_unit`` scales
``duration`` (the other time fields are dates).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.workload.loaders._common import (
    apply_skips,
    blank,
    datetimes,
    finish,
    map_states,
    numbers,
    read_csv,
    seconds_since,
)
from schedlab.workload.loaders._units import seconds_per
from schedlab.workload.schema import Workload

_STATES = {
    "completed": "completed",
    "cancelled": "cancelled",
    "failed": "failed",
    "timeout": "failed",
    "node_fail": "failed",
}
_REQUIRED = ("job_id", "user", "vc", "gpu_num", "cpu_num", "state", "submit_time", "start_time", "duration")


def load_helios(path: Path, *, time_unit: str = "s", skip: Sequence[str] = ()) -> Workload:
    """Load a Helios ``cluster_log.csv``: GPU jobs that ran, tenant = VC, duration = run time."""
    source = str(path)
    scale = seconds_per(time_unit)
    raw = read_csv(path, required=_REQUIRED)
    rows = np.arange(1, len(raw) + 1)
    gpus = numbers(raw["gpu_num"], source=source, rows=rows, field="gpu_num")
    duration = numbers(raw["duration"], source=source, rows=rows, field="duration") * scale
    raw = raw.assign(gpu_num=gpus, duration=duration)
    raw, rows, skipped = apply_skips(
        raw,
        rows,
        [
            ("cpu_job", gpus == 0),
            ("not_started", blank(raw["start_time"])),
            ("zero_duration", duration == 0),
        ],
    )
    submitted = datetimes(raw["submit_time"], source=source, rows=rows, field="submit_time")
    started = datetimes(raw["start_time"], source=source, rows=rows, field="start_time")
    submit, origin = seconds_since(submitted)
    jobs = pd.DataFrame(
        {
            "job_id": raw["job_id"],
            "submit_s": submit,
            "user": raw["user"],
            "tenant": raw["vc"],
            "num_gpus": raw["gpu_num"],
            "duration_s": raw["duration"],
            "num_cpus": numbers(raw["cpu_num"], source=source, rows=rows, field="cpu_num"),
            "final_state": map_states(raw["state"], _STATES),
            "queue_s": ((started - submitted) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64),
        }
    )
    return finish(
        jobs,
        source=source,
        rows=rows,
        origin=origin,
        skipped=skipped,
        fields={
            "submit_s": "submit_time",
            "tenant": "vc",
            "num_gpus": "gpu_num",
            "duration_s": "duration",
            "num_cpus": "cpu_num",
            "final_state": "state",
            "queue_s": "start_time",
        },
        skip=skip,
    )
