"""One small trace per format, three GPU jobs and one CPU job each, in the format's real layout.

Time fields are numbers where the format has numbers, so a ``time_unit`` scales them; the formats
with start times record queueing delays of 5 and 30 (units) or seconds for dates.
"""

from __future__ import annotations

import json
from pathlib import Path

HELIOS = (
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
    "h1,u1,vcA,1,4,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:05,2020-04-01 00:10:05,600,5\n"
    "h2,u2,vcB,8,32,1,FAILED,2020-04-01 01:00:00,2020-04-01 01:00:30,2020-04-01 01:20:30,1200,30\n"
    "h3,u1,vcA,0,4,1,COMPLETED,2020-04-01 02:00:00,2020-04-01 02:00:00,2020-04-01 02:10:00,600,0\n"
    "h4,u3,vcB,2,8,1,COMPLETED,2020-04-02 03:00:00,2020-04-02 03:00:05,2020-04-02 03:30:05,1800,5\n"
)
CHRONUS = (
    "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,"
    "expect_value_list,best_effort,job_type\n"
    "0,vc_6214e9,1,10,500,alexnet,20,5,40-60,10-5,0,soft\n"
    "1,vc_0e4a51,4,70,500,vgg16,60,5,200,10,0,strict\n"
    "2,vc_0e4a51,0,80,500,vgg16,60,5,200,10,0,strict\n"
    "3,vc_6214e9,1,1450,500,alexnet,120,5,0,0,1,best\n"
)
POLLUX = (
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    "2017-10-09 07:00:00,20,1,20,6214e9\n2017-10-09 08:00:00,60,2,120,0e4a51\n"
    "2017-10-09 08:30:00,60,0,0,0e4a51\n2017-10-10 09:00:00,120,4,480,6214e9\n"
)
GFS = (
    "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type\n"
    "g1,13,A10,20,1,1,10,20,HP\ng2,14,A10,20,1,2,70,60,Spot\ng3,14,A10,20,0,1,80,60,HP\ng4,13,A10,20,1,1,1450,120,HP\n"
)
PAI_JOBS = (
    "j1,i1,u1,Terminated,10,40\nj2,i2,u2,Terminated,70,160\nj3,i3,u2,Terminated,80,90\nj4,i4,u1,Failed,1450,1600\n"
)
PAI_TASKS = (
    "j1,worker,1.0,Terminated,15,40,600.0,29.3,100.0,T4\nj2,worker,2.0,Terminated,100,160,600.0,29.3,100.0,V100\n"
    "j3,worker,1.0,Terminated,80,90,600.0,29.3,,\nj4,worker,1.0,Failed,1455,1600,600.0,29.3,100.0,T4\n"
)
OPENB = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    "p1,4000,1024,1,1000,T4,LS,Succeeded,10,35,15\np2,4000,1024,2,1000,,BE,Failed,70,160,100\n"
    "p3,4000,1024,0,0,,BE,Succeeded,80,90,80\np4,4000,1024,1,500,,LS,Succeeded,1450,1575,1455\n"
)
ITP = "job_id,submission_time,duration,num_gpu\ne1,10,20,1\ne2,70,60,2\ne3,80,60,0\ne4,1450,120,1\n"
CSV = (
    "job_id,submit_s,num_gpus,duration_s,tenant,queue_s\n"
    "c1,10,1,20,t1,5\nc2,70,2,60,t2,30\nc3,80,0,60,t2,0\nc4,1450,1,120,t1,5\n"
)


def _philly_job(jobid: str, vc: str, gpus: int, submitted: str, start: str, end: str) -> dict:
    detail = [{"ip": "m0", "gpus": [f"gpu{i}" for i in range(gpus)]}]
    return {"status": "Pass", "vc": vc, "jobid": jobid, "user": "u1", "submitted_time": submitted,
            "attempts": [{"start_time": start, "end_time": end, "detail": detail}]}  # fmt: skip


PHILLY_JSON = json.dumps([
    _philly_job("a", "vcA", 1, "2017-10-07 00:00:00", "2017-10-07 00:00:05", "2017-10-07 00:10:05"),
    _philly_job("b", "vcB", 2, "2017-10-07 01:00:00", "2017-10-07 01:00:30", "2017-10-07 01:20:30"),
    _philly_job("c", "vcB", 0, "2017-10-07 02:00:00", "2017-10-07 02:00:00", "2017-10-07 02:10:00"),
    _philly_job("d", "vcA", 4, "2017-10-08 03:00:00", "2017-10-08 03:00:05", "2017-10-08 03:30:05"),
])  # fmt: skip

# format -> (trace path relative to a folder, {file: text}, has start times, numeric submit times)
SAMPLES: dict[str, tuple[str, dict[str, str], bool, bool]] = {
    "helios": ("cluster_log.csv", {"cluster_log.csv": HELIOS}, True, False),
    "philly": ("cluster_job_log", {"cluster_job_log": PHILLY_JSON}, True, False),
    "tiresias": ("trace.csv", {"trace.csv": CHRONUS}, False, True),
    "pollux-philly": ("philly.csv", {"philly.csv": POLLUX}, False, False),
    "gfs": ("job_info_df.csv", {"job_info_df.csv": GFS}, False, True),
    "pai": ("pai", {"pai/pai_job_table.csv": PAI_JOBS, "pai/pai_task_table.csv": PAI_TASKS}, True, True),
    "openb": ("pods.csv", {"pods.csv": OPENB}, True, True),
    "elasticflow": ("cluster01.csv", {"cluster01.csv": ITP}, False, True),
    "csv": ("jobs.csv", {"jobs.csv": CSV}, True, True),
}


def write_sample(fmt: str, folder: Path) -> Path:
    """Write the sample of ``fmt`` under ``folder``; the path to give the loader."""
    trace, files, _, _ = SAMPLES[fmt]
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder / trace
