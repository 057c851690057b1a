"""Pollux's Philly excerpt ``simulator/traces/philly.csv`` (OSDI '21 artifact).

Schema: github.com/petuum/adaptdl, branch ``osdi21-artifact`` — columns ``timestamp`` (submission,
``YYYY-MM-DD HH:MM:SS``), ``duration`` (s), ``num_gpus``, ``gpu_time`` (duration × GPUs) and
``cluster`` (Philly VC id). Rows carry no id: a job's id is its 1-based data row. Tenant = cluster.
``time_unit`` scales ``duration`` (the submission is a date).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.workload.loaders._common import (
    apply_skips,
    datetimes,
    finish,
    numbers,
    read_csv,
    seconds_since,
)
from schedlab.workload.loaders._units import seconds_per
from schedlab.workload.schema import Workload

REQUIRED = ("timestamp", "duration", "num_gpus")


def load_pollux_philly(path: Path, *, time_unit: str = "s", skip: Sequence[str] = ()) -> Workload:
    """Load Pollux's ``philly.csv``: GPU jobs with wall-clock submission times."""
    source = str(path)
    scale = seconds_per(time_unit)
    raw = read_csv(path, required=REQUIRED, optional=("cluster",))
    rows = np.arange(1, len(raw) + 1)
    gpus = numbers(raw["num_gpus"], source=source, rows=rows, field="num_gpus")
    raw, rows, skipped = apply_skips(raw.assign(num_gpus=gpus), rows, [("cpu_job", gpus == 0)])
    submit, origin = seconds_since(datetimes(raw["timestamp"], source=source, rows=rows, field="timestamp"))
    jobs = pd.DataFrame(
        {
            "job_id": rows.astype(str),
            "submit_s": submit,
            "num_gpus": raw["num_gpus"],
            "duration_s": numbers(raw["duration"], source=source, rows=rows, field="duration") * scale,
        }
    )
    if "cluster" in raw.columns:
        jobs["tenant"] = raw["cluster"]
    fields = {"submit_s": "timestamp", "tenant": "cluster", "duration_s": "duration"}
    return finish(jobs, source=source, rows=rows, origin=origin, skipped=skipped, fields=fields, skip=skip)
