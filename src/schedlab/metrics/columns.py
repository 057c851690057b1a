"""Reading a run's tables column by column, whether they are pandas DataFrames (a jobs.parquet
read back) or plain columns (a run just simulated: NumPy arrays, text as Arrow arrays), and
per-group statistics over them with NumPy alone."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from schedlab import arrow
from schedlab.workload.schema import arrow_text

# A table: a DataFrame or a mapping of column name to values; either answers ``name in table``,
# ``table[name]`` and iterates over its column names.
Table = Any


def numbers(values: Any) -> np.ndarray:
    """A column as float64, missing values as NaN."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):  # a pandas Series
        out: np.ndarray = values.to_numpy(dtype=np.float64, na_value=np.nan)
        return out
    return np.asarray(values, dtype=np.float64)


def flags(values: Any) -> np.ndarray:
    """A column as booleans, missing values as False."""
    arr = np.asarray(values)
    if arr.dtype == bool:
        return arr
    return np.array([isinstance(v, (bool, np.bool_, int, float)) and v == v and bool(v) for v in arr.tolist()], dtype=bool)


def labels(values: Any) -> tuple[np.ndarray, list[str]]:
    """A text column as group codes into its distinct values, sorted (missing values are "")."""
    text = arrow_text(values)
    if not pa.types.is_large_string(text.type):
        text = arrow.as_text(text)
    if text.null_count:
        text = arrow.call("coalesce", text, arrow.repeat("", len(text)))
    encoded = arrow.call("dictionary_encode", text)
    names: list[str] = encoded.dictionary.to_pylist()
    order = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    codes: np.ndarray = rank[arrow.to_numpy(encoded.indices)] if names else np.zeros(0, dtype=np.int64)
    return codes, [names[i] for i in order]


class Groups:
    """Rows split by integer codes ``0..size-1``; statistics per group, in code order."""

    def __init__(self, codes: np.ndarray, size: int) -> None:
        self.order = np.argsort(codes, kind="stable")
        self.bounds = np.searchsorted(codes[self.order], np.arange(size + 1))
        self.size = size

    def parts(self, values: np.ndarray) -> list[np.ndarray]:
        ordered = values[self.order]
        return [ordered[self.bounds[g] : self.bounds[g + 1]] for g in range(self.size)]

    def counts(self) -> list[int]:
        return [int(count) for count in np.diff(self.bounds)]

    def sum(self, values: np.ndarray) -> list[float]:
        """Sum per group, exactly rounded (``math.fsum``), NaN skipped."""
        return [math.fsum(part[~np.isnan(part)].tolist()) for part in self.parts(values)]

    def total(self, values: np.ndarray) -> list[int]:
        """Sum per group of an integer or boolean column."""
        return [int(part.sum()) for part in self.parts(values)]

    def mean(self, values: np.ndarray) -> list[float | None]:
        """Mean per group of the non-NaN values (None for a group without any)."""
        out: list[float | None] = []
        for part in self.parts(values):
            kept = part[~np.isnan(part)]
            out.append(math.fsum(kept.tolist()) / kept.size if kept.size else None)
        return out

    def quantile(self, values: np.ndarray, q: float) -> list[float | None]:
        """Linear-interpolation quantile per group of the non-NaN values."""
        out: list[float | None] = []
        for part in self.parts(values):
            kept = part[~np.isnan(part)]
            out.append(float(np.quantile(kept, q)) if kept.size else None)
        return out
