"""Reading the Parquet tables schedlab writes, with one clear error for a file that is
truncated, not Parquet, or lacks the columns asked for."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from schedlab.errors import InputError


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
    try:
        return pd.read_parquet(path, columns=list(columns) if columns is not None else None)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(f"not a readable Parquet table ({' '.join(str(err).split())})", file=str(path)) from None
