"""The lease-based fairness policies: ASTRAEA's two phases, leases and starvation threshold;
weighted max-min fair share; Gandiva_fair-style stride tickets; Themis' largest-ρ-first; and
the ledger they count GPU-time with. Every expected time is worked out in the comments."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedlab.errors import ConfigError
from schedlab.policies.common.placers import Consolidate
from schedlab.policies.fairness.astraea import Astraea
from schedlab.policies.fairness.fair_share import FairShare, GandivaFair
from schedlab.policies.fairness.ledger import Ledger, water_fill
from schedlab.policies.fairness.themis import Themis
from schedlab.policies.registry import POLICIES, PolicyOptions, make_policy
from schedlab.sim.config import SimConfig
from simkit import ZERO_COST, Checked, by_id, cluster, job, simulate

STALL = SimConfig(checkpoint_s=10.0, restore_s=30.0, horizon_s=1e5)  # a pause costs 40 s
PAUSE_S = 40.0


def _astraea(**kwargs) -> Checked:
    options = {"lease_s": 100.0, "tick_s": 0.0, "starvation_s": math.inf, **kwargs}
    return Checked(Astraea(Consolidate(), **options))


def test_water_fill_caps_at_demand_and_redistributes() -> None:
    # 12 GPUs, weights 1:1:2 -> 3 per unit of weight; a wants only 2, so the other 10 split
    # 1:2 between b and c: 10/3 and 20/3
    fair = water_fill({"a": 2.0, "b": 10.0, "c": 10.0, "d": 0.0}, {"a": 1, "b": 1, "c": 2, "d": 5}.get, 12.0)
    assert fair.keys() == {"a", "b", "c"}
    assert np.allclose([fair["a"], fair["b"], fair["c"]], [2.0, 10 / 3, 20 / 3])


def test_ledger_integrates_used_deserved_and_job_shares() -> None:
    # 4 GPUs; a: one 4-GPU job, b: two 1-GPU jobs -> b's demand 2 is capped, a deserves 2.
    # a holds 4 GPUs for 100 s: used 400, deserved 200; b: used 0, deserved 200; each b job
    # deserves min(1, 2 / 2) = 1 GPU: 100 GPU-s; a's job min(4, 2) = 2: 200 GPU-s
    ledger = Ledger(4.0, lambda t: 1.0, window_s=50.0, mark_s=50.0)
    base_a = ledger.arrive("a", 4.0)
    base_b = ledger.arrive("b", 1.0)
    ledger.arrive("b", 1.0)
    ledger.advance(0.0)
    ledger.hold("a", 4.0)
    ledger.advance(100.0)
    assert ledger.used["a"] == 400.0 and ledger.deserved["a"] == 200.0
    assert ledger.used["b"] == 0.0 and ledger.deserved["b"] == 200.0
    assert ledger.job_deserved("a", 4.0, base_a) == 200.0 and ledger.job_deserved("b", 1.0, base_b) == 100.0
    assert ledger.window("a") == (200.0, 100.0)  # the 50-s window: marks at 50 and 100, 0 dropped


def test_astraea_serves_the_lowest_tenant_first_then_the_lowest_job() -> None:
    # 1 GPU, 100-s leases, free pauses. A1 runs alone from 0. At 100 its lease ends: tenant A
    # used 100 GPU-s of the ~51 it deserved, B nothing: B1 runs (job order alone would pick A2,
    # which ties B1 at index 0 and was submitted first). At 200: A's index 100 / (101 + 50) =
    # 0.66 is below B's 100 / (99 + 50) = 0.67, and inside A the new A2 (index 0) beats A1
    # (100 GPU-s over ~51 deserved), though A1 was submitted first.
    rows = [job("A1", 0.0, 1, 1000.0, tenant="A"), job("A2", 1.0, 1, 1000.0, tenant="A"),
            job("B1", 2.0, 1, 1000.0, tenant="B")]  # fmt: skip
    jobs = by_id(simulate(rows, cluster([1]), _astraea(), ZERO_COST))
    assert jobs["first_start_s"].to_dict() == {"A1": 0.0, "A2": 200.0, "B1": 100.0}
    assert jobs["finished"].all()


def test_astraea_lease_expiry_alternates_jobs() -> None:
    # one tenant, two 300-s jobs on 1 GPU: at each lease end the other job is the less served
    # (at 200 both hold 100 of 100 deserved: the tie goes to a, submitted first by index).
    # a: 0-100, 200-300, 400-500; b: 100-200, 300-400, 500-600
    rows = [job("a", 0.0, 1, 300.0), job("b", 0.0, 1, 300.0)]
    jobs = by_id(simulate(rows, cluster([1]), _astraea(), ZERO_COST))
    assert jobs["end_s"].to_dict() == {"a": 500.0, "b": 600.0}
    assert jobs["preemptions"].to_dict() == {"a": 2, "b": 2}
    longer = by_id(simulate(rows, cluster([1]), _astraea(lease_s=1000.0), ZERO_COST))
    assert longer["end_s"].to_dict() == {"a": 300.0, "b": 600.0}


def test_astraea_starving_job_goes_first_in_its_tenant() -> None:
    # 1 GPU, one tenant. j runs 0-100; from 100 on, short jobs s_k (arriving at 50 + 100k) have
    # job index 0 and beat j, which has run: s0 100-200, s1 200-300, s2 300-400, s3 from 400.
    # With a 300-s threshold j (pending since 100) starves at 400 and runs 400-500: s3 waits.
    rows = [job("j", 0.0, 1, 1000.0)] + [job(f"s{k}", 50.0 + 100 * k, 1, 100.0) for k in range(6)]
    starving = by_id(simulate(rows, cluster([1]), _astraea(starvation_s=300.0), ZERO_COST))
    assert starving.loc["s3", "first_start_s"] == 500.0
    patient = by_id(simulate(rows, cluster([1]), _astraea(), ZERO_COST))
    assert patient.loc["s3", "first_start_s"] == 400.0
    assert patient.loc["j", "end_s"] == 100.0 + 6 * 100.0 + 900.0  # after the whole stream


def test_astraea_starving_job_that_does_not_fit_blocks_its_tenant() -> None:
    # 2 GPUs, one tenant: the 2-GPU job w runs first, is paused at 100 for fresh 1-GPU jobs and
    # starves at 400. Short jobs end one at a time; without the block each freed GPU would go
    # to the next short job and w would wait for the stream to end.
    rows = [job("w", 0.0, 2, 300.0)]
    rows += [job(f"s{k}", 1.0 + 37.0 * k, 1, 100.0 + 13.0 * (k % 3)) for k in range(40)]
    blocked = by_id(simulate(rows, cluster([2]), _astraea(starvation_s=300.0), ZERO_COST))
    stream_end = blocked["end_s"].drop("w").max()
    assert blocked.loc["w", "end_s"] < stream_end
    assert blocked["finished"].all()


def test_astraea_block_any_stops_its_tenant_at_the_first_job_not_taken() -> None:
    # 2 GPUs, one tenant: a holds one GPU on a 100-s lease; b (2 GPUs) arrives at 10 and ranks
    # first (index 0, earlier), c (1 GPU) at 20. Blocking only behind starving jobs, c takes the
    # free GPU at 20; with block="any" (the artifact's run.sh) b not fitting stops the tenant, the
    # GPU stays free until a's lease ends and b takes both GPUs at 100.
    rows = [job("a", 0.0, 1, 1000.0), job("b", 10.0, 2, 50.0), job("c", 20.0, 1, 50.0)]
    passing = by_id(simulate(rows, cluster([2]), _astraea(), ZERO_COST))
    assert passing.loc["c", "first_start_s"] == 20.0
    blocking = by_id(simulate(rows, cluster([2]), _astraea(block="any"), ZERO_COST))
    assert blocking.loc["b", "first_start_s"] == 100.0
    assert blocking.loc["c", "first_start_s"] >= 100.0
    assert blocking["finished"].all()


def test_astraea_repack_places_the_jobs_of_expired_leases_afresh() -> None:
    # Nodes of 2 GPUs: x and w fill node 0, y sits on node 1; w ends at 50, so z (2 GPUs, at 60)
    # finds one free GPU per node. At 100 all leases end and the count grants z, x and y. Kept
    # in place, x and y leave z unplaceable until one finishes; re-packed (the artifact's
    # release of every expired job), z gets a node at 100 and x and y share the other.
    rows = [job("x", 0.0, 1, 1000.0), job("w", 0.0, 1, 50.0), job("y", 0.0, 1, 1000.0), job("z", 60.0, 2, 100.0)]
    kept = by_id(simulate(rows, cluster([2, 2]), _astraea(), ZERO_COST))
    assert kept.loc["z", "first_start_s"] >= 1000.0
    repacked = by_id(simulate(rows, cluster([2, 2]), _astraea(repack=True), ZERO_COST))
    assert repacked.loc["z", "first_start_s"] == 100.0
    assert repacked.loc[["x", "y"], "preemptions"].sum() >= 2  # both moved through a pause
    assert repacked["finished"].all()


def test_astraea_refuses_an_unknown_block_rule() -> None:
    with pytest.raises(ConfigError, match="block must be one of starving, any"):
        Astraea(Consolidate(), block="never")


def test_fair_share_splits_gpus_by_weight() -> None:
    # 4 GPUs, weights A 3, B 1, both with more jobs than GPUs: progressive filling gives A, B, A,
    # A (ties to the first name): 3 and 1. Equal weights would give 2 and 2.
    rows = [job(f"{t}{i}", 0.0, 1, 1000.0, tenant=t) for t in "AB" for i in range(4)]
    policy = Checked(FairShare(Consolidate(), lease_s=100.0, tick_s=0.0, shares={"A": 3.0, "B": 1.0}))
    jobs = by_id(simulate(rows, cluster([4]), policy, ZERO_COST))
    first = jobs[jobs["first_start_s"] == 0.0]
    assert sorted(first.index) == ["A0", "A1", "A2", "B0"]
    equal = by_id(simulate(rows, cluster([4]), Checked(FairShare(Consolidate(), lease_s=100.0, tick_s=0.0)), ZERO_COST))
    assert sorted(equal[equal["first_start_s"] == 0.0].index) == ["A0", "A1", "B0", "B1"]


def test_gandiva_fair_strides_gpu_time_by_tickets() -> None:
    # 1 GPU, 100-s leases, tickets A 2, B 1; pass = GPU-s / tickets. A 0-100 (tie to A), B
    # 100-200, A 200-400 (pass 50 then 100 = B's, tie to A), B 400-500, A 500-700, B 700-800,
    # A 800-900: A's 600 s end at 900, B's 300 s at 800. Equal tickets alternate instead.
    rows = [job("a", 0.0, 1, 600.0, tenant="A"), job("b", 0.0, 1, 300.0, tenant="B")]
    policy = Checked(GandivaFair(Consolidate(), lease_s=100.0, tick_s=0.0, shares={"A": 2.0, "B": 1.0}))
    jobs = by_id(simulate(rows, cluster([1]), policy, ZERO_COST))
    assert jobs["end_s"].to_dict() == {"a": 900.0, "b": 800.0}
    policy = Checked(GandivaFair(Consolidate(), lease_s=100.0, tick_s=0.0))
    equal = by_id(simulate(rows, cluster([1]), policy, ZERO_COST))
    assert equal["end_s"].to_dict() == {"a": 900.0, "b": 600.0}


def test_gandiva_fair_returning_tenant_does_not_bank_idle_time() -> None:
    # A runs alone 0-1000; B arrives at 1000 with pass lifted to A's (1000), so B does not get
    # the GPU for 1000 s in a row: a (second job) and b alternate from 1000 on.
    rows = [job("a0", 0.0, 1, 1000.0, tenant="A"), job("a1", 0.0, 1, 500.0, tenant="A"),
            job("b", 1000.0, 1, 500.0, tenant="B")]  # fmt: skip
    policy = Checked(GandivaFair(Consolidate(), lease_s=100.0, tick_s=0.0))
    jobs = by_id(simulate(rows, cluster([1]), policy, ZERO_COST))
    assert jobs.loc["b", "end_s"] > 1500.0  # not run straight through from 1000
    assert jobs["finished"].all()


def test_themis_serves_the_largest_estimated_rho_first() -> None:
    # 1 GPU, 2 jobs. At 100 (lease end): rho(L) = (100 + 900) / (1000 x 2) = 0.5, rho(s) =
    # (90 + 100) / (100 x 2) = 0.95: s runs 100-200, then L to the end.
    rows = [job("L", 0.0, 1, 1000.0), job("s", 10.0, 1, 100.0)]
    jobs = by_id(simulate(rows, cluster([1]), Checked(Themis(Consolidate(), lease_s=100.0, tick_s=0.0)), ZERO_COST))
    assert jobs["end_s"].to_dict() == {"L": 1100.0, "s": 200.0}


@pytest.mark.parametrize("make", [
    lambda: Astraea(Consolidate(), lease_s=10.0, tick_s=0.0, starvation_s=50.0),
    lambda: FairShare(Consolidate(), lease_s=10.0, tick_s=0.0),
    lambda: GandivaFair(Consolidate(), lease_s=10.0, tick_s=0.0),
    lambda: Themis(Consolidate(), lease_s=10.0, tick_s=0.0),
], ids=["astraea", "fair-share", "gandiva-fair", "themis"])  # fmt: skip
def test_a_lease_shorter_than_the_restart_stall_still_progresses(make) -> None:
    # 10-s leases, 40-s stalls: a lease counted from the start would end inside the stall and
    # the jobs would take turns stalling forever; counted from the stall's end and at least
    # as long, each run progresses >= 40 s
    rows = [job(f"j{i}", float(i), 1, 200.0, tenant="AB"[i % 2]) for i in range(4)]
    jobs = by_id(simulate(rows, cluster([2]), Checked(make()), STALL))
    assert jobs["finished"].all()
    assert (jobs["preemptions"] <= 1 + jobs["duration_s"] / PAUSE_S).all(), jobs["preemptions"].to_dict()


def test_registry_passes_the_shares() -> None:
    rng = np.random.default_rng(0)
    policy = make_policy("astraea", rng=rng, params=POLICIES["astraea"].parse({"lease_s": "60"}),
                         options=PolicyOptions(shares={"x": 3.0}))
    assert policy.lease_s == 60.0 and policy.weight("x") == 3.0 and policy.weight("y") == 1.0
    assert make_policy("themis", rng=rng).lease_s == 900.0

