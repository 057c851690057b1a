"""Fuzzing the trace loaders: mutated bytes and junk cells in small valid files of every format.

Whatever the mutation, ``load_trace`` either raises a :class:`SchedlabError` with a one-line
message or returns a workload that passes the schema check (and that ``traces inspect`` can
describe). Examples are derandomised, so the suite is deterministic.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.errors import InputError, SchedlabError
from schedlab.workload.inspect import describe
from schedlab.workload.loaders import load_trace
from schedlab.workload.schema import COLUMNS, STR_COLUMNS, validate

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # junk such as 1e308
FUZZ = settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass(frozen=True)
class Base:
    """A valid trace: ``files`` written into a folder, ``target`` the one mutated, ``path`` the one loaded."""

    fmt: str
    files: dict[str, str]
    target: str
    path: str = ""
    options: tuple[tuple[str, object], ...] = ()


HELIOS = """job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
10,uA,vc1,1,4,1,COMPLETED,2020-04-01 00:10:00,2020-04-01 00:10:05,2020-04-01 00:20:05,600,5
11,uB,vc2,0,8,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 00:01:00,60,0
13,uC,vc2,16,64,2,FAILED,2020-04-01 00:05:00,2020-04-01 00:06:00,2020-04-01 01:06:00,3600,60
15,uD,vc3,4,8,1,TIMEOUT,2020-04-01 00:05:00,2020-04-01 00:05:00,2020-04-01 00:05:10,10,0
"""
CHRONUS = """job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,\
expect_value_list,best_effort,job_type
0,vc_a,1,5601,5530,mobilenet_v2,96,5,159-189-229-289,10-8-5-2,0,soft
1,vc_b,0,5500,760,alexnet,106,6,235,10,0,strict
2,vc_b,4,5400,760,alexnet,106,6,918,10,1,best
"""
POLLUX = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:01:55,66.0,1,66.0,11cb48
2017-10-09 06:13:03,2951.0,8,23608.0,6214e9
2017-10-09 06:13:03,20.0,2,40.0,6214e9
"""
GFS = """job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type
239255,13,A10,20,1,1,0,2764799,HP
437260,57,A100-SXM4-80GB,15,1,16,9589663,41060,Spot
500000,57,,4,0,1,10,100,Spot
"""
OPENB = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,12000,16384,1,1000,,LS,Running,100,12537496,100
p1,6000,12288,1,460,T4,BE,Succeeded,200,800,300
p3,6000,12288,8,1000,V100M16|V100M32,LS,Failed,150,900,160
p4,6000,12288,2,1000,G2,LS,Pending,150,900,
"""
ELASTICFLOW = """job_id,submission_time,duration,num_gpu
965d744f,1932025,2429,64
fb10987f,2000581,1532,1
u3,1932025,10,0
"""
GENERIC = """id,arrive,gpus,minutes,who
a,10,2,1.5,x
b,4,1,3,y
c,7,0.5,2,z
"""
PAI_JOBS = """j1,i1,u1,Terminated,1000.0,1600.0
j2,i2,u1,Failed,900.0,1000.0
j3,i3,u2,Running,950.0,
j5,i5,u3,Terminated,990.0,1100.0
"""
PAI_TASKS = """j1,ps,1.0,Terminated,1010.0,1600.0,600.0,29.3,,
j1,worker,2.0,Terminated,1100.0,1600.0,400.0,29.3,50.0,T4
j2,tensorflow,1.0,Failed,950.0,1000.0,600.0,29.3,800.0,V100
j5,worker,3.0,Terminated,1000.0,1100.0,600.0,29.3,50.0,T4
"""


def _attempt(start: str | None, end: str | None, *gpus_per_node: int) -> dict[str, object]:
    detail = [{"ip": f"m{i}", "gpus": [f"gpu{g}" for g in range(n)]} for i, n in enumerate(gpus_per_node)]
    return {"start_time": start, "end_time": end, "detail": detail}


PHILLY_JOBS = [
    {"status": "Pass", "vc": "vcA", "jobid": "a", "submitted_time": "2017-10-07 01:11:39", "user": "u1",
     "attempts": [_attempt("2017-10-07 01:12:09", "2017-10-07 01:13:23", 4),
                  _attempt("2017-10-07 01:13:30", "2017-10-07 02:13:23", 8, 8)]},
    {"status": "Killed", "vc": "vcB", "jobid": "b", "submitted_time": "2017-10-07 01:00:00", "user": "u2",
     "attempts": []},
    {"status": "Failed", "vc": "vcA", "jobid": "c", "submitted_time": "2017-10-07 01:10:00", "user": "u1",
     "attempts": [_attempt("2017-10-07 01:10:00", "2017-10-07 01:10:30", 2)]},
]  # fmt: skip
PHILLY = json.dumps(PHILLY_JOBS, indent=1)

PAI = {"pai_job_table.csv": PAI_JOBS, "pai_task_table.csv": PAI_TASKS}
GENERIC_COLUMNS = {"job_id": "id", "submit_s": "arrive", "num_gpus": "gpus", "duration_s": "minutes", "user": "who"}
BASES = {
    "helios": Base("helios", {"cluster_log.csv": HELIOS}, "cluster_log.csv"),
    "philly-json": Base("philly", {"cluster_job_log": PHILLY}, "cluster_job_log"),
    "philly-csv": Base("philly", {"trace.csv": CHRONUS}, "trace.csv"),
    "tiresias": Base("tiresias", {"trace.csv": CHRONUS}, "trace.csv"),
    "pollux-philly": Base("pollux-philly", {"philly.csv": POLLUX}, "philly.csv"),
    "gfs": Base("gfs", {"job_info_df.csv": GFS}, "job_info_df.csv"),
    "openb": Base("openb", {"pods.csv": OPENB}, "pods.csv"),
    "elasticflow": Base("elasticflow", {"cluster01.csv": ELASTICFLOW}, "cluster01.csv"),
    "csv": Base("csv", {"jobs.csv": GENERIC}, "jobs.csv", options=(("columns", GENERIC_COLUMNS), ("time_unit", "min"))),
    "pai-jobs": Base("pai", PAI, "pai_job_table.csv", "."),
    "pai-tasks": Base("pai", PAI, "pai_task_table.csv", "."),
}
CSV_BASES = [name for name in BASES if name != "philly-json"]


def check_load(base: Base, folder: Path, target: bytes) -> None:
    """Load ``base`` with its target file replaced by ``target``: a clean error or a valid workload."""
    for name, text in base.files.items():
        (folder / name).write_bytes(target if name == base.target else text.encode())
    path = folder / (base.path or base.target)
    try:
        workload = load_trace(path, base.fmt, **dict(base.options))
    except SchedlabError as err:
        message = str(err)
        assert message and "\n" not in message
        message.encode("utf-8")  # printable
        if isinstance(err, InputError):
            assert err.file and Path(err.file).name in {*base.files, path.name}
        return
    jobs = workload.jobs
    assert list(jobs.columns) == list(COLUMNS)
    validate(jobs, source="fuzz")
    assert np.all(np.diff(jobs["submit_s"].to_numpy()) >= 0)
    for col in STR_COLUMNS:
        for value in jobs[col]:
            assert isinstance(value, str)
            value.encode("utf-8")
    describe(workload)


# --- byte-level mutations ---------------------------------------------------------------------

MUTATION = st.tuples(st.sampled_from(["flip", "insert", "delete"]), st.integers(0, 10**6), st.integers(0, 255))


def mutate_bytes(data: bytes, mutations: list[tuple[str, int, int]]) -> bytes:
    out = bytearray(data)
    for op, where, byte in mutations:
        i = where % (len(out) + 1)
        if op == "insert":
            out.insert(i, byte)
        elif out and i < len(out):
            if op == "flip":
                out[i] ^= byte or 0x80
            else:
                del out[i]
    return bytes(out)


@pytest.mark.parametrize("name", list(BASES))
@FUZZ
@given(mutations=st.lists(MUTATION, min_size=1, max_size=4))
def test_byte_mutations(tmp_path: Path, name: str, mutations: list[tuple[str, int, int]]) -> None:
    base = BASES[name]
    check_load(base, tmp_path, mutate_bytes(base.files[base.target].encode(), mutations))


# --- cell-level mutations ---------------------------------------------------------------------

JUNK = ["", " ", "-600", "0", "-0", "1e308", "1e400", "99999999999999999999", "0.5", "1.5", "abc", "NaN",
        "nan", "inf", "-inf", "日本語", "é", "\x00", '"', "a,b", "2017-13-45 99:99:99", "2020-04-01 00:00:00",
        "1970-01-01", "True", "|", "-", "3-2-1"]  # fmt: skip


def replace_cells(text: str, cells: list[tuple[int, int, str]]) -> str:
    """``text`` (a CSV without quoting) with the cell at each (row, column) replaced by junk."""
    rows = [line.split(",") for line in text.splitlines()]
    for r, c, junk in cells:
        row = rows[r % len(rows)]
        row[c % len(row)] = junk
    return "\n".join(",".join(row) for row in rows) + "\n"


CELL = st.tuples(st.integers(0, 50), st.integers(0, 50), st.sampled_from(JUNK))


@pytest.mark.parametrize("name", CSV_BASES)
@FUZZ
@given(cells=st.lists(CELL, min_size=1, max_size=3))
def test_junk_cells(tmp_path: Path, name: str, cells: list[tuple[int, int, str]]) -> None:
    base = BASES[name]
    check_load(base, tmp_path, replace_cells(base.files[base.target], cells).encode())


JSON_JUNK = st.sampled_from(
    [None, "", -600, 0, 1.5, 1e308, "abc", "日本語", [], {}, [1, 2], {"gpus": 3}, True, "2017-13-45 99:99:99",
     "2017-10-07 01:00:00", [{"gpus": "gpu0"}], [{"ip": "m", "gpus": None}], "\udcff"]
)  # fmt: skip
JSON_KEYS = ["status", "vc", "jobid", "submitted_time", "user", "attempts", "start_time", "end_time", "detail", "gpus",
             "ip"]  # fmt: skip


def replace_json(jobs: object, key: str, index: int, junk: object) -> object:
    """A copy of ``jobs`` with the ``index``-th occurrence (cycling) of ``key`` set to ``junk``."""
    found: list[dict] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if key in node:
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    copy = json.loads(json.dumps(jobs))
    walk(copy)
    if found:
        found[index % len(found)][key] = junk
    return copy


@FUZZ
@given(
    edits=st.lists(st.tuples(st.sampled_from(JSON_KEYS), st.integers(0, 20), JSON_JUNK), min_size=1, max_size=3),
    wrap=st.sampled_from(["list", "job", "object"]),
)
def test_junk_philly_json(tmp_path: Path, edits: list[tuple[str, int, object]], wrap: str) -> None:
    jobs: object = PHILLY_JOBS
    for key, index, junk in edits:
        jobs = replace_json(jobs, key, index, junk)
    if wrap == "job":
        jobs = [jobs[0], "not a job", 3]
    elif wrap == "object":
        jobs = {"jobs": jobs}
    text = json.dumps(jobs, ensure_ascii=False).encode("utf-8", "surrogateescape")
    check_load(BASES["philly-json"], tmp_path, text)
