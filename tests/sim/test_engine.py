"""Engine unit tests on hand-made workloads and clusters whose answers are computed by hand."""

from __future__ import annotations

import math

import pytest
from simkit import Scripted, by_id, check_state, cluster, job, simulate, workload

from schedlab.errors import ActionError, ConfigError, InputError
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation


def test_job_finishes_at_start_plus_duration() -> None:
    script = {20.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 2)])}
    out = by_id(simulate([job("a", 5.0, 2, 100.0)], cluster([2]), Scripted(script))).loc["a"]
    assert out.first_start_s == 20.0 and out.end_s == 120.0 and out.finished
    assert out.queue_s == 15.0 and out.run_s == 100.0
    assert out.gpu_seconds == 200.0 and out.work_done_s == 100.0 and out.lost_work_s == 0.0


def test_colocation_slows_both_and_partner_speeds_up_when_one_leaves() -> None:
    script = {
        0.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
        20.0: lambda ctx, jobs: ctx.colocate(jobs["b"], jobs["a"]),
    }
    cfg = SimConfig(checkpoint_s=0, restore_s=0, restart_s=0, colocation_factor=0.5)
    res = simulate([job("a", 0, 1, 100.0), job("b", 0, 1, 100.0)], cluster([1], max_jobs_per_gpu=2), Scripted(script), cfg)
    out = by_id(res)
    # a: 20 s alone, then 80 s of work at half speed -> 180. b: 80 work by 180, then 20 alone.
    assert out.loc["a", "end_s"] == pytest.approx(180.0)
    assert out.loc["b", "end_s"] == pytest.approx(200.0)
    assert out.loc["b", "queue_s"] == pytest.approx(20.0)
    assert out.loc["b", "run_s"] == pytest.approx(180.0)
    assert res.timeseries["gpus_busy"].max() == 1.0


def test_end_time_is_the_last_change_not_a_stale_finish_event() -> None:
    script = {
        0.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
        20.0: lambda ctx, jobs: ctx.colocate(jobs["b"], jobs["a"]),  # a's finish moves from 100 to 180
        60.0: lambda ctx, jobs: ctx.preempt(jobs["b"]),  # a alone again: 60 left at 60, done at 120
    }
    cfg = SimConfig(checkpoint_s=0, restore_s=0, restart_s=0, colocation_factor=0.5)
    res = simulate([job("a", 0, 1, 100.0), job("b", 0, 1, 1000.0)], cluster([1], max_jobs_per_gpu=2), Scripted(script), cfg)
    assert by_id(res).loc["a", "end_s"] == pytest.approx(120.0)
    assert res.meta["end_time_s"] == pytest.approx(120.0)  # a's stale finish events (180, b's) end nothing


def test_colocation_is_refused_beyond_max_jobs_per_gpu() -> None:
    def act(ctx: Simulation, jobs: dict) -> None:
        ctx.start(jobs["a"], [(0, 1)])
        ctx.colocate(jobs["b"], jobs["a"])
        ctx.colocate(jobs["c"], jobs["a"])

    rows = [job(x, 0, 1, 10.0) for x in "abc"]
    with pytest.raises(ActionError, match=r"policy 'scripted', job 'c'.*max_jobs_per_gpu"):
        simulate(rows, cluster([1], max_jobs_per_gpu=2), Scripted({0.0: act}))


def test_preempt_loses_work_since_last_checkpoint_and_pays_restart() -> None:
    script = {
        0.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
        120.0: lambda ctx, jobs: ctx.preempt(jobs["a"]),
        150.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
    }
    cfg = SimConfig(checkpoint_s=10, restore_s=5, restart_s=30, checkpoint_interval_s=50)
    out = by_id(simulate([job("a", 0, 1, 200.0)], cluster([1]), Scripted(script), cfg)).loc["a"]
    # Checkpoint at 100 of 120 done: 20 lost; restart at 150 stalls until 180 (restart_s, not
    # restore_s), then 100 left.
    assert out.lost_work_s == pytest.approx(20.0)
    assert out.end_s == pytest.approx(280.0)
    assert out.work_done_s == pytest.approx(220.0)
    assert out.run_s == pytest.approx(250.0) and out.queue_s == pytest.approx(30.0)
    assert out.preemptions == 1


@pytest.mark.parametrize(("row_interval", "lost"), [(math.nan, 120.0), (50.0, 20.0), (0.0, 0.0)])
def test_preempt_uses_row_checkpoint_interval_over_engine_default(row_interval: float, lost: float) -> None:
    script = {
        0.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
        120.0: lambda ctx, jobs: ctx.preempt(jobs["a"]),
        150.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
    }
    cfg = SimConfig(checkpoint_s=0, restore_s=0, restart_s=0, checkpoint_interval_s=math.inf)
    rows = [job("a", 0, 1, 200.0, checkpoint_interval_s=row_interval)]
    out = by_id(simulate(rows, cluster([1]), Scripted(script), cfg)).loc["a"]
    assert out.lost_work_s == pytest.approx(lost)
    assert out.end_s == pytest.approx(150.0 + 200.0 - 120.0 + lost)


def test_pause_loses_nothing_and_pays_checkpoint_plus_restore() -> None:
    script = {
        0.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
        120.0: lambda ctx, jobs: ctx.pause(jobs["a"]),
        150.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
    }
    cfg = SimConfig(checkpoint_s=10, restore_s=30, checkpoint_interval_s=50)
    out = by_id(simulate([job("a", 0, 1, 200.0)], cluster([1]), Scripted(script), cfg)).loc["a"]
    assert out.lost_work_s == 0.0
    assert out.end_s == pytest.approx(150.0 + 40.0 + 80.0)
    assert out.work_done_s == pytest.approx(200.0) and out.preemptions == 1


def test_migrate_stalls_and_loses_nothing() -> None:
    seen: dict[str, object] = {}

    def move(ctx: Simulation, jobs: dict) -> None:
        ctx.migrate(jobs["a"], [(1, 1)])
        seen["free"] = list(ctx.state.free)
        seen["nodes"] = jobs["a"].nodes

    script = {0.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]), 50.0: move}
    cfg = SimConfig(checkpoint_s=10, restore_s=30, checkpoint_interval_s=20)
    out = by_id(simulate([job("a", 0, 1, 200.0)], cluster([1, 1]), Scripted(script), cfg)).loc["a"]
    assert seen == {"free": [1, 0], "nodes": (1,)}
    assert out.end_s == pytest.approx(50.0 + 40.0 + 150.0)
    assert out.lost_work_s == 0.0 and out.migrations == 1 and out.preemptions == 0


def test_untyped_job_runs_at_the_speed_of_its_gpu_type() -> None:
    spec = cluster([1, 1], types=["fast", "slow"], speeds={"fast": 1.0, "slow": 0.5})
    script = {
        0.0: lambda ctx, jobs: (ctx.start(jobs["u"], [(1, 1)]), ctx.start(jobs["f"], [(0, 1)])),
        400.0: lambda ctx, jobs: ctx.start(jobs["s"], [(1, 1)]),
    }
    rows = [job("u", 0, 1, 100.0), job("f", 0, 1, 100.0), job("s", 0, 1, 100.0, gpu_type="slow")]
    out = by_id(simulate(rows, spec, Scripted(script)))
    assert out.loc["u", "end_s"] == pytest.approx(200.0)
    assert out.loc["f", "end_s"] == pytest.approx(100.0)
    assert out.loc["s", "end_s"] == pytest.approx(500.0)  # native type: full speed


def test_multi_type_allocation_is_bounded_by_the_slowest_gpu() -> None:
    spec = cluster([1, 1], types=["fast", "slow"], speeds={"fast": 2.0, "slow": 0.5})
    script = {0.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1), (1, 1)])}
    out = by_id(simulate([job("a", 0, 2, 100.0)], spec, Scripted(script))).loc["a"]
    assert out.end_s == pytest.approx(200.0)


def test_cross_node_factor_slows_only_multi_node_jobs() -> None:
    script = {0.0: lambda ctx, jobs: (ctx.start(jobs["a"], [(0, 1), (1, 1)]), ctx.start(jobs["b"], [(2, 2)]))}
    cfg = SimConfig(checkpoint_s=0, restore_s=0, restart_s=0, cross_node_factor=0.8)
    out = by_id(simulate([job("a", 0, 2, 80.0), job("b", 0, 2, 80.0)], cluster([1, 1, 2]), Scripted(script), cfg))
    assert out.loc["a", "end_s"] == pytest.approx(100.0)
    assert out.loc["b", "end_s"] == pytest.approx(80.0)


def test_fractional_jobs_share_a_gpu_without_slowdown() -> None:
    seen: dict[str, object] = {}

    def act(ctx: Simulation, jobs: dict) -> None:
        ctx.start(jobs["a"], [(0, 1)])
        ctx.start(jobs["b"], [(0, 1)])
        seen["gpus"] = (jobs["a"].alloc, jobs["b"].alloc)
        seen["free"] = ctx.state.free[0]
        check_state(ctx)
        with pytest.raises(ActionError, match="job 'c'.*no room"):
            ctx.start(jobs["c"], [(0, 1)])

    rows = [job("a", 0, 0.5, 100.0), job("b", 0, 0.5, 60.0), job("c", 0, 0.6, 10.0)]
    res = simulate(rows, cluster([1]), Scripted({0.0: act}))
    out = by_id(res)
    assert seen["gpus"][0] == seen["gpus"][1] and seen["free"] == 0
    assert out.loc["a", "end_s"] == 100.0 and out.loc["b", "end_s"] == 60.0
    assert res.timeseries["gpus_busy"].iloc[0] == pytest.approx(1.0)


class StartOnBoot(Scripted):
    """Starts job "a" on the node that has just booted."""

    def on_node_on(self, ctx: Simulation, node: int) -> None:
        ctx.start(self.jobs["a"], [(node, 1)])


def test_power_off_and_on_with_boot_delay() -> None:
    def wake(ctx: Simulation, jobs: dict) -> None:
        with pytest.raises(ActionError, match="job 'a'.*powered off"):
            ctx.start(jobs["a"], [(0, 1)])
        ctx.power_on(0)

    policy = StartOnBoot({0.0: lambda ctx, jobs: ctx.power_off(0), 50.0: wake})
    cfg = SimConfig(checkpoint_s=0, restore_s=0, restart_s=0, boot_s=100)
    res = simulate([job("a", 50, 1, 30.0)], cluster([1]), policy, cfg)
    out = by_id(res).loc["a"]
    assert out.first_start_s == 150.0 and out.end_s == 180.0 and out.queue_s == 100.0
    ts = res.timeseries.set_index("time_s")
    assert ts.loc[0.0, "nodes_on"] == 0 and ts.loc[0.0, "gpus_total"] == 0
    assert ts.loc[150.0, "nodes_on"] == 1


def test_set_timer_calls_on_timer_at_the_right_time() -> None:
    def arm(ctx: Simulation, jobs: dict) -> None:
        ctx.set_timer(7.5, "x")
        ctx.set_timer(42.0, "y")

    policy = Scripted({1.0: arm})
    simulate([job("a", 0, 1, 1.0)], cluster([1]), policy)
    assert policy.timers == [(1.0, ("script", 1.0)), (7.5, "x"), (42.0, "y")]


def test_horizon_reports_unfinished_jobs_up_to_the_horizon() -> None:
    script = {0.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)])}
    cfg = SimConfig(checkpoint_s=0, restore_s=0, restart_s=0, horizon_s=100.0)
    rows = [job("a", 0, 1, 500.0), job("b", 10, 1, 5.0), job("c", 200, 1, 5.0)]
    res = simulate(rows, cluster([1]), Scripted(script), cfg)
    out = by_id(res)
    assert not out["finished"].any()
    assert out.loc["a", "run_s"] == pytest.approx(100.0) and out.loc["a", "work_done_s"] == pytest.approx(100.0)
    assert out.loc["b", "queue_s"] == pytest.approx(90.0)
    assert math.isnan(out.loc["c", "queue_s"]) and math.isnan(out.loc["c", "first_start_s"])
    assert res.meta["end_time_s"] == 100.0 and res.meta["not_arrived"] == 1


# ----- impossible actions ---------------------------------------------------------------------


def _start_twice(ctx: Simulation, jobs: dict) -> None:
    ctx.start(jobs["a"], [(0, 1)])
    ctx.start(jobs["a"], [(1, 1)])


def _overcommit(ctx: Simulation, jobs: dict) -> None:
    ctx.start(jobs["a"], [(0, 1)])
    ctx.start(jobs["b"], [(0, 2)])


def _busy_power_off(ctx: Simulation, jobs: dict) -> None:
    ctx.start(jobs["a"], [(0, 1)])
    ctx.power_off(0)


TWO_BY_TWO = cluster([2, 2])
ERRORS = {
    "overcommitted node": (TWO_BY_TWO, [job("a", 0, 1, 9), job("b", 0, 2, 9)], _overcommit, "job 'b'.*1 free GPUs"),
    "start a running job": (TWO_BY_TWO, [job("a", 0, 1, 9)], _start_twice, "job 'a'.*running"),
    "wrong gpu type": (
        cluster([2, 2], types=["A", "B"]),
        [job("a", 0, 1, 9, gpu_type="B")],
        lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
        "job 'a'.*needs B",
    ),
    "wrong pool": (
        cluster([2, 2], pools=["x", "y"], tenants={"x": None, "y": None}, partitioned=True),
        [job("a", 0, 1, 9, tenant="x")],
        lambda ctx, jobs: ctx.start(jobs["a"], [(1, 1)]),
        "job 'a'.*pool 'y'",
    ),
    "gang split": (
        cluster([3, 3]),
        [job("a", 0, 4, 9, gpus_per_worker=2)],
        lambda ctx, jobs: ctx.start(jobs["a"], [(0, 3), (1, 1)]),
        "job 'a'.*gang workers",
    ),
    "partial allocation": (
        TWO_BY_TWO,
        [job("a", 0, 4, 9)],
        lambda ctx, jobs: ctx.start(jobs["a"], [(0, 2)]),
        "job 'a'.*all or nothing",
    ),
    "power off a busy node": (TWO_BY_TWO, [job("a", 0, 1, 9)], _busy_power_off, "node 0 is not idle"),
    "colocate without sharing": (
        TWO_BY_TWO,
        [job("a", 0, 1, 9), job("b", 0, 1, 9)],
        lambda ctx, jobs: (ctx.start(jobs["a"], [(0, 1)]), ctx.colocate(jobs["b"], jobs["a"])),
        "job 'b'.*max_jobs_per_gpu",
    ),
    "timer in the past": (TWO_BY_TWO, [job("a", 0, 1, 9)], lambda ctx, jobs: ctx.set_timer(4.0), "in the past"),
    "preempt a pending job": (TWO_BY_TWO, [job("a", 0, 1, 9)], lambda ctx, jobs: ctx.preempt(jobs["a"]), "job 'a'.*pending"),
    "migrate a pending job": (
        TWO_BY_TWO,
        [job("a", 0, 1, 9)],
        lambda ctx, jobs: ctx.migrate(jobs["a"], [(0, 1)]),
        "job 'a'.*pending",
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_impossible_actions_raise_action_error_naming_policy_and_job(case: str) -> None:
    spec, rows, act, pattern = ERRORS[case]
    with pytest.raises(ActionError, match=rf"^policy 'scripted'.*{pattern}") as info:
        simulate(rows, spec, Scripted({5.0: act}))
    assert info.value.policy == "scripted"
    if "job '" in pattern:
        assert info.value.job_id == pattern.split("'")[1]


# ----- workload checks at construction --------------------------------------------------------


def test_job_bigger_than_the_cluster_is_rejected_naming_row_and_field() -> None:
    rows = [job("a", 0, 2, 1.0), job("b", 1, 5, 1.0)]
    with pytest.raises(InputError, match="job 'b' asks for 5 GPUs") as info:
        Simulation(workload(rows), cluster([2, 2]), Scripted({}))
    assert (info.value.row, info.value.field) == (2, "num_gpus")


def test_unknown_gpu_type_is_rejected_naming_row_and_field() -> None:
    rows = [job("a", 0, 1, 1.0, gpu_type="G"), job("b", 1, 1, 1.0, gpu_type="H100")]
    with pytest.raises(InputError, match="unknown GPU type 'H100'") as info:
        Simulation(workload(rows), cluster([2]), Scripted({}))
    assert (info.value.row, info.value.field) == (2, "gpu_type")


def test_job_bigger_than_its_partition_is_rejected_naming_row() -> None:
    spec = cluster([4, 2], pools=["x", "y"], tenants={"x": None, "y": None}, partitioned=True)
    rows = [job("a", 0, 4, 1.0, tenant="x"), job("b", 1, 3, 1.0, tenant="y")]
    with pytest.raises(ConfigError, match="row 2: job 'b' of tenant 'y' needs 3 GPUs"):
        Simulation(workload(rows), spec, Scripted({}))


def test_partition_check_names_the_row_of_the_offending_gpu_type() -> None:
    spec = cluster([4, 2], types=["A", "B"], pools=["x", "x"], tenants={"x": None}, partitioned=True)
    rows = [job("a", 0, 3, 1.0, tenant="x", gpu_type="A"), job("b", 1, 3, 1.0, tenant="x", gpu_type="B")]
    with pytest.raises(ConfigError, match="row 2: job 'b'"):
        Simulation(workload(rows), spec, Scripted({}))


def test_job_bigger_than_its_gpu_type_in_a_shared_pool_is_rejected() -> None:
    rows = [job("a", 0, 3, 1.0, gpu_type="B")]
    with pytest.raises(ConfigError, match="row 1: job 'a'.*needs 3 GPUs"):
        Simulation(workload(rows), cluster([4, 2], types=["A", "B"]), Scripted({}))


def test_bad_configs_are_rejected() -> None:
    with pytest.raises(ConfigError, match="checkpoint_interval_s"):
        SimConfig(checkpoint_interval_s=0)
    with pytest.raises(ConfigError, match="perf factors"):
        Simulation(workload([job("a", 0, 1, 1.0)]), cluster([1]), Scripted({}), config=SimConfig(cross_node_factor=0))


def test_resize_starts_and_restarts_a_job_on_any_gpu_count() -> None:
    seen: dict[str, object] = {}

    def grow(ctx: Simulation, jobs: dict) -> None:
        ctx.resize(jobs["a"], [(0, 2), (1, 2)])  # reuses its own GPUs on node 0
        check_state(ctx)
        seen["free"], seen["held"] = list(ctx.state.free), jobs["a"].held_gpus

    script = {0.0: lambda ctx, jobs: ctx.resize(jobs["a"], [(0, 1)]), 50.0: grow}
    cfg = SimConfig(checkpoint_s=10, restore_s=30)
    out = by_id(simulate([job("a", 0, 2, 200.0)], cluster([2, 2]), Scripted(script), cfg)).loc["a"]
    assert seen == {"free": [0, 0], "held": 4}
    # the base perf model's rate does not depend on the GPU count: 50 s of work, a 40 s stall, 150 s
    assert out.first_start_s == 0.0 and out.end_s == pytest.approx(50.0 + 40.0 + 150.0)
    assert out.migrations == 1 and out.lost_work_s == 0.0
    assert out.gpu_seconds == pytest.approx(1 * 50.0 + 4 * 190.0)  # held GPUs, stall included


def test_resize_refuses_a_colocated_or_fractional_job_and_an_overfull_node() -> None:
    def bad_share(ctx: Simulation, jobs: dict) -> None:
        ctx.start(jobs["a"], [(0, 1)])
        ctx.colocate(jobs["b"], jobs["a"])
        ctx.resize(jobs["b"], [(1, 1)])

    with pytest.raises(ActionError, match="runs alone"):
        simulate([job("a", 0, 1, 10.0), job("b", 0, 1, 10.0)], cluster([1, 1], max_jobs_per_gpu=2),
                 Scripted({0.0: bad_share}))  # fmt: skip
    with pytest.raises(ActionError, match="runs alone"):
        simulate([job("f", 0, 0.5, 10.0)], cluster([1]), Scripted({0.0: lambda c, j: c.resize(j["f"], [(0, 1)])}))
    with pytest.raises(ActionError, match="has 2 free GPUs, asked for 3"):
        simulate([job("a", 0, 1, 10.0)], cluster([2]), Scripted({0.0: lambda c, j: c.resize(j["a"], [(0, 3)])}))
