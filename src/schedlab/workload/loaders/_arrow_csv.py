"""A plain CSV trace read with pyarrow alone, for a run that need not import pandas.

A loader may first try these helpers and fall back to its pandas reader whenever they return
None: a file they do not read exactly as the pandas reader would (a duplicated or missing
header name, unparsable bytes, a number column holding text, an integer id with blanks, dates)
or a job table that fails validation. The fallback then reads the file again and raises its
error, naming the file, row and field, so both readers give the same workload or the same error
(``tests/workload/test_arrow_csv.py`` compares them).

The file is parsed as ``pandas.read_csv(engine="pyarrow")`` parses it: pyarrow's CSV reader
with pandas' missing-value strings (:data:`NA_VALUES`), so the Arrow columns are the ones pandas
converts.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from schedlab import arrow
from schedlab.errors import InputError
from schedlab.workload.schema import COLUMNS, FLOAT_COLUMNS, STR_COLUMNS, Workload, canonical_columns, default_column

# pandas' default missing-value strings (pandas._libs.parsers.STR_NA_VALUES; a test compares them).
NA_VALUES = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A",
             "NA", "NULL", "NaN", "None", "n/a", "nan", "null")  # fmt: skip
_TIMES = ("submit_s", "deadline_s")  # absolute times, shifted so the first submission is 0


def read_plain(path: Path, *, required: Sequence[str], optional: Sequence[str] = ()) -> dict[str, Any] | None:
    """The ``required`` and present ``optional`` columns of a CSV file with a header, as Arrow
    arrays by stripped column name; None when the pandas reader must read it."""
    if path.stat().st_size == 0:
        return None
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            raw = next(csv.reader(fh), [])
    except UnicodeDecodeError:
        return None
    names = [c.strip() for c in raw]
    if len(set(names)) != len(names) or any(col not in names for col in required):
        return None
    known = set(required) | set(optional)
    wanted = [r for r, c in zip(raw, names) if c in known]
    options = pacsv.ConvertOptions(include_columns=wanted, null_values=list(NA_VALUES), strings_can_be_null=True)
    try:
        table = pacsv.read_csv(path, convert_options=options)
    except (pa.ArrowInvalid, UnicodeError):
        return None
    return {name.strip(): table.column(name).combine_chunks() for name in table.column_names}


def floats(values: Any) -> np.ndarray | None:
    """A column of numbers as float64, missing values as NaN; None unless it holds only numbers."""
    if pa.types.is_null(values.type):
        return np.full(len(values), np.nan)
    if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        return None
    out = arrow.to_numpy(values).astype(np.float64)
    if values.null_count:
        out[~arrow.to_numpy(arrow.call("is_valid", values))] = np.nan
    return out


def texts(values: Any) -> Any:
    """A text column as ``large_string``, missing values still null; None where pandas would
    write the values otherwise (integers with blanks become floats there, floats print as Python
    does, dates as timestamps)."""
    if pa.types.is_null(values.type) or pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return arrow.as_text(values)
    if pa.types.is_integer(values.type) and not values.null_count:
        return arrow.as_text(values)
    return None


def keep(values: Any, mask: np.ndarray) -> Any:
    """The entries of an Arrow array where ``mask`` is true."""
    return values if mask.all() else arrow.take(values, np.flatnonzero(mask))


def first_numbers(values: Any, separator: str) -> np.ndarray | None:
    """The number before the first ``separator`` of each entry (``"60-120"`` gives 60), NaN where
    blank or missing; None unless every such part is a plain decimal number."""
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return floats(values)
    out = np.full(len(values), np.nan)
    for i, entry in enumerate(values.to_pylist()):
        part = "" if entry is None else entry.split(separator, 1)[0].strip()
        if part:
            if not part.replace(".", "", 1).isdigit() or not part.isascii():
                return None
            out[i] = float(part)
    return out


def finish_plain(
    columns: Mapping[str, Any],
    *,
    source: str,
    rows: np.ndarray,
    skipped: Mapping[str, int],
    fields: Mapping[str, str],
) -> Workload | None:
    """The workload of canonical ``columns`` (numbers as float64 NumPy, text as Arrow; absolute
    times in seconds), as the pandas loaders' ``finish`` builds it without skip rules: times
    shifted so the first submission is 0, defaults filled, rows in submit order. None if a row
    fails validation (the pandas reader then names the source field)."""
    n = len(rows)
    submit = columns["submit_s"]
    finite = submit[np.isfinite(submit)]
    shift = float(finite.min()) if finite.size else 0.0
    table: dict[str, Any] = {"source_row": rows.astype(np.int64)}
    for col in COLUMNS[:-1]:
        value = columns.get(col)
        if value is None:
            table[col] = default_column(col, n)
        elif col in FLOAT_COLUMNS:
            table[col] = value - shift if col in _TIMES else value
        else:
            table[col] = arrow.call("coalesce", value, default_column(col, n))
    order = np.argsort(table["submit_s"], kind="stable")
    if not np.array_equal(order, np.arange(n)):
        table = {col: arrow.take(v, order) if col in STR_COLUMNS else v[order] for col, v in table.items()}
    try:
        checked = canonical_columns(table, source=source)
    except InputError:
        return None
    return Workload(columns=checked, source=source, skipped=dict(skipped), meta={}, fields=dict(fields))
