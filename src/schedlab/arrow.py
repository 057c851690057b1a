"""Arrow arrays to and from NumPy and Python lists through their buffers, and the few Arrow
compute functions schedlab calls.

pyarrow imports pandas, when it is installed, the first time ``pa.array``, ``pa.scalar``,
``Array.to_numpy`` or a compute function with a Python scalar argument is called (it checks
whether the value is a pandas object). That import costs about 0.3 s, more than a small run's
whole simulation; these helpers build and read arrays from their buffers instead, so a run that
never needs pandas never loads it.

The compute functions are called by name through ``pyarrow._compute.call_function``, the function
``pyarrow.compute.call_function`` is. Importing ``pyarrow.compute`` itself (as ``Array.take`` or
``Array.cast`` do) writes a Python wrapper for each of its hundreds of functions, about 50 ms of
CPU: a tenth of a small run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow._compute as _compute

_NUMERIC = {np.dtype(np.float64): pa.float64(), np.dtype(np.int64): pa.int64(), np.dtype(np.int32): pa.int32()}
_FIXED = {str(getattr(pa, name)()): np.dtype(name)
          for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")}


def from_numpy(values: np.ndarray) -> Any:
    """A 1-D float64, int64, int32 or bool NumPy array as an Arrow array (no nulls)."""
    values = np.ascontiguousarray(values)
    if values.dtype == bool:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), values.size, [None, pa.py_buffer(bits)])
    if values.dtype not in _NUMERIC:
        raise TypeError(f"no Arrow column for NumPy dtype {values.dtype}")
    return pa.Array.from_buffers(_NUMERIC[values.dtype], values.size, [None, pa.py_buffer(values)])


def text(strings: Sequence[str]) -> Any:
    """Python strings as an Arrow ``large_string`` array."""
    joined = "".join(strings)
    data = joined.encode("utf-8")
    if len(data) == len(joined):  # ASCII: a character is a byte
        lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    else:
        lengths = np.fromiter((len(s.encode("utf-8")) for s in strings), dtype=np.int64, count=len(strings))
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pa.Array.from_buffers(pa.large_string(), len(strings), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def to_numpy(values: Any) -> np.ndarray:
    """An Arrow boolean or fixed-width numeric array as NumPy; null entries read as False or 0."""
    n, offset = len(values), values.offset
    validity, data = values.buffers()[:2]
    if pa.types.is_boolean(values.type):
        out: np.ndarray = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little")[offset : offset + n].astype(bool)
    else:
        dtype = _FIXED[str(values.type)]
        out = np.frombuffer(data, dtype=dtype, count=offset + n)[offset:].copy()
    if validity is not None and values.null_count:
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[offset : offset + n].astype(bool)
        out[~valid] = 0
    return out


def call(name: str, *args: Any, options: Any = None) -> Any:
    """The Arrow compute function ``name`` on ``args`` (what ``pyarrow.compute.<name>`` runs)."""
    return _compute.call_function(name, list(args), options)


def take(values: Any, indices: np.ndarray) -> Any:
    """``values[indices]`` for an Arrow array and integer NumPy indices."""
    return call("take", values, from_numpy(indices.astype(np.int64)))


def repeat(value: str, n: int) -> Any:
    """``value`` ``n`` times, as an Arrow ``large_string`` array."""
    return take(text([value]), np.zeros(n, dtype=np.int64))


def as_text(values: Any) -> Any:
    """An Arrow array cast to ``large_string``."""
    return call("cast", values, options=_compute.CastOptions.safe(pa.large_string()))


def is_in(values: Any, value_set: Any) -> np.ndarray:
    """For each entry of ``values``, whether ``value_set`` (an Arrow array) holds it."""
    return to_numpy(call("is_in", values, options=_compute.SetLookupOptions(value_set)))


def distinct(values: Any) -> int:
    """How many distinct values an Arrow array holds, null counted as one."""
    count: int = call("count_distinct", values, options=_compute.CountOptions(mode="all")).as_py()
    return count


def byte_lengths(values: Any) -> np.ndarray:
    """The length in bytes of each entry of a text array."""
    return to_numpy(call("binary_length", values))
