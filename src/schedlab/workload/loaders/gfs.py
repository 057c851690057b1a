"""Alibaba GFS spot-GPU job table ``job_info_df.csv`` (ASPLOS '26).

Schema: README of github.com/alibaba/clusterdata, ``cluster-trace-v2026-spot-gpu`` — columns
``job_name, organization, gpu_model, cpu_request, gpu_request`` (per worker), ``worker_num,
submit_time`` (s after the first job), ``duration`` (s), ``job_type`` (``HP`` or ``Spot``).

``num_gpus`` = ``worker_num × gpu_request`` and ``num_cpus`` = ``worker_num × cpu_request`` (totals);
``gpus_per_worker`` = ``gpu_request``; ``priority_class`` is ``hp`` or ``spot``; tenant = organization.
Jobs requesting no GPU are skipped as CPU jobs. ``time_unit`` scales ``submit_time`` and ``duration``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.errors import InputError
from schedlab.workload.loaders._common import apply_skips, finish, lower_str, numbers, read_csv
from schedlab.workload.loaders._units import seconds_per
from schedlab.workload.schema import Workload

_REQUIRED = (
    "job_name",
    "organization",
    "gpu_model",
    "cpu_request",
    "gpu_request",
    "worker_num",
    "submit_time",
    "duration",
    "job_type",
)
_CLASSES = ("hp", "spot")


def load_gfs(path: Path, *, time_unit: str = "s", skip: Sequence[str] = ()) -> Workload:
    """Load a GFS ``job_info_df.csv``: HP and spot GPU jobs with per-worker requests."""
    source = str(path)
    scale = seconds_per(time_unit)
    raw = read_csv(path, required=_REQUIRED)
    rows = np.arange(1, len(raw) + 1)
    per_worker = numbers(raw["gpu_request"], source=source, rows=rows, field="gpu_request")
    raw, rows, skipped = apply_skips(raw.assign(gpu_request=per_worker), rows, [("cpu_job", per_worker == 0)])
    workers = numbers(raw["worker_num"], source=source, rows=rows, field="worker_num")
    classes = lower_str(raw["job_type"])
    bad = np.flatnonzero(~np.isin(classes, _CLASSES))
    if bad.size:
        i = int(bad[0])
        message = f"job type must be HP or Spot (got {raw['job_type'].iloc[i]!r})"
        raise InputError(message, file=source, row=int(rows[i]), field="job_type")
    cpus = numbers(raw["cpu_request"], source=source, rows=rows, field="cpu_request")
    jobs = pd.DataFrame(
        {
            "job_id": raw["job_name"],
            "submit_s": numbers(raw["submit_time"], source=source, rows=rows, field="submit_time") * scale,
            "tenant": raw["organization"],
            "num_gpus": workers * raw["gpu_request"].to_numpy(),
            "gpus_per_worker": raw["gpu_request"],
            "gpu_type": raw["gpu_model"],
            "duration_s": numbers(raw["duration"], source=source, rows=rows, field="duration") * scale,
            "priority_class": classes,
            "num_cpus": workers * cpus,
        }
    )
    return finish(
        jobs,
        source=source,
        rows=rows,
        skipped=skipped,
        fields={
            "job_id": "job_name",
            "submit_s": "submit_time",
            "tenant": "organization",
            "num_gpus": "worker_num",
            "gpus_per_worker": "gpu_request",
            "gpu_type": "gpu_model",
            "duration_s": "duration",
            "priority_class": "job_type",
            "num_cpus": "cpu_request",
        },
        skip=skip,
    )
