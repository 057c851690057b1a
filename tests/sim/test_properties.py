"""Property tests: random small workloads on random small clusters, run by every registered
policy with every placer and by a random policy that takes only legal actions; the engine's
accounting invariants must hold on every run."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simkit import Checked, cluster, workload

from schedlab.cluster.spec import ClusterSpec
from schedlab.sim.policy import Policy
from schedlab.policies.common.placers import PLACERS
from schedlab.policies.registry import POLICIES, PolicyOptions, make_policy
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import SimResult, Simulation
from schedlab.sim.job import RUNNING, Job

SETTINGS = settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
COSTS = [(0.0, 0.0, 0.0), (10.0, 30.0, 10.0)]  # (checkpoint_s, restore_s, restart_s)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[ClusterSpec, pd.DataFrame, SimConfig]:
    """A cluster (shared or partitioned, one or two GPU types, 1-5 nodes), jobs that fit it and
    an engine config."""
    n_nodes = draw(st.integers(1, 5))
    sizes = draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=n_nodes, max_size=n_nodes))
    types = draw(st.lists(st.sampled_from("AB"), min_size=n_nodes, max_size=n_nodes))
    partitioned = draw(st.booleans())
    if partitioned:
        pools = draw(st.lists(st.sampled_from(["x", "y"]), min_size=n_nodes, max_size=n_nodes))
        spec = cluster(sizes, types=types, pools=pools, tenants={p: None for p in pools}, partitioned=True)
    else:
        spec = cluster(sizes, types=types)
    tenants = sorted(spec.tenants) or ["default"]
    rows = []
    for i in range(draw(st.integers(1, 12))):
        tenant = draw(st.sampled_from(tenants))
        pool = tenant if partitioned else ""
        gpu_type = draw(st.sampled_from(["", *sorted({n.gpu_type for n in spec.nodes if n.pool == pool})]))
        cap = spec.max_job_gpus(tenant, gpu_type)
        options = [g for g in (1, 2, 4, 8, 16) if g <= cap] + [0.25, 0.5]
        rows.append({
            "job_id": f"j{i}",
            "submit_s": draw(st.integers(0, 40)) * 25.0,
            "num_gpus": draw(st.sampled_from(options)),
            "duration_s": float(draw(st.integers(1, 2000))),
            "tenant": tenant,
            "gpu_type": gpu_type,
            "checkpoint_interval_s": draw(st.sampled_from([math.nan, 0.0, 60.0, 500.0])),
        })  # fmt: skip
    checkpoint_s, restore_s, restart_s = draw(st.sampled_from(COSTS))
    horizon = draw(st.sampled_from([math.inf, math.inf, 1500.0]))
    config = SimConfig(checkpoint_s=checkpoint_s, restore_s=restore_s, restart_s=restart_s,
                       checkpoint_interval_s=300.0, horizon_s=horizon)  # fmt: skip
    return spec, pd.DataFrame(rows), config


def run_checked(spec: ClusterSpec, rows: pd.DataFrame, config: SimConfig, policy: Policy, seed: int = 0) -> SimResult:
    """Run with the state checked after every decision; check the per-job table afterwards."""
    checked = Checked(policy)
    result = Simulation(workload(rows.to_dict("records")), spec, checked, config=config, seed=seed).run()
    check_result(result, checked, config)
    return result


def check_result(result: SimResult, checked: Checked, config: SimConfig) -> None:
    jobs = result.jobs
    end = result.meta["end_time_s"]
    fin = jobs[jobs["finished"]]
    assert checked.finishes == dict.fromkeys(fin["job_id"], 1), "a job finished more or less than once"
    assert fin["end_s"].notna().all() and jobs.loc[~jobs["finished"], "end_s"].isna().all()
    assert (fin["end_s"] <= end).all() and end <= config.horizon_s
    if not jobs["finished"].all():  # every policy here is live: only the horizon stops a job
        assert end == config.horizon_s
    close = {"rtol": 1e-9, "atol": 1e-6}
    np.testing.assert_allclose(fin["work_done_s"], fin["duration_s"] + fin["lost_work_s"], rtol=1e-6)
    np.testing.assert_allclose(jobs["gpu_seconds"], jobs["num_gpus"] * jobs["run_s"], **close)
    np.testing.assert_allclose(fin["queue_s"] + fin["run_s"], fin["end_s"] - fin["submit_s"], **close)
    arrived = jobs[~jobs["finished"] & (jobs["submit_s"] <= end)]
    np.testing.assert_allclose(arrived["queue_s"] + arrived["run_s"], end - arrived["submit_s"], **close)
    late = jobs[jobs["submit_s"] > end]
    assert (late["queue_s"] == 0).all() and (late["run_s"] == 0).all()
    # Every GPU type has speed 1, so no job does more work than its run time.
    assert (jobs["work_done_s"] <= jobs["run_s"] + 1e-6).all()
    assert (jobs["lost_work_s"] <= jobs["work_done_s"] + 1e-6).all()
    ts = result.timeseries
    assert (ts["gpus_busy"] <= ts["gpus_total"] + 1e-9).all() and (ts["gpus_busy"] >= -1e-9).all()
    assert ts["time_s"].is_monotonic_increasing


def check_rate_one(result: SimResult, config: SimConfig, exclude: set[str] = frozenset()) -> None:
    """For jobs that always ran at rate 1: run time is work plus at most the stalls paid."""
    jobs = result.jobs[~result.jobs["job_id"].isin(exclude)]
    fin = jobs[jobs["finished"]]
    stall = max(config.checkpoint_s + config.restore_s, config.restart_s)  # a pause or migration, or a kill
    stalls = (fin["preemptions"] + fin["migrations"]) * stall
    work = fin["duration_s"] + fin["lost_work_s"]
    assert (fin["run_s"] >= work - 1e-6).all()
    assert (fin["run_s"] <= work + stalls + 1e-6).all()
    if config.checkpoint_s == config.restore_s == config.restart_s == 0:
        np.testing.assert_allclose(fin["run_s"], work, rtol=1e-9, atol=1e-6)


# The round-based heterogeneity family (gavel, hadar, hadare) places its own jobs, refuses
# partitioned clusters and fractional or gang jobs, and HadarE's forked jobs run faster than
# rate 1: tests/policies/test_hetero.py checks their invariants on the scenarios they accept.
HETERO = {"gavel", "hadar", "hadare"}
# pollux resizes jobs to any GPU count (gpu_seconds follow the GPUs held, rates exceed 1) and
# refuses the same jobs and clusters: tests/policies/pollux checks its invariants.
ELASTIC = {"pollux"}
COMBOS = [(p, pl) for p in POLICIES if p not in HETERO | ELASTIC for pl in PLACERS]


@pytest.mark.parametrize(("policy_name", "placer"), COMBOS, ids=[f"{p}+{pl}" for p, pl in COMBOS])
@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_registered_policies_keep_invariants(
    policy_name: str, placer: str, scenario: tuple[ClusterSpec, pd.DataFrame, SimConfig]
) -> None:
    spec, rows, config = scenario
    results = [
        run_checked(spec, rows, config, make_policy(policy_name, placer=placer, rng=np.random.default_rng(7),
                                                    options=PolicyOptions(submissions=workload(rows.to_dict("records")).jobs)), seed=7)  # fmt: skip
        for _ in range(2)
    ]
    pd.testing.assert_frame_equal(results[0].jobs, results[1].jobs)
    jobs = results[0].jobs
    check_rate_one(results[0], config, exclude=set(jobs.loc[jobs["colocated_s"] > 0, "job_id"]))
    if math.isinf(config.horizon_s):
        assert results[0].jobs["finished"].all(), f"{policy_name} left jobs unfinished"


class RandomLegal(Policy):
    """Randomly starts, pauses, preempts, migrates and colocates jobs, sets timers and powers
    nodes off and on, choosing only actions the cluster state allows. Each job is disrupted
    at most twice and pending jobs are always offered a start, so every job finishes."""

    name = "random-legal"

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.pending: dict[int, Job] = {}
        self.disruptions: dict[int, int] = {}
        self.colocated: set[str] = set()
        self.timers_left = 15
        self.power_offs_left = 3

    def on_arrival(self, ctx: Simulation, job: Job) -> None:
        self.pending[job.idx] = job

    def schedule(self, ctx: Simulation) -> None:
        rng = self.rng
        for job in sorted(ctx.running.values(), key=lambda j: j.idx):
            if self.disruptions.get(job.idx, 0) >= 2 or rng.random() > 0.3:
                continue
            self.disruptions[job.idx] = self.disruptions.get(job.idx, 0) + 1
            action = rng.choice(["pause", "preempt", "migrate"])
            alloc = self._alloc(ctx, job) if action == "migrate" and not job.colocated else None
            if alloc is not None:
                ctx.migrate(job, alloc)
            else:
                if action == "pause":
                    ctx.pause(job)
                else:
                    ctx.preempt(job)
                self.pending[job.idx] = job
        order = sorted(self.pending)
        rng.shuffle(order)
        for idx in order:
            job = self.pending[idx]
            alloc = self._alloc(ctx, job)
            if alloc is not None:
                ctx.start(job, alloc)
            elif (host := self._host(ctx, job)) is not None:
                ctx.colocate(job, host)
                self.colocated.update((job.id, host.id))
            else:
                continue
            del self.pending[idx]
        self._power(ctx)
        if self.timers_left and rng.random() < 0.3:
            self.timers_left -= 1
            ctx.set_timer(ctx.now + rng.choice([0.0, 1.0, 77.5, 400.0]), None)

    def _eligible(self, ctx: Simulation, job: Job) -> list[int]:
        s = ctx.state
        pool = ctx.pool_of(job)
        return [
            n for n in range(s.num_nodes)
            if s.on[n] and s.node_pool[n] == pool and (not job.gpu_type or s.node_type[n] == job.gpu_type)
        ]  # fmt: skip

    def _alloc(self, ctx: Simulation, job: Job) -> list[tuple[int, int]] | None:
        """A random legal allocation; a running job may reuse its own GPUs."""
        s = ctx.state
        own = {node: len(gids) for node, gids in job.alloc} if job.state == RUNNING else {}
        nodes = self._eligible(ctx, job)
        self.rng.shuffle(nodes)
        if job.fractional:
            fits = [n for n in nodes if n in own or s.fraction_room(n, job.milli)]
            return [(fits[0], 1)] if fits else None
        need = int(job.num_gpus)
        alloc = []
        for node in nodes:
            take = min(s.free[node] + own.get(node, 0), need)
            if take:
                alloc.append((node, take))
                need -= take
            if need == 0:
                return alloc
        return None

    def _host(self, ctx: Simulation, job: Job) -> Job | None:
        if ctx.cluster.max_jobs_per_gpu < 2 or job.fractional or self.rng.random() < 0.5:
            return None
        nodes = set(self._eligible(ctx, job))
        s = ctx.state
        for host in sorted(ctx.running.values(), key=lambda j: j.idx):
            if host.num_gpus == job.num_gpus and set(host.nodes) <= nodes and all(
                s.gpu_jobs[n][g] < ctx.cluster.max_jobs_per_gpu for n, gids in host.alloc for g in gids
            ):
                return host
        return None

    def _power(self, ctx: Simulation) -> None:
        s = ctx.state
        idle = [n for n in range(s.num_nodes) if s.on[n] and s.idle(n) and not any(s.gpu_used[n])]
        if idle and self.power_offs_left and self.rng.random() < 0.2:
            self.power_offs_left -= 1
            ctx.power_off(self.rng.choice(idle))
        if self.pending:
            for n in range(s.num_nodes):
                if not s.on[n] and n not in s.booting:
                    ctx.power_on(n)


@SETTINGS
@given(scenario=scenarios(), seed=st.integers(0, 2**16), sharing=st.sampled_from([1, 2, 3]))
def test_random_legal_policy_keeps_invariants(
    scenario: tuple[ClusterSpec, pd.DataFrame, SimConfig], seed: int, sharing: int
) -> None:
    spec, rows, config = scenario
    spec = spec.with_sharing(sharing)
    policies = [RandomLegal(seed), RandomLegal(seed)]
    results = [run_checked(spec, rows, config, p, seed=seed) for p in policies]
    pd.testing.assert_frame_equal(results[0].jobs, results[1].jobs)
    check_rate_one(results[0], config, exclude=policies[0].colocated)
    if math.isinf(config.horizon_s):
        assert results[0].jobs["finished"].all()
