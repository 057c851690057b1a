"""Replay on the real Slurm: jobs reach Slurm as planned, what happened comes back in the
simulator's columns, `sacct --json` of the replay loads as a trace, and the simulated Slurm
runs the same jobs."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from schedlab.errors import ConfigError, InputError
from schedlab.slurm import replay as rp
from schedlab.slurm import sandbox
from schedlab.slurm.conf import read_slurm_conf
from schedlab.workload.loaders import load_trace
from schedlab.workload.schema import Workload, canonical_frame

from .conftest import require_slurm, start


def workload(rows: list[tuple[float, float, float]], tenant: str = "default", limit: float = math.nan) -> Workload:
    """Jobs (submit_s, num_gpus, duration_s)."""
    frame = pd.DataFrame(rows, columns=["submit_s", "num_gpus", "duration_s"])
    frame["job_id"] = [f"j{i}" for i in range(len(frame))]
    frame["tenant"] = tenant
    frame["time_limit_s"] = limit
    return Workload(canonical_frame(frame, source="test.csv"), source="test.csv")


def test_time_limit_rules():
    assert rp.time_limit_min(30.0, math.nan, 100.0, rp.LimitRule.parse("auto")) == 1
    assert rp.time_limit_min(59.5, math.nan, 100.0, rp.LimitRule.parse("exact")) == 2  # 1 s launch margin
    assert rp.time_limit_min(30.0, math.nan, 100.0, rp.LimitRule.parse("x4")) == 3
    assert rp.time_limit_min(30.0, 36000.0, 100.0, rp.LimitRule.parse("auto")) == 6  # the trace's 10 h / 100
    assert rp.time_limit_min(30.0, 36000.0, 100.0, rp.LimitRule.parse("exact")) == 1
    for bad in ("x0.5", "xx", "1h", ""):
        with pytest.raises(ConfigError, match="--time-limit"):
            rp.LimitRule.parse(bad)


def test_plan_lays_jobs_on_whole_nodes_and_refuses_what_cannot_run(tmp_path):
    from schedlab.slurm.conf import Layout, SandboxSpec, slurm_conf_text

    layout = Layout(tmp_path)
    layout.slurm_conf.write_text(slurm_conf_text(SandboxSpec(nodes=4, partitions=(("vc1", 2), ("vc2", 2))), layout))
    conf = read_slurm_conf(layout.slurm_conf)
    w = workload([(0, 0.5, 100), (10, 8, 100), (20, 16, 100)], tenant="vc2")
    plan = rp.plan(w, conf, speedup=10, rule=rp.LimitRule())
    assert plan[["nodes", "gpus_per_node", "num_gpus"]].values.tolist() == [[1, 1, 1], [1, 8, 8], [2, 8, 16]]
    assert list(plan["partition"]) == ["vc2"] * 3 and list(plan["account"]) == [""] * 3
    assert plan["submit_at"].tolist() == [0.0, 1.0, 2.0] and plan["sleep_s"].tolist() == [10.0] * 3
    other = rp.plan(workload([(0, 1, 10)], tenant="teamA"), conf, speedup=1, rule=rp.LimitRule())
    assert (other["partition"].item(), other["account"].item()) == ("vc1", "teamA")  # default partition
    named = workload([(0, 1, 10)] * 3, tenant="vc1")
    named.jobs["name"] = ["train-a", "", ""]
    named.jobs["model"] = ["", "resnet50", ""]
    # the job name a service ranking the queue reads: the trace's name, else its model, else r<row>
    assert rp.plan(named, conf, speedup=1, rule=rp.LimitRule())["name"].tolist() == ["train-a", "resnet50", "r2"]
    with pytest.raises(InputError, match="row 1.*num_gpus.*24 GPUs.*'vc1'"):
        rp.plan(workload([(0, 24, 10)], tenant="vc1"), conf, speedup=1, rule=rp.LimitRule())
    with pytest.raises(InputError, match="row 1.*12 GPUs"):
        rp.plan(workload([(0, 12, 10)], tenant="vc1"), conf, speedup=1, rule=rp.LimitRule())


@pytest.mark.slow
def test_replay_with_accounting_records_and_simulates(tmp_path):
    require_slurm(accounting=True)
    root = tmp_path / "box"
    box = start(root, nodes=2, accounting=True, scheduler_parameters="bf_interval=2")
    try:
        # 16 GPUs: the 16-GPU job must wait for the two 8-GPU jobs, the 1-GPU job behind it too.
        w = workload([(0, 8, 40), (0, 8, 60), (10, 16, 30), (20, 1, 10)])
        out = tmp_path / "run"
        out.mkdir()
        conf = read_slurm_conf(box.layout.slurm_conf)
        result = rp.replay_and_record(box.layout, conf, w, speedup=10, rule=rp.LimitRule(), out_dir=out,
                                      console=Console(file=open(tmp_path / "log.txt", "w")))
    finally:
        sandbox.down(root)
        box.supervisor.wait(timeout=30)
    record = pd.read_parquet(out / "replay.parquet")
    assert (record["state"] == "COMPLETED").all()
    start_s = dict(zip(record["job_id"], record["start_s"]))
    end_s = dict(zip(record["job_id"], record["end_s"]))
    assert start_s["j2"] >= end_s["j1"] - 1  # the whole-cluster job waited for both 8-GPU jobs
    assert start_s["j3"] >= start_s["j2"]  # ... and the 1-GPU job behind it found no GPU before it
    jobs = pd.read_parquet(out / "jobs.parquet")
    assert list(jobs["job_id"]) == ["j0", "j1", "j2", "j3"]
    assert np.allclose(jobs["first_start_s"], record["start_s"] * 10)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs"] == 4 and summary["finished"] == 4
    # sacct --json of the replay reads back as a trace with the same GPUs and durations
    trace = load_trace(str(out / "sacct.json"), "sacct")
    by_name = trace.jobs.set_index("name")
    assert [by_name.loc[f"r{i}", "num_gpus"] for i in range(4)] == [8, 8, 16, 1]
    assert abs(by_name.loc["r1", "duration_s"] - 6) <= 1
    # the simulated Slurm ran the same jobs in the same order
    agreement = json.loads((out / "agreement.json").read_text())
    assert agreement["policy"] == "slurm-backfill" and agreement["jobs_compared"] == 4
    sim = pd.read_parquet(out / "simulated" / "jobs.parquet").set_index("job_id")
    assert sim.loc["j2", "first_start_s"] >= sim.loc["j1", "end_s"]
    assert result["agreement"]["start_diff_p90_abs_s"] < 5
    observed = agreement["observed_runtimes"]  # the same jobs, lasting as long as Slurm recorded them
    assert observed["jobs_compared"] == 4 and observed["mean_run_sim_s"] >= agreement["mean_run_sim_s"]
    assert (out / "simulated" / "jobs-observed-runtimes.parquet").is_file()
