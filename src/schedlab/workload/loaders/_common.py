"""Helpers shared by the trace loaders: reading, parsing with row-exact errors, skipping, finishing.

Row numbers are 1-based data rows of the source file (the first record after the header is row 1;
blank lines are not rows); every helper carries them along so an error names the row a user can find.
"""

from __future__ import annotations

import csv
import json
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from schedlab.errors import ConfigError, InputError
from schedlab.workload.loaders._units import seconds_per
from schedlab.workload.schema import DATA_COLUMNS, DEFAULTS, FLOAT_COLUMNS, Workload, canonical_frame, shown

# Columns holding absolute workload times; they move together when submit times are shifted to 0.
_ABSOLUTE_TIME_COLUMNS = ("submit_s", "deadline_s")
_OPS = {
    "<=": np.less_equal,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    ">": np.greater,
}
CPU_RULE = "cpu"  # the skip rule for rows asking for 0 GPUs, counted as ``cpu_job``


def dates_only(fmt: str, time_unit: str) -> None:
    """Reject a ``time_unit`` other than seconds for a format whose time fields are all dates."""
    if seconds_per(time_unit) != 1.0:
        raise ConfigError(f"format {fmt!r} has dates, not numbers, in its time fields: a time unit does not apply")


@dataclass(frozen=True)
class SkipRule:
    """Leave out the jobs whose canonical ``column`` compares true with ``value`` (``cpu``: 0 GPUs)."""

    text: str
    column: str
    op: str
    value: float | str

    @property
    def reason(self) -> str:
        return "cpu_job" if self.text == CPU_RULE else f"skip {self.text}"


def skip_rules(rules: Sequence[str]) -> list[SkipRule]:
    """Parse ``cpu`` or ``COLUMN OP VALUE`` (OP one of < <= > >= == !=) on a canonical column;
    numeric columns compare numbers (times in seconds), text columns only == and !=."""
    parsed = []
    for text in rules:
        text = text.strip()
        if text == CPU_RULE:
            parsed.append(SkipRule(text, "num_gpus", "==", 0.0))
            continue
        op = next((o for o in _OPS if o in text), None)
        column, _, value = text.partition(op) if op else (text, "", "")
        column, value = column.strip(), value.strip()
        if op is None or column not in DATA_COLUMNS:
            raise ConfigError(
                f"skip rule {text!r}: expected 'cpu' or COLUMN OP VALUE with OP one of {' '.join(_OPS)} "
                f"and COLUMN one of {list(DATA_COLUMNS)}, e.g. 'duration_s<60'"
            )
        if column in FLOAT_COLUMNS:
            try:
                parsed.append(SkipRule(text, column, op, float(value)))
            except ValueError:
                raise ConfigError(f"skip rule {text!r}: {column} is a number, got {value!r}") from None
        elif op in ("==", "!="):
            parsed.append(SkipRule(text, column, op, value))
        else:
            raise ConfigError(f"skip rule {text!r}: {column} is text; use == or !=")
    return parsed


def skip_masks(jobs: pd.DataFrame, rules: Sequence[SkipRule]) -> list[tuple[str, np.ndarray]]:
    """(reason, mask) of each rule over a frame of canonical columns (a missing column has its default)."""
    masks = []
    for rule in rules:
        if rule.column in jobs.columns:
            values = jobs[rule.column]
        else:
            values = pd.Series([DEFAULTS.get(rule.column, "")] * len(jobs), dtype=object)
        if isinstance(rule.value, float):
            data = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
        else:
            data = values.astype(object).where(values.notna(), "").astype(str).to_numpy(dtype=object)
        with np.errstate(invalid="ignore"):
            masks.append((rule.reason, np.asarray(_OPS[rule.op](data, rule.value), dtype=bool)))
    return masks


def read_csv(
    path: Path,
    *,
    required: Sequence[str],
    optional: Sequence[str] = (),
    names: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Read the ``required`` and present ``optional`` columns of a CSV file (pyarrow engine).

    With ``names`` the file is headerless and ``names`` are its columns in order.
    Raises :class:`InputError` (file and field, no row: the header is at fault) for a missing column.
    """
    source = str(path)
    raw = header(path) if names is None else list(names)
    columns = [c.strip() for c in raw]
    for col in required:
        if col not in columns:
            raise InputError(f"required column is missing (the file has {columns})", file=source, field=col)
    wanted = set(required) | set(optional)
    usecols = [r for r, c in zip(raw, columns) if c in wanted]
    if names is None:
        frame = _read(path, usecols=usecols)
    else:
        frame = _read(path, header=None, names=raw)[usecols]
    return frame.rename(columns=lambda c: c.strip())


def header(path: Path) -> list[str]:
    """The column names of a CSV file, as written; a name given twice is an error (pandas
    would read the first and call the second ``NAME.1``)."""
    _check_not_empty(path)
    try:
        columns = [str(c) for c in pd.read_csv(path, nrows=0).columns]
    except UnicodeDecodeError:
        raise InputError("the header line is not UTF-8 text", file=str(path)) from None
    except ValueError as err:  # pandas' EmptyDataError and ParserError
        raise InputError(f"not a readable CSV file: {err}", file=str(path)) from None
    with open(path, newline="", encoding="utf-8-sig", errors="surrogateescape") as fh:
        written = [c.strip() for c in next(csv.reader(fh), [])]
    first: dict[str, int] = {}
    for i, name in enumerate(written, 1):
        if name in first:
            raise InputError(f"the header names this column twice (columns {first[name]} and {i})", file=str(path),
                             field=name)  # fmt: skip
        first[name] = i
    return columns


def _read(path: Path, usecols: list[str] | None = None, **options: Any) -> pd.DataFrame:
    """Read with the pyarrow engine; on a parse error re-read with the C engine, whose errors name the line."""
    _check_not_empty(path)
    try:
        frame = pd.read_csv(path, engine="pyarrow", usecols=usecols, **options)
    except (pa.ArrowInvalid, ValueError):
        frame = _read_c(path, **options)
        names = options.get("names")
        short = _width_error(path, len(header(path)) if names is None else len(names), has_header=names is None)
        if short is not None:  # the C engine pads a short row with empty cells: a row that lost fields
            raise short
        frame = frame if usecols is None else frame[usecols]
    pa.default_memory_pool().release_unused()  # the reader's cached buffers: return them before the next steps
    _check_text(frame, source=str(path))
    return frame


def _check_not_empty(path: Path) -> None:
    if path.stat().st_size == 0:
        raise InputError("not a readable CSV file: the file is empty", file=str(path))


def _read_c(path: Path, **options: Any) -> pd.DataFrame:
    """Read with the C engine: a row longer than the header is an error (not an index column), and
    bytes that are not UTF-8 become surrogates for :func:`_check_text` to find."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            try:
                return pd.read_csv(path, engine="c", index_col=False, **options)
            except UnicodeDecodeError:
                return pd.read_csv(
                    path, engine="c", index_col=False, dtype=object, encoding_errors="surrogateescape", **options
                )
    except (pd.errors.ParserWarning, ValueError) as err:  # ValueError: pandas' ParserError
        names = options.get("names")
        width = len(header(path)) if names is None else len(names)
        raise _unreadable(path, err, width, has_header=names is None) from None


def _unreadable(path: Path, err: Exception, width: int, *, has_header: bool) -> InputError:
    """The error for a CSV file the C engine cannot read, naming the first row whose field count is not ``width``."""
    return _width_error(path, width, has_header=has_header) or InputError(f"not a readable CSV file: {err}",
                                                                         file=str(path))  # fmt: skip


def _width_error(path: Path, width: int, *, has_header: bool) -> InputError | None:
    """The error naming the first row with more or fewer than ``width`` fields (blank lines are not rows)."""
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as fh:
        reader = csv.reader(fh)
        row = -1 if has_header else 0
        for record in reader:
            if not any(field.strip() for field in record):
                continue
            row += 1
            if row > 0 and len(record) != width:
                message = f"line {reader.line_num} has {len(record)} fields where {width} columns are expected"
                return InputError(f"not a readable CSV file: {message}", file=str(path), row=row)
    return None


def _check_text(frame: pd.DataFrame, *, source: str) -> None:
    """Raise at the first cell that is not UTF-8 text: bytes from pyarrow, surrogates from :func:`_read_c`."""
    first: tuple[int, str] | None = None
    for col in frame.columns:
        if frame[col].dtype == object:
            bad = np.flatnonzero(per_value(frame[col], _not_utf8).astype(bool))
            if bad.size and (first is None or bad[0] < first[0]):
                first = (int(bad[0]), str(col))
    if first is not None:
        i, col = first
        value = frame[col].iloc[i]
        if isinstance(value, str):
            value = value.encode("utf-8", "surrogateescape")
        raise InputError(f"not UTF-8 text: {value!r}", file=source, row=i + 1, field=col.strip())


def _not_utf8(value: object) -> bool:
    try:
        if isinstance(value, bytes):
            value.decode("utf-8")
        elif isinstance(value, str):
            value.encode("utf-8")
    except UnicodeError:
        return True
    return False


def numbers(values: pd.Series, *, source: str, rows: np.ndarray, field: str) -> np.ndarray:
    """Values as float64; blanks become NaN, anything else unparsable raises :class:`InputError`."""
    if values.dtype.kind in "fiub":
        floats: np.ndarray = values.to_numpy(dtype=np.float64)
        return floats
    parsed: np.ndarray = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    _fail_unparsable(values, np.isnan(parsed), source=source, rows=rows, field=field, what="a number")
    return parsed


def datetimes(
    values: pd.Series, *, source: str, rows: np.ndarray, field: str, fmt: str | None = None
) -> pd.Series:
    """Date strings as datetime64 (``fmt`` as for ``strftime``, ISO 8601 by default); blanks become NaT."""
    try:
        parsed = pd.to_datetime(values, format=fmt or "ISO8601", errors="coerce")
    except ValueError as err:  # a bad format, or dates in different time zones; bad values become NaT
        _fail_mixed_zones(values, source=source, rows=rows, field=field)
        raise ConfigError(f"bad time format {fmt!r}: {err}") from None
    _fail_unparsable(values, parsed.isna().to_numpy(), source=source, rows=rows, field=field, what="a date")
    return parsed


def _fail_mixed_zones(values: pd.Series, *, source: str, rows: np.ndarray, field: str) -> None:
    """Raise at the first date whose time zone (or lack of one) differs from the first date's."""
    zones: list[timedelta | None] = []  # the first date's UTC offset (None: no time zone), once seen
    for i, value in enumerate(values.to_numpy(dtype=object)):
        try:
            stamp = pd.Timestamp(value)
        except (ValueError, TypeError):
            continue
        if pd.isna(stamp):
            continue
        zone = stamp.utcoffset()
        if not zones:
            zones.append(zone)
        elif zone != zones[0]:
            what = f"UTC offset {zone}" if zone is not None else "no time zone"
            other = f"UTC offset {zones[0]}" if zones[0] is not None else "no time zone"
            raise InputError(f"a date with {what} among dates with {other}: {value!r}", file=source, row=int(rows[i]),
                             field=field)  # fmt: skip


def seconds_since(stamps: pd.Series) -> tuple[np.ndarray, pd.Timestamp | None]:
    """Seconds of each timestamp after the earliest one, and that earliest timestamp."""
    origin = stamps.min()
    if pd.isna(origin):
        return np.full(len(stamps), np.nan), None
    return ((stamps - origin) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64), pd.Timestamp(origin)


def blank(values: pd.Series) -> np.ndarray:
    """True where a value is missing or an empty string."""
    missing: np.ndarray = values.isna().to_numpy()
    if values.dtype.kind in "fiubmM":
        return missing
    missing_or_empty: np.ndarray = missing | (values.astype(str).str.strip() == "").to_numpy()
    return missing_or_empty


def per_value(values: pd.Series, func: Callable[[object], object]) -> np.ndarray:
    """``func`` applied to each distinct value (``None`` for missing), spread back over the rows."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    results = np.empty(len(uniques) + 1, dtype=object)
    results[:] = [func(u) for u in uniques] + [func(None)]
    spread: np.ndarray = results[codes]
    return spread


def lower_str(values: pd.Series) -> np.ndarray:
    """Values as stripped lower-case strings ("" for missing)."""
    return per_value(values, lambda v: "" if v is None else str(v).strip().lower())


def map_states(values: pd.Series, mapping: Mapping[str, str]) -> pd.api.extensions.ExtensionArray:
    """Trace states (case-insensitive, first word) mapped to canonical final states; others "unknown".

    The result has the ``str`` dtype, built from the distinct states (no Python string per row).
    """

    def state(value: object) -> str:
        words = "" if value is None else str(value).lower().split()
        return mapping.get(words[0], "unknown") if words else "unknown"

    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return pd.array([state(u) for u in uniques] + [state(None)], dtype="str").take(codes)  # -1 (missing): last


def apply_skips(
    frame: pd.DataFrame, rows: np.ndarray, reasons: Iterable[tuple[str, np.ndarray]]
) -> tuple[pd.DataFrame, np.ndarray, dict[str, int]]:
    """Drop rows flagged by each (reason, mask) in turn; a row is counted under its first reason."""
    keep = np.ones(len(frame), dtype=bool)
    skipped: dict[str, int] = {}
    for reason, mask in reasons:
        hit = keep & np.asarray(mask, dtype=bool)
        count = int(hit.sum())
        if count:
            skipped[reason] = skipped.get(reason, 0) + count
        keep &= ~hit
    return frame.loc[keep].reset_index(drop=True), rows[keep], skipped


def finish(
    jobs: pd.DataFrame,
    *,
    source: str,
    rows: np.ndarray,
    origin: pd.Timestamp | None = None,
    skipped: Mapping[str, int] | None = None,
    meta: Mapping[str, object] | None = None,
    fields: Mapping[str, str] | None = None,
    skip: Sequence[str] = (),
) -> Workload:
    """Drop the jobs of the ``skip`` rules, shift times so the earliest submit is 0, validate via
    :func:`canonical_frame`, wrap up.

    ``jobs`` holds canonical columns (absolute times in seconds after ``origin``); ``fields`` maps
    canonical column names to the source fields an error should name instead. Skip rules (see
    :func:`skip_rules`) see times in seconds before the shift; their rows add to ``skipped``. A
    negative ``queue_s`` (a start before the submission) becomes unknown (NaN), counted in
    ``meta["start_before_submit"]``.
    """
    jobs = jobs.reset_index(drop=True).assign(source_row=rows)
    rules = skip_rules(skip)
    if rules:
        jobs, rows, dropped = apply_skips(jobs, rows, skip_masks(jobs, rules))
        skipped = dict(skipped or {})
        for reason, count in dropped.items():
            skipped[reason] = skipped.get(reason, 0) + count
    submit = pd.to_numeric(jobs["submit_s"], errors="coerce").to_numpy(dtype=np.float64)
    finite = submit[np.isfinite(submit)]
    shift = float(finite.min()) if finite.size else 0.0
    for col in _ABSOLUTE_TIME_COLUMNS:
        if col in jobs.columns:
            jobs[col] = pd.to_numeric(jobs[col], errors="coerce") - shift
    if origin is not None:
        origin = origin + pd.Timedelta(seconds=shift)
    meta = dict(meta or {})
    if "queue_s" in jobs.columns:  # a start recorded before the submission: the delay is unknown
        queue = pd.to_numeric(jobs["queue_s"], errors="coerce")
        early = (queue < 0).to_numpy()
        jobs["queue_s"] = queue.where(~early)
        if early.any():
            meta["start_before_submit"] = int(early.sum())
    try:
        table = canonical_frame(jobs, source=source)
    except InputError as err:
        names = dict(fields or {})
        field = err.field if err.field is None else names.get(err.field, err.field)
        raise InputError(err.reason, file=err.file, row=err.row, field=field) from None
    return Workload(
        jobs=table,
        source=source,
        origin=origin,
        skipped=dict(skipped or {}),
        meta=meta,
        fields=dict(fields or {}),
    )


def _fail_unparsable(
    values: pd.Series, failed: np.ndarray, *, source: str, rows: np.ndarray, field: str, what: str
) -> None:
    bad = np.flatnonzero(failed & ~blank(values))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"not {what}: {shown(values.iloc[i])}", file=source, row=int(rows[i]), field=field)


def brief_json(value: Any) -> str:
    """A JSON value as written (non-ASCII kept where it can be encoded), cut to 40 characters."""
    text = json.dumps(value, ensure_ascii=False)
    if not is_utf8(text):
        text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def is_utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (no lone surrogates from undecodable bytes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_json(text: str, *, source: str) -> object:
    """``text`` as JSON, or an :class:`InputError` naming ``source`` (also for nesting too deep)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON: {err}", file=source) from None
    except RecursionError:
        raise InputError("not valid JSON: nested too deeply", file=source) from None
