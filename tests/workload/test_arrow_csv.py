"""The Tiresias loader's pyarrow-only reader gives the pandas reader's workload, or leaves the
file to it (which then raises its error naming file, row and field)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from schedlab.errors import InputError
from schedlab.workload.loaders import _arrow_csv, load_trace, tiresias

REPO = Path(__file__).resolve().parents[2]
CHRONUS = REPO.parent / "shared" / "data" / "chronus" / "trace_job_Philly_MIX2.csv"
HEADER = "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,expect_value_list,best_effort,job_type\n"


def _both(path: Path, scale: float = 60.0):
    plain = tiresias._load_plain(path, scale)
    full = tiresias._load(path, scale, ())
    return plain, full


def _same(plain, full) -> None:
    assert plain is not None
    pd.testing.assert_frame_equal(plain.jobs, full.jobs)
    assert (plain.source, plain.origin, plain.skipped, plain.meta, plain.fields) == (
        full.source, full.origin, full.skipped, full.meta, full.fields)  # fmt: skip


def test_the_missing_value_strings_are_pandas_own() -> None:
    from pandas._libs.parsers import STR_NA_VALUES

    assert set(_arrow_csv.NA_VALUES) == set(STR_NA_VALUES)


@pytest.mark.parametrize(
    "body",
    [
        # Chronus rows: soft deadlines, best-effort jobs, a CPU job, submissions out of order
        "3,vc_a,1,61,8388,inception_v3,83,18,119,10,0,strict\n"
        "6,vc_b,2,30,6006,mobilenet_v2,36,5,46-76-96-126,10-8-5-2,0,soft\n"
        "7,vc_a,0,40,1,resnet50,10,5,20,1,0,strict\n"
        "9,vc_c,4,30,100,vgg16,500,5,,,1,best\n",
        # missing values: a user written NA, a blank model, a blank deadline
        "1,NA,1,0,1,,10,1,,1,0,x\n2,vc_a,8,5,1,bert,20,1,30,1,1,x\n",
        # text ids
        "job-a,vc_a,1,0,1,m,10,1,15,1,0,x\njob-b,vc_a,1,0,1,m,10,1,15,1,0,x\n",
    ],
)
def test_plain_files_read_as_pandas_reads_them(tmp_path: Path, body: str) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(HEADER + body)
    _same(*_both(path))
    _same(*_both(path, 1.0))


def test_the_tiresias_columns_alone(tmp_path: Path) -> None:
    path = tmp_path / "tiresias.csv"
    path.write_text("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
                    "1,2,100,10,resnet,3600,1\n2,1,50,10,vgg,60,1\n")  # fmt: skip
    _same(*_both(path, 1.0))


@pytest.mark.skipif(not CHRONUS.exists(), reason="needs the Chronus trace in ../shared/data")
def test_the_chronus_trace_reads_as_pandas_reads_it() -> None:
    plain, full = _both(CHRONUS)
    _same(plain, full)
    assert len(full.jobs) > 30_000 and full.skipped == {"cpu_job": 194}


@pytest.mark.parametrize(
    ("body", "row", "field"),
    [
        ("1,vc_a,two,0,1,m,10,1,15,1,0,x\n", 1, "num_gpu"),  # text in a number column
        ("1,vc_a,1,0,1,m,10,1,15,1,0,x\n2,vc_a,1,0,1,m,-10,1,15,1,0,x\n", 2, "duration"),  # fails validation
        ("1,vc_a,1,0,1,m,10,1,1e3-5,1,0,x\n", None, None),  # a deadline pandas parses, the plain reader does not
        (",vc_a,1,0,1,m,10,1,15,1,0,x\n2,vc_a,1,0,1,m,10,1,15,1,0,x\n", 1, "job_id"),  # an integer id left blank
    ],
)
def test_other_files_are_left_to_pandas(tmp_path: Path, body: str, row: int | None, field: str | None) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(HEADER + body)
    assert tiresias._load_plain(path, 60.0) is None
    if row is None:
        assert load_trace(path, "tiresias", time_unit="min").jobs.equals(tiresias._load(path, 60.0, ()).jobs)
        return
    with pytest.raises(InputError) as err:
        load_trace(path, "tiresias", time_unit="min")
    assert (err.value.file, err.value.row, err.value.field) == (str(path), row, field)


def test_a_duplicated_header_is_left_to_pandas(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("job_id,num_gpu,submit_time,duration,num_gpu\n1,1,0,10,1\n")
    assert tiresias._load_plain(path, 1.0) is None
    with pytest.raises(InputError, match="twice"):
        load_trace(path, "tiresias")


def test_a_tiresias_trace_run_never_imports_pandas(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(HEADER + "".join(f"{i},vc_{i % 3},{1 + i % 4},{i * 7},1,m,{60 + i},1,{90 + i},1,0,x\n" for i in range(50)))
    code = f"""
import sys
from schedlab.cli import app
app(["simulate", "--trace", {str(path)!r}, "--format", "tiresias", "--time-unit", "min", "--cluster", "uniform:4x8",
     "--policy", "fifo", "--no-progress", "--out", {str(tmp_path / "run")!r}], standalone_mode=False)
print("pandas" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
    assert len(pd.read_parquet(tmp_path / "run" / "jobs.parquet")) == 50
