"""What a policy may touch: the Context's members, read-only, and the actions. Every registered
policy runs with a strict context (``Simulation(..., strict=True)``) that raises on anything
else, and decides exactly as it does with the plain one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedlab.cluster.presets import load_cluster
from schedlab.errors import ActionError
from schedlab.policies.registry import POLICIES, PolicyOptions, make_policy
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.sim.policy import Context, Policy
from schedlab.sim.strict import StrictContext, StrictContextError
from schedlab.workload.schema import SUBMITTED_COLUMNS, Workload
from schedlab.workload.synthetic import generate
from tests.simkit import cluster, job, workload

# The round-based heterogeneity family and Pollux take jobs of the Hadar/Gavel models on the
# three-type cluster of their evaluation; every other policy a small contended GFS-like trace
# (HP and spot jobs, several tenants) on one shared pool.
ON_HADAR = {"gavel", "hadar", "hadare", "pollux"}


def _case(name: str) -> tuple[Workload, str]:
    if name in ON_HADAR:
        return generate("hadar", 12, seed=0), "hadar-60"
    work = generate("gfs", 120, seed=0, cluster_gpus=128, load=1.5)
    return work.with_jobs(work.jobs.assign(gpu_type="")), "uniform"  # any GPU model will do


def _run(name: str, *, strict: bool) -> pd.DataFrame:
    work, cluster_name = _case(name)
    options = PolicyOptions(seed=0, submissions=work.jobs.loc[:, list(SUBMITTED_COLUMNS)])
    policy = make_policy(name, rng=np.random.default_rng(0), options=options)
    config = SimConfig(horizon_s=3 * 86400.0)
    return Simulation(work, load_cluster(cluster_name), policy, config=config, seed=0, strict=strict).run().jobs


@pytest.mark.parametrize("name", list(POLICIES))
def test_every_registered_policy_runs_within_its_context(name: str) -> None:
    strict = _run(name, strict=True)
    assert strict["first_start_s"].notna().any(), f"{name} started no job"
    pd.testing.assert_frame_equal(strict, _run(name, strict=False))


class _Toy(Policy):
    """Starts every pending job on the first node with room, after trying ``touch``."""

    name = "toy"

    def __init__(self, touch: str) -> None:
        self.touch = touch

    def schedule(self, ctx: Context) -> None:
        if self.touch == "future":
            getattr(ctx, "_workload")
        elif self.touch == "free":
            ctx.state.free[0] = 0  # type: ignore[index]  # the write the strict context refuses
        elif self.touch == "clock":
            setattr(ctx, "now", 0.0)
        elif self.touch == "engine":
            getattr(ctx, "policy")
        elif self.touch == "running":
            ctx.running[99] = next(iter(ctx.active.values()))  # type: ignore[index]  # refused write
        elif self.touch == "state":
            getattr(ctx.state, "take_whole")(0, 1)
        elif self.touch == "group":
            ctx.state.groups[0].buckets[1].append(0)  # type: ignore[attr-defined]  # refused write
        for j in list(ctx.active.values()):
            if j.state == 0 and ctx.state.free[0] >= j.num_gpus:
                ctx.start(j, [(0, int(j.num_gpus))])


TOUCHES = ["future", "free", "clock", "engine", "running", "state", "group"]


@pytest.mark.parametrize("touch", TOUCHES)
def test_strict_context_refuses_private_reads_and_writes(touch: str) -> None:
    rows = [job("a", 0.0, 1, 10.0), job("b", 5.0, 1, 10.0)]
    sim = Simulation(workload(rows), cluster([2]), _Toy(touch), strict=True)
    with pytest.raises((StrictContextError, TypeError, AttributeError)):
        sim.run()


@pytest.mark.parametrize("touch", ["future", "free", "clock"])
def test_plain_context_lets_the_same_toy_through(touch: str) -> None:
    """The guard is what refuses: the plain run lets the toy read the future and write the state."""
    rows = [job("a", 0.0, 1, 10.0), job("b", 5.0, 1, 10.0)]
    Simulation(workload(rows), cluster([2]), _Toy(touch)).run()


def test_what_if_is_the_one_tentative_change_and_is_undone() -> None:
    seen: list[tuple[int, int, int]] = []

    class WhatIf(Policy):
        def schedule(self, ctx: Context) -> None:
            for j in list(ctx.active.values()):
                if j.state == 0 and ctx.state.free[0] >= 1:
                    ctx.start(j, [(0, 1)])
            if ctx.running:
                held = next(iter(ctx.running.values()))
                before = ctx.state.free[0]
                with ctx.state.what_if() as release:
                    release(held.alloc, held.milli)
                    during = ctx.state.free[0]
                seen.append((before, during, ctx.state.free[0]))

    Simulation(workload([job("a", 0.0, 1, 10.0)]), cluster([2]), WhatIf(), strict=True).run()
    assert seen and all(during == before + 1 and after == before for before, during, after in seen)


def test_strict_context_offers_exactly_the_protocol() -> None:
    sim = Simulation(workload([job("a", 0.0, 1, 10.0)]), cluster([2]), Policy())
    ctx = StrictContext(sim)
    assert ctx.now == 0.0 and ctx.arrivals_left == 1 and ctx.state.free[0] == 2
    with pytest.raises(StrictContextError, match="offers no '_heap'"):
        getattr(ctx, "_heap")
    with pytest.raises(StrictContextError, match="may not assign 'now'"):
        setattr(ctx, "now", 5.0)
    with pytest.raises(StrictContextError):
        setattr(ctx.state, "version", 7)


def test_actions_stay_checked_through_the_strict_context() -> None:
    class Greedy(Policy):
        def schedule(self, ctx: Context) -> None:
            for j in list(ctx.active.values()):
                ctx.start(j, [(0, 4)])  # the node has 2 GPUs

    with pytest.raises(ActionError, match="has 2 free GPUs, asked for 4"):
        Simulation(workload([job("a", 0.0, 4, 10.0)]), cluster([2, 2]), Greedy(), strict=True).run()


def test_a_job_has_no_slot_for_a_policy_to_fill() -> None:
    """Per-job state lives in the policy (a mapping keyed by ``job.idx``), not on the engine's job."""
    from tests.simkit import make_job

    with pytest.raises(AttributeError):
        setattr(make_job(1), "data", {"level": 0})
