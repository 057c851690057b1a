"""Pollux: the goodput model and batch-size adaptation on hand-computed cases, the speedup's
re-allocation penalty, and reallocation in the engine: a lone job grows to the GPUs its goodput
pays for, a newcomer takes its share at the next 60-second round, and the split maximises the
fitness."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from simkit import check_state

from schedlab.cluster.presets import uniform
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.policies.pollux.goodput import GRID, GoodputModel, best, best_at
from schedlab.policies.pollux.pollux import JobModel, Pollux
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.sim.iteration import CATALOGUE, ModelProfile, assign, iteration_time
from schedlab.workload.schema import Workload, canonical_frame

# on one GPU there is no all-reduce: t_iter(B, s) = s * 0.1 + 0.001 * B
FLAT = ModelProfile("flat", "-", 0.0, 0.1, 0.001, 1000.0, 1.0, ((100, 50.0, 10.0),))
MODEL = "ResNet18"


def test_efficiency_and_goodput_by_hand() -> None:
    m = GoodputModel(FLAT, 100.0, 400.0, 3200.0, 400.0)
    assert m.efficiency(100.0) == 1.0 and m.efficiency(400.0) == pytest.approx(500 / 800)
    # 2 accumulation steps of 100: t = 0.2 + 0.2 = 0.4 s; 200 samples at efficiency 500/600
    assert m.goodput(1, 200.0, 2) == pytest.approx(200 / 0.4 * 500 / 600)


def test_batch_adaptation_by_hand() -> None:
    # phi = 0: goodput = M0 / t_iter, best at the smallest batch allowed, M = M0 = 100
    c = best(GoodputModel(FLAT, 100.0, 0.0, 3200.0, 400.0), 1)
    assert (c.batch, c.steps) == (pytest.approx(100.0), 1) and c.goodput == pytest.approx(100 / 0.2)
    # phi = 400: goodput(B) = 500 B / (40 + 0.5 B + 0.001 B^2) at s = 1, maximal at B = 200 (555.6)
    c = best(GoodputModel(FLAT, 100.0, 400.0, 3200.0, 400.0), 1)
    assert c.steps == 1 and 180 < c.batch < 220 and c.goodput == pytest.approx(100000 / 180, rel=1e-2)
    # a first batch above the per-step limit needs accumulation: M0 = 1000 with 400 per step
    c = best(GoodputModel(FLAT, 1000.0, 0.0, 3200.0, 400.0), 1)
    assert c.steps == 3 and c.total_batch == pytest.approx(1000.0)
    # fractional fair shares interpolate; no GPU, no goodput
    m = GoodputModel(FLAT, 100.0, 0.0, 3200.0, 400.0)
    assert best_at(m, 0.5) == pytest.approx(0.5 * best(m, 1).goodput) and best(m, 0).goodput == 0.0
    # more GPUs than samples in the largest batch: no configuration; the fair share is capped there
    small = GoodputModel(FLAT, 4.0, 0.0, 4.0, 400.0)
    assert best(small, 5).goodput == 0.0 and best_at(small, 6.5) == best(small, 4).goodput > 0


def scan(model: GoodputModel, gpus: int) -> tuple[float, int, float]:
    """§3.3's search point by point: (batch, steps, goodput) of the first grid point of highest goodput."""
    found = (0.0, 1, 0.0)
    if gpus < 1:
        return found
    for steps in range(1, max(1, math.ceil(model.m0 / (gpus * model.max_local))) + 8):
        lo = max(1.0, model.m0 / (gpus * steps))
        hi = min(model.max_local, model.max_batch / (gpus * steps))
        for k in range(GRID if lo <= hi else 0):
            sub = lo * (hi / lo) ** (k / (GRID - 1)) if hi > lo else lo
            g = model.goodput(gpus, sub * steps, steps)
            if g > found[2]:
                found = (sub * steps, steps, g)
    return found


@pytest.mark.parametrize("profile", [*CATALOGUE.values(), FLAT], ids=lambda p: p.name)
def test_best_finds_the_point_of_the_plain_scan(profile: ModelProfile) -> None:
    # the NumPy search over blocks of GPU counts returns exactly what evaluating every point does
    for gpus, batch, noise_scale, max_batch_x in [(1, 32, 10.0, 32.0), (8, 128, 10.0, 32.0), (64, 128, 1.0, 4.0),
                                                  (3, 7, 0.0, 1.0)]:  # fmt: skip
        m0 = gpus * batch
        model = GoodputModel(profile, m0, noise_scale * m0, max_batch_x * m0, float(max(max(profile.batches), batch)))
        for k in [*range(70), 95, 96, 97, 1000, 2047, 2048, 2049, 6400]:
            c = best(model, k)
            assert (c.gpus, (c.batch, c.steps, c.goodput)) == (k, scan(model, k))


def test_speedup_and_reallocation_penalty_by_hand() -> None:
    class Now:
        now = 1000.0

    policy = Pollux()
    policy.delta = 40.0
    job = type("J", (), {"idx": 0, "submit": 0.0})()
    model = GoodputModel(FLAT, 100.0, 0.0, 3200.0, 400.0)

    policy.jobs[0] = JobModel(model, 500.0)
    policy.jobs[0].reallocations = 2
    # best goodput on 2 GPUs over best goodput on the fair share of 4; utility -1/speedup (p = -1)
    ratio = best(model, 2).goodput / best(model, 4).goodput
    assert 0 < ratio < 1
    assert policy.term(Now(), job, 0, 4.0).u(2) == pytest.approx(-1 / ratio)  # starts: no penalty
    assert policy.term(Now(), job, 2, 4.0).u(2) == pytest.approx(-1 / ratio)  # unchanged: no penalty
    # changed: x (T - N delta) / (T + delta) = (1000 - 2 x 40) / (1000 + 40)
    assert policy.term(Now(), job, 3, 4.0).u(2) == pytest.approx(-1 / (ratio * 920 / 1040))
    assert policy.term(Now(), job, 3, 4.0).u(0) == -math.inf
    assert policy.utility(0.5) == -2.0 and policy.utility(0.0) == -math.inf


def run(rows, nodes: int = 1, gpus: int = 8, config: SimConfig | None = None) -> tuple[pd.DataFrame, Pollux]:
    frame = pd.DataFrame(rows, columns=["job_id", "submit_s", "num_gpus", "duration_s"])
    frame["model"] = MODEL
    workload = Workload(canonical_frame(frame, source="pollux-test"), "pollux-test")
    policy = Pollux()
    result = Simulation(workload, uniform(nodes, gpus), policy, config=config or SimConfig()).run()
    assert result.jobs["finished"].all()
    return result.jobs.set_index("job_id"), policy


def job_model(job_id: str, gpus: int, policy: Pollux) -> tuple[GoodputModel, float]:
    name, batch = assign(job_id, 0, MODEL)
    p = CATALOGUE[name]
    m = GoodputModel(p, gpus * batch, policy.noise_scale * gpus * batch, policy.max_batch_x * gpus * batch,
                     float(max(max(p.batches), batch)))  # fmt: skip
    return m, gpus * batch / iteration_time(p, batch, 1, gpus)


def test_a_lone_job_grows_to_the_gpus_its_goodput_pays_for() -> None:
    jobs, policy = run([("a", 0.0, 1, 3600.0)])
    m, base = job_model("a", 1, policy)
    gains = [best(m, k).goodput for k in range(1, 9)]
    assert gains == sorted(gains)  # ResNet18 still gains at 8 GPUs: Pollux gives it all 8
    assert policy.resizes == [(0.0, "a", 8)]
    assert jobs.loc["a", "end_s"] == pytest.approx(3600.0 * base / gains[-1])
    assert jobs.loc["a", "end_s"] < 3600.0 / 4  # far faster than on the one GPU it asked for


def test_a_newcomer_takes_gpus_at_the_next_round_and_the_split_maximises_fitness() -> None:
    jobs, policy = run([("a", 0.0, 1, 36000.0), ("b", 100.0, 1, 36000.0)])
    assert policy.resizes[0] == (0.0, "a", 8)
    t, moves = 120.0, [r for r in policy.resizes if r[0] == 120.0]  # rounds at 0, 60, 120 s
    split = {job: k for _, job, k in moves}
    assert set(split) == {"a", "b"} and split["a"] + split["b"] == 8  # a shrank, b started
    assert jobs.loc["b", "first_start_s"] == t and jobs.loc["a", "migrations"] >= 1
    # brute force over every split of 8 GPUs: a (holding 8, age 120 s, no re-allocation yet) pays
    # the penalty for any change; fair share 4 each
    (ma, _), (mb, _) = job_model("a", 1, policy), job_model("b", 1, policy)
    pen = (t - 0) / (t + policy.delta)

    def fitness(ka: int, kb: int) -> float:
        sa = best(ma, ka).goodput / best(ma, 4).goodput * (pen if ka != 8 else 1.0)
        sb = best(mb, kb).goodput / best(mb, 4).goodput
        return -(1 / sa + 1 / sb)

    best_split = max(((ka, kb) for ka, kb in itertools.product(range(1, 8), repeat=2) if ka + kb <= 8),
                     key=lambda s: fitness(*s))  # fmt: skip
    assert (split["a"], split["b"]) == best_split


def test_more_jobs_than_gpus_wait_in_submit_order_and_start_as_gpus_free() -> None:
    rows = [(f"j{i}", float(i), 1, 600.0 * (i + 1)) for i in range(3)]
    jobs, _ = run(rows, gpus=2)
    assert jobs.loc["j2", "first_start_s"] > jobs.loc["j0", "first_start_s"]
    assert jobs.loc["j2", "first_start_s"] >= jobs.loc[["j0", "j1"], "end_s"].min()


def test_registered_pollux_runs_on_the_section9_cluster() -> None:
    spec = RunSpec(WorkloadSpec(synthetic="philly", jobs=150, seed=2), "uniform:16x8", "pollux", seed=2)
    s = simulate_run(spec, None)
    assert s["finished"] == 150 and s["pollux"]["rounds"] > 0 and s["pollux"]["reallocations"] > 0


class CheckedPollux(Pollux):
    """Pollux with the cluster state recomputed from the running jobs after every round."""

    def schedule(self, ctx) -> None:
        super().schedule(ctx)
        check_state(ctx)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_workloads_keep_the_engine_invariants(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 25
    frame = pd.DataFrame({"job_id": [f"j{i}" for i in range(n)], "submit_s": np.sort(rng.uniform(0, 3000, n)),
                          "num_gpus": rng.choice([1, 2, 4, 8, 16], n), "duration_s": rng.uniform(60, 4000, n)})
    workload = Workload(canonical_frame(frame, source="pollux-rand"), "pollux-rand")
    config = SimConfig(checkpoint_s=5.0, restore_s=15.0)
    result = Simulation(workload, uniform(3, 8), CheckedPollux(seed=seed), config=config, seed=seed).run()
    jobs = result.jobs
    assert jobs["finished"].all()
    close = {"rtol": 1e-9, "atol": 1e-6}
    np.testing.assert_allclose(jobs["work_done_s"], jobs["duration_s"], rtol=1e-6)  # pauses lose nothing
    np.testing.assert_allclose(jobs["queue_s"] + jobs["run_s"], jobs["end_s"] - jobs["submit_s"], **close)
    assert (jobs["gpu_seconds"] <= 24 * jobs["run_s"] + 1e-6).all()
    ts = result.timeseries
    assert (ts["gpus_busy"] <= ts["gpus_total"] + 1e-9).all()
