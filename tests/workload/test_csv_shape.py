"""CSV files whose shape is wrong are errors naming the row and field, not guesses: a column
named twice, a row with fewer fields than the header, dates in different time zones."""

from __future__ import annotations

import pytest

from schedlab.errors import InputError
from schedlab.workload.loaders import load_trace

COLUMNS = {"job_id": "id", "submit_s": "submitted", "duration_s": "runtime", "num_gpus": "gpus"}


def load(tmp_path, text: str):
    path = tmp_path / "jobs.csv"
    path.write_text(text)
    return path, lambda: load_trace(path, "csv", columns=COLUMNS)


def test_a_column_named_twice_is_an_error_naming_it(tmp_path):
    path, run = load(tmp_path, "id,submitted,runtime,gpus,gpus\na,0,600,1,2\n")
    with pytest.raises(InputError, match=r"names this column twice \(columns 4 and 5\)") as err:
        run()
    assert (err.value.file, err.value.field) == (str(path), "gpus")


@pytest.mark.parametrize("row", ["b,5,60", "b,5,60,2,u,extra"])
def test_a_row_with_fewer_or_more_fields_than_the_header_is_an_error(tmp_path, row):
    # the short row lacks only the optional user: it used to load with an empty user
    path, run = load(tmp_path, f"id,submitted,runtime,gpus,user\na,0,600,1,u\n\n{row}\n")
    with pytest.raises(InputError, match=r"line 4 has \d fields where 5 columns are expected") as err:
        run()
    assert (err.value.file, err.value.row) == (str(path), 2)


def test_dates_in_different_time_zones_name_the_first_odd_row(tmp_path):
    path, run = load(tmp_path, "id,submitted,runtime,gpus\na,2020-01-01 00:00:00,600,1\nb,2020-01-01 01:00:00,600,1\n"
                               "c,2020-01-01 02:00:00+01:00,600,1\n")  # fmt: skip
    with pytest.raises(InputError, match="UTC offset 1:00:00 among dates with no time zone") as err:
        run()
    assert (err.value.file, err.value.row, err.value.field) == (str(path), 3, "submitted")
