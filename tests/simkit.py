"""Small builders shared by the engine, placer and policy tests: workloads, clusters, scripted
policies and an invariant checker that recomputes GPU usage from the running jobs."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from schedlab.cluster.spec import ClusterSpec, GpuType, NodeSpec, TenantSpec
from schedlab.sim.policy import Policy, WrappedPolicy
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import SimResult, Simulation
from schedlab.sim.job import PENDING, Job
from schedlab.workload.schema import Workload, canonical_frame

ZERO_COST = SimConfig(checkpoint_s=0.0, restore_s=0.0, restart_s=0.0)


def job(job_id: str, submit: float, gpus: float, duration: float, **extra: object) -> dict[str, object]:
    """One workload row."""
    return {"job_id": job_id, "submit_s": submit, "num_gpus": gpus, "duration_s": duration, **extra}


def workload(rows: Iterable[dict[str, object]]) -> Workload:
    """A canonical workload from row dicts."""
    return Workload(canonical_frame(pd.DataFrame(list(rows)), source="t"), "t")


def cluster(
    sizes: Iterable[int],
    *,
    types: Iterable[str] | None = None,
    speeds: dict[str, float] | None = None,
    pools: Iterable[str] | None = None,
    tenants: dict[str, float | None] | None = None,
    partitioned: bool = False,
    max_jobs_per_gpu: int = 1,
) -> ClusterSpec:
    """A cluster with one node per entry of ``sizes`` (GPUs per node), all of type "G" unless
    ``types`` names each node's type; ``speeds`` maps type to speed (default 1.0)."""
    sizes = list(sizes)
    types = list(types) if types is not None else ["G"] * len(sizes)
    pools = list(pools) if pools is not None else [""] * len(sizes)
    speeds = speeds or {}
    gpu_types = {t: GpuType(t, 32, speeds.get(t, 1.0)) for t in dict.fromkeys(types)}
    nodes = tuple(NodeSpec(f"n{i}", t, g, pool=p) for i, (g, t, p) in enumerate(zip(sizes, types, pools, strict=True)))
    specs = {name: TenantSpec(name, quota) for name, quota in (tenants or {}).items()}
    return ClusterSpec("test", gpu_types, nodes, specs, partitioned, max_jobs_per_gpu)


def make_job(num_gpus: float, *, idx: int = 0, gpu_type: str = "", gpw: float = math.nan, tenant: str = "default") -> Job:
    """A standalone pending job, for calling placers directly."""
    return Job(idx, f"j{idx}", 0.0, "", tenant, "", "default", num_gpus, gpw, gpu_type, 100.0, math.inf, "", math.nan)


Action = Callable[[Simulation, dict[str, Job]], None]


class Scripted(Policy):
    """Runs ``script[t](ctx, jobs)`` once at each time ``t`` (a timer is set for each);
    ``jobs`` maps job id to every job that has arrived."""

    name = "scripted"

    def __init__(self, script: dict[float, Action]) -> None:
        self.script = dict(script)
        self.jobs: dict[str, Job] = {}
        self.timers: list[tuple[float, object]] = []

    def setup(self, ctx: Simulation) -> None:
        for t in self.script:
            ctx.set_timer(t, ("script", t))

    def on_arrival(self, ctx: Simulation, job: Job) -> None:
        self.jobs[job.id] = job

    def on_timer(self, ctx: Simulation, payload: object) -> None:
        self.timers.append((ctx.now, payload))

    def schedule(self, ctx: Simulation) -> None:
        action = self.script.pop(ctx.now, None)
        if action is not None:
            action(ctx, self.jobs)


def simulate(
    rows: Iterable[dict[str, object]],
    spec: ClusterSpec,
    policy: Policy,
    config: SimConfig = ZERO_COST,
    seed: int = 0,
) -> SimResult:
    """Run ``policy`` over the rows on ``spec``."""
    return Simulation(workload(rows), spec, policy, config=config, seed=seed).run()


def by_id(result: SimResult) -> pd.DataFrame:
    """The result's job table indexed by job id."""
    return result.jobs.set_index("job_id")


def check_state(ctx: Simulation) -> None:
    """Recompute per-GPU usage from the running jobs' allocations and compare it with the
    cluster state; fail on any over-commitment or inconsistency."""
    s = ctx.state
    cap = ctx.cluster.max_jobs_per_gpu
    used = [[0] * g for g in s.node_gpus]
    holders = [[0] * g for g in s.node_gpus]
    shares = [[False] * g for g in s.node_gpus]  # held by a fractional job
    for job in ctx.running.values():
        if job.fractional:
            assert len(job.alloc) == 1 and len(job.alloc[0][1]) == 1, job
        else:
            assert sum(len(gids) for _, gids in job.alloc) == job.held_gpus, job  # a forked job holds every copy's GPUs
        for node, gids in job.alloc:
            assert s.on[node], f"{job} runs on powered-off node {node}"
            assert s.node_pool[node] == ctx.pool_of(job), job
            assert not job.gpu_type or s.node_type[node] == job.gpu_type, job
            for g in gids:
                used[node][g] += job.milli
                holders[node][g] += 1
                shares[node][g] |= job.fractional
    busy = 0.0
    for node in range(s.num_nodes):
        assert s.gpu_used[node] == used[node], f"node {node}: state {s.gpu_used[node]} vs jobs {used[node]}"
        assert s.gpu_jobs[node] == holders[node], f"node {node}: holders {s.gpu_jobs[node]} vs {holders[node]}"
        for u, h, frac in zip(used[node], holders[node], shares[node], strict=True):
            if frac:
                assert u <= 1000, f"node {node}: fractions sum to {u} thousandths"
            else:
                assert h <= cap and u == 1000 * h, f"node {node}: {h} whole jobs on one GPU"
        assert s.free[node] == sum(1 for h in holders[node] if h == 0)
        assert sorted(s.free_ids[node]) == [g for g, h in enumerate(holders[node]) if h == 0]
        busy += sum(min(u, 1000) for u in used[node]) / 1000
        group = s.groups[s.node_group[node]]
        assert (node in group.buckets[s.free[node]]) == s.on[node]
    assert np.isclose(s.busy_gpus, busy, atol=1e-9), (s.busy_gpus, busy)
    for group in s.groups:
        assert group.free_total == sum(s.free[n] for n in group.nodes if s.on[n])
    assert s.gpus_on == sum(g for g, on in zip(s.node_gpus, s.on, strict=True) if on)


class Checked(WrappedPolicy):
    """Wraps a policy: checks the cluster state after every decision and counts finishes; every
    other callback is the inner policy's."""

    def __init__(self, inner: Policy) -> None:
        super().__init__(inner)
        self.name = inner.name
        self.finishes: dict[str, int] = {}

    def on_finish(self, ctx: Simulation, job: Job) -> None:
        self.finishes[job.id] = self.finishes.get(job.id, 0) + 1
        self.inner.on_finish(ctx, job)

    def schedule(self, ctx: Simulation) -> None:
        self.inner.schedule(ctx)
        check_state(ctx)
        assert ctx.pending_count == sum(1 for j in ctx.active.values() if j.state == PENDING)
