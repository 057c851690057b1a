"""Baseline policies: for each, a scenario whose outcome proves its defining behaviour."""

from __future__ import annotations

import math

import numpy as np
import pytest
from simkit import ZERO_COST, Checked, by_id, cluster, job, simulate

from schedlab.errors import ConfigError
from schedlab.policies.classic import orders as classic
from schedlab.sim.policy import Policy
from schedlab.policies.common.placers import BestFit, Consolidate
from schedlab.policies.registry import POLICIES, make_policy
from schedlab.policies.classic.tiresias import Tiresias
from schedlab.policies.classic.yarn_cs import YarnCapacity
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation


class Logged(Checked):
    """Records, after every decision, the time and the ids of the running jobs."""

    def __init__(self, inner: Policy) -> None:
        super().__init__(inner)
        self.log: list[tuple[float, list[str]]] = []

    def schedule(self, ctx: Simulation) -> None:
        super().schedule(ctx)
        self.log.append((ctx.now, sorted(j.id for j in ctx.running.values())))


HEAD_BLOCK = [job("big0", 0, 2, 100.0), job("big1", 1, 4, 100.0), job("small", 2, 1, 10.0)]


def test_strict_fifo_blocks_at_the_head() -> None:
    out = by_id(simulate(HEAD_BLOCK, cluster([4]), Checked(classic.fifo(Consolidate(), backfill=False))))
    assert out.loc["big1", "first_start_s"] == 100.0
    assert out.loc["small", "first_start_s"] == 200.0


def test_backfill_fifo_lets_a_small_job_pass() -> None:
    out = by_id(simulate(HEAD_BLOCK, cluster([4]), Checked(classic.fifo(Consolidate(), backfill=True))))
    assert out.loc["small", "first_start_s"] == 2.0
    assert out.loc["big1", "first_start_s"] == 100.0


def test_registry_has_a_blocking_and_a_backfilling_fifo() -> None:
    starts = set()
    for name in POLICIES:
        if name.startswith("fifo"):
            policy = make_policy(name, rng=np.random.default_rng(0))
            starts.add(by_id(simulate(HEAD_BLOCK, cluster([4]), policy)).loc["small", "first_start_s"])
    assert starts == {2.0, 200.0}


@pytest.mark.parametrize("backfill", [False, True])
def test_sjf_starts_the_shortest_job_first(backfill: bool) -> None:
    rows = [job("running", 0, 1, 100.0), job("long", 1, 1, 50.0), job("short", 2, 1, 10.0)]
    out = by_id(simulate(rows, cluster([1]), Checked(classic.sjf(Consolidate(), backfill=backfill))))
    assert out.loc["short", "first_start_s"] == 100.0
    assert out.loc["long", "first_start_s"] == 110.0


def test_srtf_preempts_a_long_job_for_a_short_arrival_and_resumes_it() -> None:
    rows = [job("long", 0, 1, 100.0), job("short", 10, 1, 20.0)]
    cfg = SimConfig(checkpoint_s=10, restore_s=30)
    out = by_id(simulate(rows, cluster([1]), Checked(classic.srtf(Consolidate())), cfg))
    assert out.loc["short", "first_start_s"] == 10.0 and out.loc["short", "end_s"] == 30.0
    assert out.loc["long", "preemptions"] == 1 and out.loc["long", "lost_work_s"] == 0.0
    assert out.loc["long", "end_s"] == pytest.approx(30.0 + 40.0 + 90.0)


def test_srsf_ranks_by_remaining_time_times_gpus_unlike_srtf() -> None:
    # At t=10 "wide" has 90 s x 4 GPUs = 360 GPU-s left; "narrow" needs 200 s x 1 GPU.
    rows = [job("wide", 0, 4, 100.0), job("narrow", 10, 1, 200.0)]
    srtf = by_id(simulate(rows, cluster([4]), Checked(classic.srtf(Consolidate()))))
    srsf = by_id(simulate(rows, cluster([4]), Checked(classic.srsf(Consolidate()))))
    assert srtf.loc["narrow", "first_start_s"] == 100.0 and srtf.loc["wide", "preemptions"] == 0
    assert srsf.loc["narrow", "first_start_s"] == 10.0 and srsf.loc["wide", "preemptions"] == 1
    assert srsf.loc["wide", "end_s"] == pytest.approx(210.0 + 90.0)


def tiresias(knob: float = 8.0) -> Tiresias:
    return Tiresias(Consolidate(), thresholds_gpu_s=(100.0,), promote_knob=knob)


def test_tiresias_demotes_a_job_when_its_gpu_service_crosses_the_threshold() -> None:
    # "old" holds both GPUs: 100 GPU-s at t=50, when the newer job preempts it.
    rows = [job("old", 0, 2, 1000.0), job("new", 10, 1, 50.0)]
    out = by_id(simulate(rows, cluster([2]), Checked(tiresias())))
    assert out.loc["new", "first_start_s"] == 50.0 and out.loc["new", "end_s"] == 100.0
    assert out.loc["old", "preemptions"] == 1
    assert out.loc["old", "end_s"] == pytest.approx(1050.0)


def test_tiresias_promotes_a_starved_job() -> None:
    # Both jobs end in the last queue; "b" (newer) would wait for "a" to finish at 1050, but
    # having waited twice its last run (50 s, from 100) it is promoted and runs at 200.
    rows = [job("a", 0, 2, 1000.0), job("b", 10, 2, 1000.0)]
    policy = Logged(tiresias(knob=2.0))
    out = by_id(simulate(rows, cluster([2]), policy, ZERO_COST))
    running = dict(policy.log)
    assert running[50.0] == ["b"] and running[100.0] == ["a"]
    assert running[200.0] == ["b"]
    assert out.loc["a", "preemptions"] >= 2


def test_tiresias_rejects_bad_thresholds() -> None:
    with pytest.raises(ConfigError, match="increasing"):
        Tiresias(Consolidate(), thresholds_gpu_s=(10.0, 5.0))


class QuotaChecked(Logged):
    """Fails if a tenant ever holds more GPUs than its quota."""

    def schedule(self, ctx: Simulation) -> None:
        super().schedule(ctx)
        used: dict[str, float] = {}
        for j in ctx.running.values():
            used[j.tenant] = used.get(j.tenant, 0.0) + j.num_gpus
        for tenant, gpus in used.items():
            assert gpus <= ctx.cluster.tenants[tenant].quota_gpus, (ctx.now, tenant, gpus)


def test_yarn_cs_keeps_tenants_within_quota_and_fifo_per_tenant() -> None:
    rows = [
        job("a0", 0, 2, 100.0, tenant="a"),
        job("b0", 0, 2, 50.0, tenant="b"),
        job("a1", 1, 4, 10.0, tenant="a"),  # 4 GPUs free, but a would hold 6 > quota 4
        job("a2", 2, 1, 10.0, tenant="a"),  # fits the quota, yet waits behind a1 (FIFO)
        job("b1", 5, 2, 10.0, tenant="b"),  # b is not held up by a's queue
    ]
    spec = cluster([8], tenants={"a": 4.0, "b": 4.0})
    out = by_id(simulate(rows, spec, QuotaChecked(YarnCapacity(BestFit()))))
    assert out.loc["b1", "first_start_s"] == 5.0
    assert out.loc["a1", "first_start_s"] == 100.0
    assert out.loc["a2", "first_start_s"] == 110.0
    assert out["finished"].all()


def test_yarn_cs_without_quotas_splits_the_pool_equally() -> None:
    rows = [job("a0", 0, 2, 100.0, tenant="a"), job("a1", 0, 1, 100.0, tenant="a")]
    spec = cluster([4], tenants={"a": None, "b": None})
    out = by_id(simulate(rows, spec, Checked(YarnCapacity(BestFit()))))
    assert out.loc["a1", "first_start_s"] == 100.0
    assert not math.isnan(out.loc["a1", "end_s"])


def test_yarn_cs_refuses_a_job_above_its_tenant_capacity_without_blocking_the_queue() -> None:
    rows = [job("big", 0, 6, 10.0, tenant="a"), job("small", 1, 2, 10.0, tenant="a")]
    policy = YarnCapacity(BestFit())
    out = by_id(simulate(rows, cluster([8], tenants={"a": 4.0, "b": 4.0}), policy))
    assert policy.refused == ["big"]
    assert not out.loc["big", "finished"]
    assert out.loc["small", "first_start_s"] == 1.0
