"""Baselines end to end on a real Philly-derived trace (../shared/data/chronus)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.cluster.presets import uniform
from schedlab.policies.registry import make_policy
from schedlab.sim.engine import Simulation
from schedlab.workload import transforms
from schedlab.workload.loaders import load_trace


@pytest.fixture(scope="module")
def philly(shared_data: Path):
    trace = load_trace(shared_data / "chronus" / "trace_job_Philly_MIX2.csv", "philly")
    return transforms.sample(trace, n=3000, seed=0)


def _run(workload, policy: str):
    sim = Simulation(workload, uniform(16, 8), make_policy(policy, rng=np.random.default_rng(0)))
    return sim.run().jobs


def test_oracle_policies_beat_fifo_on_the_philly_trace(philly) -> None:
    jct = {}
    for policy in ("fifo", "sjf", "srtf", "tiresias"):
        jobs = _run(philly, policy)
        assert jobs["finished"].all()
        gpus_time = (jobs["num_gpus"] * jobs["run_s"]).sum()
        assert gpus_time == pytest.approx(jobs["gpu_seconds"].sum())
        jct[policy] = (jobs["end_s"] - jobs["submit_s"]).mean()
    assert jct["sjf"] < jct["fifo"]
    assert jct["srtf"] < jct["sjf"]
    assert jct["tiresias"] < jct["fifo"]
