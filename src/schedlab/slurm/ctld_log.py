"""slurmctld's log as a record of what the scheduler did, to the millisecond: when each job was
submitted, started (and by which scheduler: the main one, ``sched: Allocate``, or backfill,
``sched/backfill: _start_job: Started``) and completed. ``squeue`` and ``sacct`` round these
times down to whole seconds; the log keeps milliseconds (at the default ``SlurmctldDebug=info``).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pandas as pd

_STAMP = r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] "
_EVENTS = (
    ("submit", re.compile(_STAMP + r"_slurm_rpc_submit_batch_job: JobId=(\d+) ")),
    ("start_main", re.compile(_STAMP + r"sched: Allocate JobId=(\d+) ")),
    ("start_backfill", re.compile(_STAMP + r"sched/backfill: _start_job: Started JobId=(\d+) ")),
    ("end", re.compile(_STAMP + r"_job_complete: JobId=(\d+) done")),
)


def read_events(path: Path) -> pd.DataFrame:
    """One row per job id seen: ``submit``, ``start`` and ``end`` as epoch seconds (local time,
    as the log writes it; NaN when absent) and ``started_by`` (main, backfill or "")."""
    rows: dict[int, dict[str, object]] = {}
    with open(path, errors="replace") as f:
        for line in f:
            if "JobId=" not in line:
                continue
            for kind, pattern in _EVENTS:
                m = pattern.match(line)
                if m is None:
                    continue
                at = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp()
                job = rows.setdefault(int(m.group(2)), {})
                if kind.startswith("start"):
                    job.setdefault("start", at)  # the first start (a requeued job starts again)
                    job.setdefault("started_by", kind.split("_", 1)[1])
                else:
                    job.setdefault(kind, at)
                break
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["submit", "start", "end", "started_by"])
    frame["started_by"] = frame["started_by"].fillna("")
    return frame.rename_axis("slurm_id")
