"""Slurm's schedulers (``slurm``: sched/builtin, ``slurm-backfill``: sched/backfill): each test
builds a case whose outcome depends on one documented rule, with the expected times worked
out in the comments. Nodes have 8 GPUs; with Slurm's default weights (all 0) every priority
is equal and the queue is in submit order."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from simkit import Checked, by_id, cluster, job, simulate

from schedlab.errors import ConfigError
from schedlab.policies.params import describe
from schedlab.policies.registry import POLICIES, make_policy
from schedlab.policies.slurm.backfill import SlurmBackfill
from schedlab.policies.slurm.builtin import SlurmBuiltin
from schedlab.policies.slurm.nodes import Request, request_of, select
from schedlab.policies.slurm.params import (
    SlurmParams,
    ignored_scheduler_parameters,
    params_from_conf,
    scheduler_policy,
    slurm_seconds,
)
from schedlab.sim.job import Job


def starts(rows: list[dict], spec, policy) -> dict[str, float]:
    out = by_id(simulate(rows, spec, Checked(policy)))
    return out["first_start_s"].to_dict()


def two_partitions():
    return cluster([8, 8], pools=["A", "B"], tenants={"A": None, "B": None}, partitioned=True)


# -- sched/builtin: per-partition blocking -------------------------------------------------------
def test_builtin_blocks_a_partition_at_its_first_pending_job_only() -> None:
    # A: "run" holds 4 of 8 GPUs until 1000; "big" (8) cannot start. "small" (2) would fit in
    # the 4 free GPUs but waits behind "big" in partition A: big runs 1000-2000, small at 2000.
    # B is not blocked: "other" starts at once although "big" is pending ahead of it.
    rows = [job("run", 0, 4, 1000.0, tenant="A"), job("big", 1, 8, 1000.0, tenant="A"),
            job("small", 2, 2, 10.0, tenant="A"), job("other", 3, 2, 10.0, tenant="B")]  # fmt: skip
    got = starts(rows, two_partitions(), SlurmBuiltin())
    assert got == {"run": 0.0, "big": 1000.0, "small": 2000.0, "other": 3.0}


def test_event_passes_test_default_queue_depth_jobs_and_full_passes_the_rest() -> None:
    # Three partitions; A and B are full and their next jobs blocked. "c" (queued third) is
    # beyond an event pass of default_queue_depth=1 (Slurm tests depth + 1 = 2 jobs), so it
    # starts at the first full pass, sched_interval=60 s; with the default depth, at the
    # background loop's pass batch_sched_delay = 3 s after the one that served the jobs at 0.
    spec = cluster([8, 8, 8], pools=["A", "B", "C"], tenants=dict.fromkeys("ABC"), partitioned=True)
    rows = [job("a0", 0, 8, 500.0, tenant="A"), job("b0", 0, 8, 500.0, tenant="B"),
            job("a1", 1, 8, 10.0, tenant="A"), job("b1", 1, 8, 10.0, tenant="B"), job("c", 2, 1, 10.0, tenant="C")]  # fmt: skip
    assert starts(rows, spec, SlurmBuiltin(SlurmParams(default_queue_depth=1)))["c"] == 60.0
    assert starts(rows, spec, SlurmBuiltin())["c"] == 3.0


@pytest.mark.parametrize(("delay", "expected"), [(3, {"a": 0.0, "b": 3.0, "c": 3.0, "d": 5.5}),
                                                 (1, {"a": 0.0, "b": 1.0, "c": 2.0, "d": 5.5})])  # fmt: skip
def test_submissions_wait_for_the_background_pass_and_a_job_end_schedules_at_once(delay: int, expected) -> None:
    # Submissions only queue a pass, which the background loop runs at its first whole-second
    # check batch_sched_delay after its last one; "d" waits for "a" to end at 5.5, and the end
    # schedules it at once (no background check needed).
    rows = [job("a", 0, 8, 5.5), job("b", 0.5, 1, 100.0), job("c", 1.2, 1, 100.0), job("d", 1.5, 8, 10.0)]
    assert starts(rows, cluster([8, 2]), SlurmBuiltin(SlurmParams(batch_sched_delay=delay))) == expected


@pytest.mark.parametrize(("interactive", "favour_big", "small_start"), [(False, False, 2000.0), (True, False, 2.0),
                                                                          (True, True, 2000.0)])  # fmt: skip
def test_interactive_jobs_start_at_submit_only_when_top_priority(interactive: bool, favour_big: bool,
                                                                 small_start: float) -> None:  # fmt: skip
    # "big" waits for "run". A batch "small" waits behind it (partition blocked). An interactive
    # one is tried at submit: with equal priorities nothing outranks it, so it starts at 2; when
    # "big" has a higher priority (site factor), it is not top and waits.
    rows = [job("run", 0, 4, 1000.0), job("big", 1, 8, 1000.0), job("small", 2, 2, 10.0)]
    site = (lambda j: 100 if j.id == "big" else 0) if favour_big else None
    policy = SlurmBuiltin(SlurmParams(interactive_submit=interactive), site_factor=site)
    assert starts(rows, cluster([8]), policy)["small"] == small_start


# -- sched/backfill ----------------------------------------------------------------------------
HOLE = [job("run", 0, 4, 600.0, time_limit_s=600), job("big", 1, 8, 1000.0, time_limit_s=1000)]


@pytest.mark.parametrize(("limit", "start"), [(300.0, 30.0), (1200.0, 1600.0)])
def test_backfill_fills_a_hole_only_with_a_job_whose_limit_ends_before_the_reservation(limit: float,
                                                                                     start: float) -> None:  # fmt: skip
    # "big" is reserved the node from 600, when "run" ends by its limit. At the first cycle
    # (30 s) "small" fits in the 4 free GPUs: with a 300-s limit it ends by 330, before 600, and
    # starts; with a 1200-s limit it would delay "big", so it waits until big ends (1600).
    rows = [*HOLE, job("small", 2, 4, 100.0, time_limit_s=limit)]
    got = starts(rows, cluster([8]), SlurmBackfill())
    assert got["small"] == start and got["big"] == 600.0


def test_builtin_never_backfills() -> None:
    rows = [*HOLE, job("small", 2, 4, 100.0, time_limit_s=300)]
    assert starts(rows, cluster([8]), SlurmBuiltin())["small"] == 1600.0


def test_a_job_without_a_limit_never_frees_its_nodes_in_the_plan() -> None:
    # "run" has no limit (INFINITE): "big" can get no reservation within the window, so nothing
    # protects it and "small" starts at the first cycle whatever its limit. With a default limit
    # (DefaultTime) of 10 minutes, "big" is reserved from 600 and the 1200-s "small" waits.
    rows = [job("run", 0, 4, 600.0), job("big", 1, 8, 1000.0, time_limit_s=1000),
            job("small", 2, 4, 100.0, time_limit_s=1200)]  # fmt: skip
    assert starts(rows, cluster([8]), SlurmBackfill())["small"] == 30.0
    assert starts(rows, cluster([8]), SlurmBackfill(SlurmParams(default_time_limit=600)))["small"] == 1600.0


@pytest.mark.parametrize("interval", [30, 5])
def test_backfill_runs_only_at_bf_interval(interval: int) -> None:
    # "small" could be backfilled the moment it arrives (2) but the main scheduler does not
    # backfill: it waits for the first cycle, bf_interval after the start.
    rows = [*HOLE, job("small", 2, 4, 100.0, time_limit_s=300)]
    policy = make_policy("slurm-backfill", rng=np.random.default_rng(0),
                         params=POLICIES["slurm-backfill"].parse({"bf_interval": str(interval)}))  # fmt: skip
    assert starts(rows, cluster([8]), policy)["small"] == float(interval)


def test_after_a_quiet_spell_the_next_change_runs_a_cycle_within_a_second() -> None:
    # The cycle at 30 reserves for "big" and starts nothing; no record changes until "small"
    # arrives at 100.5 (full passes see one blocked job; priorities recalculate at 300). The
    # agent, polling every second since 60, runs the cycle at its first check after 100.5: 101.
    rows = [*HOLE, job("small", 100.5, 4, 100.0, time_limit_s=300)]
    assert starts(rows, cluster([8]), SlurmBackfill())["small"] == 101.0


def test_backfill_reserves_whole_nodes() -> None:
    # "run" holds 6 GPUs until 600; "big" (4) is reserved the node from 600. "small" (2 GPUs,
    # limit 3000) fits in the 2 free GPUs, and would still leave room for "big" at 600 (4 + 2 of
    # 8) if reservations counted GPUs; but backfill reserves whole nodes, so it may not start
    # before "big", and both start when "run" ends.
    rows = [job("run", 0, 6, 600.0, time_limit_s=600), job("big", 1, 4, 1000.0, time_limit_s=1000),
            job("small", 2, 2, 100.0, time_limit_s=3000)]  # fmt: skip
    assert starts(rows, cluster([8]), SlurmBackfill()) == {"run": 0.0, "big": 600.0, "small": 600.0}


def test_a_job_is_tried_again_when_reserved_nodes_free_up() -> None:
    # Node 0 is busy until 1000, node 1 holds 4 GPUs until 2000. "a" (8) is reserved node 0 for
    # [1000, 1500). For "b" (8, limit 1000) node 0 is off limits over [30, 1030], so it could
    # only start on node 1 at 2000; node 0 frees up at 1500, earlier, so it is tried again from
    # 1500 and reserved node 0 (TRY_LATER). Node 1 stays unreserved and "d" starts there at 30.
    rows = [job("r0", 0, 8, 1000.0, time_limit_s=1000), job("r1", 0, 4, 2000.0, time_limit_s=2000),
            job("a", 1, 8, 500.0, time_limit_s=500), job("b", 2, 8, 1000.0, time_limit_s=1000),
            job("d", 3, 4, 100.0, time_limit_s=2500)]  # fmt: skip
    assert starts(rows, cluster([8, 8]), SlurmBackfill())["d"] == 30.0


def test_will_run_releases_jobs_ending_close_together_as_one_batch() -> None:
    # "big" needs a whole node: it could start when "ra" ends by its limit (120), but running
    # jobs ending within the first 30-s window after it (aligned to 30 s: up to 150 + 30) are
    # released as one batch, so it is planned at 180, when "rb" ends, on node 0. At the first
    # cycle (45; bf_interval=45, bf_resolution=1) "small" (limit 120: until 165) fits in node
    # 0's free GPUs before that reservation and starts.
    rows = [job("ra", 0, 4, 120.0, time_limit_s=120), job("rb", 0, 8, 180.0, time_limit_s=180),
            job("big", 1, 8, 100.0, time_limit_s=600), job("small", 2, 4, 10.0, time_limit_s=120)]  # fmt: skip
    got = starts(rows, cluster([8, 8]), SlurmBackfill(SlurmParams(bf_interval=45, bf_resolution=1)))
    assert got["small"] == 45.0


def test_bf_max_job_test_limits_the_jobs_a_cycle_tests() -> None:
    rows = [*HOLE, job("small", 2, 4, 100.0, time_limit_s=300)]
    assert starts(rows, cluster([8]), SlurmBackfill(SlurmParams(bf_max_job_test=1)))["small"] == 1600.0


# -- priority/multifactor ----------------------------------------------------------------------
@pytest.mark.parametrize(("weight_age", "first"), [(0, "big"), (1000, "old")])
def test_age_weight_reorders(weight_age: int, first: str) -> None:
    # Job size (favour large, weight 1000): big (8 of 8 GPUs, 1 of 1 node) 1000, old (4 GPUs)
    # 750. With age weight 1000 and PriorityMaxAge 10 min, at the 900-s recalculation "old"
    # (waiting since 1) has 1000 + 750, "big" (since 800) 167 + 1000: "old" starts at 1000.
    params = SlurmParams(weight_job_size=1000, weight_age=weight_age, priority_max_age=600)
    rows = [job("run", 0, 8, 1000.0), job("old", 1, 4, 100.0), job("big", 800, 8, 100.0)]
    got = starts(rows, cluster([8]), SlurmBuiltin(params))
    assert got[first] == 1000.0


def test_site_factor_reorders() -> None:
    rows = [job("run", 0, 8, 1000.0), job("a", 1, 8, 100.0), job("b", 2, 8, 100.0)]
    assert starts(rows, cluster([8]), SlurmBuiltin())["a"] == 1000.0
    got = starts(rows, cluster([8]), SlurmBuiltin(site_factor=lambda j: 10 if j.id == "b" else 0))
    assert got["b"] == 1000.0 and got["a"] == 1100.0


@pytest.mark.parametrize(("weight", "first"), [(0, "x1"), (1000, "y1")])
def test_fair_share_lowers_the_heavy_tenant(weight: int, first: str) -> None:
    # X's "x0" holds the node from 0. From the 600-s period on, X has all the usage (U = 1) with
    # half the shares: F = 2^-2, priority 250; Y has none: F = 1, priority 1000. So Y's job
    # starts first at 1000 though X's was submitted first.
    spec = cluster([8], tenants={"X": None, "Y": None})
    rows = [job("x0", 0, 8, 1000.0, tenant="X"), job("x1", 10, 8, 100.0, tenant="X"),
            job("y1", 20, 8, 100.0, tenant="Y")]  # fmt: skip
    assert starts(rows, spec, SlurmBuiltin(SlurmParams(weight_fairshare=weight)))[first] == 1000.0


def test_priority_is_the_truncated_weighted_sum() -> None:
    policy = SlurmBuiltin(SlurmParams(weight_age=1000, weight_job_size=999, weight_partition=7,
                                      priority_max_age=3600), site_factor=lambda j: 5)  # fmt: skip
    ctx = SimpleNamespace(now=1801.0, cluster=cluster([8, 8]))  # what the priority reads of a context
    policy.priority.setup(ctx)
    j = Job(0, "j", 1.0, "", "t", "", "", 4, math.nan, "", 10.0, math.inf, "", math.nan)
    # age 1800/3600 -> 500; size (1/2 + 4/16)/2 = 0.375 -> 374.625; partition 7; site 5
    assert policy.priority.priority(ctx, j, Request(4, 1, 4)) == 886


# -- requests and node selection ---------------------------------------------------------------
def _job(gpus: float, gpw: float = math.nan) -> Job:
    return Job(0, "j", 0.0, "", "t", "", "", gpus, gpw, "", 10.0, math.inf, "", math.nan)


def test_requests_follow_the_replays_sbatch_shapes() -> None:
    assert request_of(_job(4), [8, 8]) == Request(4, 1, 4)
    assert request_of(_job(16), [8, 8, 8]) == Request(16, 2, 8)  # -N 2 --gres=gpu:8
    assert request_of(_job(8, gpw=2), [8] * 4) == Request(8, 4, 2)  # -N 4 --gres=gpu:2
    assert request_of(_job(0.5), [8]) == Request(1, 1, 1)
    assert request_of(_job(8), [4, 2, 2]) == Request(8, 0, 1)  # no even split: any split
    assert request_of(_job(16), [8]) is None


def test_selection_is_best_fit_over_runs_of_consecutive_nodes() -> None:
    # free GPUs by node: run [0, 1] (4 + 8 = 12 free) and run [3] (6 free); a 4-GPU job takes the
    # tighter run [3] although node 0 alone fits exactly; within run [0, 1] it takes node 0
    free = [4, 8, 0, 6]
    assert select(Request(4, 1, 4), range(4), free) == [(3, 4)]
    assert select(Request(4, 1, 4), range(3), free) == [(0, 4)]
    assert select(Request(16, 2, 8), range(4), [8, 8, 8, 0]) == [(0, 8), (1, 8)]
    assert select(Request(16, 2, 8), range(4), [8, 0, 8, 8]) == [(2, 8), (3, 8)]


# -- parameters ---------------------------------------------------------------------------------
CONF = {
    "ClusterName": "sandbox",
    "SchedulerType": "sched/backfill",
    "SchedulerParameters": "bf_interval=5,bf_resolution=10,bf_continue,bf_window=2880,default_queue_depth=50,"
                           "max_rpc_cnt=150",
    "PriorityType": "priority/multifactor",
    "PriorityWeightAge": "1000",
    "PriorityWeightFairshare": "10000",
    "PriorityWeightJobSize": "500",
    "PriorityMaxAge": "7-0",
    "PriorityCalcPeriod": "5",
    "PriorityDecayHalfLife": "14-0",
    "PriorityFavorSmall": "YES",
}  # fmt: skip


def test_params_from_a_realistic_conf() -> None:
    p = params_from_conf(CONF)
    assert (p.bf_interval, p.bf_resolution, p.bf_window, p.default_queue_depth) == (5, 10, 2880, 50)
    assert (p.bf_max_job_test, p.sched_interval) == (500, 60)  # not set: Slurm's defaults
    assert (p.weight_age, p.weight_fairshare, p.weight_job_size, p.weight_partition) == (1000, 10000, 500, 0)
    assert (p.priority_max_age, p.priority_calc_period, p.priority_decay_half_life) == (604800, 300, 1209600)
    assert p.priority_favor_small and math.isinf(p.default_time_limit)
    assert ignored_scheduler_parameters(CONF) == ["bf_continue", "max_rpc_cnt=150"]
    assert scheduler_policy(CONF) == "slurm-backfill"
    assert scheduler_policy({"SchedulerType": "sched/builtin"}) == "slurm"
    basic = params_from_conf({k: v for k, v in CONF.items() if k != "PriorityType"})
    assert basic.weight_age == 0  # priority/basic (the default) is FIFO
    assert params_from_conf({"DefaultTime": "1:00:00", "MaxTime": "INFINITE"}).default_time_limit == 3600


@pytest.mark.parametrize(("key", "value"), [("PriorityMaxAge", "7 days"), ("SchedulerParameters", "bf_interval=fast"),
                                            ("SchedulerParameters", "bf_interval=0"), ("PriorityWeightAge", "-5"),
                                            ("PriorityFavorSmall", "maybe"), ("PriorityCalcPeriod", "INFINITE")])  # fmt: skip
def test_params_from_conf_rejects_a_bad_value(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as err:
        params_from_conf({**CONF, key: value})
    assert "\n" not in str(err.value)


def test_slurm_time_strings() -> None:
    assert slurm_seconds("7-0") == 7 * 86400 and slurm_seconds("1-2:30") == 86400 + 9000
    assert slurm_seconds("1:00:00") == 3600 and slurm_seconds("5") == 300 and slurm_seconds("5:30") == 330
    assert math.isinf(slurm_seconds("INFINITE")) and math.isinf(slurm_seconds("UNLIMITED"))
    with pytest.raises(ValueError):
        slurm_seconds("1:2:3:4")


def test_registered_with_their_parameters() -> None:
    names = [row[0] for row in describe(POLICIES["slurm-backfill"].params)]
    assert {"bf_interval", "bf_window", "bf_max_job_test", "weight_age", "default_time_limit"} <= set(names)
    policy = make_policy("slurm-backfill", rng=np.random.default_rng(0),
                         params=POLICIES["slurm-backfill"].parse({"bf_interval": "5"}))  # fmt: skip
    assert isinstance(policy, SlurmBackfill) and policy.params.bf_interval == 5
    assert isinstance(make_policy("slurm", rng=np.random.default_rng(0)), SlurmBuiltin)
    with pytest.raises(ConfigError, match="bf_interval"):
        POLICIES["slurm-backfill"].parse({"bf_interval": "0"})
