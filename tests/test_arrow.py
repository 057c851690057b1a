"""Arrow arrays built and read through their buffers: the same values as pyarrow's own
conversions, and no pandas import on the way (the reason the helpers exist)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from schedlab import arrow


@pytest.mark.parametrize("values", [np.array([1.5, -2.0, np.inf, 0.25]), np.arange(-3, 4), np.array([True, False, True] * 5),
                                    np.arange(10, dtype=np.int32)])  # fmt: skip
def test_numpy_round_trip_matches_pyarrow(values: np.ndarray) -> None:
    built = arrow.from_numpy(values)
    assert built.equals(pa.array(values))
    np.testing.assert_array_equal(arrow.to_numpy(built), values)
    np.testing.assert_array_equal(arrow.to_numpy(built.slice(3)), values[3:])  # an offset into the buffers


def test_text_matches_pyarrow_for_ascii_and_other_characters() -> None:
    strings = ["a", "", "t0/u01", "żółw", "日本", "a"]
    built = arrow.text(strings)
    assert built.type == pa.large_string()
    assert built.equals(pa.array(strings, pa.large_string()))
    assert arrow.text([]).to_pylist() == []


def test_null_entries_read_as_false_and_zero() -> None:
    np.testing.assert_array_equal(arrow.to_numpy(pa.array([True, None, True])), [True, False, True])
    np.testing.assert_array_equal(arrow.to_numpy(pa.array([4, None, 6])), [4, 0, 6])


def test_the_helpers_do_not_import_pandas_nor_pyarrow_compute() -> None:
    code = """
import sys
import numpy as np
from schedlab import arrow
text = arrow.text(["x", "y", "x"])
codes = arrow.to_numpy(arrow.call("dictionary_encode", text).indices)
assert codes.tolist() == [0, 1, 0] and arrow.is_in(text, arrow.text(["x"])).tolist() == [True, False, True]
assert arrow.take(text, np.array([2, 1])).to_pylist() == ["x", "y"] and arrow.distinct(text) == 2
assert arrow.as_text(arrow.from_numpy(np.arange(2))).to_pylist() == ["0", "1"]
assert arrow.to_numpy(arrow.from_numpy(np.arange(3.0))).tolist() == [0.0, 1.0, 2.0]
print("pandas" in sys.modules, "pyarrow.compute" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_compute_helpers_match_pyarrow_compute() -> None:
    import pyarrow.compute as pc

    text = pa.array(["b", "", None, "żółw", "b"], pa.large_string())
    assert arrow.call("dictionary_encode", text).equals(pc.dictionary_encode(text))
    assert arrow.distinct(text) == pc.count_distinct(text, mode="all").as_py() == 4
    np.testing.assert_array_equal(arrow.byte_lengths(text), [1, 0, 0, 7, 1])
    np.testing.assert_array_equal(arrow.is_in(text, arrow.text(["b", "żółw"])), [True, False, False, True, True])
    assert arrow.take(text, np.array([3, 0])).equals(pc.take(text, pa.array([3, 0])))
    numbers = pa.array([7, -1, 0])
    assert arrow.as_text(numbers).equals(pc.cast(numbers, pa.large_string()))


def test_pyarrow_itself_would_import_pandas() -> None:
    """The premise of the module: if pyarrow stops importing pandas on ``pa.array``, these
    helpers can go."""
    code = "import sys, pyarrow as pa; pa.array([1]); print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
