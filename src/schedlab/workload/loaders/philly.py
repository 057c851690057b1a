"""Microsoft Philly traces: the ``cluster_job_log`` JSON and the Philly-derived CSVs.

Schema: README of github.com/msr-fiddle/philly-traces (ATC '19) — a JSON list of jobs with
``status`` (``Pass``, ``Killed``, ``Failed``), ``vc``, ``jobid``, ``attempts`` (each with
``start_time``, ``end_time`` and ``detail``: a list of ``{"ip", "gpus": [...]}``), ``submitted_time``
and ``user``; times are ``YYYY-MM-DD HH:MM:SS`` strings. A job may have no attempts, an attempt may
lack a start or end time, and a missing end on the last attempt means the job was still running.

Duration = last attempt's end − earliest recorded attempt start (the span of all attempts, gaps
between retries included, as the trace's own analysis measures run time). GPUs = the GPUs listed in
the detail of the last attempt that has any (``meta["gpu_count_changed"]`` counts jobs whose attempts
used different counts). Skipped: jobs without attempts, without GPUs, without a start time, still
running, or that ran for 0 s. ``queue_s`` = earliest attempt start − ``submitted_time``. Its times
are dates, so a ``time_unit`` other than seconds is an error; for the CSVs it scales their numbers.

CSV files are recognised by their columns and handed to :mod:`.tiresias` (Tiresias/Chronus) or
:mod:`.pollux` (Pollux's ``philly.csv``).
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from schedlab.errors import InputError
from schedlab.workload.loaders import pollux, tiresias
from schedlab.workload.loaders._common import (
    apply_skips,
    brief_json,
    dates_only,
    datetimes,
    finish,
    header,
    is_utf8,
    map_states,
    parse_json,
    seconds_since,
)
from schedlab.workload.schema import Workload

_STATES = {"pass": "completed", "killed": "cancelled", "failed": "failed"}
_FIELDS = ("jobid", "user", "vc", "status", "submitted", "start", "end", "gpus", "attempts", "changed")


def load_philly(path: Path, *, time_unit: str = "s", skip: Sequence[str] = ()) -> Workload:
    """Load a Philly trace: the ``cluster_job_log`` JSON, or a Tiresias/Chronus or Pollux CSV."""
    path = Path(path)
    if _looks_like_json(path):
        dates_only("philly (cluster_job_log JSON)", time_unit)
        return load_philly_json(path, skip=skip)
    columns = {c.strip() for c in header(path)}
    if set(tiresias.REQUIRED) <= columns:
        return tiresias.load_tiresias(path, time_unit=time_unit, skip=skip)
    if set(pollux.REQUIRED) <= columns:
        return pollux.load_pollux_philly(path, time_unit=time_unit, skip=skip)
    raise InputError(
        f"not a known Philly CSV: expected the columns {list(tiresias.REQUIRED)} (Tiresias/Chronus) "
        f"or {list(pollux.REQUIRED)} (Pollux); the file has {sorted(columns)}",
        file=str(path),
    )


def load_philly_json(path: Path, *, skip: Sequence[str] = ()) -> Workload:
    """Load the Philly ``cluster_job_log`` JSON (one row per job; row N = the N-th job of the list)."""
    source = str(path)
    # Bytes that are not UTF-8 become surrogates, reported with the job and field that hold them.
    text = path.read_bytes().decode("utf-8-sig", "surrogateescape")
    records = parse_json(text, source=source)
    if not isinstance(records, list):
        raise InputError("expected a JSON list of jobs", file=source)
    flat = [_flatten(job, source=source, row=i + 1) for i, job in enumerate(records)]
    raw = pd.DataFrame(flat, columns=list(_FIELDS))
    rows = np.arange(1, len(raw) + 1)
    gpus = raw["gpus"].to_numpy(dtype=np.float64)
    raw, rows, skipped = apply_skips(
        raw,
        rows,
        [
            ("no_attempts", raw["attempts"].to_numpy() == 0),
            ("cpu_job", gpus == 0),
            ("no_start_time", raw["start"].isna().to_numpy()),
            ("still_running", raw["end"].isna().to_numpy()),
        ],
    )
    submitted = datetimes(raw["submitted"], source=source, rows=rows, field="submitted_time")
    start = datetimes(raw["start"], source=source, rows=rows, field="attempts")
    end = datetimes(raw["end"], source=source, rows=rows, field="attempts")
    duration = ((end - start) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64)
    queue = ((start - submitted) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64)
    raw = raw.assign(duration=duration, submitted=submitted, queue=queue)
    raw, rows, zero = apply_skips(raw, rows, [("zero_duration", duration == 0)])
    skipped.update(zero)
    submit, origin = seconds_since(raw["submitted"])
    jobs = pd.DataFrame(
        {
            "job_id": raw["jobid"],
            "submit_s": submit,
            "user": raw["user"],
            "tenant": raw["vc"],
            "num_gpus": raw["gpus"],
            "duration_s": raw["duration"],
            "final_state": map_states(raw["status"], _STATES),
            "queue_s": raw["queue"],
        }
    )
    return finish(
        jobs,
        source=source,
        rows=rows,
        origin=origin,
        skipped=skipped,
        meta={"gpu_count_changed": int(raw["changed"].sum())},
        fields={
            "job_id": "jobid",
            "submit_s": "submitted_time",
            "tenant": "vc",
            "num_gpus": "gpus",
            "duration_s": "attempts",
            "final_state": "status",
            "queue_s": "attempts",
        },
        skip=skip,
    )


def _looks_like_json(path: Path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(256).removeprefix(codecs.BOM_UTF8).lstrip()
    return head[:1] in (b"[", b"{")


def _flatten(job: Any, *, source: str, row: int) -> dict[str, Any]:
    """One job's fields, earliest attempt start, last attempt end and GPU count."""

    def fail(field: str | None, message: str) -> InputError:
        return InputError(message, file=source, row=row, field=field)

    def text(record: dict[str, Any], key: str) -> str | None:
        """``record[key]`` as a string (any JSON scalar); None when missing or null."""
        value = record.get(key)
        if value is None:
            return None
        if not isinstance(value, (str, int, float)):
            raise fail(key, f"must be text (got {brief_json(value)})")
        if not is_utf8(str(value)):
            raise fail(key, f"not UTF-8 text: {_raw(str(value))!r}")
        return str(value)

    def listed(record: dict[str, Any], key: str, *, objects: bool = True) -> list[Any]:
        """``record[key]`` as a list (of JSON objects with ``objects``); empty when missing or null."""
        value = record.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or (objects and not all(isinstance(v, dict) for v in value)):
            raise fail(key, f"must be a list{' of objects' if objects else ''} (got {brief_json(value)})")
        return value

    if not isinstance(job, dict):
        raise fail(None, f"a job must be a JSON object (got {brief_json(job)})")
    attempts = listed(job, "attempts")
    starts = [s for s in (text(a, "start_time") for a in attempts) if s]
    counts = [sum(len(listed(d, "gpus", objects=False)) for d in listed(a, "detail")) for a in attempts]
    used = [c for c in counts if c > 0]
    return {
        "jobid": text(job, "jobid"),
        "user": text(job, "user"),
        "vc": text(job, "vc"),
        "status": text(job, "status"),
        "submitted": text(job, "submitted_time"),
        "start": min(starts) if starts else None,  # "YYYY-MM-DD HH:MM:SS" sorts in time order
        "end": (text(attempts[-1], "end_time") or None) if attempts else None,
        "gpus": float(used[-1]) if used else 0.0,
        "attempts": len(attempts),
        "changed": len(set(used)) > 1,
    }



def _raw(text: str) -> bytes:
    """The bytes behind text decoded with ``surrogateescape``."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")
