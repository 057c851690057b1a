"""The checkpoint cost models (schedlab.sim.checkpoint): pause, restore and migration times and
lost work, computed by hand, and the per-job cost columns of the jobs table."""

from __future__ import annotations

import pandas as pd
import pytest
from simkit import Scripted, by_id, cluster, job, simulate

from schedlab.errors import ConfigError
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.sim import iteration
from schedlab.sim.checkpoint import REFERENCE_MEM_GIB, CheckpointModel
from schedlab.sim.config import SimConfig
from schedlab.sim.job import Job

COSTS = dict(checkpoint_s=10.0, restore_s=30.0, restart_s=5.0, checkpoint_interval_s=100.0)
MEM = 3 * REFERENCE_MEM_GIB  # a job with three times the reference memory: costs x3


def config(model: str, speedup: float = 1.5) -> SimConfig:
    return SimConfig(checkpoint_model=model, transparent_speedup=speedup, **COSTS)


def pause_run(cost_model: str, **extra: object) -> pd.Series:
    """A 1,000 s job started at 0, paused at 250, started again at 300."""
    script = {
        0.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
        250.0: lambda ctx, jobs: ctx.pause(jobs["a"]),
        300.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
    }
    rows = [job("a", 0, 1, 1000.0, gpu_mem_gib=MEM, **extra)]
    return by_id(simulate(rows, cluster([1]), Scripted(script), config(cost_model))).loc["a"]


def migrate_run(model: str) -> tuple[pd.Series, tuple[float, float]]:
    """A 1,000 s job started on node 0 at 0 and moved to node 1 at 250; also what
    ``ctx.migration_cost`` said just before the move."""
    seen: list[tuple[float, float]] = []

    def move(ctx, jobs) -> None:
        seen.append(ctx.migration_cost(jobs["a"]))
        ctx.migrate(jobs["a"], [(1, 1)])

    script = {0.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]), 250.0: move}
    rows = [job("a", 0, 1, 1000.0, gpu_mem_gib=MEM)]
    return by_id(simulate(rows, cluster([1, 1]), Scripted(script), config(model))).loc["a"], seen[0]


def test_fixed_pause_is_the_flat_checkpoint_and_restore() -> None:
    out = pause_run("fixed")
    assert (out.pause_s, out.restore_s, out.migration_s) == (10.0, 30.0, 0.0)
    assert out.end_s == pytest.approx(300 + 40 + 750) and out.lost_work_s == 0.0


def test_transparent_pause_scales_with_memory_over_the_speedup() -> None:
    out = pause_run("transparent")
    # pause 10 s x 3 / 1.5 = 20 s, restore 30 s x 3 / 1.5 = 60 s
    assert out.pause_s == pytest.approx(20.0) and out.restore_s == pytest.approx(60.0)
    assert out.end_s == pytest.approx(300 + 80 + 750) and out.lost_work_s == 0.0


def test_framework_pause_waits_half_an_iteration_then_writes_the_whole_state() -> None:
    out = pause_run("framework", model="ResNet18")
    _, batch = iteration.assign("a", 0, "ResNet18")  # the batch drawn for job "a", seed 0
    t_iter = 1.371e-02 + 9.085e-05 * batch  # Eq. 1 on one GPU (no all-reduce): the catalogue's ResNet18
    assert out.pause_s == pytest.approx(0.5 * t_iter + 10.0 * 3)
    assert out.restore_s == pytest.approx(30.0 * 3)
    assert out.end_s == pytest.approx(300 + 0.5 * t_iter + 30 + 90 + 750)


def test_kill_pause_loses_the_work_since_the_last_checkpoint() -> None:
    out = pause_run("kill")
    # checkpoints every 100 s of work: paused at 250, resumes from 200, 50 s lost; restart 5 s
    assert out.lost_work_s == pytest.approx(50.0)
    assert (out.pause_s, out.restore_s) == (0.0, 5.0)
    assert out.end_s == pytest.approx(300 + 5 + 800)
    assert out.preemptions == 1


@pytest.mark.parametrize(
    ("model", "stall", "lost"),
    [("fixed", 40.0, 0.0), ("transparent", 80.0, 0.0), ("kill", 5.0, 50.0)],
)
def test_migration_cost_per_model(model: str, stall: float, lost: float) -> None:
    out, quoted = migrate_run(model)
    assert quoted == pytest.approx((stall, lost))
    assert out.migration_s == pytest.approx(stall) and out.lost_work_s == pytest.approx(lost)
    assert out.end_s == pytest.approx(250 + stall + 750 + lost)
    assert out.migrations == 1 and out.preemptions == 0


def test_eviction_is_a_kill_under_every_model() -> None:
    for model in ("fixed", "framework", "transparent"):
        script = {
            0.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
            250.0: lambda ctx, jobs: ctx.preempt(jobs["a"]),
            300.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 1)]),
        }
        rows = [job("a", 0, 1, 1000.0, gpu_mem_gib=MEM)]
        out = by_id(simulate(rows, cluster([1]), Scripted(script), config(model))).loc["a"]
        assert out.lost_work_s == pytest.approx(50.0) and out.restore_s == 5.0 and out.pause_s == 0.0
        assert out.end_s == pytest.approx(300 + 5 + 800)


def test_default_memory_is_the_catalogue_draw_of_the_job() -> None:
    model = CheckpointModel("transparent", checkpoint_s=10, restore_s=30, restart_s=5, seed=7)
    j = Job(0, "job-42", 0.0, "", "t", "", "default", 8, float("nan"), "", 100.0, 1800.0, "VGG", float("nan"))
    _, batch = iteration.assign("job-42", 7, "VGG")
    assert batch in (32, 64, 128)
    assert model.mem_gib(j) == pytest.approx((3183 + 6.30 * batch) / 1024)  # VGG: base + per-sample x batch
    other = Job(1, "job-42", 0.0, "", "t", "", "default", 1, float("nan"), "", 100.0, 1800.0, "", float("nan"))
    drawn, drawn_batch = iteration.assign("job-42", 7)
    assert model.mem_gib(other) == pytest.approx(iteration.memory_mib(iteration.CATALOGUE[drawn], drawn_batch) / 1024)
    same_seed = CheckpointModel("kill", checkpoint_s=0, restore_s=0, restart_s=0, seed=7)
    assert model.mem_gib(other) == same_seed.mem_gib(other)  # the draw depends on job and seed only
    given = Job(2, "x", 0.0, "", "t", "", "default", 1, float("nan"), "", 100.0, 1800.0, "VGG", float("nan"), 12.5)
    assert model.mem_gib(given) == 12.5


def test_reference_memory_is_the_mean_of_the_default_draw() -> None:
    per_model = [sum(iteration.memory_mib(p, b) for b in p.batches) / len(p.batches) / 1024
                 for p in iteration.CATALOGUE.values()]  # fmt: skip
    assert REFERENCE_MEM_GIB == pytest.approx(sum(per_model) / len(per_model))
    assert 3.4 < REFERENCE_MEM_GIB < 3.5


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown checkpoint model 'fast'"):
        SimConfig(checkpoint_model="fast")
    with pytest.raises(ConfigError, match="transparent_speedup"):
        SimConfig(transparent_speedup=0.0)


def test_negative_memory_in_a_trace_is_an_input_error() -> None:
    from simkit import workload

    from schedlab.errors import InputError

    with pytest.raises(InputError, match="gpu_mem_gib"):
        workload([job("a", 0, 1, 10.0, gpu_mem_gib=-1.0)])


@pytest.mark.parametrize("policy", ["srtf", "tiresias"])
def test_jobs_table_has_the_cost_columns_of_each_model(tmp_path, policy: str) -> None:
    """Preemptive policies run under every model; each pause's cost lands in its job's columns."""
    seen = {}
    for model in ("fixed", "framework", "transparent", "kill"):
        spec = RunSpec(WorkloadSpec(synthetic="simple", jobs=150, seed=3, load=1.5), "uniform:2x8", policy,
                       config=SimConfig(checkpoint_model=model))  # fmt: skip
        simulate_run(spec, tmp_path / model)
        jobs = pd.read_parquet(tmp_path / model / "jobs.parquet")
        assert {"pause_s", "restore_s", "migration_s"} <= set(jobs.columns)
        paused = jobs[jobs["preemptions"] > 0]
        assert len(paused) > 0
        seen[model] = jobs
        if model == "fixed":
            assert (paused["pause_s"] == 10.0 * paused["preemptions"]).all()
            assert (paused["restore_s"] == 30.0 * paused["preemptions"]).all()
        elif model == "kill":
            assert (jobs["pause_s"] == 0).all() and jobs["lost_work_s"].sum() > 0
            assert (paused["restore_s"] == 10.0 * paused["preemptions"]).all()
        else:
            assert (jobs["lost_work_s"] == 0).all() and (paused["pause_s"] > 0).all()
        assert (jobs.loc[jobs["preemptions"] == 0, ["pause_s", "restore_s"]] == 0).all().all()
        assert (jobs["migration_s"] == 0).all()


@pytest.mark.parametrize("model", ["framework", "transparent", "kill"])
def test_pausing_and_migrating_policies_account_for_every_second_under_each_model(model: str) -> None:
    """Under every model each job finishes having done its work plus what it lost, and its
    run time is its work, its lost work and its stalls (rate 1 on a uniform cluster)."""
    import numpy as np
    from simkit import Checked

    from schedlab.policies.registry import make_policy
    from schedlab.sim.engine import Simulation
    from schedlab.workload.synthetic import generate

    w = generate("simple", 120, seed=5, cluster_gpus=16, load=1.6)
    spec = cluster([8, 8])
    for name in ("srtf", "srsf", "tiresias", "srtf+defrag"):
        policy = Checked(make_policy(name, rng=np.random.default_rng(0)))
        jobs = Simulation(w, spec, policy, config=SimConfig(checkpoint_model=model)).run().jobs
        assert jobs["finished"].all(), name
        assert np.allclose(jobs["work_done_s"] - jobs["lost_work_s"], jobs["duration_s"]), name
        stalls = jobs["restore_s"] + jobs["pause_s"] + jobs["migration_s"]
        assert np.allclose(jobs["run_s"], jobs["work_done_s"] + stalls), name
        assert (jobs["lost_work_s"] > 0).any() == (model == "kill" and (jobs["preemptions"] > 0).any()), name
