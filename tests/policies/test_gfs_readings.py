"""The two readings of eq. 11 (GFS, §3.3.2) that are options: how often ``eta`` is updated
(``eta_every_s``) and what ``l`` is (``wait_reading``); each test fails if its option is ignored."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedlab.errors import ConfigError
from schedlab.policies.gfs import build_gfs, gfs_params
from schedlab.policies.gfs.sqa import SqaConfig
from schedlab.policies.params import as_dict, parse
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from simkit import cluster, job, workload

NO_CKPT = SimConfig(checkpoint_s=0.0, restore_s=0.0, restart_s=0.0, checkpoint_interval_s=math.inf)
# s runs on the only node; x (HP) evicts it at 600 s; s re-runs at 660 s: 1 eviction over 2 runs
EVICTION = [job("s", 0.0, 4, 1e5, priority_class="spot"), job("x", 600.0, 4, 60.0, priority_class="hp")]


def _run(rows: list[dict], sizes: list[int], **params):
    policy = build_gfs("gfs", {"forecaster": "weekly-peak", "sa_rule": "all", **params})
    Simulation(workload(rows), cluster(sizes), policy, config=NO_CKPT).run()
    return policy


def test_eta_once_per_h_by_default() -> None:
    policy = _run(EVICTION, [4])
    times = [t for t, _, _ in policy.eta_trace]
    assert np.all(np.diff(times) == 3600.0) and times[0] == 3600.0
    assert policy.eta_trace[0][2] == pytest.approx(0.1 / 0.5)  # e = 0.5 > 1.5 x 0.1: eta x 0.1 / 0.5


def test_eta_every_300_s_updates_with_each_quota_and_compounds() -> None:
    policy = _run(EVICTION, [4], eta_every_s=300.0)
    times = [t for t, _, _ in policy.eta_trace]
    assert times[0] == 300.0 and np.all(np.diff(times) == 300.0)
    etas = [eta for _, _, eta in policy.eta_trace]
    # 300 s: no eviction yet; 900 s: e = 0.5, eta 0.2; 1200 s: the same window again, 0.04 -> bound 0.05
    assert etas[:4] == pytest.approx([1.0, 1.0, 0.2, 0.05])


def test_eta_every_s_other_multiples_of_the_quota_update() -> None:
    policy = _run(EVICTION, [4], eta_every_s=900.0)
    times = [t for t, _, _ in policy.eta_trace]
    assert times[:3] == [900.0, 1800.0, 2700.0]


# HP h holds the node; spot "small" (1 GPU) queues from 0 s and "big" (4 GPUs) from 2,000 s.
# PTS's queue puts big first, so at the first eq. 11 (3,600 s) the head waited 1,600 s while
# the longest wait is small's 3,600 s.
QUEUED = [
    job("h", 0.0, 4, 2e4, priority_class="hp"),
    job("small", 0.0, 1, 100.0, priority_class="spot"),
    job("big", 2000.0, 4, 100.0, priority_class="spot"),
]


def test_wait_reading_longest_feeds_the_longest_spot_wait() -> None:
    policy = _run(QUEUED, [4], queue_limit_s=3000.0)
    assert policy.wait_trace[0] == (3600.0, "G", 3600.0)
    # e = 0 < 0.05 and l = 3600 > theta = 3000: eta x 1.5
    assert policy.eta_trace[0][2] == pytest.approx(1.5)


def test_wait_reading_head_feeds_the_queue_heads_wait() -> None:
    policy = _run(QUEUED, [4], queue_limit_s=3000.0, wait_reading="head")
    assert policy.wait_trace[0] == (3600.0, "G", 1600.0)
    assert policy.eta_trace[0][2] == pytest.approx(1.0)  # l = 1600 <= theta: unchanged


def test_wait_reading_head_is_zero_with_an_empty_spot_queue() -> None:
    policy = _run(EVICTION, [4], wait_reading="head")
    assert policy.wait_trace[0] == (3600.0, "G", 0.0)  # s re-ran at 660 s; nothing queued


def test_readings_are_typed_cli_parameters_with_the_defaults() -> None:
    params = parse(gfs_params("gfs"), "gfs", {"eta_every_s": "300", "wait_reading": "head"})
    policy = build_gfs("gfs", as_dict(params))
    assert (policy.sqa.eta_every_s, policy.sqa.wait_reading) == (300.0, "head")
    defaults = parse(gfs_params("gfs"), "gfs", {})
    assert (defaults.eta_every_s, defaults.wait_reading) == (None, "longest")
    assert parse(gfs_params("gfs"), "gfs", {"eta_every_s": "none"}).eta_every_s is None
    assert SqaConfig(guarantee_h=2.0).eta_interval_s == 7200.0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"wait_reading": "max"}, "wait_reading must be 'longest' or 'head'"),
        ({"eta_every_s": 0.0}, "eta_every_s must be none or a positive multiple of update_s"),
        ({"eta_every_s": -300.0}, "eta_every_s must be none or a positive multiple of update_s"),
        ({"eta_every_s": 450.0}, "eta_every_s must be none or a positive multiple of update_s"),
        ({"eta_every_s": 100.0}, "eta_every_s must be none or a positive multiple of update_s"),
    ],
)
def test_readings_are_validated(params: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_gfs("gfs", params)
