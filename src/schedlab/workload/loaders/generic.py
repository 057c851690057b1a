"""Any CSV with one job per row, mapped onto the canonical schema column by column.

The canonical columns are those of :data:`schedlab.workload.schema.DATA_COLUMNS`; ``columns`` maps each
canonical name to the source column that holds it (canonical names present in the file map to
themselves). ``job_id`` defaults to the 1-based data row. Submit times may be numbers (in
``time_unit``) or date strings (``time_format``, ISO 8601 by default), which set the origin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.errors import ConfigError, InputError
from schedlab.workload.loaders._common import (
    CPU_RULE,
    blank,
    datetimes,
    finish,
    header,
    lower_str,
    numbers,
    read_csv,
    seconds_since,
)
from schedlab.workload.loaders._units import seconds_per
from schedlab.workload.schema import DATA_COLUMNS, FLOAT_COLUMNS, Workload

_NEEDED = ("submit_s", "num_gpus", "duration_s")
_DURATIONS = ("duration_s", "checkpoint_interval_s", "queue_s")


def load_csv(
    path: Path,
    *,
    columns: Mapping[str, str] | None = None,
    time_unit: str = "s",
    time_format: str | None = None,
    skip: Sequence[str] = (),
) -> Workload:
    """Load a generic job CSV.

    ``time_unit`` ("s", "ms", "min", "h") scales numeric submit, deadline and duration columns;
    ``time_format`` forces submit (and deadline) columns to be read as dates. Zero-GPU rows are an
    error unless ``skip`` holds the rule ``cpu`` (then they are skipped as ``cpu_job``).
    """
    source = str(path)
    scale = seconds_per(time_unit)
    mapping = _mapping(path, columns)
    raw = read_csv(path, required=list(dict.fromkeys(mapping.values())))
    rows = np.arange(1, len(raw) + 1)
    gpus = numbers(raw[mapping["num_gpus"]], source=source, rows=rows, field=mapping["num_gpus"])
    cpu = np.flatnonzero(gpus == 0)
    if cpu.size and CPU_RULE not in [r.strip() for r in skip]:
        message = "a job asking for 0 GPUs is an error unless CPU jobs are skipped (--skip cpu)"
        raise InputError(message, file=source, row=int(rows[cpu[0]]), field=mapping["num_gpus"])
    jobs = pd.DataFrame(index=range(len(raw)))
    origin = None
    dates = time_format is not None or _are_dates(raw[mapping["submit_s"]])
    for canon, col in mapping.items():
        values = raw[col]
        if canon in ("submit_s", "deadline_s") and dates:
            jobs[canon] = datetimes(values, source=source, rows=rows, field=col, fmt=time_format)
        elif canon in FLOAT_COLUMNS:
            factor = scale if canon in ("submit_s", "deadline_s", *_DURATIONS) else 1.0
            jobs[canon] = numbers(values, source=source, rows=rows, field=col) * factor
        elif canon == "final_state":
            states = lower_str(values)
            jobs[canon] = np.where(states == "", "unknown", states)
        else:
            jobs[canon] = values.to_numpy()
    if dates:
        jobs["submit_s"], origin = seconds_since(jobs["submit_s"])
        if "deadline_s" in jobs.columns:
            jobs["deadline_s"] = _seconds_after(jobs["deadline_s"], origin)
    if "job_id" not in jobs.columns:
        jobs["job_id"] = rows.astype(str)
    return finish(jobs, source=source, rows=rows, origin=origin, fields=mapping, skip=skip)


def _mapping(path: Path, columns: Mapping[str, str] | None) -> dict[str, str]:
    """Canonical name → source column: the given ``columns`` plus canonical names found in the file."""
    given = dict(columns or {})
    unknown = sorted(set(given) - set(DATA_COLUMNS))
    if unknown:
        raise ConfigError(f"unknown canonical column(s) {unknown}; known: {list(DATA_COLUMNS)}")
    present = {c.strip() for c in header(path)}
    mapping = {c: c for c in DATA_COLUMNS if c in present and c not in given}
    mapping.update(given)
    for canon in _NEEDED:
        mapping.setdefault(canon, canon)
    return mapping


def _seconds_after(stamps: pd.Series, origin: pd.Timestamp | None) -> np.ndarray:
    if origin is None:
        return np.full(len(stamps), np.nan)
    seconds: np.ndarray = ((stamps - origin) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64)
    return seconds


def _are_dates(values: pd.Series) -> bool:
    """True when the non-blank values are not all numbers (then they must be dates)."""
    if values.dtype.kind in "fiubmM":
        return values.dtype.kind in "mM"
    present = values[~blank(values)]
    return bool(pd.to_numeric(present, errors="coerce").isna().any())
