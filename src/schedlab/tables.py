"""The Parquet tables schedlab writes: written from columns (no pandas needed), read back as
DataFrames with one clear error for a file that is truncated, not Parquet, or lacks the
columns asked for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from schedlab import arrow
from schedlab.errors import InputError

if TYPE_CHECKING:
    import pandas as pd


def write_parquet(path: Path, columns: Mapping[str, Any]) -> Path:
    """Write columns (NumPy arrays, text as Arrow arrays), in their order, as a Parquet table."""
    arrays = [arrow.from_numpy(v) if isinstance(v, np.ndarray) else v for v in columns.values()]
    pq.write_table(pa.Table.from_arrays(arrays, names=list(columns)), path)
    return path


def read_parquet(path: Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The table at ``path`` (only ``columns``, if given); an :class:`InputError` naming the
    file (and the first missing column) instead of the library's exception."""
    try:
        present = set(pq.read_schema(path).names)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(f"not a readable Parquet table ({' '.join(str(err).split())})", file=str(path)) from None
    missing = [name for name in columns or () if name not in present]
    if missing:
        raise InputError(f"column(s) missing: {', '.join(missing)}", file=str(path), field=missing[0])
    import pandas as pd

    try:
        return pd.read_parquet(path, columns=list(columns) if columns is not None else None)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(f"not a readable Parquet table ({' '.join(str(err).split())})", file=str(path)) from None


def same_values(path: Path, other: Path) -> bool:
    """Whether two Parquet tables hold the same columns, dtypes and values (missing values
    matching), whatever their writers' metadata."""
    return bool(read_parquet(path).equals(read_parquet(other)))
