"""GFS: SQA feedback and quota, PTS scores, circuit breaker, preemption and the end-to-end run."""

from __future__ import annotations

import math

import pytest

from schedlab.cluster.spec import ClusterSpec, NodeSpec, gpu_type
from schedlab.cluster.state import ClusterState
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.policies.gfs import build_gfs
from schedlab.policies.gfs.nodes import NodeBook
from schedlab.policies.gfs.pts import best_node
from schedlab.policies.gfs.sqa import SpotQuota, SqaConfig, WeeklyPeak, inventory, sum_by_model
from schedlab.sim.engine import SimConfig, Simulation
from simkit import cluster, job, make_job, workload

NO_CKPT = SimConfig(checkpoint_s=0.0, restore_s=0.0, checkpoint_interval_s=math.inf)


def test_eta_falls_after_evictions_and_rises_when_spot_queues_long() -> None:
    quota = SpotQuota(SqaConfig(eta_hold_h=0.0))
    assert quota.feedback("A", 0.0, 0.0) == 1.0  # calm: unchanged
    assert quota.feedback("A", 0.5, 0.0) == pytest.approx(0.2)  # e = 5 x target: eta x (1 - p) / e
    low = quota.eta_of("A")
    assert quota.feedback("A", 0.0, 7200.0) > low  # no evictions, spot waited 2 h > l_max
    assert quota.feedback("A", 0.0, 60.0) == quota.eta_of("A")  # short waits: no raise
    fixed = SpotQuota(SqaConfig(dynamic_eta=False))
    assert fixed.feedback("A", 0.9, 0.0) == 1.0 and fixed.feedback("A", 0.0, 1e6) == 1.0


def test_eta_acts_once_per_window_of_evidence() -> None:
    quota = SpotQuota(SqaConfig())  # hold = H = 1 h
    assert quota.feedback("A", 0.25, 0.0, now=0.0) == pytest.approx(0.4)  # eta x (1 - p) / e
    assert quota.feedback("A", 0.25, 0.0, now=300.0) == pytest.approx(0.4)  # same burst: held
    assert quota.feedback("A", 0.25, 0.0, now=3600.0) == pytest.approx(0.16)  # still evicting an hour later


def test_eta_is_per_gpu_model() -> None:
    quota = SpotQuota(SqaConfig(eta0=0.5))
    quota.feedback("A", 0.5, 0.0, now=0.0)  # a burst of evictions on model A only
    quota.feedback("B", 0.0, 0.0, now=0.0)
    assert quota.eta_of("A") == pytest.approx(0.1) and quota.eta_of("B") == 0.5
    q = quota.allocate({"A": 100.0, "B": 100.0}, {}, {"A": 100.0, "B": 100.0})
    assert (q["A"], q["B"]) == (pytest.approx(10.0), 50.0)


def test_quota_is_min_of_inventory_times_eta_and_held_plus_free() -> None:
    bounds = {("A", "o1"): 50.0, ("A", "o2"): 30.0, ("B", "o1"): 10.0}
    f = inventory({"A": 100.0, "B": 40.0}, sum_by_model(bounds))
    assert f == {"A": 20.0, "B": 30.0}
    quota = SpotQuota(SqaConfig(eta0=0.5))
    q = quota.allocate(f, {"A": 4.0, "B": 0.0}, {"A": 30.0, "B": 5.0})
    assert q["A"] == 10.0  # f * eta = 10 < S0 + Sa = 34
    assert q["B"] == 5.0  # S0 + Sa = 5 < f * eta = 15
    assert q[""] == 15.0
    assert quota.admits("A", 4.0, 6.0) and not quota.admits("A", 4.0, 7.0)


def test_weekly_peak_forgets_levels_older_than_the_window() -> None:
    peak = WeeklyPeak(window_s=100.0)
    peak.observe(0.0, {("A", "o"): 8.0})
    peak.observe(50.0, {("A", "o"): 2.0})
    assert peak.upper_bound(0.9, 1.0)[("A", "o")] == 8.0
    peak.observe(160.0, {})
    assert peak.upper_bound(0.9, 1.0)[("A", "o")] == 2.0


def _book(sizes: list[int]) -> NodeBook:
    return NodeBook(ClusterState(cluster(sizes)), gamma=0.8, penalty_base=2.0, eviction_aware=True)


def _spot_on(book: NodeBook, node: int, gpus: int, idx: int) -> None:
    spot = make_job(gpus, idx=idx)
    spot.alloc = ((node, book.state.take_whole(node, gpus)),)
    book.add_spot(spot)


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
    assert best_node(book, groups, 3, spot=True, aware=True) == 1  # Score1: only n1 fits 3
    assert best_node(book, groups, 2, spot=True, aware=True) == 3  # Score2 beats n0, Score3 beats n2
    assert best_node(book, groups, 2, spot=False, aware=True) == 0  # HP with HP
    book.remove_spot(book.spot_jobs[3][101], book.spot_jobs[3][101].alloc)
    assert best_node(book, groups, 2, spot=True, aware=True) == 2  # n2 is now the only spot-held node


def test_circuit_breaker_keeps_spot_off_a_high_eviction_node() -> None:
    book = _book([8, 8])
    book.state.take_whole(0, 6)  # n0 is the best fit
    book.touch(0)
    groups = book.state.groups
    assert best_node(book, groups, 1, spot=True, aware=True) == 0
    book.record_eviction(0.0, (0,) * 7)  # 2 ** 7 * 0.01 >= 1: breaker open
    assert book.blocked(0)
    assert best_node(book, groups, 1, spot=True, aware=True) == 1
    assert best_node(book, groups, 1, spot=True, aware=False) == 0  # without eviction awareness
    book.decay(2 * 86400.0)  # a day later the evictions are forgotten
    assert not book.blocked(0)


def _preemption_run(variant: str, rows: list[dict], sizes: list[int], **params) -> tuple[dict, dict]:
    policy = build_gfs(variant, params)
    result = Simulation(workload(rows), cluster(sizes), policy, config=NO_CKPT).run()
    jobs = result.jobs.set_index("job_id")
    return jobs["preemptions"].to_dict(), policy.report(result.jobs)["gfs"]


ROWS_TWO_NODES = [
    job("h", 0.0, 4, 1e5, priority_class="hp"),
    job("b", 0.0, 2, 1e5, priority_class="spot"),
    job("c", 0.0, 2, 1e5, priority_class="spot"),
    job("a", 900.0, 4, 1e5, priority_class="spot"),
    job("x", 1000.0, 4, 100.0, priority_class="hp"),
]


def test_hp_evicts_the_cheapest_nodes_spot_jobs_and_never_hp() -> None:
    # n0: HP h; n1: spot b + c (2 victims, 4000 GPU-s of waste); n2: spot a (1 victim, 400)
    preempted, report = _preemption_run("gfs", ROWS_TWO_NODES, [4, 4, 4])
    assert preempted == {"h": 0, "b": 0, "c": 0, "a": 1, "x": 0}
    assert report["evictions"] == 1
    naive, _ = _preemption_run("gfs-p", ROWS_TWO_NODES, [4, 4, 4])  # best fit + newest: the lowest id
    assert naive == {"h": 0, "b": 1, "c": 1, "a": 0, "x": 0}


def test_victims_are_the_spot_jobs_with_the_least_lost_work() -> None:
    rows = [
        job("h", 0.0, 2, 1e5, priority_class="hp"),
        job("p", 0.0, 2, 1e5, priority_class="spot"),  # never checkpointed: 1000 s lost at t=1000
        job("q", 0.0, 2, 1e5, priority_class="spot", checkpoint_interval_s=900.0),  # 100 s lost
        job("r", 500.0, 2, 1e5, priority_class="spot"),  # newest, 500 s lost
        job("x", 1000.0, 2, 100.0, priority_class="hp"),
    ]
    preempted, _ = _preemption_run("gfs", rows, [8])
    assert preempted == {"h": 0, "p": 0, "q": 1, "r": 0, "x": 0}
    newest, _ = _preemption_run("gfs-p", rows, [8])
    assert newest == {"h": 0, "p": 0, "q": 0, "r": 1, "x": 0}


def test_eviction_before_the_guarantee_is_an_slo_violation() -> None:
    _, report = _preemption_run("gfs", ROWS_TWO_NODES, [4, 4, 4])
    assert (report["slo_violations"], report["slo_violated_jobs"]) == (1, 1)  # a ran 100 s < 1 h
    assert report["slo_violated_share"] == pytest.approx(1 / 3)
    _, late = _preemption_run("gfs", ROWS_TWO_NODES, [4, 4, 4], guarantee_h=0.01)  # H = 36 s
    assert late["evictions"] == 1 and late["slo_violations"] == 0


def test_eviction_rate_counts_guarantee_periods() -> None:
    rows = [job("s", 0.0, 4, 1e4, priority_class="spot"), job("x", 9000.0, 4, 100.0, priority_class="hp")]
    preempted, report = _preemption_run("gfs", rows, [4])
    assert preempted == {"s": 1, "x": 0}
    # s meets periods at 1 h and 2 h, fails the third at 9000 s (no SLO violation: after H);
    # it restarts from zero at 9100 s, meets two more periods and the last at its finish
    assert (report["guarantee_periods_met"], report["guarantee_periods_failed"]) == (5, 1)
    assert report["slo_violations"] == 0


def test_gfs_end_to_end_on_a_small_gfs_cluster() -> None:
    sizes = {"A100-SXM4-80GB": 8, "A10": 1, "H800": 8, "GPU-series-1": 8, "GPU-series-2": 8, "A800-SXM4-80GB": 8}
    nodes = tuple(NodeSpec(f"{m}-{i}", m, g) for m, g in sizes.items() for i in range(32))
    spec = ClusterSpec("small-gfs", {m: gpu_type(m) for m in sizes}, nodes)
    run = RunSpec(WorkloadSpec(synthetic="gfs", jobs=600, seed=1, options={"spot_scale": 4}), None, "gfs")
    summary = simulate_run(run, None, cluster=spec)
    assert summary["unfinished"] == 0
    assert {"hp", "spot"} <= set(summary["classes"])
    assert "eviction_rate" in summary["classes"]["spot"]
    assert set(summary["gpu_alloc_rate_by_model"]) == set(sizes)
    assert all(0 < rate <= 1 for rate in summary["gpu_alloc_rate_by_model"].values())
    block = summary["gfs"]
    assert block["decisions"] > 0 and block["decision_ms_p99"] >= block["decision_ms_mean"] > 0
