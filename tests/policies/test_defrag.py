"""Defragmentation by migration (policies/migration/defrag.py): a gang job blocked by
fragmentation starts thanks to migration when the gain exceeds the cost, and not otherwise."""

from __future__ import annotations

import io
import math
from types import SimpleNamespace

import numpy as np
import pytest
from rich.console import Console
from simkit import Checked, by_id, cluster, job, make_job, simulate

from schedlab.metrics.summary import summarize
from schedlab.metrics.tables import summary_table
from schedlab.policies.common.placers import Consolidate
from schedlab.policies.migration.defrag import Defrag, expected_wait, node_slots
from schedlab.policies.registry import POLICIES, make_policy
from schedlab.sim.config import SimConfig
from schedlab.sim.job import PENDING, RUNNING

COSTS = dict(checkpoint_s=10.0, restore_s=30.0, restart_s=10.0, checkpoint_interval_s=math.inf)


def fragmented(small_s: float) -> list[dict]:
    """Two 4-GPU nodes: 1-GPU jobs fill both at 0 (consolidate packs s1-s4 on node 0, s5-s8 on
    node 1); s1, s2, s5, s6 end at 100, leaving 2 free GPUs on each node; the others run
    ``small_s`` seconds. A 4-GPU gang job arrives at 50: 4 GPUs are free from 100 on, but no
    node has 4."""
    rows = [job(f"s{i}", 0.0, 1, 100.0 if i in (1, 2, 5, 6) else small_s) for i in range(1, 9)]
    return rows + [job("g", 50.0, 4, 500.0)]


def run(policy: str, small_s: float, model: str = "fixed", **params: object):
    built = make_policy(policy, rng=np.random.default_rng(0), params=POLICIES[policy].parse(params))
    config = SimConfig(checkpoint_model=model, **COSTS)
    checked = Checked(built)
    result = simulate(fragmented(small_s), cluster([4, 4]), checked, config)
    return by_id(result), built


def test_gang_job_is_placed_only_thanks_to_migration() -> None:
    jobs, policy = run("fifo+defrag", small_s=10_000.0)
    assert jobs.loc["g", "first_start_s"] == 100.0  # when 4 GPUs became free, split 2 + 2
    # the two jobs left on node 0 moved to node 1's free GPUs, stalled checkpoint + restore
    assert jobs.loc[["s3", "s4"], "migrations"].tolist() == [1, 1]
    assert jobs.loc[["s3", "s4"], "migration_s"].tolist() == [40.0, 40.0]
    assert jobs.loc[["s3", "s4"], "end_s"].tolist() == [10_040.0, 10_040.0]
    assert jobs["migrations"].sum() == 2 and jobs["lost_work_s"].sum() == 0
    assert policy.report(jobs)["defrag"] == {"repairs": 1, "moves": 2, "declined": 0}
    plain, _ = run("fifo", small_s=10_000.0)
    assert plain.loc["g", "first_start_s"] == 10_000.0  # without migration it waits for a node to empty


def test_no_migration_when_the_cost_exceeds_the_gain() -> None:
    # The small jobs end at 150: the gang job would wait 50 s, a gain of 4 GPUs x 50 s = 200 GPU-s.
    cheap, policy = run("fifo+defrag", small_s=150.0)  # fixed: 2 moves x 1 GPU x 40 s = 80 < 200
    assert cheap.loc["g", "first_start_s"] == 100.0 and cheap["migrations"].sum() == 2
    # kill with no periodic checkpoint: each move loses its 100 s and restarts in 10 s: 220 > 200
    killed, policy = run("fifo+defrag", small_s=150.0, model="kill")
    assert killed["migrations"].sum() == 0 and killed["lost_work_s"].sum() == 0
    assert killed.loc["g", "first_start_s"] == 150.0
    assert policy.report(killed)["defrag"] == {"repairs": 0, "moves": 0, "declined": 1}
    # the same cheap plan, asked to pay back three times its cost (240 > 200): declined
    strict, policy = run("fifo+defrag", small_s=150.0, gain_ratio=3.0)
    assert strict["migrations"].sum() == 0 and strict.loc["g", "first_start_s"] == 150.0


def test_kill_migration_is_taken_when_the_wait_is_long() -> None:
    jobs, _ = run("fifo+defrag", small_s=10_000.0, model="kill")
    # 2 x (10 s + 100 s lost) = 220 GPU-s against 4 GPUs x 9,900 s: moved, losing their work
    assert jobs.loc["g", "first_start_s"] == 100.0
    assert jobs.loc[["s3", "s4"], "lost_work_s"].tolist() == [100.0, 100.0]
    assert jobs.loc[["s3", "s4"], "end_s"].tolist() == [100.0 + 10.0 + 10_000.0] * 2


def test_max_moves_bounds_a_repair() -> None:
    jobs, policy = run("fifo+defrag", small_s=10_000.0, max_moves=1)
    assert jobs["migrations"].sum() == 0 and jobs.loc["g", "first_start_s"] == 10_000.0


def test_node_slots_follow_consolidated_packing() -> None:
    assert node_slots(4, 8) == [4]
    assert node_slots(8, 8) == [8]
    assert node_slots(16, 8) == [8, 8]
    assert node_slots(20, 8) == [8, 8, 4]


def test_wrapper_is_registered_and_named() -> None:
    policy = make_policy("sjf-backfill+defrag", rng=np.random.default_rng(0))
    assert isinstance(policy, Defrag) and policy.name == "sjf-backfill+defrag"
    with pytest.raises(Exception, match="gain_ratio|no parameter"):
        POLICIES["fifo+defrag"].parse({"bogus": 1})


def test_expected_wait_is_the_time_the_readiest_nodes_free() -> None:
    class Ctx:  # two 4-GPU nodes, each with 2 free GPUs and two 1-GPU jobs ending at 30 and 80
        now = 0.0

        class state:
            free = [2, 2]
            node_gpus = [4, 4]

        @staticmethod
        def remaining(j):
            return j.left

    class J:
        def __init__(self, node, left):
            self.alloc, self.left, self.rate, self.stall_until = ((node, (0,)),), left, 1.0, 0.0

    on_node = {0: [J(0, 30.0), J(0, 80.0)], 1: [J(1, 50.0), J(1, 60.0)]}
    assert expected_wait(Ctx, [0, 1], [4], on_node) == 60.0  # node 1 has 4 free at 60, node 0 at 80
    assert expected_wait(Ctx, [0, 1], [4, 4], on_node) == 80.0
    assert expected_wait(Ctx, [0, 1], [3], on_node) == 30.0


def test_a_round_reads_each_waiting_gang_job_once_until_it_waits_again() -> None:
    """The repair looks at the oldest pending gang job of each pool. A round drops the gang jobs
    it finds running, so the next round does not read them again; a job paused later (engine
    callback ``on_stopped``) is read again, in its arrival order."""
    policy = Defrag(make_policy("fifo", rng=np.random.default_rng(0)), Consolidate())
    gangs = [make_job(4, idx=idx) for idx in range(200)]
    read: list[int] = []

    class Active(dict):
        def get(self, idx):
            read.append(idx)
            return super().get(idx)

    ctx = SimpleNamespace(active=Active((g.idx, g) for g in gangs), pool_of=lambda job: "")
    for g in gangs:
        g.state = PENDING
        policy.on_arrival(ctx, g)
    for g in gangs[:150]:
        g.state = RUNNING
    asked: list[int] = []
    policy.blocked = lambda ctx, job: asked.append(job.idx) and False  # nothing to repair
    assert policy.repair(ctx) is False
    assert asked == [150] and read == list(range(151))
    read.clear()
    assert policy.repair(ctx) is False
    assert asked == [150, 150] and read == [150]  # the running ones were dropped
    gangs[7].state = PENDING
    policy.on_stopped(ctx, gangs[7])
    read.clear()
    policy.repair(ctx)
    assert asked[-1] == 7 and read == [7]


class Forgetful(Defrag):
    """Makes the plan again in every blocked round (no plan is remembered)."""

    def plan_holds_until(self, ctx):
        return ctx.now


class PastStalls(Defrag):
    """Remembers a plan past restore stalls' ends, and under ``kill`` (wrong: for the tests below)."""

    def plan_holds_until(self, ctx):
        return math.inf


def counted(policy: Defrag) -> list[int]:
    calls = [0]
    plan = policy.plan

    def wrapper(ctx, job):
        calls[0] += 1
        return plan(ctx, job)

    policy.plan = wrapper
    return calls


def test_a_declined_plan_is_made_once_while_nothing_changes() -> None:
    # g is blocked from 100 to 110 (the small jobs end at 110): a 10 s wait, 4 x 10 = 40 GPU-s of
    # gain against 80 of cost, declined; 4-GPU jobs arriving at 101-105 queue behind it in five
    # more rounds that change nothing, and their plan would be the same.
    rows = fragmented(110.0) + [job(f"w{i}", 100.0 + i, 4, 50.0) for i in range(1, 6)]
    outcomes = []
    for cls in (Defrag, Forgetful):
        policy = cls(make_policy("fifo", rng=np.random.default_rng(0)), Consolidate())
        calls = counted(policy)
        jobs = by_id(simulate(rows, cluster([4, 4]), Checked(policy), SimConfig(**COSTS)))
        outcomes.append((jobs, policy.report(jobs)["defrag"], calls[0]))
    (jobs, report, calls), (again, report_again, calls_again) = outcomes
    assert jobs.loc["g", "first_start_s"] == 110.0 and jobs["migrations"].sum() == 0
    assert report == report_again == {"repairs": 0, "moves": 0, "declined": 6}  # one per blocked round
    assert calls == 1 and calls_again == 6
    assert jobs.equals(again)


def random_rows(seed: int, n: int = 60) -> list[dict]:
    rng = np.random.default_rng(seed)
    t = 0.0
    out = []
    for i in range(n):
        t += float(rng.exponential(40.0))
        gpus = int(rng.choice([1, 1, 1, 2, 3, 4, 8]))
        out.append(job(f"j{i}", round(t), gpus, float(round(rng.exponential(400.0)) + 1)))
    return out


@pytest.mark.parametrize(("inner", "seed", "config"), [
    # srtf pauses jobs, which stall on restart; here a restore stall ends between two rounds of
    # one state, which makes its job movable, and the plan made again migrates it
    ("srtf", 7, SimConfig(checkpoint_s=10.0, restore_s=30.0, restart_s=10.0)),
    # under kill each job's cost falls back at its periodic checkpoints: a declined plan may pass later
    ("fifo", 2, SimConfig(checkpoint_model="kill", checkpoint_interval_s=120.0, checkpoint_s=10.0, restore_s=30.0,
                          restart_s=10.0)),
])  # fmt: skip
def test_remembered_plans_decide_as_plans_made_in_every_round(inner: str, seed: int, config: SimConfig) -> None:
    def run(cls):
        policy = cls(make_policy(inner, rng=np.random.default_rng(0)), Consolidate())
        jobs = by_id(simulate(random_rows(seed), cluster([4, 4, 8, 8]), Checked(policy), config))
        return jobs, policy.report(jobs)["defrag"]

    remembered, forgetful = run(Defrag), run(Forgetful)
    assert remembered[0].equals(forgetful[0]) and remembered[1] == forgetful[1]
    assert remembered[1]["repairs"] > 0
    assert not run(PastStalls)[0].equals(remembered[0])  # the workload needs the rule it checks


def test_the_run_summary_counts_the_migrations() -> None:
    policy = make_policy("fifo+defrag", rng=np.random.default_rng(0))
    result = simulate(fragmented(10_000.0), cluster([4, 4]), Checked(policy), SimConfig(**COSTS))
    summary = summarize(result.jobs, result.timeseries, policy="fifo+defrag")
    assert summary["migrations"] == 2 == policy.report(result.jobs)["defrag"]["moves"]
    console = Console(width=80, file=io.StringIO())
    console.print(summary_table(summary))
    assert any(line.split() == ["migrations", "2"] for line in console.file.getvalue().splitlines())
