"""Gavel (max-min LP and round priorities) and Hadar (Eq. 5 prices, FIND_ALLOC, DP)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from schedlab.policies.hetero.gavel import Gavel, max_min_allocation
from schedlab.policies.hetero.allocator import Allocator, JobView, price
from schedlab.policies.hetero.hadar import Hadar
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from tests.simkit import cluster, job, workload

R50 = "ResNet-50 (batch size 64)"
LM = "LM (batch size 20)"


def test_price_eq5_hand_computed():
    # L = 1, U = 16, eta = 1: p(0) = L / 4 = 0.25, p(c) = U, p(c/2) = 0.25 * 64 ** 0.5 = 2.
    assert price(0, 4, 1.0, 16.0, 1.0) == pytest.approx(0.25)
    assert price(4, 4, 1.0, 16.0, 1.0) == pytest.approx(16.0)
    assert price(2, 4, 1.0, 16.0, 1.0) == pytest.approx(2.0)
    # eta = 2: p(0) = 1 / 8, p(c) = 16 still
    assert price(0, 4, 1.0, 16.0, 2.0) == pytest.approx(0.125)
    assert price(4, 4, 1.0, 16.0, 2.0) == pytest.approx(16.0)


def _allocator(spec, views, horizon=1000.0, comm=0.05):
    return Allocator(spec, views, eta=1.0, comm_fraction=comm, horizon=horizon)


def test_bounds_eq6_eq7_and_cost_hand_computed():
    spec = cluster([4], types=["V100"])
    # I = 100 iterations, nothing done, age 0, 1 it/s: f = 100 / 100 = 1 per 1 GPU -> U = 1
    v = JobView(0, 1, 100.0, 100.0, 0.0, {"V100": 1.0})
    a = _allocator(spec, [v], horizon=300.0)
    assert a.high["V100"] == pytest.approx(1.0)  # Eq. 6
    assert a.low["V100"] == pytest.approx(100.0 / 300.0)  # Eq. 7: ends at the horizon
    # two GPUs from an empty 4-GPU server: p(0) + p(1)
    low, high = 1 / 3, 1.0
    expected = low / 4 + (low / 4) * (4 * high / low) ** 0.25
    assert a.cost((4,), [(0, 2)]) == pytest.approx(expected)


def test_find_alloc_spreads_over_types_when_no_server_holds_the_job():
    spec = cluster([2, 2], types=["V100", "K80"])
    v = JobView(0, 4, 1000.0, 1000.0, 0.0, {"V100": 10.0, "K80": 2.0})
    a = _allocator(spec, [v], comm=0.0)
    value, alloc = a.find_alloc(v, (2, 2))
    assert sorted(alloc) == [(0, 2), (1, 2)]
    # utility at the slowest task's rate: 1000 / (1000 / 2) = 2; minus the cost of 4 GPUs
    assert value == pytest.approx(a.cost((2, 2), alloc) - 2.0)


def test_find_alloc_prefers_the_fast_type_for_a_consolidated_job():
    spec = cluster([2, 2], types=["K80", "V100"])
    v = JobView(0, 2, 1000.0, 1000.0, 0.0, {"V100": 10.0, "K80": 2.0})
    _, alloc = _allocator(spec, [v]).find_alloc(v, (2, 2))
    assert alloc == [(1, 2)]


def test_find_alloc_takes_the_least_loaded_servers_not_the_fill_of_the_first():
    # four 4-GPU V100 servers with 1, 1, 3, 3 GPUs free; a 4-GPU job fits on no single one. Filling
    # them in order takes the last (dearest) GPU of servers 0 and 1; two GPUs each from servers 2
    # and 3 cost less and use no more servers.
    spec = cluster([4, 4, 4, 4], types=["V100"] * 4)
    v = JobView(0, 4, 1000.0, 1000.0, 0.0, {"V100": 10.0})
    other = JobView(1, 1, 10.0, 10.0, 0.0, {"V100": 10.0})  # widens U / L so that prices rise steeply
    a = _allocator(spec, [v, other])
    value, alloc = a.find_alloc(v, (1, 1, 3, 3))
    assert sorted(alloc) == [(2, 2), (3, 2)]
    assert value == pytest.approx(a.cost((1, 1, 3, 3), alloc) + 0.05 * v.utility({"V100"}) - v.utility({"V100"}))


def _all_allocations(a: Allocator, job: JobView, state: tuple[int, ...]):
    """Every allocation of ``job`` on ``state``: any GPUs per server, summing to its GPU count."""
    usable = [h for h in range(len(state)) if job.rate.get(a.types[h], 0) > 0]
    for xs in itertools.product(*(range(state[h] + 1) for h in usable)):
        if sum(xs) != job.gpus:
            continue
        alloc = [(h, x) for h, x in zip(usable, xs) if x]
        if a.mix_types or len({a.types[h] for h, _ in alloc}) == 1:
            yield alloc


@pytest.mark.parametrize("mix_types", [True, False])
@pytest.mark.parametrize("seed", range(40))
def test_find_alloc_is_the_minimum_cost_allocation_by_brute_force(seed, mix_types):
    """§III-B: FIND_ALLOC returns the allocation of least cost + communication - utility over
    every allocation (consolidated or spread, on any servers and types), or None when none has
    a positive payoff."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    sizes = rng.choice([2, 4], n).tolist()
    types = rng.choice(["V100", "P100", "K80"], n).tolist()
    spec = cluster(sizes, types=types)
    views = []
    for i in range(4):
        work = float(rng.uniform(100, 5000))
        rate = {"V100": float(rng.uniform(5, 10)), "P100": float(rng.uniform(2, 6)), "K80": float(rng.uniform(0.5, 3))}
        views.append(JobView(i, int(rng.choice([1, 2, 3, 4, 6])), work, work * float(rng.uniform(0.2, 1)),
                             float(rng.uniform(0, 500)), rate))  # fmt: skip
    comm = float(rng.choice([0.0, 0.05, 0.3]))
    a = Allocator(spec, views, eta=float(rng.choice([0.1, 1.0, 100.0])), comm_fraction=comm,
                  horizon=float(rng.uniform(500, 5000)), mix_types=mix_types)  # fmt: skip
    state = tuple(int(rng.integers(0, c + 1)) for c in sizes)
    for v in views:
        values = []
        for alloc in _all_allocations(a, v, state):
            f = v.utility({a.types[h] for h, _ in alloc})
            values.append(a.cost(state, alloc) + comm * (len(alloc) - 1) * f - f)
        best = min(values, default=0.0)
        found = a.find_alloc(v, state)
        if best >= 0:
            assert found is None
        else:
            assert found is not None and found[0] == pytest.approx(best, rel=1e-9, abs=1e-12)
            assert sum(x for _, x in found[1]) == v.gpus and all(x <= state[h] for h, x in found[1])


def _brute_force(a: Allocator, views: list[JobView], state: tuple[int, ...]) -> float:
    best = 0.0
    for mask in itertools.product((0, 1), repeat=len(views)):
        s, total, ok = state, 0.0, True
        for v, pick in zip(views, mask):
            if not pick:
                continue
            found = a.find_alloc(v, s)
            if found is None:
                ok = False
                break
            total += found[0]
            s = a.take(s, found[1])
        if ok:
            best = min(best, total)
    return best


@pytest.mark.parametrize("seed", range(8))
def test_dp_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, 3).tolist()
    types = rng.choice(["V100", "P100", "K80"], 3).tolist()
    spec = cluster(sizes, types=types)
    views = []
    for i in range(6):
        work = float(rng.uniform(100, 5000))
        rate = {"V100": float(rng.uniform(5, 10)), "P100": float(rng.uniform(2, 6)), "K80": float(rng.uniform(0.5, 3))}
        views.append(JobView(i, int(rng.choice([1, 2, 4])), work, work * float(rng.uniform(0.2, 1)), float(rng.uniform(0, 500)), rate))
    a = _allocator(spec, views, horizon=float(rng.uniform(500, 5000)))
    state = tuple(sizes)
    value, chosen = a.dp(views, state)
    assert value == pytest.approx(_brute_force(a, views, state))
    used = [0] * len(sizes)
    for alloc in chosen.values():
        for h, x in alloc:
            used[h] += x
    assert all(u <= c for u, c in zip(used, sizes))


def test_gavel_lp_respects_capacity():
    rng = np.random.default_rng(3)
    speed = rng.uniform(0.1, 1.0, (12, 3))
    scale = rng.choice([1.0, 2.0, 4.0], 12)
    capacity = np.array([4.0, 8.0, 4.0])
    x = max_min_allocation(speed, scale, capacity)
    assert np.all(x >= 0)
    assert np.all(x.sum(axis=1) <= 1 + 1e-7)
    assert np.all(scale @ x <= capacity + 1e-7)


def _min_normalised(x, speed, capacity):
    equal = speed @ capacity / capacity.sum()
    return float(np.min((speed * x).sum(axis=1) / equal))


def test_heterogeneity_awareness_changes_the_allocation():
    # job 0 gains 10x from the V100, job 1 only 1.1x; one GPU of each type.
    speed = np.array([[1.0, 0.1], [1.0, 0.9]])
    capacity = np.array([1.0, 1.0])
    scale = np.ones(2)
    aware = max_min_allocation(speed, scale, capacity)
    blind = max_min_allocation(np.ones_like(speed), scale, capacity)
    assert not np.allclose(aware, blind)
    assert _min_normalised(aware, speed, capacity) > _min_normalised(blind, speed, capacity) + 0.02
    assert aware[1, 0] == pytest.approx(0.5, abs=1e-6)  # hand-computed optimum: job 1 on the V100 half the time


def _run(policy, rows, spec):
    return Simulation(workload(rows), spec, policy, config=SimConfig(checkpoint_s=0.0, restore_s=10.0)).run()


def test_gavel_rounds_share_one_gpu_by_priority():
    spec = cluster([1], types=["V100"])
    rows = [job("a", 0, 1, 3600, model=R50), job("b", 0, 1, 3600, model=R50)]
    res = _run(Gavel(round_s=360.0), rows, spec)
    jobs = res.jobs.set_index("job_id")
    assert jobs["finished"].all()
    assert (jobs["preemptions"] > 5).all()  # they alternate round by round
    assert abs(jobs.loc["a", "end_s"] - jobs.loc["b", "end_s"]) <= 400


def test_hadar_runs_a_gang_across_types_that_gavel_cannot():
    spec = cluster([2, 2], types=["V100", "K80"])
    rows = [job("big", 0, 4, 3600, model=LM)]
    hadar = _run(Hadar(round_s=360.0), rows, spec).jobs.iloc[0]
    assert hadar["first_start_s"] == 0
    # 4 tasks on V100 + K80 run at the K80 rate (scale 4: 35.70 it/s vs 111.00 on V100)
    assert hadar["end_s"] == pytest.approx(3600 * 110.99685986392635 / 35.70344542111913)
    gavel = _run(Gavel(round_s=360.0), rows, spec).jobs.iloc[0]
    assert not gavel["finished"]


def test_hadar_keeps_running_jobs_allocations_by_default():
    # §IV-B: a round deals "with solely newly incoming jobs ... without changing the allocated
    # resources of running jobs". c arrives while a and b hold both GPUs: by default it waits for
    # one to finish; replan=True re-decides everything and pauses a and b to run c at once.
    spec = cluster([1, 1], types=["V100", "K80"])
    rows = [job("a", 0, 1, 7200, model=R50), job("b", 0, 1, 720, model=R50), job("c", 1000, 1, 720, model=LM)]
    kept = _run(Hadar(), rows, spec).jobs.set_index("job_id")
    assert (kept["preemptions"] == 0).all()
    assert kept.loc["c", "first_start_s"] >= min(kept.loc["a", "end_s"], kept.loc["b", "end_s"])
    moved = _run(Hadar(replan=True), rows, spec).jobs.set_index("job_id")
    assert moved["preemptions"].sum() > 0 and moved.loc["c", "first_start_s"] < 1800


def test_rounds_report_decision_time():
    spec = cluster([2, 2], types=["V100", "K80"])
    policy = Hadar(round_s=360.0)
    _run(policy, [job("a", 0, 1, 1000, model=R50), job("b", 0, 2, 1000, model=LM)], spec)
    report = policy.report(None)
    assert report["rounds"] >= 1 and report["decision_s_mean"] > 0


def test_fork_sums_the_copies_rates_and_counts_their_gpus():
    from schedlab.errors import ActionError
    from schedlab.sim.policy import Policy

    class ForkOnce(Policy):
        def __init__(self, copies):
            self.copies = copies

        def schedule(self, ctx):
            for j in list(ctx.active.values()):
                if j.state == 0:
                    ctx.fork(j, self.copies, 5.0)

    spec = cluster([1, 1], types=["V100", "K80"])
    res = _run(ForkOnce([[(0, 1)], [(1, 1)]]), [job("a", 0, 1, 3600, model=R50)], spec).jobs.iloc[0]
    rate = 1 + 0.6190282202246573 / 4.394774823323071  # V100 copy + K80 copy, merged
    assert res["end_s"] == pytest.approx(5.0 + 3600 / rate)
    assert res["gpu_seconds"] == pytest.approx(2 * res["end_s"])
    with pytest.raises(ActionError, match="two copies"):
        _run(ForkOnce([[(0, 1)], [(0, 1)]]), [job("a", 0, 1, 3600, model=R50)], cluster([2], types=["V100"]))


def test_hadare_forks_a_lone_job_over_idle_nodes_and_finishes_first():
    from schedlab.policies.hetero.hadare import HadarE

    spec = cluster([1, 1, 1], types=["V100", "P100", "K80"])
    rows = [job("a", 0, 1, 7200, model=R50)]
    hadar = _run(Hadar(round_s=360.0), rows, spec).jobs.iloc[0]
    policy = HadarE(round_s=360.0)
    forked = _run(policy, rows, spec).jobs.iloc[0]
    assert policy.forks > 0
    assert hadar["end_s"] == pytest.approx(7200)  # one copy on the V100
    assert forked["end_s"] < 0.8 * hadar["end_s"]  # V100 + P100 + K80 copies, less a restart per round


@pytest.mark.parametrize("name", ["gavel", "hadar", "hadare"])
@pytest.mark.parametrize("seed", range(4))
def test_round_policies_keep_invariants_and_finish(name, seed):
    from schedlab.policies.registry import make_policy
    from tests.sim.test_properties import run_checked
    from tests.simkit import Checked

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5))
    sizes = rng.choice([1, 2, 4], n).tolist()
    types = rng.choice(["V100", "K80"], n).tolist()
    spec = cluster(sizes, types=types)
    import pandas as pd

    rows = pd.DataFrame([
        {"job_id": f"j{i}", "submit_s": float(rng.integers(0, 40) * 25), "num_gpus": float(rng.choice([g for g in (1, 2, 4) if g <= min(max(sizes), spec.gpus_by_type()[types[0]])])),
         "duration_s": float(rng.integers(1, 2000)), "model": str(rng.choice(["", R50, LM])),
         "gpu_type": str(rng.choice(["", types[0]]))}
        for i in range(int(rng.integers(1, 10)))
    ])  # fmt: skip
    config = SimConfig(checkpoint_s=0.0, restore_s=10.0)
    if name == "hadare":  # forked jobs hold more GPUs than they ask for: the state checks only
        runs = [Simulation(workload(rows.to_dict("records")), spec, Checked(make_policy(name, rng=np.random.default_rng(0))),
                           config=config).run() for _ in range(2)]  # fmt: skip
        jobs = runs[0].jobs
        assert (jobs["gpu_seconds"] >= jobs["num_gpus"] * jobs["run_s"] - 1e-6).all()
        np.testing.assert_allclose(jobs["work_done_s"], jobs["duration_s"] + jobs["lost_work_s"], rtol=1e-6)
    else:
        runs = [run_checked(spec, rows, config, make_policy(name, rng=np.random.default_rng(0))) for _ in range(2)]
    pd.testing.assert_frame_equal(runs[0].jobs, runs[1].jobs)
    assert runs[0].jobs["finished"].all()


def test_round_policies_refuse_what_they_cannot_place():
    from schedlab.errors import ConfigError

    spec = cluster([2, 2], types=["V100", "K80"])
    with pytest.raises(ConfigError, match="whole-GPU"):
        _run(Hadar(), [job("a", 0, 0.5, 100)], spec)
    with pytest.raises(ConfigError, match="partitioned"):
        _run(Gavel(), [job("a", 0, 1, 100, tenant="x")],
             cluster([2], types=["V100"], pools=["x"], tenants={"x": None}, partitioned=True))  # fmt: skip


def test_gavel_weights_a_job_by_its_gpus():
    # one type of 2 GPUs, equal speeds; job 0 needs 1 GPU, job 1 two. max min(z X): X = (1, 0.5)
    x = max_min_allocation(np.ones((2, 1)), np.array([1.0, 2.0]), np.array([2.0]))
    assert x[:, 0] == pytest.approx([1.0, 0.5], abs=1e-6)


def test_gavel_fifo_takes_the_fastest_type_in_arrival_order_and_blocks():
    from schedlab.policies.hetero.gavel import fifo_allocation

    speed = np.array([[1.0, 0.9], [1.0, 0.1]])
    x = fifo_allocation(speed, np.ones(2), np.array([1.0, 1.0]))
    assert x.tolist() == [[1.0, 0.0], [0.0, 1.0]]  # job 0 first takes the V100 although job 1 gains more
    blocked = fifo_allocation(speed, np.array([2.0, 1.0]), np.array([1.0, 1.0]))
    assert not blocked.any()  # the head fits no type: nobody passes it


@pytest.mark.parametrize("seed", range(20))
def test_find_alloc_outside_barred_servers_and_derived_kinds(seed):
    """FIND_ALLOC outside barred servers is FIND_ALLOC on the state with them full; the kinds
    derived by ``take`` are those of the new state; a lower-bound refusal holds on a fuller state."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 7))
    sizes = rng.choice([2, 4, 8], n).tolist()
    types = rng.choice(["V100", "P100", "K80"], n).tolist()
    spec = cluster(sizes, types=types)
    rate = {"V100": 8.0, "P100": 4.0, "K80": 1.5}
    views = [JobView(i, int(rng.choice([1, 2, 4, 8])), 1000.0, float(rng.uniform(100, 1000)), float(rng.uniform(0, 500)),
                     rate) for i in range(4)]  # fmt: skip
    a = Allocator(spec, views, eta=1.0, comm_fraction=float(rng.choice([0.0, 0.05, 0.3])),
                  horizon=float(rng.uniform(500, 5000)))  # fmt: skip
    state = tuple(int(rng.integers(0, c + 1)) for c in sizes)
    barred = {h for h in range(n) if rng.random() < 0.3}
    masked = tuple(0 if h in barred else f for h, f in enumerate(state))
    for v in views:
        assert a.find_alloc(v, state, barred) == a.find_alloc(v, masked)
        found = a.find_alloc(v, state)
        if found is not None:
            after = a.take(state, found[1])
            derived = a.kinds(after)
            assert derived == Allocator(spec, views, eta=1.0, comm_fraction=a.comm_fraction, horizon=1.0).kinds(after)
        elif a.rising and a.refuses(v, a.usable(v, a.kinds(state))):
            fuller = tuple(int(rng.integers(0, f + 1)) for f in state)
            assert a.find_alloc(v, fuller) is None
