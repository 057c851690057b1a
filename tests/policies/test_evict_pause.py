"""Spot victims paused instead of killed (``evict=pause``) in gfs, yarn-cs-preempt and fgd,
computed by hand under each checkpoint cost model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from simkit import cluster, job, workload

from schedlab.errors import ConfigError
from schedlab.policies.gfs import build_gfs
from schedlab.policies.registry import POLICIES, make_policy
from schedlab.sim.checkpoint import REFERENCE_MEM_GIB
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation

COSTS = dict(checkpoint_s=10.0, restore_s=30.0, restart_s=5.0, checkpoint_interval_s=100.0)
# spot "s" (4 GPUs, 1,000 s of work, three times the reference memory) runs from 0 on the only
# node; HP "h" (4 GPUs, 100 s) arrives at 250 and takes the node: "s" is evicted after 250 s of
# work, its last periodic checkpoint at 200 s.
ROWS = [
    job("s", 0.0, 4, 1000.0, priority_class="spot", gpu_mem_gib=3 * REFERENCE_MEM_GIB),
    job("h", 250.0, 4, 100.0, priority_class="hp"),
]
RUN_BEFORE = 250.0
# (evict, cost model) -> (work lost, remaining work at the restart, stall at the restart)
EXPECTED = {
    ("kill", "fixed"): (50.0, 800.0, 5.0),  # back to the checkpoint at 200; restart_s
    ("kill", "transparent"): (50.0, 800.0, 5.0),  # an eviction is a kill under every model
    ("pause", "fixed"): (0.0, 750.0, 10.0 + 30.0),  # checkpoint_s + restore_s
    ("pause", "transparent"): (0.0, 750.0, (10.0 + 30.0) * 3 / 1.5),  # x memory / speedup
    ("pause", "kill"): (50.0, 800.0, 5.0),  # under the kill model a pause is a kill
}


def run(policy: str, evict: str, model: str) -> pd.Series:
    config = SimConfig(checkpoint_model=model, transparent_speedup=1.5, **COSTS)
    if policy == "gfs":  # quota = idle + all spot GPUs, so that the case exercises PTS, not SQA
        chosen = build_gfs("gfs", {"forecaster": "weekly-peak", "sa_rule": "all", "evict": evict})
    else:
        chosen = make_policy(policy, rng=np.random.default_rng(0), params=POLICIES[policy].parse({"evict": evict}))
    jobs = Simulation(workload(ROWS), cluster([4]), chosen, config=config).run().jobs.set_index("job_id")
    assert jobs["finished"].all() and jobs.loc["h", "first_start_s"] == 250.0
    return jobs.loc["s"]


@pytest.mark.parametrize("policy", ["gfs", "yarn-cs-preempt", "fgd"])
@pytest.mark.parametrize(("evict", "model"), list(EXPECTED))
def test_a_paused_victim_loses_no_work_and_resumes_where_it_stopped(policy: str, evict: str, model: str) -> None:
    lost, remaining, stall = EXPECTED[(evict, model)]
    s = run(policy, evict, model)
    assert s["preemptions"] == 1
    assert s["lost_work_s"] == pytest.approx(lost)
    # the second run: the stall, then exactly the work left at the stop (nothing redone after a pause)
    assert s["run_s"] - RUN_BEFORE == pytest.approx(stall + remaining)
    assert s["work_done_s"] == pytest.approx(1000.0 + lost)
    assert s["pause_s"] + s["restore_s"] == pytest.approx(stall)


def test_yarn_cs_preempt_resumes_the_paused_victim_when_the_hp_job_ends() -> None:
    # h ends at 350; s restarts at once: 350 + stall + remaining
    assert run("yarn-cs-preempt", "kill", "fixed")["end_s"] == pytest.approx(350.0 + 5.0 + 800.0)
    assert run("yarn-cs-preempt", "pause", "fixed")["end_s"] == pytest.approx(350.0 + 40.0 + 750.0)


def test_the_default_is_kill() -> None:
    assert make_policy("yarn-cs-preempt", rng=np.random.default_rng(0)).evict_mode == "kill"
    assert make_policy("fgd", rng=np.random.default_rng(0)).evict_mode == "kill"
    assert build_gfs("gfs", {"forecaster": "weekly-peak"}).pts.evict == "kill"


def test_a_paused_gfs_victim_still_counts_as_an_eviction() -> None:
    policy = build_gfs("gfs", {"forecaster": "weekly-peak", "sa_rule": "all", "evict": "pause"})
    result = Simulation(workload(ROWS), cluster([4]), policy, config=SimConfig(**COSTS)).run()
    report = policy.report(result.jobs)["gfs"]
    assert (report["evict"], report["evictions"], report["slo_violations"]) == ("pause", 1, 1)
    assert sum(r.evicted for r in policy.runs.values()) == 1  # e of eq. 11


@pytest.mark.parametrize("policy", ["gfs", "yarn-cs-preempt", "fgd"])
def test_an_unknown_evict_mode_is_refused(policy: str) -> None:
    with pytest.raises(ConfigError, match="evict must be one of kill, pause"):
        if policy == "gfs":
            build_gfs("gfs", {"forecaster": "weekly-peak", "evict": "nap"})
        else:
            POLICIES[policy].parse({"evict": "nap"})
