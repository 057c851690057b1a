"""Microsoft ITP job traces released with ElasticFlow (ASPLOS '23).

Schema: README of github.com/microsoft/elasticflow-traces — ``raw-traces/cluster*.csv`` have
``job_id, submission_time`` (s from the start of collection), ``duration`` (s), ``num_gpu``. The
``elasticflow-traces`` variants add randomly generated columns, which are ignored. ``time_unit``
scales ``submission_time`` and ``duration``.

Calendar: the release README dates the collection 2021-03-04 to 2021-05-03, so the origin (time
0 of ``submission_time``) is taken as 2021-03-04 00:00. The README gives neither the hour nor the
time zone: weekday and month features are right, hour-of-day ones may be shifted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.workload.loaders._common import apply_skips, finish, numbers, read_csv
from schedlab.workload.loaders._units import seconds_per
from schedlab.workload.schema import Workload

_REQUIRED = ("job_id", "submission_time", "duration", "num_gpu")
COLLECTION_START = pd.Timestamp("2021-03-04")  # README of microsoft/elasticflow-traces


def load_elasticflow(path: Path, *, time_unit: str = "s", skip: Sequence[str] = ()) -> Workload:
    """Load an ITP cluster trace (``time_unit`` since collection start; CPU jobs skipped)."""
    source = str(path)
    scale = seconds_per(time_unit)
    raw = read_csv(path, required=_REQUIRED)
    rows = np.arange(1, len(raw) + 1)
    gpus = numbers(raw["num_gpu"], source=source, rows=rows, field="num_gpu")
    raw, rows, skipped = apply_skips(raw.assign(num_gpu=gpus), rows, [("cpu_job", gpus == 0)])
    jobs = pd.DataFrame(
        {
            "job_id": raw["job_id"],
            "submit_s": numbers(raw["submission_time"], source=source, rows=rows, field="submission_time") * scale,
            "num_gpus": raw["num_gpu"],
            "duration_s": numbers(raw["duration"], source=source, rows=rows, field="duration") * scale,
        }
    )
    return finish(
        jobs,
        source=source,
        rows=rows,
        origin=COLLECTION_START,
        skipped=skipped,
        fields={"submit_s": "submission_time", "num_gpus": "num_gpu", "duration_s": "duration"},
        skip=skip,
    )
