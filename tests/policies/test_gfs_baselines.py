"""The GFS paper's baselines (§4.1): yarn-cs-preempt, chronus, lyra and fgd."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedlab.cluster.spec import ClusterSpec, NodeSpec, gpu_type
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.sim.policy import Policy
from schedlab.cluster.state import ClusterState
from schedlab.policies.spot.chronus import Candidate, select
from schedlab.policies.spot.lyra import NodeSet
from schedlab.errors import ConfigError
from schedlab.policies.registry import POLICIES, make_policy
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from simkit import Checked, cluster, job, workload

NO_CKPT = SimConfig(checkpoint_s=0.0, restore_s=0.0, restart_s=0.0, checkpoint_interval_s=math.inf)


class Recorder(Checked):
    """Checks the state after every round and remembers the nodes each job first ran on."""

    def __init__(self, inner: Policy) -> None:
        super().__init__(inner)
        self.nodes: dict[str, tuple[int, ...]] = {}

    def schedule(self, ctx) -> None:
        super().schedule(ctx)
        for running in ctx.running.values():
            self.nodes.setdefault(running.id, running.nodes)


def run(name: str, rows: list[dict], sizes: list[int]) -> tuple[dict, Recorder]:
    policy = Recorder(make_policy(name, rng=np.random.default_rng(0)))
    result = Simulation(workload(rows), cluster(sizes), policy, config=NO_CKPT).run()
    assert result.jobs["finished"].all()
    return result.jobs.set_index("job_id").to_dict("index"), policy


# ----- yarn-cs-preempt ----------------------------------------------------------------------------
def test_yarn_cs_preempt_evicts_the_newest_spot_job_and_spot_never_evicts_hp() -> None:
    rows = [
        job("old", 0.0, 2, 1e4, priority_class="spot"),
        job("new", 100.0, 2, 1e4, priority_class="spot"),
        job("x", 1000.0, 2, 500.0, priority_class="hp"),  # the node is full: evicts "new"
        job("h", 2000.0, 4, 1e4, priority_class="hp"),  # evicts both spot jobs
        job("late", 3000.0, 2, 100.0, priority_class="spot"),  # waits for h: never evicts it
    ]
    jobs, _ = run("yarn-cs-preempt", rows, [4])
    assert jobs["x"]["first_start_s"] == 1000.0
    assert {k: v["preemptions"] for k, v in jobs.items()} == {"old": 1, "new": 2, "x": 0, "h": 0, "late": 0}
    assert jobs["late"]["first_start_s"] >= jobs["h"]["end_s"]


def test_yarn_cs_preempt_gang_hp_evicts_a_spot_gang_spanning_nodes() -> None:
    rows = [
        job("g", 0.0, 8, 1e4, priority_class="spot", gpus_per_worker=4),  # nodes 0 and 1
        job("s", 1.0, 4, 1e4, priority_class="spot"),  # node 2
        job("h", 100.0, 12, 500.0, priority_class="hp", gpus_per_worker=4),  # needs all three
    ]
    jobs, _ = run("yarn-cs-preempt", rows, [4, 4, 4])
    assert jobs["h"]["first_start_s"] == 100.0
    assert jobs["g"]["preemptions"] == 1 and jobs["s"]["preemptions"] == 1


# ----- chronus -----------------------------------------------------------------------------------
def test_chronus_keeps_the_lease_then_pauses_the_job_it_does_not_renew() -> None:
    rows = [
        job("s", 0.0, 4, 1e4, priority_class="spot"),  # lease 0-300 s
        job("h", 10.0, 4, 1000.0, priority_class="hp"),  # must wait for the lease end
    ]
    jobs, policy = run("chronus", rows, [4])
    assert policy.inner.report(None)["chronus"]["solves"] == 1
    assert jobs["h"]["first_start_s"] == 300.0  # no preemption inside the lease
    assert jobs["s"]["preemptions"] == 1 and jobs["s"]["lost_work_s"] == 0.0  # paused, not evicted
    # h's 20 min lease ends on the 5-min grid at 1800 s; it finishes at 1300 s, then s resumes
    assert jobs["s"]["end_s"] == pytest.approx(1300.0 + 1e4 - 300.0)
    eager, _ = run("yarn-cs-preempt", rows, [4])
    assert eager["h"]["first_start_s"] == 10.0


def test_chronus_renews_a_lease_when_nobody_competes() -> None:
    jobs, policy = run("chronus", [job("s", 0.0, 4, 2000.0, priority_class="spot")], [4])
    assert jobs["s"]["preemptions"] == 0 and jobs["s"]["end_s"] == 2000.0
    report = policy.inner.report(None)["chronus"]
    assert report["boundaries"] >= 6 and report["solves"] == 0  # a lease end every 5 min, no contention


def test_chronus_milp_respects_capacity_and_beats_greedy() -> None:
    spot = [Candidate(5, False, False, (0,)), Candidate(4, False, False, (0,)), Candidate(4, False, False, (0,))]
    assert select(spot, {0: 8.0}) == [None, 0, 0]  # FCFS greedy would take 5 and leave 3 idle
    mixed = [Candidate(8, False, True, (0,)), Candidate(1, True, False, (0, 1)), Candidate(2, True, False, (1,))]
    granted = select(mixed, {0: 8.0, 1: 2.0})
    assert granted == [None, 0, 1]  # one HP GPU outweighs eight spot GPUs
    for cap_group, cap in ((0, 8.0), (1, 2.0)):
        assert sum(c.gpus for c, g in zip(mixed, granted) if g == cap_group) <= cap


# ----- lyra --------------------------------------------------------------------------------------
def test_lyra_runs_spot_only_on_idle_hp_nodes() -> None:
    rows = [
        job("h1", 0.0, 3, 1000.0, priority_class="hp"),
        job("h2", 0.0, 3, 2000.0, priority_class="hp"),  # n1 (3 GPUs do not fit next to h1)
        job("s", 10.0, 1, 100.0, priority_class="spot"),  # 1 GPU free on each node, none idle
    ]
    jobs, policy = run("lyra", rows, [4, 4])
    assert jobs["s"]["first_start_s"] == 1000.0  # waits for a whole idle node
    assert policy.nodes["s"] == policy.nodes["h1"]
    eager, _ = run("yarn-cs-preempt", rows, [4, 4])
    assert eager["s"]["first_start_s"] == 10.0


def test_lyra_reclaims_the_node_whose_spot_jobs_lose_least_work() -> None:
    rows = [
        job("h", 0.0, 4, 1e4, priority_class="hp"),  # n0
        job("p", 0.0, 2, 1e4, priority_class="spot"),  # n1 loaned: p + q lose 4000 GPU-s at 1000 s
        job("q", 0.0, 2, 1e4, priority_class="spot"),
        job("r", 0.0, 4, 1e4, priority_class="spot", checkpoint_interval_s=900.0),  # n2: loses 400
        job("x", 1000.0, 4, 100.0, priority_class="hp"),
    ]
    jobs, policy = run("lyra", rows, [4, 4, 4])
    assert {k: v["preemptions"] for k, v in jobs.items()} == {"h": 0, "p": 0, "q": 0, "r": 1, "x": 0}
    assert policy.nodes["x"] == policy.nodes["r"] == (2,)
    assert policy.inner.report(None)["lyra"] == {"evictions": 1, "reclaims": 1}
    newest, _ = run("yarn-cs-preempt", rows, [4, 4, 4])  # best fit (n1 first), newest first
    assert (newest["p"]["preemptions"], newest["q"]["preemptions"], newest["r"]["preemptions"]) == (1, 1, 0)


def test_lyra_has_nothing_to_evict_once_its_fractional_spot_jobs_are_gone() -> None:
    rows = [job("f", 0.0, 0.5, 100.0, priority_class="spot"), job("h", 200.0, 4, 100.0, priority_class="hp")]
    seen: list[bool] = []

    class Watch(Recorder):
        def schedule(self, ctx) -> None:
            super().schedule(ctx)
            seen.append(self.inner.evictable())

    policy = Watch(make_policy("lyra", rng=np.random.default_rng(0)))
    result = Simulation(workload(rows), cluster([4, 4]), policy, config=NO_CKPT).run()
    assert result.jobs["finished"].all()
    assert seen[0] is True  # f runs on a loaned node
    assert seen[-1] is False and policy.inner.fractions_on == {}


def test_lyra_node_set_room_counts_what_whole_workers_can_take() -> None:
    state = ClusterState(cluster([8, 8, 4, 1, 8]))
    for node, count in [(0, 3), (2, 4), (4, 6)]:  # free: 5, 8, 0, 1, 2
        state.take_whole(node, count)
    nodes = NodeSet(state)
    for node in range(state.num_nodes):
        nodes.add(node)
    groups = state.groups_for("", "")
    assert nodes.room(groups, 4) == 4 + 8  # n0 holds one 4-GPU worker, n1 two
    assert nodes.room(groups, 1) == 5 + 8 + 1 + 2
    assert nodes.room(groups, 2, idle_only=True) == 8  # n1 only (n3 is idle but holds 1 GPU)
    assert nodes.room(groups, 1, idle_only=True) == 8 + 1
    state.take_whole(1, 8)
    nodes.refresh(1)
    assert nodes.room(groups, 4) == 4 and nodes.room(groups, 1, idle_only=True) == 1
    nodes.remove(0)
    assert nodes.room(groups, 1) == 1 + 2


# ----- fgd ---------------------------------------------------------------------------------------
def test_fgd_leaves_less_fragmentation_than_best_fit() -> None:
    rows = [job(f"a{i}", 0.0, 4, 10.0) for i in range(3)] + [job("x", 1000.0, 2, 10.0)]
    _, policy = run("fgd", rows, [5, 6, 8])
    assert policy.nodes["x"] == (1,)  # 6 -> 4 free: a 4-GPU job still fits; 5 -> 3 would strand 3
    _, best = run("yarn-cs-preempt", rows, [5, 6, 8])
    assert best.nodes["x"] == (0,)


def test_fgd_hp_evicts_spot_like_yarn_cs_preempt() -> None:
    rows = [job("s", 0.0, 4, 1e4, priority_class="spot"), job("h", 100.0, 4, 100.0, priority_class="hp")]
    jobs, _ = run("fgd", rows, [4])
    assert (jobs["s"]["preemptions"], jobs["h"]["first_start_s"]) == (1, 100.0)


# ----- end to end --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["yarn-cs-preempt", "chronus", "lyra", "fgd"])
def test_baseline_end_to_end_on_a_small_gfs_cluster(name: str) -> None:
    sizes = {"A100-SXM4-80GB": 8, "A10": 1, "H800": 8, "GPU-series-1": 8, "GPU-series-2": 8, "A800-SXM4-80GB": 8}
    nodes = tuple(NodeSpec(f"{m}-{i}", m, g) for m, g in sizes.items() for i in range(32))
    spec = ClusterSpec("small-gfs", {m: gpu_type(m) for m in sizes}, nodes)
    run_spec = RunSpec(WorkloadSpec(synthetic="gfs", jobs=600, seed=1, options={"spot_scale": 4}), None, name)
    summary = simulate_run(run_spec, None, cluster=spec)
    assert summary["unfinished"] == 0
    assert {"hp", "spot"} <= set(summary["classes"])
    assert name in summary


@pytest.mark.parametrize("name", ["yarn-cs-preempt", "lyra", "fgd"])
def test_no_placement_is_tried_where_too_few_gpus_are_free_and_nothing_can_be_evicted(name: str) -> None:
    """HP jobs only, saturated: a round places a job only where its groups have as many free
    GPUs as it needs (otherwise neither placing nor evicting could start it), so the rounds of a
    growing backlog do not try every waiting shape."""
    rows = [job(f"j{i}", float(i), [1, 2, 4, 8][i % 4], 500.0 + 37.0 * (i % 11)) for i in range(120)]
    policy = make_policy(name, rng=np.random.default_rng(0))
    tried: list[bool] = []
    place = policy.place

    def recording(ctx, job):
        tried.append(ctx.state.free_in(ctx.groups_of(job)) >= job.num_gpus)
        return place(ctx, job)

    policy.place = recording
    result = Simulation(workload(rows), cluster([8, 8]), policy, config=NO_CKPT).run()
    assert result.jobs["finished"].all() and result.jobs["queue_s"].max() > 1000.0  # a backlog formed
    assert len(tried) >= 120 and all(tried)


# ----- spot quota and chronus: the authors' simulator setting -----------------------------------
def quota_run(name: str, rows: list[dict], spot_quota: str) -> tuple[dict, Policy]:
    params = {"spot_quota": spot_quota, "quota_forecaster": "weekly-peak"}
    policy = make_policy(name, rng=np.random.default_rng(0), params=POLICIES[name].parse(params))
    result = Simulation(workload(rows), cluster([4]), Checked(policy), config=NO_CKPT).run()
    assert result.jobs["finished"].all()
    return result.jobs.set_index("job_id").to_dict("index"), policy


@pytest.mark.parametrize("name", ["yarn-cs-preempt", "lyra", "fgd"])
def test_forecast_spot_quota_holds_a_spot_job_that_runs_at_once_without_it(name: str) -> None:
    """HP held 2 of 4 GPUs until 400 s; the weekly-peak bound stays 2, so eq. 9 leaves 2 GPUs
    and the quota (eq. 10, eta 1) is 2: a 4-GPU spot job arriving at 700 s on an idle node
    waits until eq. 11 has raised eta (its wait exceeds theta = 3,600 s at the update of
    7,200 s: eta 1.5, quota 3; at 10,800 s: eta 2.25, quota min(4.5, 4) = 4). Without a
    quota it starts on arrival."""
    rows = [job("hp", 0.0, 2, 400.0, priority_class="hp"), job("s", 700.0, 4, 100.0, priority_class="spot")]
    free, _ = quota_run(name, rows, "none")
    assert free["s"]["first_start_s"] == 700.0
    gated, policy = quota_run(name, rows, "forecast")
    assert gated["s"]["first_start_s"] == 10800.0
    assert [(t, round(eta, 6)) for t, _, eta in policy.gate.eta_trace[:3]] == [(3600.0, 1.0), (7200.0, 1.5), (10800.0, 2.25)]
    assert policy.report(None)[name]["spot_quota"] == "forecast"


def test_forecast_spot_quota_cuts_eta_after_an_eviction() -> None:
    """An HP job evicts the only spot run: e = 1 over the first hour, above 1.5 (1 - p), so
    eq. 11 cuts eta to eta * 0.1 / 1 at 3,600 s, as under GFS; with no quota there is no eta."""
    rows = [job("s", 0.0, 4, 5000.0, priority_class="spot"), job("hp", 100.0, 2, 1000.0, priority_class="hp")]
    jobs, policy = quota_run("yarn-cs-preempt", rows, "forecast")
    assert jobs["s"]["preemptions"] == 1
    assert policy.gate.eta_trace[0][0] == 3600.0
    assert policy.gate.eta_trace[0][2] == pytest.approx(0.1)
    _, free = quota_run("yarn-cs-preempt", rows, "none")
    assert free.gate is None


@pytest.mark.parametrize("name", ["yarn-cs-preempt", "lyra", "fgd"])
def test_spot_quota_parameter_rejects_unknown_values(name: str) -> None:
    with pytest.raises(ConfigError, match="spot_quota must be one of none, forecast"):
        POLICIES[name].parse({"spot_quota": "bogus"})
    with pytest.raises(ConfigError, match="quota_forecaster"):
        POLICIES[name].parse({"quota_forecaster": "x"})
    assert POLICIES[name].parse({"spot_quota": "forecast"}).spot_quota == "forecast"
    assert POLICIES[name].parse({}).spot_quota == "none"


def test_quota_eta_every_300_s_applies_eq_11_at_every_update() -> None:
    """As the first quota test, with eq. 11 at every 300-s update (the authors' simulator): the
    spot job's wait first exceeds theta at 4,500 s (eta 1.5, quota 3) and eta reaches 2.25 at
    4,800 s (quota 4), where once per H it took until 10,800 s."""
    rows = [job("hp", 0.0, 2, 400.0, priority_class="hp"), job("s", 700.0, 4, 100.0, priority_class="spot")]
    params = {"spot_quota": "forecast", "quota_forecaster": "weekly-peak", "quota_eta_every_s": "300"}
    policy = make_policy("yarn-cs-preempt", rng=np.random.default_rng(0), params=POLICIES["yarn-cs-preempt"].parse(params))
    result = Simulation(workload(rows), cluster([4]), Checked(policy), config=NO_CKPT).run()
    assert result.jobs.set_index("job_id").loc["s", "first_start_s"] == 4800.0
    assert [t for t, _, _ in policy.gate.eta_trace[:2]] == [300.0, 600.0]


@pytest.mark.parametrize("name", ["yarn-cs-preempt", "lyra", "fgd"])
def test_quota_readings_reach_the_gate_and_bad_ones_are_refused(name: str) -> None:
    params = {"spot_quota": "forecast", "quota_forecaster": "weekly-peak", "quota_wait_reading": "head", "quota_eta_every_s": "600"}
    policy = make_policy(name, rng=np.random.default_rng(0), params=POLICIES[name].parse(params))
    assert (policy.gate.config.wait_reading, policy.gate.config.eta_interval_s) == ("head", 600.0)
    with pytest.raises(ConfigError, match=f"{name}: quota_wait_reading"):
        POLICIES[name].parse({"quota_wait_reading": "median"})
    with pytest.raises(ConfigError, match=f"{name}: quota_eta_every_s"):
        POLICIES[name].parse({"quota_eta_every_s": "100"})


def release_run(rows: list[dict], release: bool) -> tuple[dict, Policy]:
    params = POLICIES["chronus"].parse({"release_all_s": "1200"} if release else {})
    policy = make_policy("chronus", rng=np.random.default_rng(0), params=params)
    config = SimConfig(checkpoint_s=0.0, restore_s=120.0, restart_s=0.0, checkpoint_interval_s=math.inf)
    result = Simulation(workload(rows), cluster([4]), Checked(policy), config=config).run()
    return result.jobs.set_index("job_id").to_dict("index"), policy


def test_chronus_release_all_pays_the_release_cost_at_every_release() -> None:
    """Alone on the cluster, a 3,000-s job is released at 1,200 and 2,400 s and placed again at
    once, 120 s each time (the engine's restore_s); with per-job leases it is never paused."""
    rows = [job("h", 0.0, 4, 3000.0, priority_class="hp")]
    jobs, policy = release_run(rows, release=True)
    assert jobs["h"]["preemptions"] == 2 and jobs["h"]["end_s"] == pytest.approx(3240.0)
    assert policy.report(None)["chronus"]["solves"] == 0
    leased, _ = release_run(rows, release=False)
    assert leased["h"]["preemptions"] == 0 and leased["h"]["end_s"] == 3000.0


def test_chronus_release_all_places_hp_first_at_the_release() -> None:
    rows = [job("s", 0.0, 4, 1e4, priority_class="spot"), job("h", 10.0, 4, 1000.0, priority_class="hp")]
    jobs, _ = release_run(rows, release=True)
    assert jobs["h"]["first_start_s"] == 1200.0 and jobs["h"]["end_s"] == 2200.0  # no restore: it never ran
    assert jobs["s"]["preemptions"] >= 1 and jobs["s"]["lost_work_s"] == 0.0


def test_chronus_release_all_must_fall_on_the_tick_grid() -> None:
    with pytest.raises(ConfigError, match="release_all_s"):
        POLICIES["chronus"].parse({"release_all_s": "1000"})
