"""GFS, equation by equation on hand-computed cases (eq. 9-11, 13-19, Algorithms 1-2), the
ablations' defining differences, and the end-to-end run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedlab.cluster.spec import ClusterSpec, NodeSpec, gpu_type
from schedlab.cluster.state import ClusterState
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.policies.gfs import build_gfs
from schedlab.policies.gfs.nodes import NodeBook
from schedlab.policies.gfs.pts import best_node, node_cost, place_pods, spared
from schedlab.policies.gfs.sqa import SpotQuota, SpotRuns, SqaConfig, WeeklyPeak, inventory, next_eta, sum_by_model
from schedlab.policies.gfs.forecast import OrgLinearForecaster
from schedlab.policies.registry import POLICIES
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from simkit import cluster, job, make_job, workload

NO_CKPT = SimConfig(checkpoint_s=0.0, restore_s=0.0, restart_s=0.0, checkpoint_interval_s=math.inf)


# ----- SQA: eq. 9-11 --------------------------------------------------------------------------
def test_eq9_as_printed_is_never_positive_so_max_is_read_as_min() -> None:
    for cap, demand in [(100.0, 20.0), (100.0, 100.0), (100.0, 250.0), (8.0, 0.0)]:
        assert cap - max(cap, demand) <= 0  # the literal eq. 9: no spot inventory, ever
    bounds = {("A", "o1"): 50.0, ("A", "o2"): 30.0, ("B", "o1"): 10.0, ("B", "o2"): 45.0}
    demand = sum_by_model(bounds)  # organisations' peaks summed: A 80, B 55
    assert inventory({"A": 100.0, "B": 40.0}, demand) == {"A": 20.0, "B": 0.0}  # B saturated: f = 0


def test_eq10_quota_is_min_of_inventory_times_eta_and_idle_plus_guaranteed_spot() -> None:
    quota = SpotQuota(SqaConfig(eta0=0.5))
    q = quota.allocate({"A": 20.0, "B": 30.0}, idle={"A": 30.0, "B": 2.0}, guaranteed={"A": 4.0, "B": 3.0})
    assert q["A"] == 10.0  # f * eta = 10 < S0 + Sa = 34
    assert q["B"] == 5.0  # S0 + Sa = 5 < f * eta = 15
    assert q[""] == 15.0
    assert quota.admits("A", 4.0, 6.0) and not quota.admits("A", 4.0, 7.0)


def test_eq11_with_p_as_printed_never_lowers_eta() -> None:
    for e in np.linspace(0.0, 1.0, 101):
        assert next_eta(1.0, float(e), 7200.0, target=0.9, theta_s=3600.0) >= 1.0  # e > 1.35 impossible


def test_eq11_with_the_target_eviction_rate() -> None:
    rule = dict(target=0.1, theta_s=3600.0)  # p = 0.9: at most 10 % evictions
    assert next_eta(1.0, 0.3, 0.0, **rule) == pytest.approx(1 / 3)  # e > 0.15: eta * 0.1 / 0.3
    assert next_eta(1.0, 0.02, 7200.0, **rule) == pytest.approx(1.3)  # e < 0.05, l > theta: eta * (1.5 - 0.2)
    assert next_eta(1.0, 0.02, 600.0, **rule) == 1.0  # short queueing: unchanged
    assert next_eta(1.0, 0.1, 7200.0, **rule) == 1.0  # between the thresholds
    bounded = SpotQuota(SqaConfig(eta_bounds=(0.5, 2.0)))
    assert bounded.feedback("A", 0.9, 0.0) == 0.5
    fixed = SpotQuota(SqaConfig(dynamic_eta=False))
    assert fixed.feedback("A", 0.9, 0.0) == 1.0 and fixed.feedback("A", 0.0, 1e6) == 1.0


def test_eviction_rate_is_evictions_over_the_runs_of_the_window() -> None:
    runs = SpotRuns(window_s=3600.0)
    runs.end(0.0, evicted=True)
    runs.end(100.0, evicted=False)
    assert runs.rate(200.0, running=2) == pytest.approx(1 / 4)  # 1 eviction / (2 running + 2 ended)
    runs.end(4000.0, evicted=True)
    assert runs.rate(4000.0, running=2) == pytest.approx(1 / 3)  # the first two ended before the window
    assert (runs.finished, runs.evicted) == (1, 2)  # G and F of eq. 19


def test_weekly_peak_forgets_levels_older_than_the_window() -> None:
    peak = WeeklyPeak(window_s=100.0)
    peak.observe(0.0, {("A", "o"): 8.0})
    peak.observe(50.0, {("A", "o"): 2.0})
    assert peak.upper_bound(0.9, 1.0)[("A", "o")] == 8.0
    peak.observe(160.0, {})
    assert peak.upper_bound(0.9, 1.0)[("A", "o")] == 2.0


# ----- PTS: eq. 13-16, Algorithm 1 ------------------------------------------------------------
def _book(sizes: list[int]) -> NodeBook:
    return NodeBook(ClusterState(cluster(sizes)), gamma=0.8, penalty_base=3.0, eviction_aware=True)


def _spot_on(book: NodeBook, node: int, gpus: int, idx: int) -> None:
    spot = make_job(gpus, idx=idx)
    spot.alloc = ((node, book.state.take_whole(node, gpus)),)
    book.add_spot(spot)


def test_eq15_weights_the_last_hour_and_the_last_day_per_hour() -> None:
    book = _book([8])
    book.record_eviction(0.0, (0, 0))
    book.record_eviction(20 * 3600.0, (0,))
    # at 20 h: e_short = 1 (last hour), e_long = 3 (last 24 h): 0.8 * 1 + 0.2 * 3 / 24
    assert book.risk[0] == pytest.approx(0.01 * 3**0.825)
    book.decay(25 * 3600.0)  # the two at 0 h left the day; the one at 20 h left the hour
    assert book.risk[0] == pytest.approx(0.01 * 3 ** (0.2 * 1 / 24))


def test_eq16_circuit_breaker_opens_at_score3_zero() -> None:
    book = _book([8, 8])
    book.state.take_whole(0, 6)  # n0 is the best fit
    book.touch(0)
    groups = book.state.groups
    assert best_node(book, groups, 1, spot=True, scored=True) == 0
    book.record_eviction(0.0, (0,) * 5)  # e_bar = 4 + 5/120 = 4.04: 0.01 * 3^4.04 = 0.84 < 1
    assert not book.blocked(0)
    book.record_eviction(0.0, (0,))  # e_bar = 4.8 + 0.05 = 4.85: 0.01 * 3^4.85 = 2.2 >= 1
    assert book.blocked(0)
    assert best_node(book, groups, 1, spot=True, scored=True) == 1
    assert best_node(book, groups, 1, spot=True, scored=False) == 0  # GFS-s: no breaker
    assert best_node(book, groups, 1, spot=False, scored=True) == 0  # HP: breaker is for spot only
    book.decay(2 * 86400.0)
    assert not book.blocked(0)


def test_score1_packing_then_score2_same_class_then_score3_risk() -> None:
    book = _book([8, 8, 8, 8])
    book.state.take_whole(0, 6)  # n0: 2 free, HP-held
    book.touch(0)
    book.state.take_whole(1, 4)  # n1: 4 free
    book.touch(1)
    _spot_on(book, 2, 6, idx=100)  # n2: 2 free, spot-held, with an eviction on record
    _spot_on(book, 3, 6, idx=101)  # n3: like n2 without evictions
    book.record_eviction(0.0, (2,))
    groups = book.state.groups
    assert best_node(book, groups, 3, spot=True, scored=True) == 1  # Score1: only n1 fits 3
    assert best_node(book, groups, 2, spot=True, scored=True) == 3  # Score2 beats n0, Score3 beats n2
    assert best_node(book, groups, 2, spot=False, scored=True) == 0  # HP with HP
    assert best_node(book, groups, 2, spot=True, scored=False) == 0  # GFS-s: best fit, lowest id
    book.remove_spot(book.spot_jobs[3][101], book.spot_jobs[3][101].alloc)
    assert best_node(book, groups, 2, spot=True, scored=True) == 2  # n2 is now the only spot-held node


def test_algorithm1_places_a_gang_pod_by_pod() -> None:
    book = _book([8, 8, 8])
    book.state.take_whole(0, 4)  # n0: 4 free, 4 HP GPUs
    book.touch(0)
    _spot_on(book, 2, 4, idx=100)  # n2: 4 free, 4 spot GPUs
    groups = book.state.groups
    # pod 1: n0 and n2 tie on Score1 (4 idle), Score2 picks n0 (HP-held); pod 2: n0 is full, n2 has
    # fewer idle GPUs than n1
    assert place_pods(book, groups, 4, 2, spot=False, scored=True) == [(0, 4), (2, 4)]
    assert place_pods(book, groups, 2, 2, spot=False, scored=True) == [(0, 4)]  # both pods with the HP GPUs
    assert place_pods(book, groups, 2, 2, spot=True, scored=True) == [(2, 4)]  # both pods with the spot GPUs
    # 5 pods of 2: n0 twice, then n2 (4 idle) twice, then n1
    assert place_pods(book, groups, 2, 5, spot=False, scored=True) == [(0, 4), (1, 2), (2, 4)]
    assert place_pods(book, groups, 8, 2, spot=False, scored=True) is None  # one idle node only


# ----- PTS: eq. 17-19, Algorithm 2 ------------------------------------------------------------
def test_eq19_node_cost() -> None:
    # G = 6 finished, F = 2 evicted, two victims wasting 2000 + 1000 GPU-s, 8 GPUs x 1e4 s
    cost = node_cost([2000.0, 1000.0], finished=6, evicted=2, gpu_time=8e4, beta=0.5)
    assert cost == pytest.approx(4 / 10 + 0.5 * 3000 / 8e4)
    assert node_cost([], finished=0, evicted=0, gpu_time=1.0, beta=0.5) == 0.0


def _preemption_run(variant: str, rows: list[dict], sizes: list[int], seed: int = 0, **params) -> tuple[dict, dict, object]:
    """A run whose spot quota is the idle GPUs plus all spot GPUs (``sa_rule="all"``), so that
    the cases below exercise PTS, not the quota."""
    policy = build_gfs(variant, {"forecaster": "weekly-peak", "sa_rule": "all", **params}, seed=seed)
    result = Simulation(workload(rows), cluster(sizes), policy, config=NO_CKPT).run()
    jobs = result.jobs.set_index("job_id")
    return jobs["preemptions"].to_dict(), policy.report(result.jobs)["gfs"], policy


def test_algorithm2_spares_the_spot_jobs_with_the_most_waste() -> None:
    rows = [
        job("h", 0.0, 2, 1e5, priority_class="hp"),
        job("p", 0.0, 2, 1e5, priority_class="spot"),  # never checkpointed: 2 x 1000 GPU-s lost at t=1000
        job("q", 0.0, 2, 1e5, priority_class="spot", checkpoint_interval_s=900.0),  # 2 x 100
        job("r", 500.0, 2, 1e5, priority_class="spot"),  # 2 x 500
        job("x", 1000.0, 2, 100.0, priority_class="hp"),
    ]
    # R = 6 spot GPUs; by descending waste p (R -> 4) and r (R -> 2) are spared, q would leave 0
    preempted, _, _ = _preemption_run("gfs", rows, [8])
    assert preempted == {"h": 0, "p": 0, "q": 1, "r": 0, "x": 0}
    victims = {tuple(k for k, v in _preemption_run("gfs-p", rows, [8], seed=s)[0].items() if v) for s in range(8)}
    assert len(victims) > 1  # GFS-p: random cards, not the least waste


def test_spared_keeps_a_big_victim_when_it_alone_frees_enough() -> None:
    done = {1: 100.0, 2: 900.0, 3: 500.0}  # progress in seconds of work, never checkpointed

    class Ctx:
        def remaining(self, j):
            return j.work - done[j.idx]

    def spot(idx: int, gpus: int):
        j = make_job(gpus, idx=idx)
        j.work, j.rate = 1e6, 1.0
        return j

    a, b, c = spot(1, 4), spot(2, 2), spot(3, 2)
    # eq. 17 wastes: a 4 x 100 = 400, b 2 x 900 = 1800, c 2 x 500 = 1000
    # R = 8, pod 4: spare b (R 6), spare c (R 4), a would leave 0: a is the victim
    assert spared(Ctx(), [(a, 4), (b, 2), (c, 2)], room=8, pod=4) == [a]
    # pod 6: spare b (R 6); c would leave 4 and a 2: both go
    assert spared(Ctx(), [(a, 4), (b, 2), (c, 2)], room=8, pod=6) == [c, a]


ROWS_TWO_NODES = [
    job("h", 0.0, 4, 1e5, priority_class="hp"),
    job("b", 0.0, 2, 1e5, priority_class="spot"),
    job("c", 0.0, 2, 1e5, priority_class="spot"),
    job("a", 900.0, 4, 1e5, priority_class="spot"),
    job("x", 1000.0, 4, 100.0, priority_class="hp"),
]


def test_hp_evicts_on_the_cheapest_node_and_never_hp() -> None:
    # n1: spot b + c (2 victims, 4000 GPU-s of waste); n2: spot a (1 victim, 400 GPU-s); F = G = 0,
    # so both rates are 1 and the usage term decides
    preempted, report, _ = _preemption_run("gfs", ROWS_TWO_NODES, [4, 4, 4])
    assert preempted == {"h": 0, "b": 0, "c": 0, "a": 1, "x": 0}
    assert report["evictions"] == 1


def test_eviction_before_the_guarantee_is_an_slo_violation() -> None:
    _, report, _ = _preemption_run("gfs", ROWS_TWO_NODES, [4, 4, 4])
    assert (report["slo_violations"], report["slo_violated_jobs"]) == (1, 1)  # a ran 100 s < 1 h
    assert report["slo_violated_share"] == pytest.approx(1 / 3)
    _, late, _ = _preemption_run("gfs", ROWS_TWO_NODES, [4, 4, 4], guarantee_h=0.01)  # H = 36 s
    assert late["evictions"] == 1 and late["slo_violations"] == 0


def test_queue_offers_the_largest_job_first() -> None:
    rows = [job("one", 0.0, 1, 100.0, priority_class="hp"), job("eight", 0.0, 8, 100.0, priority_class="hp")]
    policy = build_gfs("gfs", {"forecaster": "weekly-peak"})
    jobs = Simulation(workload(rows), cluster([8]), policy, config=NO_CKPT).run().jobs.set_index("job_id")
    assert jobs.loc["eight", "first_start_s"] == 0.0 and jobs.loc["one", "first_start_s"] == 100.0


@pytest.mark.parametrize(("queue", "solo_first"), [("pod", True), ("total", False), ("fcfs", False)])
def test_queue_order_keys(queue: str, solo_first: bool) -> None:
    """Behind an 8-GPU HP job: a gang of 4 pods x 2 GPUs (8 in all) submitted before a single
    4-GPU pod. 'pod' (the public simulator: most GPUs per pod, fewest pods) starts the single
    pod first; 'total' (most GPUs in all) and 'fcfs' start the gang first."""
    rows = [job("busy", 0.0, 8, 50.0, priority_class="hp"),
            job("gang", 10.0, 8, 100.0, priority_class="hp", gpus_per_worker=2.0),
            job("solo", 20.0, 4, 100.0, priority_class="hp")]  # fmt: skip
    policy = build_gfs("gfs", {"forecaster": "weekly-peak", "queue": queue})
    jobs = Simulation(workload(rows), cluster([8]), policy, config=NO_CKPT).run().jobs.set_index("job_id")
    first, second = ("solo", "gang") if solo_first else ("gang", "solo")
    assert jobs.loc[first, "first_start_s"] == 50.0 and jobs.loc[second, "first_start_s"] == 150.0


def test_fcfs_queue_puts_the_earlier_submission_first() -> None:
    rows = [job("busy", 0.0, 8, 50.0, priority_class="hp"), job("solo", 10.0, 4, 100.0, priority_class="hp"),
            job("gang", 20.0, 8, 100.0, priority_class="hp", gpus_per_worker=2.0)]  # fmt: skip
    for queue, first in (("fcfs", "solo"), ("total", "gang")):
        policy = build_gfs("gfs", {"forecaster": "weekly-peak", "queue": queue})
        jobs = Simulation(workload(rows), cluster([8]), policy, config=NO_CKPT).run().jobs.set_index("job_id")
        assert jobs.loc[first, "first_start_s"] == 50.0, queue


# ----- ablations: each one's defining difference ----------------------------------------------
def test_gfs_d_keeps_eta_where_gfs_lowers_it_after_evictions() -> None:
    rows = [job("s", 0.0, 4, 1e5, priority_class="spot"), job("x", 600.0, 4, 60.0, priority_class="hp")]
    _, gfs, _ = _preemption_run("gfs", rows, [4])
    _, fixed, _ = _preemption_run("gfs-d", rows, [4])
    # at 1 h: 1 eviction over 2 runs (the evicted one, the running one): e = 0.5 > 0.15
    assert gfs["eta_min"] == pytest.approx(0.1 / 0.5)
    assert fixed["eta_min"] == fixed["eta_max"] == 1.0


def test_gfs_s_places_by_best_fit_where_gfs_co_locates() -> None:
    rows = [
        job("h1", 0.0, 2, 1e4, priority_class="hp"),
        job("h2", 0.0, 2, 100.0, priority_class="hp"),
        job("s1", 0.0, 2, 1e4, priority_class="spot"),
        job("s2", 200.0, 2, 1e4, priority_class="spot"),
    ]
    # h1, h2 fill n0; s1 goes to n1; h2 ends; s2 sees n0 (2 idle, HP-held) and n1 (2 idle, spot-held)
    nodes = {}
    for variant in ("gfs", "gfs-s"):
        policy = build_gfs(variant, {"forecaster": "weekly-peak", "sa_rule": "all"})
        Simulation(workload(rows), cluster([4, 4]), policy, config=SimConfig(horizon_s=300.0)).run()
        nodes[variant] = [n for n, held in enumerate(policy.book.spot_jobs) if 3 in held]
    assert nodes == {"gfs": [1], "gfs-s": [0]}


def test_gfs_e_forecasts_the_previous_week_peak() -> None:
    assert isinstance(build_gfs("gfs-e").forecaster, WeeklyPeak)
    assert isinstance(build_gfs("gfs").forecaster, OrgLinearForecaster)


def test_gfs_end_to_end_on_a_small_gfs_cluster() -> None:
    sizes = {"A100-SXM4-80GB": 8, "A10": 1, "H800": 8, "GPU-series-1": 8, "GPU-series-2": 8, "A800-SXM4-80GB": 8}
    nodes = tuple(NodeSpec(f"{m}-{i}", m, g) for m, g in sizes.items() for i in range(32))
    spec = ClusterSpec("small-gfs", {m: gpu_type(m) for m in sizes}, nodes)
    wspec = WorkloadSpec(synthetic="gfs", jobs=600, seed=1, options={"spot_scale": 4})
    run = RunSpec(wspec, None, "gfs", params=POLICIES["gfs"].parse({"forecaster": "weekly-peak"}))  # OrgLinear: test_gfs_orglinear.py
    summary = simulate_run(run, None, cluster=spec)
    assert summary["unfinished"] == 0
    assert {"hp", "spot"} <= set(summary["classes"])
    assert "eviction_rate" in summary["classes"]["spot"]
    assert set(summary["gpu_alloc_rate_by_model"]) == set(sizes)
    assert all(0 < rate <= 1 for rate in summary["gpu_alloc_rate_by_model"].values())
    block = summary["gfs"]
    assert block["decisions"] > 0 and block["decision_ms_p99"] >= block["decision_ms_mean"] > 0


def test_bound_calibration_compares_the_bound_with_the_peak_over_the_next_h() -> None:
    policy = build_gfs("gfs-e", {"guarantee_h": 600 / 3600})  # H = 2 quota updates of 300 s
    levels, bounds = [10.0, 20.0, 5.0, 5.0], [20.0, 15.0, 10.0, 4.0]
    policy.bound_trace = [(300.0 * i, "A", b, x) for i, (b, x) in enumerate(zip(bounds, levels))]
    # peaks over [t, t + H]: 20, 20, 5, 5; covered: yes, no, yes, no; mean bound 12.25, mean peak 12.5
    assert policy.bound_calibration() == pytest.approx({"bound_coverage": 0.5, "bound_over_peak": 0.98})
