"""The service in the simulator (no daemons): a ranking reorders the simulated Slurm's queue
through SiteFactor, as ``scontrol update`` does on the real one."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from schedlab.slurm import agreement as ag
from schedlab.slurm.conf import Layout, SandboxSpec, read_slurm_conf, slurm_conf_text


@pytest.fixture
def conf(tmp_path):
    layout = Layout(tmp_path)
    layout.slurm_conf.parent.mkdir(parents=True, exist_ok=True)
    layout.slurm_conf.write_text(slurm_conf_text(SandboxSpec(nodes=2), layout))
    return read_slurm_conf(layout.slurm_conf)


def record(conf, jobs: list[tuple[float, float]]) -> pd.DataFrame:
    """A replay record of whole-node (8-GPU) jobs: (submitted at, sleep) each."""
    return pd.DataFrame([{
        "job_id": str(i), "name": f"job{i}", "user": "root", "submitted_at": sub, "sleep_s": sleep, "nodes": 1,
        "gpus_per_node": 8, "num_gpus": 8, "partition": conf.default_partition, "account": "", "tenant": "t",
        "time_limit_min": math.ceil((sleep + 1) / 60), "start_s": np.nan, "end_s": np.nan,
    } for i, (sub, sleep) in enumerate(jobs)])  # fmt: skip


def starts(jobs: pd.DataFrame) -> dict[str, float]:
    return dict(zip(jobs["job_id"], jobs["first_start_s"]))


def test_the_service_moves_short_jobs_ahead_as_its_ranking_says(conf):
    # two long jobs fill both nodes; two 200 s jobs and then two 10 s jobs wait behind them
    rec = record(conf, [(0, 100), (0, 100), (1, 200), (2, 200), (3, 10), (4, 10)])
    alone, _ = ag.simulate(rec, conf)
    served, report = ag.simulate_served(rec, conf, policy="sjf", interval_s=5, first_s=0, epoch_s=1e9)
    a, s = starts(alone), starts(served)
    assert a["2"] < a["4"] and a["3"] < a["5"]  # Slurm alone: submit order
    assert s["4"] == s["5"] == 100.0  # the short ones take the nodes the long ones free
    assert s["2"] > s["4"] and s["3"] > s["5"]
    assert report["service_cycles"] >= 20 and report["service_site_factor_writes"] == 4
    assert served["end_s"].sub(served["submit_s"]).mean() < alone["end_s"].sub(alone["submit_s"]).mean()


def test_the_first_cycle_waits_for_its_phase(conf):
    # the service's first cycle after the long jobs end: until then Slurm's order stands
    rec = record(conf, [(0, 100), (0, 100), (1, 200), (2, 200), (3, 10), (4, 10)])
    served, report = ag.simulate_served(rec, conf, policy="sjf", interval_s=500, first_s=150, epoch_s=1e9)
    assert starts(served)["2"] == 100.0 and report["service_cycles"] >= 1
