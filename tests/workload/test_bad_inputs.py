"""A corpus of bad inputs for every trace format, run through the CLI.

Each case writes a small file (based on the format's real layout) and runs ``traces inspect``,
``simulate`` or ``characterize`` on it. The CLI must exit 2 with one line on stderr that names
what is wrong and where (file, row, field as the file spells it), and show no traceback. Most
cases run in-process (``CliRunner``); those marked ``subprocess`` run the real command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedlab.cli import app


@dataclass(frozen=True)
class Case:
    """The trace path given to the CLI, the files to write (``None`` = a folder; surrogates in text
    stand for bytes that are not UTF-8) and words the one-line error must hold."""

    fmt: str
    trace: str
    files: dict[str, str | None]
    expect: tuple[str, ...]
    command: str = "inspect"  # or "simulate", "characterize"
    args: tuple[str, ...] = ()  # "{dir}" stands for the case's folder
    subprocess: bool = False


POLLUX_WORKLOAD = "name,time,application,num_replicas,batch_size\nncf-0,29,ncf,1,32768\n"


def one(fmt: str, name: str, text: str | None, *expect: str, **options: object) -> Case:
    """A case whose trace is the one file (or folder) ``name``."""
    return Case(fmt, name, {name: text}, expect, **options)


def with_file(fmt: str, name: str, text: str, extra: dict[str, str], *expect: str, **options: object) -> Case:
    """A case whose trace ``name`` comes with ``extra`` files (a second table, a cluster file)."""
    return Case(fmt, name, {name: text, **extra}, expect, **options)


HELIOS = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"


def helios(*rows: str) -> str:
    """A Helios cluster_log.csv: a good job 1, then ``rows``."""
    return HELIOS + helios_row(1) + "".join(rows)


def helios_row(job: int, *, user: str = "uA", vc: str = "vc1", gpus: str = "1", submit: str = "2020-04-01 00:10:00",
               duration: str = "600") -> str:  # fmt: skip
    return f"{job},{user},{vc},{gpus},4,1,COMPLETED,{submit},2020-04-01 00:10:05,2020-04-01 00:20:05,{duration},5\n"


def philly(*jobs: object) -> str:
    """A Philly cluster_job_log: a good job "a", then ``jobs``."""
    return json.dumps([philly_job("a"), *jobs])


def philly_job(jobid: str, **fields: object) -> dict:
    job = {"status": "Pass", "vc": "vcA", "jobid": jobid, "attempts": [attempt()],
           "submitted_time": "2017-10-07 01:11:39", "user": "u1"}  # fmt: skip
    return {**job, **fields}


def attempt(start: object = "2017-10-07 01:12:09", detail: object = None) -> dict:
    gpus = [{"ip": "m0", "gpus": ["gpu0", "gpu1"]}]
    return {"start_time": start, "end_time": "2017-10-07 02:13:23", "detail": gpus if detail is None else detail}


CHRONUS = (
    "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,expect_value_list,"
    "best_effort,job_type\n0,vc_a,1,5601,5530,mobilenet_v2,96,5,159-189-229-289,10-8-5-2,0,soft\n"
)
POLLUX = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,6214e9\n"
GFS = (
    "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type\n"
    "239255,13,,20,1,1,0,2764799,HP\n"
)
PAI_JOBS = "j1,i1,u1,Terminated,1000.0,1600.0\nj2,i2,u1,Failed,900.0,1000.0\n"
PAI_TASKS = (
    "j1,worker,2.0,Terminated,1100.0,1600.0,400.0,29.3,50.0,T4\nj2,tf,1.0,Failed,950.0,1000.0,600.0,29.3,800.0,V100\n"
)
OPENB = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    "p0,12000,16384,1,1000,,LS,Running,100,12537496,100\n"
)
ITP = "job_id,submission_time,duration,num_gpu\nu1,1932025,2429,1\n"
JOBS = "id,arrive,gpus,minutes,who\na,10,2,1.5,x\n"
SACCT = ("JobID|JobName|Partition|User|State|Submit|Start|End|Elapsed|Timelimit|AllocTRES\n"
         "6|big|vc2|root|COMPLETED|2026-11-27T19:40:14|2026-11-27T19:40:16|2026-11-27T19:40:19|00:00:03|00:02:00|"
         "billing=2,cpu=2,gres/gpu:a100=16,gres/gpu=16,node=2\n")  # fmt: skip
MAP = ("--map", "job_id=id", "--map", "submit_s=arrive", "--map", "num_gpus=gpus", "--map", "duration_s=minutes",
       "--map", "user=who", "--time-unit", "min")  # fmt: skip
NODES = "gpu_model,gpu_capacity_num,cpu_num,node_name\n"
SIM = ("--policy", "fifo", "--no-progress")


def pai(jobs: str = PAI_JOBS, tasks: str | None = PAI_TASKS) -> dict[str, str]:
    """A PAI folder with its two tables (``tasks=None``: no task table)."""
    tables = {"pai/pai_job_table.csv": jobs, "pai/pai_task_table.csv": tasks}
    return {name: text for name, text in tables.items() if text is not None}


CASES: dict[str, Case] = {
    # --- helios ---------------------------------------------------------------------------------
    "helios-negative-duration": one("helios", "log.csv", helios(helios_row(2, duration="-600")),
                                    "log.csv", "row 2", "'duration'", "got -600 s", subprocess=True),
    "helios-gpu-num-text": one("helios", "log.csv", helios(helios_row(2, gpus="two")), "row 2", "'gpu_num'", "'two'"),
    "helios-fractional-gpus": one("helios", "log.csv", helios(helios_row(2, gpus="1.5")),
                                  "row 2", "'gpu_num'", "whole number", "got 1.5"),
    "helios-missing-column": one("helios", "log.csv", HELIOS.replace("gpu_num,", "") + "1,u,vc,4,1,X,a,b,c,6,5\n",
                                 "log.csv", "'gpu_num'", "missing"),
    "helios-bad-date": one("helios", "log.csv", helios(helios_row(2, submit="April 1st")),
                           "row 2", "'submit_time'", "'April 1st'"),
    "helios-duplicate-id": one("helios", "log.csv", helios(helios_row(2), helios_row(1)),
                               "row 3", "'job_id'", "unique"),
    "helios-not-utf8": one("helios", "log.csv", helios(helios_row(2, user="u\udcff")),
                           "row 2", "'user'", "UTF-8", r"\xff"),
    "helios-header-not-utf8": one("helios", "log.csv", "job_\udce9id" + helios()[6:], "log.csv", "header", "UTF-8"),
    "helios-extra-field": one("helios", "log.csv", helios(helios_row(2).replace("\n", ",9\n")),
                              "row 2", "13 fields", "12 columns"),
    "helios-empty-file": one("helios", "log.csv", "", "log.csv", "empty"),
    "helios-directory": one("helios", "logs", None, "logs", "is a directory"),
    "helios-missing-file": Case("helios", "absent.csv", {}, ("absent.csv", "not found")),
    "helios-job-too-big-unsorted": one(
        "helios", "log.csv", helios(helios_row(2), helios_row(3, gpus="64", submit="2020-03-01 00:00:00")),
        "row 3", "'gpu_num'", "64 GPUs", command="simulate", args=("--cluster", "uniform:2x8")),
    "helios-tenants-not-in-venus": one(
        "helios", "log.csv", helios(helios_row(2, vc="vcX"), helios_row(3, vc="vcEwI")),
        "row 1", "'vc1', 'vcX'", "2 in all", "'vc'", "venus", "drop", "rename",
        command="simulate", args=("--cluster", "venus")),
    # --- philly JSON ----------------------------------------------------------------------------
    "philly-json-detail-string": one("philly", "cluster_job_log",
                                     philly(philly_job("b", attempts=[attempt(detail="m0")])),
                                     "row 2", "'detail'", '"m0"', subprocess=True),
    "philly-json-gpus-number": one("philly", "cluster_job_log",
                                   philly(philly_job("b", attempts=[attempt(detail=[{"ip": "m0", "gpus": 4}])])),
                                   "row 2", "'gpus'", "got 4"),
    "philly-json-attempts-object": one("philly", "cluster_job_log",
                                       philly(philly_job("b", attempts={"start_time": "x"})),
                                       "row 2", "'attempts'", "list of objects"),
    "philly-json-job-not-object": one("philly", "cluster_job_log", philly("b"), "row 2", "JSON object", '"b"'),
    "philly-json-not-a-list": one("philly", "cluster_job_log", json.dumps({"jobs": []}),
                                  "cluster_job_log", "JSON list"),
    "philly-json-truncated": one("philly", "cluster_job_log", philly()[:-20], "not valid JSON", "line 1"),
    "philly-json-nested-too-deeply": one("philly", "cluster_job_log", "[" * 100_000 + "]" * 100_000,
                                         "not valid JSON", "nested"),
    "philly-json-not-utf8": one("philly", "cluster_job_log", philly(philly_job("b", user="u\udcfe")),
                                "row 2", "'user'", "UTF-8", r"\xfe"),
    "philly-json-bad-submitted": one("philly", "cluster_job_log", philly(philly_job("b", submitted_time="yesterday")),
                                     "row 2", "'submitted_time'", "'yesterday'"),
    "philly-json-start-number": one("philly", "cluster_job_log", philly(philly_job("b", attempts=[attempt(12345)])),
                                    "row 2", "'attempts'", "'12345'"),
    "philly-json-vc-not-in-philly": one("philly", "cluster_job_log", philly(), "row 1", "'vcA'", "'vc'", "philly",
                                        "drop", command="simulate", args=("--cluster", "philly")),
    # --- philly CSVs (Tiresias/Chronus and Pollux layouts, detected) ----------------------------
    "philly-csv-unknown-layout": one("philly", "trace.csv", "a,b\n1,2\n", "trace.csv", "not a known Philly CSV"),
    "philly-csv-num-gpu-text": one("philly", "trace.csv", CHRONUS + "1,vc_b,many,5500,760,alexnet,106,6,235,10,0,x\n",
                                   "row 2", "'num_gpu'", "'many'"),
    "philly-csv-model-not-utf8": one("philly", "trace.csv", CHRONUS + "1,vc_b,1,5500,760,al\udce9x,106,6,235,10,0,x\n",
                                     "row 2", "'model_name'", "UTF-8"),
    "philly-csv-empty": one("philly", "trace.csv", "", "trace.csv", "empty"),
    # --- tiresias -------------------------------------------------------------------------------
    "tiresias-zero-duration": one("tiresias", "t.csv", CHRONUS + "1,vc_b,1,5500,760,alexnet,0,6,235,10,0,strict\n",
                                  "row 2", "'duration'", "positive", "got 0"),
    "tiresias-bad-deadline": one("tiresias", "t.csv", CHRONUS + "1,vc_b,1,5500,760,alexnet,9,6,soon,10,0,strict\n",
                                 "row 2", "'expect_time_list'", "'soon'"),
    "tiresias-directory": one("tiresias", "traces", None, "traces", "is a directory"),
    "tiresias-too-big": one("tiresias", "t.csv", CHRONUS + "1,vc_b,64,5500,760,alexnet,9,6,235,10,0,strict\n",
                            "row 2", "'num_gpu'", "64 GPUs", "at most 16",
                            command="simulate", args=("--cluster", "uniform:2x8")),
    "tiresias-bad-time-unit": one("tiresias", "t.csv", CHRONUS, "time unit", "'days'", "'min'",
                                  args=("--time-unit", "days")),
    "philly-csv-bad-skip-rule": one("philly", "trace.csv", CHRONUS, "skip rule", "'gpus=0'", "cpu",
                                    args=("--skip", "gpus=0")),
    "philly-json-time-unit": one("philly", "cluster_job_log", philly(), "dates", "time unit", args=("--time-unit", "min")),
    "chronus-prefix-leaves-unknown-vc": one(
        "philly", "trace.csv", CHRONUS + "1,vc_6214e9,1,5602,760,alexnet,106,6,235,10,0,strict\n"
        "2,team_x,1,5603,760,alexnet,106,6,235,10,0,strict\n",
        "row 1", "'a', 'team_x'", "2 in all", "'user'", "philly", "drop", "rename",
        command="simulate", args=("--cluster", "philly", "--tenant-prefix", "vc_")),
    "tenant-map-repeated": with_file("tiresias", "t.csv", CHRONUS,
                                     {"map.csv": "trace_tenant,cluster_tenant\nvc_a,6214e9\nvc_a,0e4a51\n"},
                                     "map.csv", "row 2", "'trace_tenant'", "repeated",
                                     command="simulate", args=("--cluster", "philly", "--tenant-map", "{dir}/map.csv")),
    "tenant-map-missing-column": with_file("tiresias", "t.csv", CHRONUS, {"map.csv": "trace_tenant,to\nvc_a,6214e9\n"},
                                           "map.csv", "'cluster_tenant'", "missing",
                                           command="characterize", args=("--tenant-map", "{dir}/map.csv")),
    # --- pollux-workload ------------------------------------------------------------------------
    "pollux-workload-bad-time": one("pollux-workload", "workloads/workload-1.csv",
                                    POLLUX_WORKLOAD + "cifar10-1,later,cifar10,6,2048\n", "row 2", "'time'", "'later'"),
    "pollux-workload-no-traces": one("pollux-workload", "workloads/workload-1.csv", POLLUX_WORKLOAD,
                                     "workload-1.csv", "traces folder not found"),
    # --- pollux-philly --------------------------------------------------------------------------
    "pollux-bad-timestamp": one("pollux-philly", "philly.csv", POLLUX + "yesterday,20.0,2,40.0,6214e9\n",
                                "row 2", "'timestamp'", "'yesterday'"),
    "pollux-fractional-gpus": one("pollux-philly", "philly.csv", POLLUX + "2017-10-09 06:13:03,20.0,1.5,30.0,x\n",
                                  "row 2", "'num_gpus'", "whole number"),
    "pollux-unsorted-too-big": one(
        "pollux-philly", "philly.csv",
        POLLUX + "2017-10-09 08:00:00,20.0,2,40.0,6214e9\n2017-10-01 00:00:00,20.0,128,40.0,6214e9\n",
        "row 3", "job '3'", "'num_gpus'", "128 GPUs",
        command="simulate", args=("--cluster", "uniform:4x8"), subprocess=True),
    "pollux-cluster-not-in-philly": one(
        "pollux-philly", "philly.csv", POLLUX + "2017-10-08 00:00:00,20.0,2,40.0,23dbec\n",
        "row 2", "'23dbec'", "1 in all", "'cluster'", "philly", "drop", "rename",
        command="simulate", args=("--cluster", "philly")),
    # --- gfs ------------------------------------------------------------------------------------
    "gfs-bad-job-type": one("gfs", "job_info_df.csv", GFS + "2,13,A10,20,1,1,0,100,Batch\n",
                            "row 2", "'job_type'", "'Batch'"),
    "gfs-zero-workers": one("gfs", "job_info_df.csv", GFS + "3,13,A10,20,1,0,0,10,HP\n",
                            "row 2", "'worker_num'", "positive"),
    "gfs-unknown-gpu-model": one("gfs", "job_info_df.csv", GFS + "3,13,H100,20,1,1,5,10,HP\n",
                                 "row 2", "'gpu_model'", "'H100'",
                                 command="simulate", args=("--cluster", "uniform:2x8")),
    "gfs-missing-file": Case("gfs", "job_info_df.csv", {}, ("job_info_df.csv", "not found")),
    # --- pai ------------------------------------------------------------------------------------
    "pai-no-task-table": Case("pai", "pai", pai(tasks=None), ("pai_task_table.csv", "not found"), subprocess=True),
    "pai-plan-gpu-text": Case("pai", "pai", pai(tasks=PAI_TASKS.replace("800.0", "lots")),
                              ("pai_task_table.csv", "row 2", "'plan_gpu'", "'lots'")),
    "pai-ends-before-start": Case("pai", "pai", pai(jobs=PAI_JOBS.replace("900.0,1000.0", "900.0,940.0")),
                                  ("pai_job_table.csv", "row 2", "'end_time'", "got -10 s")),
    "pai-extra-field": Case("pai", "pai", pai(jobs=PAI_JOBS.replace("1600.0\n", "1600.0,x\n")),
                            ("pai_job_table.csv", "row 1", "7 fields", "6 columns")),
    "pai-gpu-type-not-utf8": Case("pai", "pai", pai(tasks=PAI_TASKS.replace("V100", "V\udcb1")),
                                  ("pai_task_table.csv", "row 2", "'gpu_type'", "UTF-8")),
    # --- openb ----------------------------------------------------------------------------------
    "openb-deleted-before-scheduled": one("openb", "pods.csv", OPENB + "p1,1000,1,1,500,,LS,Running,100,90,100\n",
                                          "row 2", "'deletion_time'", "got -10 s"),
    "openb-zero-gpu-milli": one("openb", "pods.csv", OPENB + "p1,1000,1,1,0,,LS,Running,100,200,100\n",
                                "row 2", "'gpu_milli'", "positive"),
    "openb-creation-text": one("openb", "pods.csv", OPENB + "p1,1000,1,1,500,,LS,Running,soon,200,100\n",
                               "row 2", "'creation_time'", "'soon'"),
    "openb-directory": one("openb", "csv", None, "csv", "is a directory"),
    # --- elasticflow ----------------------------------------------------------------------------
    "elasticflow-negative-duration": one("elasticflow", "cluster01.csv", ITP + "u2,1932030,-600,2\n",
                                         "cluster01.csv", "row 2", "'duration'", "got -600 s"),
    "elasticflow-not-utf8": one("elasticflow", "cluster01.csv", ITP + "u2,1932030,\udcff\udcfe,2\n",
                                "row 2", "'duration'", "UTF-8", r"\xff\xfe", subprocess=True),
    "elasticflow-ragged": one("elasticflow", "cluster01.csv", ITP + "u2,1,2,1,9,9\n", "row 2", "line 3", "6 fields"),
    "elasticflow-nan-duration": one("elasticflow", "cluster01.csv", ITP + "u2,1932030,NaN,2\n",
                                    "row 2", "'duration'", "finite", "got nan"),
    # --- sacct ----------------------------------------------------------------------------------
    "sacct-bad-tres": one("sacct", "sacct.txt", SACCT + SACCT.splitlines()[1].replace("gpu=16,", "gpu=x,") + "\n",
                          "row 2", "'AllocTRES'", "'x'"),
    "sacct-unknown-state": one("sacct", "sacct.txt", SACCT + SACCT.splitlines()[1].replace("COMPLETED", "DONE") + "\n",
                               "row 2", "'State'", "'DONE'", subprocess=True),
    "sacct-json-truncated": one("sacct", "sacct.json", '{"jobs": [{"job_id": 1', "not valid JSON"),
    "sacct-missing-column": one("sacct", "sacct.txt", SACCT.replace("|AllocTRES", "").replace("|billing", "\nbilling"),
                                "'AllocTRES'", "missing"),
    "sacct-typed-gpus-on-a-v100-cluster": one("sacct", "sacct.txt", SACCT, "row 1", "'AllocTRES'", "'a100'",
                                              command="simulate", args=("--cluster", "uniform:2x8")),
    # --- csv with a column mapping --------------------------------------------------------------
    "csv-negative-minutes": one("csv", "jobs.csv", JOBS + "b,4,1,-3,y\n",
                                "row 2", "'minutes'", "positive", "got -180 s", args=MAP),
    "csv-map-missing-column": one("csv", "jobs.csv", JOBS, "jobs.csv", "'runtime'", "missing",
                                  args=("--map", "duration_s=runtime")),
    "csv-map-unknown-canonical": one("csv", "jobs.csv", JOBS, "unknown canonical", "'gpu_count'",
                                     args=(*MAP, "--map", "gpu_count=gpus")),
    "csv-bad-time-unit": one("csv", "jobs.csv", JOBS, "time unit", "'days'", args=(*MAP[:-1], "days")),
    "csv-zero-gpus": one("csv", "jobs.csv", JOBS + "b,4,0,3,y\n", "row 2", "'gpus'", "0 GPUs", "--skip cpu",
                         command="simulate", args=(*MAP, "--cluster", "uniform:2x8")),
    "csv-who-not-utf8": one("csv", "jobs.csv", JOBS + "b,4,1,3,\udcc3(\n", "row 2", "'who'", "UTF-8",
                            command="characterize", args=MAP),
    # --- characterize gets the same errors ------------------------------------------------------
    "characterize-helios-negative": one("helios", "log.csv", helios(helios_row(2, duration="-600")),
                                        "row 2", "'duration'", "got -600 s", command="characterize"),
    "characterize-philly-json-gpus": one("philly", "cluster_job_log",
                                         philly(philly_job("b", attempts=[attempt(detail=[{"gpus": "gpu0"}])])),
                                         "row 2", "'gpus'", '"gpu0"', command="characterize"),
    "characterize-gfs-directory": one("gfs", "gfs", None, "gfs", "is a directory", command="characterize"),
    # --- cluster files given with --cluster -----------------------------------------------------
    "cluster-gpu-numbers-not-utf8": with_file("elasticflow", "cluster01.csv", ITP, {"gpus.csv": "date,v\udcff\n"},
                                              "gpus.csv", "cannot read", "utf-8",
                                              command="simulate", args=("--cluster", "helios:{dir}/gpus.csv")),
    "cluster-inventory-cpu-text": with_file("elasticflow", "cluster01.csv", ITP,
                                            {"nodes.csv": NODES + "A10,1,many,n1\n"},
                                            "nodes.csv", "row 1", "'cpu_num'", "'many'",
                                            command="characterize", args=("--cluster", "gfs:{dir}/nodes.csv")),
}  # fmt: skip


def command(case: Case, folder: Path) -> list[str]:
    """The CLI arguments of ``case`` with its files written under ``folder``."""
    for name, content in case.files.items():
        path = folder / name
        if content is None:
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8", "surrogateescape"))
    trace = str(folder / case.trace)
    extra = [arg.replace("{dir}", str(folder)) for arg in case.args]
    if case.command == "inspect":
        return ["traces", "inspect", trace, "--format", case.fmt, *extra]
    args = ["--trace", trace, "--format", case.fmt, "--out", str(folder / "out"), *extra]
    return ["simulate", *args, *SIM] if case.command == "simulate" else ["characterize", *args]


def run(case: Case, folder: Path) -> tuple[int, str]:
    """Exit code and stderr of the CLI on ``case``."""
    args = command(case, folder)
    if case.subprocess:
        argv = [sys.executable, "-m", "schedlab.cli", *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        return done.returncode, done.stderr
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.stderr


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_clean_line(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    code, stderr = run(case, tmp_path)
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), stderr
    missing = [word for word in case.expect if word not in lines[0]]
    assert not missing, f"{missing} not in: {lines[0]}"
    assert "np." not in lines[0]


def test_the_corpus_covers_every_format_and_command() -> None:
    from schedlab.workload.loaders import LOADERS

    assert len(CASES) >= 40
    assert {case.fmt for case in CASES.values()} == set(LOADERS)
    assert {case.command for case in CASES.values()} == {"inspect", "simulate", "characterize"}
    assert sum(case.subprocess for case in CASES.values()) >= 5
