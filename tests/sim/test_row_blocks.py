"""The engine turns workload rows into jobs a block at a time: every job must carry its own row,
across block boundaries, whatever the block size."""

from __future__ import annotations

import math

import pytest
from simkit import cluster, job, workload

from schedlab.sim import engine
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.sim.job import Job
from schedlab.sim.policy import Context, Policy


class Arrivals(Policy):
    """Starts nothing; keeps every job it is handed."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []

    def on_arrival(self, ctx: Context, job: Job) -> None:
        self.jobs.append(job)


@pytest.mark.parametrize("block", [1, 3, 7, 100])
def test_each_job_carries_its_own_row_across_blocks(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    monkeypatch.setattr(engine, "ROW_BLOCK", block)
    rows = [
        job(f"j{i}", float(i // 2), 1 + i % 3, 10.0 + i, user=f"u{i}", checkpoint_interval_s=math.nan if i % 2 else 60.0 + i)
        for i in range(17)
    ]
    policy = Arrivals()
    Simulation(workload(rows), cluster([4]), policy, config=SimConfig(checkpoint_interval_s=900.0)).run()
    assert [(j.idx, j.id, j.submit, j.num_gpus, j.work, j.user, j.ckpt_interval) for j in policy.jobs] == [
        (i, f"j{i}", float(i // 2), 1 + i % 3, 10.0 + i, f"u{i}", 900.0 if i % 2 else 60.0 + i) for i in range(17)
    ]
