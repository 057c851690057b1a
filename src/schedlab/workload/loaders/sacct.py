"""Slurm accounting history: ``sacct --json`` or ``sacct -P`` text, told apart by the first character.

Forms: ``sacct -a --json`` (Slurm 22.05: ``{"meta", "errors", "jobs": [...]}``; the number objects
``{"set", "infinite", "number"}`` and the list-valued ``state.current`` of later releases are read
too) and ``sacct -a -P --format=...`` (``|``-separated, header line first; the trailing ``|`` of
``-p`` is accepted). The text form needs the columns ``JobID, State, Submit, Start, End, AllocTRES``
and reads ``JobName, Partition, User, Elapsed, Timelimit, ReqTRES`` when present. A row is a 1-based
data row of the text (step rows count), or a job's index in ``"jobs"`` + 1.

Mapping (text field / JSON field):

- ``job_id``: ``JobID`` (``9_0`` an array task, ``23+1`` a het job component) / ``job_id``, or
  ``array.job_id`` + ``_`` + ``array.task_id``, or ``het.job_id`` + ``+`` + ``het.job_offset``.
- ``submit_s``: ``Submit`` (local time of the host that ran sacct) / ``time.submission`` (Unix
  seconds, read as UTC); seconds after the earliest submit, the workload's origin.
- ``duration_s``: ``Elapsed`` (run time, suspended time left out; ``End − Start`` when the text has
  no ``Elapsed``) / ``time.elapsed``. ``queue_s``: ``Start − Submit`` / ``time.start − time.submission``.
- ``num_gpus``: ``gres/gpu`` of ``AllocTRES`` / ``tres.allocated``, of ``ReqTRES`` /
  ``tres.requested`` when nothing was allocated; ``gres/gpu:T=N`` entries break it down by type (summed
  only without a ``gres/gpu`` total). ``gpu_type``: ``T`` when that one type holds all the GPUs, else
  "" (any). ``num_cpus``: ``cpu`` of the same TRES. ``gpus_per_worker``: GPUs / ``node`` of the same
  TRES for a job on more than one node when that is whole, else NaN.
- ``tenant``, ``user``, ``name``: ``Partition``, ``User``, ``JobName`` / ``partition``, ``user``, ``name``.
- ``time_limit_s``: ``Timelimit`` (``[D-]HH:MM:SS``; ``UNLIMITED``, ``Partition_Limit`` → NaN) /
  ``time.limit`` (minutes; null, infinite → NaN).
- ``final_state``: ``State`` (its first word: ``CANCELLED by 0`` is ``CANCELLED``) / ``state.current``.
  ``COMPLETED`` → completed; ``FAILED``, ``TIMEOUT``, ``OUT_OF_MEMORY``, ``NODE_FAIL``, ``BOOT_FAIL``,
  ``DEADLINE`` → failed; ``CANCELLED``, ``PREEMPTED`` (stopped by the scheduler for another job, not
  by a fault of its own), ``REVOKED`` → cancelled. A state Slurm does not have is an error.

Skipped, in this order, each row under its first reason: ``job_step`` (a ``JobID`` with a dot:
``.batch``, ``.extern``, ``.0``; in JSON the entries of each job's ``steps``); ``requeued_run`` (a
run that ended in a requeue: state ``REQUEUED``, ``RESIZING`` or ``SPECIAL_EXIT``, or a record of a
job id that has one submitted later, as ``sacct -D`` lists the runs; the last one is the job);
``pending_at_export`` and ``running_at_export`` (not finished at export: no run time yet);
``not_started`` (no start time, or nothing allocated: a job cancelled while pending has
``Start == End`` and an empty ``AllocTRES``); ``cpu_job`` (no GPU). A run sacct records as 0 s (it
counts whole seconds) lasts 1 s (``meta["zero_duration_floored"]``); ``meta["suspended_jobs"]``
counts jobs whose ``Elapsed`` is below ``End − Start``, ``meta["gpus_split_unevenly"]`` multi-node
jobs whose GPUs are not a whole number per node. The times are dates, so a ``time_unit`` other than
seconds is an error.
"""

from __future__ import annotations

import codecs
import io
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from schedlab.errors import InputError
from schedlab.workload.loaders._common import (
    apply_skips,
    brief_json,
    dates_only,
    datetimes,
    finish,
    is_utf8,
    parse_json,
    per_value,
    seconds_since,
)
from schedlab.workload.schema import Workload, shown

_FINAL = {
    "COMPLETED": "completed",
    "FAILED": "failed",
    "TIMEOUT": "failed",
    "OUT_OF_MEMORY": "failed",
    "NODE_FAIL": "failed",
    "BOOT_FAIL": "failed",
    "DEADLINE": "failed",
    "CANCELLED": "cancelled",
    "PREEMPTED": "cancelled",
    "REVOKED": "cancelled",
}
_REQUEUED = frozenset({"REQUEUED", "RESIZING", "SPECIAL_EXIT"})
_PENDING = frozenset({"PENDING", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
_RUNNING = frozenset(
    {"RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "SIGNALING", "STAGE_OUT", "STOPPED", "POWER_UP_NODE"}
)
_STATES = (*_FINAL, *sorted(_REQUEUED), *sorted(_PENDING), *sorted(_RUNNING))
_MISSING_TIMES = ("", "unknown", "none")  # how sacct writes a time it does not have (lower case)
_NO_LIMIT = ("unlimited", "partition_limit")
_NO_VAL = 0xFFFFFFFE  # Slurm's NO_VAL; INFINITE is one more: neither is a time limit
_LATEST = 9.2e9  # Unix seconds beyond the dates pandas holds (year 2262)
_NOT_SPACE = re.compile(rb"\S")
_DURATION = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?")
TEXT_REQUIRED = ("JobID", "State", "Submit", "Start", "End", "AllocTRES")
TEXT_OPTIONAL = ("JobName", "Partition", "User", "Elapsed", "Timelimit", "ReqTRES")


@dataclass(frozen=True)
class _Names:
    """The source field names of one form, for errors and ``Workload.fields``."""

    job_id: str
    state: str
    submit: str
    start: str
    end: str
    elapsed: str
    limit: str
    alloc: str
    user: str
    partition: str
    name: str


_TEXT_NAMES = _Names("JobID", "State", "Submit", "Start", "End", "Elapsed", "Timelimit", "AllocTRES", "User",
                     "Partition", "JobName")  # fmt: skip
_JSON_NAMES = _Names("job_id", "state.current", "time.submission", "time.start", "time.end", "time.elapsed",
                     "time.limit", "tres.allocated", "user", "partition", "name")  # fmt: skip
# One row per job record, in these columns, from either form.
_COLUMNS = ("job_id", "state", "state_text", "submit", "start", "end", "elapsed", "limit", "allocated", "gpus",
            "gpu_type", "cpus", "nodes", "user", "partition", "name")  # fmt: skip


def load_sacct(path: Path, *, time_unit: str = "s", skip: Sequence[str] = ()) -> Workload:
    """Load Slurm accounting records (``sacct --json`` or ``sacct -P``): one job per record, steps dropped."""
    path = Path(path)
    dates_only("sacct", time_unit)
    source = str(path)
    data = path.read_bytes()
    first = _NOT_SPACE.search(data, len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0)
    if first is None:
        raise InputError("the file is empty (expected sacct --json or sacct -P output)", file=source)
    if first.group() in (b"{", b"["):
        text = data.decode("utf-8-sig", "surrogateescape")  # bytes that are not UTF-8: reported where they are
        raw, rows, steps = _read_json(text, source=source)
        names, form = _JSON_NAMES, "json"
    else:
        raw, rows, steps, elapsed_column = _read_text(data, source=source)
        names, form = _TEXT_NAMES, "text"
        if not elapsed_column:
            names = replace(names, elapsed="End")
    return _workload(raw, rows, steps, names=names, form=form, source=source, skip=skip)


# --- the text form ----------------------------------------------------------------------------


def _read_text(data: bytes, *, source: str) -> tuple[pd.DataFrame, np.ndarray, int, bool]:
    """The job records of ``sacct -P`` text, their data rows, the number of step rows, and
    whether the text has an ``Elapsed`` column."""
    header_bytes, body = _split_header(data.removeprefix(codecs.BOM_UTF8))
    header = header_bytes.decode("utf-8", "surrogateescape")
    trailing = header.endswith("|")  # sacct -p ends every line with a '|'
    columns = [c.strip() for c in (header[:-1] if trailing else header).split("|")]
    if len(columns) == 1:
        raise InputError("not sacct output: expected sacct --json, or sacct -P with its header line first",
                         file=source)  # fmt: skip
    where = {c.lower(): i for i, c in enumerate(columns)}
    for col in TEXT_REQUIRED:
        if col.lower() not in where:
            message = f"required column is missing (the header has {columns}); export with sacct -P --format=..."
            raise InputError(message, file=source, field=col)
    wanted = {c: where[c.lower()] for c in (*TEXT_REQUIRED, *TEXT_OPTIONAL) if c.lower() in where}
    try:
        frame = _cells_fast(body, len(columns) + trailing, wanted)
    except pa.ArrowInvalid:  # a row of another width, bytes that are not UTF-8, a blank line of spaces
        frame = _cells(body.decode("utf-8", "surrogateescape"), len(columns), wanted, trailing=trailing,
                       source=source)  # fmt: skip
    rows = np.arange(1, len(frame) + 1)
    step = frame["JobID"].str.contains(".", regex=False).to_numpy(dtype=bool)
    frame, rows = frame.loc[~step].reset_index(drop=True), rows[~step]

    def times(col: str) -> pd.Series:
        values = frame[col].str.strip()
        values = values.where(~values.str.lower().isin(_MISSING_TIMES), "")
        return datetimes(values, source=source, rows=rows, field=col)

    alloc = _tres_column(frame["AllocTRES"], source=source, rows=rows, field="AllocTRES")
    allocated = frame["AllocTRES"].str.strip().ne("").to_numpy(dtype=bool)
    if "ReqTRES" in frame.columns:
        req = _tres_column(frame["ReqTRES"], source=source, rows=rows, field="ReqTRES")
    else:
        req = pd.DataFrame({"gpus": 0.0, "gpu_type": "", "cpus": np.nan, "nodes": np.nan}, index=frame.index)
    tres = {col: np.where(allocated, alloc[col].to_numpy(), req[col].to_numpy()) for col in alloc.columns}

    def optional(col: str) -> object:
        return frame[col].where(frame[col].str.strip() != "") if col in frame.columns else None

    raw = pd.DataFrame(
        {
            "job_id": frame["JobID"].str.strip(),
            "state": per_value(frame["State"], _state_word),
            "state_text": frame["State"],
            "submit": times("Submit"),
            "start": times("Start"),
            "end": times("End"),
            "elapsed": _durations(frame, "Elapsed", source=source, rows=rows, no_limit=False),
            "limit": _durations(frame, "Timelimit", source=source, rows=rows, no_limit=True),
            "allocated": allocated,
            "gpus": tres["gpus"].astype(np.float64),
            "gpu_type": tres["gpu_type"],
            "cpus": tres["cpus"].astype(np.float64),
            "nodes": tres["nodes"].astype(np.float64),
            "user": optional("User"),
            "partition": optional("Partition"),
            "name": optional("JobName"),
        },
        columns=list(_COLUMNS),
    )
    return raw, rows, int(step.sum()), "Elapsed" in frame.columns


def _split_header(data: bytes) -> tuple[bytes, bytes]:
    """The first line that is not blank (without its line end), and the bytes after it."""
    start = 0
    while True:
        end = data.find(b"\n", start)
        line = data[start:] if end < 0 else data[start:end]
        if line.strip() or end < 0:
            return line.removesuffix(b"\r"), b"" if end < 0 else data[end + 1 :]
        start = end + 1


def _cells_fast(body: bytes, width: int, wanted: dict[str, int]) -> pd.DataFrame:
    """The ``wanted`` columns (name → position) of the rows, all text, read by pyarrow; ``ArrowInvalid``
    for anything :func:`_cells` should read and report."""
    names = [f"c{i}" for i in range(width)]
    table = pacsv.read_csv(
        io.BytesIO(body),
        read_options=pacsv.ReadOptions(column_names=names),
        parse_options=pacsv.ParseOptions(delimiter="|", quote_char=False, escape_char=False),
        convert_options=pacsv.ConvertOptions(
            column_types={n: pa.string() for n in names},
            include_columns=[names[i] for i in wanted.values()],
            strings_can_be_null=False,
        ),
    )
    frame = pd.DataFrame({col: table.column(names[i]).to_pandas() for col, i in wanted.items()})
    pa.default_memory_pool().release_unused()
    return frame


def _cells(text: str, width: int, wanted: dict[str, int], *, trailing: bool, source: str) -> pd.DataFrame:
    """The ``wanted`` columns of the rows of ``text`` (blank lines are not rows); raises at a row of
    another width or a cell that is not UTF-8."""
    records: list[list[str]] = []
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        values = (line[:-1] if trailing and line.endswith("|") else line).split("|")
        if len(values) != width:
            raise InputError(f"{len(values)} fields where the header has {width} (a '|' inside a job name?)",
                             file=source, row=len(records) + 1)  # fmt: skip
        records.append(values)
    utf8 = is_utf8(text)
    frame = pd.DataFrame({col: pd.Series([r[i] for r in records], dtype="str" if utf8 else object)
                          for col, i in wanted.items()})  # fmt: skip
    if not utf8:
        _check_utf8(frame, source=source)
    return frame


def _check_utf8(frame: pd.DataFrame, *, source: str) -> None:
    """Raise at the first cell holding bytes that are not UTF-8 (decoded as surrogates)."""
    first: tuple[int, str] | None = None
    for col in frame.columns:
        bad = np.flatnonzero(per_value(frame[col], lambda v: v is not None and not is_utf8(str(v))).astype(bool))
        if bad.size and (first is None or bad[0] < first[0]):
            first = (int(bad[0]), col)
    if first is not None:
        i, col = first
        value = str(frame[col].iat[i]).encode("utf-8", "surrogateescape")
        raise InputError(f"not UTF-8 text: {value!r}", file=source, row=i + 1, field=col)


def _state_word(value: object) -> str:
    words = "" if value is None else str(value).split()
    return words[0].upper() if words else ""


def _durations(frame: pd.DataFrame, col: str, *, source: str, rows: np.ndarray, no_limit: bool) -> np.ndarray:
    """Seconds of a ``[D-]HH:MM:SS`` column (NaN when blank, absent, or no limit for ``Timelimit``)."""
    if col not in frame.columns:
        return np.full(len(frame), np.nan)

    def seconds(value: object) -> float | str:
        text = "" if value is None else str(value).strip()
        if not text or (no_limit and text.lower() in _NO_LIMIT):
            return math.nan
        parsed = _duration_seconds(text)
        return "bad" if parsed is None else parsed

    parsed = per_value(frame[col], seconds)
    bad = np.flatnonzero([isinstance(v, str) for v in parsed])
    if bad.size:
        i = int(bad[0])
        expected = "[days-]hours:minutes:seconds" + (", UNLIMITED or Partition_Limit" if no_limit else "")
        raise InputError(f"not a duration ({expected}): {shown(frame[col].iat[i])}", file=source,
                         row=int(rows[i]), field=col)  # fmt: skip
    return parsed.astype(np.float64)


def _duration_seconds(text: str) -> float | None:
    """Seconds of a Slurm time: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``."""
    match = _DURATION.fullmatch(text)
    if match is None:
        return None
    days, first, second, third = match.groups()
    parts = [int(p) for p in (first, second, third) if p is not None]
    if days is not None:  # D-HH, D-HH:MM, D-HH:MM:SS
        h, m, s = (parts + [0, 0])[:3]
        return float(((int(days) * 24 + h) * 60 + m) * 60 + s)
    if len(parts) == 3:
        h, m, s = parts
    elif len(parts) == 2:
        h, (m, s) = 0, parts
    else:
        h, m, s = 0, parts[0], 0
    return float((h * 60 + m) * 60 + s)


def _tres_column(values: pd.Series, *, source: str, rows: np.ndarray, field: str) -> pd.DataFrame:
    """GPUs, GPU type, CPUs and nodes of each TRES string (``name=count,...``; blank: none)."""

    def parse(value: object) -> tuple[float, str, float, float] | str:
        text = "" if value is None else str(value).strip()
        if not text:
            return (0.0, "", math.nan, math.nan)
        entries = []
        for entry in text.split(","):
            name, eq, count = entry.partition("=")
            if not eq or not name.strip():
                return f"entry {shown(entry)} is not name=count"
            entries.append((name.strip(), count.strip()))
        return _tres(entries)

    parsed = per_value(values, parse)
    bad = np.flatnonzero([isinstance(v, str) for v in parsed])
    if bad.size:
        i = int(bad[0])
        raise InputError(f"not a TRES list: {shown(values.iat[i])} ({parsed[i]})", file=source, row=int(rows[i]),
                         field=field)  # fmt: skip
    return pd.DataFrame(list(parsed), columns=["gpus", "gpu_type", "cpus", "nodes"], index=values.index)


def _tres(entries: Iterable[tuple[str, object]]) -> tuple[float, str, float, float] | str:
    """(GPUs, GPU type, CPUs, nodes) of TRES ``(name, count)`` pairs, or what is wrong with them.

    ``gres/gpu`` is the total; ``gres/gpu:T`` entries break it down by type (they are summed only
    when the total is absent). Other TRES (``gres/gpumem``, ``gres/shard``, ``mem``...) are ignored.
    """
    total: float | None = None
    typed: dict[str, float] = {}
    cpus = nodes = math.nan
    for name, raw in entries:
        kind = "gpu" if name == "gres/gpu" else "typed" if name.startswith("gres/gpu:") else name
        if kind not in ("gpu", "typed", "cpu", "node"):
            continue
        count = _count(raw)
        if count is None:
            return f"{name} must be a whole number, got {shown(raw)}"
        if kind == "gpu":
            total = count
        elif kind == "typed":
            gpu_type = name.removeprefix("gres/gpu:")
            typed[gpu_type] = typed.get(gpu_type, 0.0) + count
        elif kind == "cpu":
            cpus = count
        else:
            nodes = count
    used = {t: n for t, n in typed.items() if n > 0}
    gpus = total if total is not None else float(sum(used.values()))
    gpu_type = next(iter(used)) if len(used) == 1 and used[next(iter(used))] == gpus else ""
    return (gpus, gpu_type, cpus, nodes)


def _count(value: object) -> float | None:
    """A non-negative whole count from TRES text or JSON, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if value >= 0 else None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return float(value)
    return None


# --- the JSON form ----------------------------------------------------------------------------


def _read_json(text: str, *, source: str) -> tuple[pd.DataFrame, np.ndarray, int]:
    """The job records of ``sacct --json``, their rows (index in "jobs" + 1) and their steps' count."""
    document = parse_json(text, source=source)
    jobs = document.get("jobs") if isinstance(document, dict) else None
    if not isinstance(jobs, list):
        kind = " (this looks like sinfo --json)" if isinstance(document, dict) and "nodes" in document else ""
        raise InputError(f'expected sacct --json output: an object with a "jobs" list{kind}', file=source)
    if jobs and isinstance(jobs[0], dict) and "job_state" in jobs[0] and "time" not in jobs[0]:
        raise InputError("this is squeue --json output (the queue now), not sacct --json (the job history)",
                         file=source)  # fmt: skip
    flat = [_flatten(job, source=source, row=i + 1) for i, job in enumerate(jobs)]
    steps = sum(f.pop("steps") for f in flat)
    raw = pd.DataFrame(flat, columns=list(_COLUMNS))
    for col in ("submit", "start", "end"):
        seconds = pd.to_numeric(raw[col], errors="coerce")
        known = seconds > 0  # 0: not known
        raw[col] = pd.to_datetime(seconds.where(known), unit="s")
    for col in ("elapsed", "limit", "gpus", "cpus", "nodes"):
        raw[col] = raw[col].astype(np.float64)
    return raw, np.arange(1, len(raw) + 1), steps


def _flatten(job: Any, *, source: str, row: int) -> dict[str, Any]:
    """One job record's fields, in the columns of the text form."""

    def fail(field: str | None, message: str) -> InputError:
        return InputError(message, file=source, row=row, field=field)

    if not isinstance(job, dict):
        raise fail(None, f"a job must be a JSON object (got {brief_json(job)})")

    def part(record: dict[str, Any], key: str, path: str) -> dict[str, Any]:
        value = record.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise fail(path, f"must be an object (got {brief_json(value)})")
        return value

    def number(record: dict[str, Any], key: str, path: str, *, required: bool = False) -> float | None:
        """A JSON number, or a ``{"set", "infinite", "number"}`` object (not set: None; infinite: inf)."""
        value = record.get(key)
        if isinstance(value, dict) and "number" in value:
            value = math.inf if value.get("infinite") else value["number"] if value.get("set", True) else None
        if value is None:
            if required:
                raise fail(path, "is missing")
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise fail(path, f"must be a number (got {brief_json(value)})")
        return float(value)

    def stamp(key: str, *, required: bool = False) -> float | None:
        """A time of ``time``: Unix seconds (0 and null: not known)."""
        value = number(times, key, f"time.{key}", required=required)
        if value is not None and not 0 <= value < _LATEST:
            raise fail(f"time.{key}", f"not a Unix time in seconds (got {shown(value)})")
        return value

    def text(record: dict[str, Any], key: str, path: str) -> str | None:
        value = record.get(key)
        if value is None:
            return None
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise fail(path, f"must be text (got {brief_json(value)})")
        if not is_utf8(str(value)):
            raise fail(path, f"not UTF-8 text: {str(value).encode('utf-8', 'surrogateescape')!r}")
        return str(value) or None

    def tres(key: str) -> tuple[bool, tuple[float, str, float, float]]:
        path = f"tres.{key}"
        entries = part(job, "tres", "tres").get(key)
        if entries is None:
            entries = []
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise fail(path, f"must be a list of objects (got {brief_json(entries)})")
        pairs = []
        for entry in entries:
            kind, name, count = entry.get("type"), entry.get("name"), entry.get("count")
            if not isinstance(kind, str) or not (name is None or isinstance(name, str)):
                raise fail(path, f"a TRES needs a text type and name (got {brief_json(entry)})")
            if isinstance(count, dict) and "number" in count:
                count = count["number"] if count.get("set", True) else None
            pairs.append((f"{kind}/{name}" if name else kind, count))
        parsed = _tres(pairs)
        if isinstance(parsed, str):
            raise fail(path, f"not a TRES list: {parsed}")
        if not is_utf8(parsed[1]):
            raise fail(path, f"not UTF-8 text: {parsed[1].encode('utf-8', 'surrogateescape')!r}")
        return bool(entries), parsed

    job_id = number(job, "job_id", "job_id", required=True)
    array, het, times = part(job, "array", "array"), part(job, "het", "het"), part(job, "time", "time")
    array_job = number(array, "job_id", "array.job_id")
    task = number(array, "task_id", "array.task_id")
    het_job = number(het, "job_id", "het.job_id")
    offset = number(het, "job_offset", "het.job_offset")
    if array_job and task is not None and task < _NO_VAL:
        ident = f"{array_job:.0f}_{task:.0f}"
    elif array_job:  # the record of array tasks not started yet
        ident = f"{array_job:.0f}_[{text(array, 'task', 'array.task') or ''}]"
    elif het_job and offset is not None and offset < _NO_VAL:
        ident = f"{het_job:.0f}+{offset:.0f}"
    else:
        ident = f"{job_id:.0f}"
    state = part(job, "state", "state").get("current")
    if isinstance(state, list):  # later releases: the state and its flags
        state = state[0] if state else None
    if not isinstance(state, str):
        raise fail("state.current", f"must be a job state (got {brief_json(state)})")
    if not is_utf8(state):
        raise fail("state.current", f"not UTF-8 text: {state.encode('utf-8', 'surrogateescape')!r}")
    limit = number(times, "limit", "time.limit")
    allocated, alloc = tres("allocated")
    _, req = tres("requested")
    used = alloc if allocated else req
    steps = job.get("steps")
    return {
        "job_id": ident,
        "state": _state_word(state),
        "state_text": state,
        "submit": stamp("submission", required=True),
        "start": stamp("start"),
        "end": stamp("end"),
        "elapsed": number(times, "elapsed", "time.elapsed"),
        "limit": None if limit is None or limit >= _NO_VAL else limit * 60.0,
        "allocated": allocated,
        "gpus": used[0],
        "gpu_type": used[1],
        "cpus": used[2],
        "nodes": used[3],
        "user": text(job, "user", "user"),
        "partition": text(job, "partition", "partition"),
        "name": text(job, "name", "name"),
        "steps": len(steps) if isinstance(steps, list) else 0,
    }



# --- both forms -------------------------------------------------------------------------------


def _workload(
    raw: pd.DataFrame, rows: np.ndarray, steps: int, *, names: _Names, form: str, source: str, skip: Sequence[str]
) -> Workload:
    """Skip what is not a finished GPU job, map the rest to the canonical columns."""
    state = raw["state"]
    unknown = np.flatnonzero(~state.isin(_STATES).to_numpy())
    if unknown.size:
        i = int(unknown[0])
        raise InputError(f"unknown Slurm job state {shown(raw['state_text'].iat[i])}; expected one of "
                         f"{', '.join(_STATES)}", file=source, row=int(rows[i]), field=names.state)  # fmt: skip
    missing = np.flatnonzero(raw["submit"].isna().to_numpy())
    if missing.size:
        i = int(missing[0])
        raise InputError("a job needs a submit time", file=source, row=int(rows[i]), field=names.submit)
    # Of the records of one job id (sacct -D lists each run), the one submitted last (then last listed) is the job.
    order = raw.assign(_row=rows).sort_values(["submit", "_row"], kind="stable")
    earlier = order.duplicated("job_id", keep="last").reindex(raw.index).to_numpy()
    skipped = {"job_step": steps} if steps else {}
    raw, rows, dropped = apply_skips(
        raw,
        rows,
        [
            ("requeued_run", state.isin(_REQUEUED).to_numpy() | earlier),
            ("pending_at_export", state.isin(_PENDING).to_numpy()),
            ("running_at_export", state.isin(_RUNNING).to_numpy()),
            ("not_started", raw["start"].isna().to_numpy() | ~raw["allocated"].to_numpy(dtype=bool)),
            ("cpu_job", raw["gpus"].to_numpy() == 0),
        ],
    )
    skipped.update(dropped)
    start, end, submitted = raw["start"], raw["end"], raw["submit"]
    no_end = np.flatnonzero(end.isna().to_numpy())
    if no_end.size:
        i = int(no_end[0])
        raise InputError(f"a job in state {raw['state'].iat[i]} needs an end time", file=source, row=int(rows[i]),
                         field=names.end)  # fmt: skip
    span = ((end - start) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64)
    backwards = np.flatnonzero(span < 0)
    if backwards.size:
        i = int(backwards[0])
        raise InputError(f"the job ends before it starts ({end.iat[i]} < {start.iat[i]})", file=source,
                         row=int(rows[i]), field=names.end)  # fmt: skip
    elapsed = raw["elapsed"].to_numpy(dtype=np.float64)
    duration = np.where(np.isnan(elapsed), span, elapsed)
    zero = duration == 0
    duration = np.where(zero, 1.0, duration)  # sacct counts whole seconds: 0 s means under a second
    gpus, nodes = raw["gpus"].to_numpy(dtype=np.float64), raw["nodes"].to_numpy(dtype=np.float64)
    multi = nodes > 1
    with np.errstate(invalid="ignore", divide="ignore"):
        per_node = gpus / nodes
    whole = per_node == np.floor(per_node)
    submit, origin = seconds_since(submitted)
    jobs = pd.DataFrame(
        {
            "job_id": raw["job_id"],
            "submit_s": submit,
            "user": raw["user"],
            "tenant": raw["partition"],
            "name": raw["name"],
            "num_gpus": gpus,
            "gpus_per_worker": np.where(multi & whole, per_node, np.nan),
            "gpu_type": raw["gpu_type"],
            "duration_s": duration,
            "num_cpus": raw["cpus"].to_numpy(dtype=np.float64),
            "final_state": [_FINAL[s] for s in raw["state"]],
            "queue_s": ((start - submitted) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64),
            "time_limit_s": raw["limit"].to_numpy(dtype=np.float64),
        }
    )
    tres = names.alloc
    return finish(
        jobs,
        source=source,
        rows=rows,
        origin=origin,
        skipped=skipped,
        meta={
            "form": form,
            "zero_duration_floored": int(zero.sum()),
            "suspended_jobs": int((elapsed < span).sum()),
            "gpus_split_unevenly": int((multi & ~whole).sum()),
        },
        fields={
            "job_id": names.job_id,
            "submit_s": names.submit,
            "user": names.user,
            "tenant": names.partition,
            "name": names.name,
            "num_gpus": tres,
            "gpus_per_worker": tres,
            "gpu_type": tres,
            "duration_s": names.elapsed,
            "num_cpus": tres,
            "final_state": names.state,
            "queue_s": names.start,
            "time_limit_s": names.limit,
        },
        skip=skip,
    )
