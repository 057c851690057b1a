"""Trace loaders on small files written to each format's documented schema."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.errors import ConfigError, InputError
from schedlab.workload.loaders import LOADERS, load_trace
from schedlab.workload.schema import COLUMNS


def write(path: Path, text: str) -> Path:
    path.write_text(text.lstrip("\n"))
    return path


def expect_error(path: Path, fmt: str, *, row: int | None, field: str, **options: object) -> InputError:
    with pytest.raises(InputError) as info:
        load_trace(path, fmt, **options)
    err = info.value
    assert (err.file, err.row, err.field) == (str(path), row, field), str(err)
    assert str(path) in str(err) and field in str(err)
    return err


# --- registry ---------------------------------------------------------------------------------


def test_registry_lists_every_format() -> None:
    assert set(LOADERS) == {"helios", "philly", "tiresias", "pollux-philly", "pollux-workload", "gfs", "pai", "openb",
                            "elasticflow", "sacct", "csv"}  # fmt: skip
    for name, info in LOADERS.items():
        assert info.name == name and info.description and callable(info.function)
    assert LOADERS["csv"].options == ("columns", "time_unit", "time_format", "skip")


def test_unknown_format_lists_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="known formats: helios, philly"):
        load_trace(tmp_path / "x.csv", "nope")


def test_unknown_option_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="task_table"):
        load_trace(tmp_path / "x.csv", "helios", task_table="t.csv")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_trace(tmp_path / "absent.csv", "elasticflow")


# --- helios -----------------------------------------------------------------------------------

HELIOS_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"


def test_helios(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cluster_log.csv",
        HELIOS_HEADER
        + "10,uA,vc1,1,4,1,COMPLETED,2020-04-01 00:10:00,2020-04-01 00:10:05,2020-04-01 00:20:05,600,5\n"
        + "11,uB,vc2,0,8,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 00:01:00,60,0\n"
        + "12,uA,vc1,8,32,1,CANCELLED,2020-04-01 00:05:00,,,0,0\n"
        + "13,uC,vc2,16,64,2,FAILED,2020-04-01 00:05:00,2020-04-01 00:06:00,2020-04-01 01:06:00,3600,60\n"
        + "14,uC,vc2,2,8,1,NODE_FAIL,2020-04-01 00:07:00,2020-04-01 00:07:00,2020-04-01 00:07:00,0,0\n"
        + "15,uD,vc3,4,8,1,TIMEOUT,2020-04-01 00:05:00,2020-04-01 00:05:00,2020-04-01 00:05:10,10,0\n",
    )
    w = load_trace(path, "helios")
    assert w.skipped == {"cpu_job": 1, "not_started": 1, "zero_duration": 1}
    assert w.origin == pd.Timestamp("2020-04-01 00:05:00")
    jobs = w.jobs
    assert list(jobs.columns) == list(COLUMNS)
    assert jobs["job_id"].tolist() == ["13", "15", "10"]  # sorted by submit, ties in file order
    assert jobs["submit_s"].tolist() == [0.0, 0.0, 300.0]
    assert jobs["tenant"].tolist() == ["vc2", "vc3", "vc1"]
    assert jobs["final_state"].tolist() == ["failed", "failed", "completed"]
    assert jobs["duration_s"].tolist() == [3600.0, 10.0, 600.0]
    assert jobs["num_cpus"].tolist() == [64.0, 8.0, 4.0]
    assert jobs["gpus_per_worker"].isna().all()


def test_helios_errors_name_file_row_field(tmp_path: Path) -> None:
    ok = "1,u,vc,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 00:01:00,60,0\n"
    cpu = "2,u,vc,0,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 00:01:00,60,0\n"
    bad_duration = "3,u,vc,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 00:01:00,-5,0\n"
    path = write(tmp_path / "neg.csv", HELIOS_HEADER + ok + cpu + bad_duration)
    expect_error(path, "helios", row=3, field="duration")
    nan_duration = "3,u,vc,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,,,0\n"
    path = write(tmp_path / "nan.csv", HELIOS_HEADER + ok + cpu + nan_duration)
    expect_error(path, "helios", row=3, field="duration")
    bad_time = "3,u,vc,1,1,1,COMPLETED,April 1st,2020-04-01 00:00:00,2020-04-01 00:01:00,60,0\n"
    path = write(tmp_path / "time.csv", HELIOS_HEADER + ok + cpu + bad_time)
    expect_error(path, "helios", row=3, field="submit_time")
    path = write(tmp_path / "dup.csv", HELIOS_HEADER + ok + cpu + ok)
    expect_error(path, "helios", row=3, field="job_id")
    path = write(tmp_path / "missing.csv", HELIOS_HEADER.replace(",duration", "") + "1,u,vc,1,1,1,X,a,b,c,0\n")
    expect_error(path, "helios", row=None, field="duration")


# --- philly JSON ------------------------------------------------------------------------------


def attempt(start: str | None, end: str | None, *gpus_per_node: int) -> dict[str, object]:
    detail = [{"ip": f"m{i}", "gpus": [f"gpu{g}" for g in range(n)]} for i, n in enumerate(gpus_per_node)]
    return {"start_time": start, "end_time": end, "detail": detail}


def philly_job(jobid: str, submitted: str, attempts: list[dict[str, object]], status: str = "Pass") -> dict[str, object]:
    return {"status": status, "vc": "vcA", "jobid": jobid, "attempts": attempts, "submitted_time": submitted, "user": "u1"}


def test_philly_json(tmp_path: Path) -> None:
    jobs = [
        philly_job(
            "a",
            "2017-10-07 01:11:39",
            [attempt("2017-10-07 01:12:09", "2017-10-07 01:13:23", 4), attempt("2017-10-07 01:13:30", "2017-10-07 02:13:23", 8, 8)],
        ),
        philly_job("b", "2017-10-07 01:00:00", [], status="Killed"),
        philly_job("c", "2017-10-07 01:00:00", [attempt("2017-10-07 01:00:10", "2017-10-07 01:00:20")]),
        philly_job("d", "2017-10-07 01:00:00", [attempt("2017-10-07 01:00:10", None, 1)]),
        philly_job("e", "2017-10-07 01:00:00", [attempt(None, "2017-10-07 01:00:20", 1)]),
        philly_job("f", "2017-10-07 01:10:00", [attempt("2017-10-07 01:10:00", "2017-10-07 01:10:30", 2)], status="Killed"),
        philly_job("g", "2017-10-07 01:10:00", [attempt("2017-10-07 01:10:00", "2017-10-07 01:10:00", 2)], status="Failed"),
    ]
    path = tmp_path / "cluster_job_log"
    path.write_text(json.dumps(jobs))
    w = load_trace(path, "philly")
    assert w.skipped == {"no_attempts": 1, "cpu_job": 1, "still_running": 1, "no_start_time": 1, "zero_duration": 1}
    assert w.origin == pd.Timestamp("2017-10-07 01:10:00")
    assert w.jobs["job_id"].tolist() == ["f", "a"]
    assert w.jobs["num_gpus"].tolist() == [2.0, 16.0]
    # a: first attempt start 01:12:09 to last attempt end 02:13:23
    assert w.jobs["duration_s"].tolist() == [30.0, 3674.0]
    assert w.jobs["final_state"].tolist() == ["cancelled", "completed"]
    assert w.jobs["tenant"].tolist() == ["vcA", "vcA"]
    assert w.meta["gpu_count_changed"] == 1


def test_philly_json_errors(tmp_path: Path) -> None:
    good = philly_job("a", "2017-10-07 01:00:00", [attempt("2017-10-07 01:00:00", "2017-10-07 01:10:00", 1)])
    cpu = philly_job("b", "2017-10-07 01:00:00", [attempt("2017-10-07 01:00:00", "2017-10-07 01:10:00")])
    bad_submit = philly_job("c", "yesterday", [attempt("2017-10-07 01:00:00", "2017-10-07 01:10:00", 1)])
    path = tmp_path / "bad_submit.json"
    path.write_text(json.dumps([good, cpu, bad_submit]))
    expect_error(path, "philly", row=3, field="submitted_time")
    backwards = philly_job("c", "2017-10-07 01:00:00", [attempt("2017-10-07 02:00:00", "2017-10-07 01:10:00", 1)])
    path.write_text(json.dumps([good, cpu, backwards]))
    expect_error(path, "philly", row=3, field="attempts")
    path.write_text(json.dumps([good, cpu, good]))
    expect_error(path, "philly", row=3, field="jobid")


# --- philly CSVs: Tiresias/Chronus and Pollux -------------------------------------------------

CHRONUS = """
job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,expect_value_list,best_effort,job_type
0,vc_a,1,5601,5530,mobilenet_v2,96,5,159-189-229-289,10-8-5-2,0,soft
1,vc_b,0,5500,760,alexnet,106,6,235,10,0,strict
2,vc_b,4,5400,760,alexnet,106,6,918,10,1,best
3,vc_a,2,5700,760,vgg16,50,6,235,10,0,strict
"""


@pytest.mark.parametrize("fmt", ["tiresias", "philly"])
def test_chronus(tmp_path: Path, fmt: str) -> None:
    w = load_trace(write(tmp_path / "trace_job_Philly_MIX2.csv", CHRONUS), fmt)
    assert w.skipped == {"cpu_job": 1}
    assert w.origin is None
    jobs = w.jobs
    assert jobs["job_id"].tolist() == ["2", "0", "3"]
    assert jobs["submit_s"].tolist() == [0.0, 201.0, 300.0]
    assert jobs["num_gpus"].tolist() == [4.0, 1.0, 2.0]
    assert jobs["tenant"].tolist() == ["vc_b", "vc_a", "vc_a"]
    assert jobs["model"].tolist() == ["alexnet", "mobilenet_v2", "vgg16"]
    # deadline = submit + first expected time; best-effort jobs have none
    assert np.isnan(jobs["deadline_s"].iloc[0])
    assert jobs["deadline_s"].iloc[1:].tolist() == [201.0 + 159, 300.0 + 235]


def test_tiresias_errors(tmp_path: Path) -> None:
    header = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
    path = write(tmp_path / "t.csv", header + "0,1,0,10,vgg19,164,30\n1,0,5,1,vgg,1,1\n2,1,x,10,vgg19,164,30\n")
    expect_error(path, "tiresias", row=3, field="submit_time")
    path = write(tmp_path / "t.csv", header + "0,1,0,10,vgg19,164,30\n1,1,5,1,vgg,,1\n")
    expect_error(path, "tiresias", row=2, field="duration")


POLLUX = """
timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:01:55,66.0,1,66.0,11cb48
2017-10-09 06:13:03,2951.0,8,23608.0,6214e9
2017-10-09 06:13:03,20.0,2,40.0,6214e9

"""


@pytest.mark.parametrize("fmt", ["pollux-philly", "philly"])
def test_pollux_philly(tmp_path: Path, fmt: str) -> None:
    w = load_trace(write(tmp_path / "philly.csv", POLLUX), fmt)
    assert len(w) == 3 and w.skipped == {}
    assert w.origin == pd.Timestamp("2017-10-09 06:13:03")
    assert w.jobs["job_id"].tolist() == ["2", "3", "1"]
    assert w.jobs["submit_s"].tolist() == [0.0, 0.0, 2932.0]
    assert w.jobs["tenant"].tolist() == ["6214e9", "6214e9", "11cb48"]


def test_pollux_zero_gpus_skipped_and_bad_gpu_named(tmp_path: Path) -> None:
    text = POLLUX.strip() + "\n2017-10-09 06:13:03,20.0,0,0.0,x\n2017-10-09 06:13:03,20.0,1.5,30.0,x\n"
    expect_error(write(tmp_path / "philly.csv", text), "pollux-philly", row=5, field="num_gpus")


def test_philly_unknown_csv(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a known Philly CSV"):
        load_trace(write(tmp_path / "x.csv", "a,b\n1,2\n"), "philly")


# --- gfs --------------------------------------------------------------------------------------

GFS_HEADER = "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type\n"


def test_gfs(tmp_path: Path) -> None:
    path = write(
        tmp_path / "job_info_df.csv",
        GFS_HEADER
        + "239255,13,A10,20,1,1,0,2764799,HP\n"
        + "437260,57,A100-SXM4-80GB,15,1,16,9589663,41060,Spot\n"
        + "500000,57,,4,0,1,10,100,Spot\n"
        + "437261,57,A100-SXM4-80GB,15,8,2,9589663,71718,spot\n",
    )
    w = load_trace(path, "gfs")
    assert w.skipped == {"cpu_job": 1}
    jobs = w.jobs
    assert jobs["job_id"].tolist() == ["239255", "437260", "437261"]
    assert jobs["priority_class"].tolist() == ["hp", "spot", "spot"]
    assert jobs["num_gpus"].tolist() == [1.0, 16.0, 16.0]
    assert jobs["gpus_per_worker"].tolist() == [1.0, 1.0, 8.0]
    assert jobs["num_cpus"].tolist() == [20.0, 240.0, 30.0]
    assert jobs["gpu_type"].tolist() == ["A10", "A100-SXM4-80GB", "A100-SXM4-80GB"]
    assert jobs["tenant"].tolist() == ["13", "57", "57"]


def test_gfs_errors(tmp_path: Path) -> None:
    ok = "1,13,A10,20,1,1,0,100,HP\n"
    path = write(tmp_path / "j.csv", GFS_HEADER + ok + "2,13,A10,20,1,1,0,100,Batch\n")
    expect_error(path, "gfs", row=2, field="job_type")
    path = write(tmp_path / "j.csv", GFS_HEADER + ok + "2,13,A10,20,0,1,0,100,HP\n" + "3,13,A10,20,1,1,0,-1,HP\n")
    expect_error(path, "gfs", row=3, field="duration")
    path = write(tmp_path / "j.csv", GFS_HEADER + ok + "3,13,A10,20,1,0,0,10,HP\n")
    expect_error(path, "gfs", row=2, field="worker_num")


# --- pai --------------------------------------------------------------------------------------


def write_pai(folder: Path, jobs: str, tasks: str) -> Path:
    folder.mkdir(exist_ok=True)
    write(folder / "pai_job_table.csv", jobs)
    write(folder / "pai_task_table.csv", tasks)
    return folder


PAI_JOBS = """
j1,i1,u1,Terminated,1000.0,1600.0
j2,i2,u1,Failed,900.0,1000.0
j3,i3,u2,Running,950.0,
j4,i4,u2,Terminated,980.0,1200.0
j5,i5,u3,Terminated,990.0,1100.0
j6,i6,u3,Terminated,970.0,1300.0
j7,i7,u3,Terminated,960.0,1300.0
"""
PAI_TASKS = """
j1,ps,1.0,Terminated,1010.0,1600.0,600.0,29.3,,
j1,worker,2.0,Terminated,1100.0,1600.0,400.0,29.3,50.0,T4
j2,tensorflow,1.0,Failed,950.0,1000.0,600.0,29.3,800.0,V100
j3,tensorflow,1.0,Running,960.0,,600.0,29.3,100.0,P100
j4,tensorflow,1.0,Terminated,,1200.0,600.0,29.3,,
j5,worker,3.0,Terminated,1000.0,1100.0,600.0,29.3,50.0,T4
j6,worker,1.0,Terminated,1000.0,1300.0,600.0,29.3,100.0,T4
j6,evaluator,1.0,Terminated,1000.0,1300.0,600.0,29.3,100.0,P100
j8,worker,1.0,Terminated,1000.0,1300.0,600.0,29.3,100.0,P100
"""


def test_pai(tmp_path: Path) -> None:
    folder = write_pai(tmp_path / "pai", PAI_JOBS, PAI_TASKS)
    w = load_trace(folder, "pai")
    assert w.skipped == {"no_tasks": 1, "cpu_job": 1, "no_end_time": 1}
    jobs = w.jobs.set_index("job_id")
    assert list(w.jobs["job_id"]) == ["j2", "j6", "j5", "j1"]
    assert jobs.loc["j1", "num_gpus"] == 1.0 and jobs.loc["j1", "gpus_per_worker"] == 0.5
    assert jobs.loc["j1", "duration_s"] == 590.0  # end 1600 − first task start 1010
    assert jobs.loc["j1", "num_cpus"] == 14.0
    assert jobs.loc["j2", "num_gpus"] == 8.0 and jobs.loc["j2", "gpu_type"] == "V100"
    assert jobs.loc["j5", "num_gpus"] == 2.0 and np.isnan(jobs.loc["j5", "gpus_per_worker"])  # 1.5 rounded up
    assert jobs.loc["j6", "gpu_type"] == "" and jobs.loc["j6", "num_gpus"] == 2.0
    assert jobs["final_state"].to_dict() == {"j2": "failed", "j6": "completed", "j5": "completed", "j1": "completed"}
    assert jobs["submit_s"].to_dict() == {"j2": 0.0, "j6": 70.0, "j5": 90.0, "j1": 100.0}
    assert w.meta["rounded_up_gpus"] == 1 and w.meta["mixed_gpu_type_jobs"] == 1
    assert w.origin == pd.Timestamp("1970-01-01 08:15:00")


def test_pai_job_file_with_task_table_option(tmp_path: Path) -> None:
    folder = write_pai(tmp_path / "pai", PAI_JOBS, PAI_TASKS)
    moved = (folder / "pai_task_table.csv").rename(tmp_path / "tasks.csv")
    w = load_trace(folder / "pai_job_table.csv", "pai", task_table=moved)
    assert len(w) == 4
    with pytest.raises(InputError, match="PAI table not found"):
        load_trace(folder / "pai_job_table.csv", "pai")


def test_pai_errors(tmp_path: Path) -> None:
    jobs = "j1,i1,u1,Terminated,1000.0,1600.0\nj2,i2,u1,Terminated,1000.0,900.0\n"
    tasks = "j1,w,1.0,Terminated,1000.0,1600.0,600.0,29.3,100.0,T4\nj2,w,1.0,Terminated,,,600.0,29.3,100.0,T4\n"
    expect_error(write_pai(tmp_path / "neg", jobs, tasks) / "pai_job_table.csv", "pai", row=2, field="end_time")
    tasks_bad = "j1,w,1.0,Terminated,1000.0,1600.0,600.0,29.3,lots,T4\n"
    folder = write_pai(tmp_path / "bad", jobs, tasks_bad)
    with pytest.raises(InputError) as info:
        load_trace(folder, "pai")
    assert (info.value.file, info.value.row, info.value.field) == (str(folder / "pai_task_table.csv"), 1, "plan_gpu")


# --- openb ------------------------------------------------------------------------------------

OPENB_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


def test_openb(tmp_path: Path) -> None:
    path = write(
        tmp_path / "openb_pod_list_default.csv",
        OPENB_HEADER
        + "p0,12000,16384,1,1000,,LS,Running,100,12537496,100\n"
        + "p1,6000,12288,1,460,T4,BE,Succeeded,200,800,300\n"
        + "p2,6000,12288,0,0,,BE,Running,50,900,60\n"
        + "p3,6000,12288,8,1000,V100M16|V100M32,LS,Failed,150,900,160\n"
        + "p4,6000,12288,2,1000,G2|G2,LS,Pending,150,900,\n"
        + "p5,6000,12288,4,1000,G2|G2,Burstable,Failed,120,900,130\n",
    )
    w = load_trace(path, "openb")
    assert w.skipped == {"cpu_job": 1, "never_scheduled": 1}
    jobs = w.jobs
    assert jobs["job_id"].tolist() == ["p0", "p5", "p3", "p1"]
    assert jobs["submit_s"].tolist() == [0.0, 20.0, 50.0, 100.0]
    assert jobs["num_gpus"].tolist() == [1.0, 4.0, 8.0, 0.46]
    assert jobs["gpus_per_worker"].tolist() == [1.0, 4.0, 8.0, 0.46]
    assert jobs["gpu_type"].tolist() == ["", "G2", "", "T4"]
    assert jobs["duration_s"].tolist() == [12537396.0, 770.0, 740.0, 500.0]
    assert jobs["priority_class"].tolist() == ["ls", "burstable", "ls", "be"]
    assert jobs["final_state"].tolist() == ["unknown", "failed", "failed", "completed"]
    assert jobs["num_cpus"].tolist() == [12.0, 6.0, 6.0, 6.0]
    assert w.meta["multi_type_pods"] == 1


def test_openb_errors(tmp_path: Path) -> None:
    ok = "p0,1000,1,1,1000,,LS,Running,100,200,100\n"
    path = write(tmp_path / "o.csv", OPENB_HEADER + ok + "p1,1000,1,0,0,,LS,Running,100,200,100\np2,1000,1,1,500,,LS,Running,100,90,100\n")
    expect_error(path, "openb", row=3, field="deletion_time")
    path = write(tmp_path / "o.csv", OPENB_HEADER + ok + "p1,1000,1,1,0,,LS,Running,100,200,100\n")
    expect_error(path, "openb", row=2, field="gpu_milli")


# --- elasticflow ------------------------------------------------------------------------------


def test_elasticflow(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cluster01.csv",
        "job_id,submission_time,duration,num_gpu\nu1,1932025,2429,64\nu2,2000581,1532,1\nu3,1932025,10,0\n",
    )
    w = load_trace(path, "elasticflow")
    assert w.skipped == {"cpu_job": 1}
    assert w.jobs["submit_s"].tolist() == [0.0, 68556.0]
    assert w.jobs["num_gpus"].tolist() == [64.0, 1.0]
    # calendar: collection start 2021-03-04 (release README) + the first submission, 1,932,025 s
    assert w.origin == pd.Timestamp("2021-03-04") + pd.Timedelta(seconds=1932025)
    path = write(tmp_path / "bad.csv", "job_id,submission_time,duration,num_gpu\nu1,1,2429,64\nu2,2,,1\n")
    expect_error(path, "elasticflow", row=2, field="duration")
    path = write(tmp_path / "miss.csv", "job_id,submission_time,duration\nu1,1,2429\n")
    expect_error(path, "elasticflow", row=None, field="num_gpu")


# --- generic csv ------------------------------------------------------------------------------


def test_csv_with_mapping_and_units(tmp_path: Path) -> None:
    path = write(tmp_path / "jobs.csv", "id,arrive,gpus,minutes,who\na,10,2,1.5,x\nb,4,1,3,y\n")
    columns = {"job_id": "id", "submit_s": "arrive", "num_gpus": "gpus", "duration_s": "minutes", "user": "who"}
    w = load_trace(path, "csv", columns=columns, time_unit="min")
    assert w.jobs["job_id"].tolist() == ["b", "a"]
    assert w.jobs["submit_s"].tolist() == [0.0, 360.0]
    assert w.jobs["duration_s"].tolist() == [180.0, 90.0]
    assert w.jobs["user"].tolist() == ["y", "x"]
    assert w.origin is None


def test_csv_with_dates_and_canonical_names(tmp_path: Path) -> None:
    path = write(tmp_path / "jobs.csv", "submit_s,num_gpus,duration_s,final_state\n02/01/2024 10:00,4,60,Completed\n01/01/2024 10:00,1,30,\n")
    w = load_trace(path, "csv", time_format="%d/%m/%Y %H:%M")
    assert w.origin == pd.Timestamp("2024-01-01 10:00")
    assert w.jobs["submit_s"].tolist() == [0.0, 86400.0]
    assert w.jobs["job_id"].tolist() == ["2", "1"]
    assert w.jobs["final_state"].tolist() == ["unknown", "completed"]
    iso = write(tmp_path / "iso.csv", "submit_s,num_gpus,duration_s\n2024-01-01T10:00:05,4,60\n2024-01-01T10:00:00,1,30\n")
    assert load_trace(iso, "csv").jobs["submit_s"].tolist() == [0.0, 5.0]


def test_csv_zero_gpus(tmp_path: Path) -> None:
    path = write(tmp_path / "jobs.csv", "job_id,submit_s,num_gpus,duration_s\na,0,1,10\nb,1,0,10\nc,2,1,10\n")
    expect_error(path, "csv", row=2, field="num_gpus")
    w = load_trace(path, "csv", skip=("cpu",))
    assert w.skipped == {"cpu_job": 1} and w.jobs["job_id"].tolist() == ["a", "c"]


def test_csv_errors(tmp_path: Path) -> None:
    path = write(tmp_path / "jobs.csv", "id,t,g,d\na,0,1,10\nb,1,1,-3\n")
    columns = {"job_id": "id", "submit_s": "t", "num_gpus": "g", "duration_s": "d"}
    expect_error(path, "csv", row=2, field="d", columns=columns)
    expect_error(path, "csv", row=None, field="duration_s", columns={"submit_s": "t", "num_gpus": "g"})
    path = write(tmp_path / "dup.csv", "id,t,g,d\na,0,1,10\nb,1,1,3\na,2,1,3\n")
    expect_error(path, "csv", row=3, field="id", columns=columns)
    path = write(tmp_path / "date.csv", "id,t,g,d\na,2024-01-01,1,10\nb,not a date,1,3\n")
    expect_error(path, "csv", row=2, field="t", columns=columns)
    with pytest.raises(ConfigError, match="time unit"):
        load_trace(path, "csv", columns=columns, time_unit="days")
    with pytest.raises(ConfigError, match="unknown canonical"):
        load_trace(path, "csv", columns={"gpus": "g"})


def test_malformed_and_empty_csv(tmp_path: Path) -> None:
    path = write(tmp_path / "ragged.csv", "job_id,submission_time,duration,num_gpu\nu1,1,2,1\nu2,1,2,1,9,9\n")
    with pytest.raises(InputError, match="not a readable CSV file.*line 3") as info:
        load_trace(path, "elasticflow")
    assert info.value.file == str(path)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="not a readable CSV file"):
        load_trace(empty, "philly")
