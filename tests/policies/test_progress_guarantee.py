"""Every preemptive policy lets a restarted job progress: a restore stall is not service, and
a job is not paused again before it has progressed as long as it stalled (issue 15)."""

from __future__ import annotations

import math

import pytest

from schedlab.policies.classic import orders as classic
from schedlab.sim.policy import Policy
from schedlab.policies.gfs import build_gfs
from schedlab.policies.common.placers import BestFit, Consolidate
from schedlab.policies.classic.tiresias import Tiresias
from schedlab.policies.spot.yarn_cs_preempt import YarnCsPreempt
from schedlab.sim.config import SimConfig
from simkit import Checked, Scripted, by_id, cluster, job, simulate

STALL = SimConfig(checkpoint_s=10.0, restore_s=30.0, horizon_s=1e5)  # a pause costs 40 s
PAUSE_S = 40.0


def _bounded(jobs, stall_s: float) -> None:
    """All finished, and no job was stopped more often than its work allows if every run after
    the first progressed at least ``stall_s``."""
    assert jobs["finished"].all()
    assert (jobs["preemptions"] <= 1 + jobs["duration_s"] / stall_s).all(), jobs["preemptions"].to_dict()


def test_stall_is_not_service_but_holds_gpus() -> None:
    seen: dict[float, tuple[float, float]] = {}

    def look(ctx, jobs) -> None:
        seen[ctx.now] = (ctx.attained(jobs["a"]), ctx.executed(jobs["a"]))

    script = {
        0.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 2)]),
        100.0: lambda ctx, jobs: ctx.pause(jobs["a"]),
        200.0: lambda ctx, jobs: ctx.start(jobs["a"], [(0, 2)]),  # stalls until 240
        220.0: look,
        300.0: look,
    }
    out = by_id(simulate([job("a", 0.0, 2, 1000.0)], cluster([2]), Scripted(script), STALL)).loc["a"]
    assert seen == {220.0: (200.0, 100.0), 300.0: (320.0, 160.0)}
    assert out.end_s == 1140.0
    assert out.run_s == 1040.0 and out.gpu_seconds == 2080.0  # allocation counts the stall


class _Demotions(Tiresias):
    """Tiresias that records (time, job, new level) at every demotion."""

    def __init__(self, **kwargs) -> None:
        super().__init__(Consolidate(), **kwargs)
        self.demotions: list[tuple[float, str, int]] = []

    def on_timer(self, ctx, payload: object) -> bool:
        job = self.active.get(payload[0]) if isinstance(payload, tuple) else None
        level = self._las[job.idx].level if job is not None else None
        changed = super().on_timer(ctx, payload)
        if job is not None and self._las[job.idx].level != level:
            self.demotions.append((ctx.now, job.id, self._las[job.idx].level))
        return changed


def test_tiresias_counts_a_queue_threshold_from_the_end_of_the_stall() -> None:
    # Q0 = 10 s and Q1 = 90 s more for 8 GPUs; no promotions. a is paused at 10 (demoted, b is
    # in Q0), b at 20 (demoted, behind a in Q1); a restarts at 20, stalls to 60, and crosses
    # 800 GPU-s at 60 + 90 = 150 (at 110 if the stall counted); b likewise at 190 + 90 = 280
    policy = _Demotions(thresholds_gpu_s=(80.0, 800.0), promote_knob=1e6)
    rows = [job("a", 0.0, 8, 1000.0), job("b", 5.0, 8, 1000.0)]
    jobs = by_id(simulate(rows, cluster([8]), policy, STALL))
    assert policy.demotions == [(10.0, "a", 1), (20.0, "b", 1), (150.0, "a", 2), (280.0, "b", 2)]
    assert jobs["end_s"].to_dict() == {"a": 320.0 + 900.0, "b": 1260.0 + 900.0}
    assert jobs["preemptions"].to_dict() == {"a": 2, "b": 2}


def test_tiresias_finishes_when_queue_thresholds_are_shorter_than_the_stall() -> None:
    # Q0 lasts 20 s for the 16-GPU job and 40 s for the 8-GPU ones, at most a pause's stall;
    # before the fix every run was demoted during its stall and paused: nothing finished
    rows = [job("big", 0.0, 16, 600.0)] + [job(f"s{i}", 1.0 + 10 * i, 8, 300.0) for i in range(60)]
    policy = Checked(Tiresias(Consolidate(), thresholds_gpu_s=(320.0, 3200.0)))
    jobs = by_id(simulate(rows, cluster([8, 8]), policy, STALL))
    _bounded(jobs, PAUSE_S)
    assert jobs["preemptions"].max() <= 15


@pytest.mark.parametrize("build", [classic.srtf, classic.srsf], ids=["srtf", "srsf"])
def test_shortest_first_lets_a_restarted_job_progress(build) -> None:
    # a 15 s job arrives every 50 s: L restarts when one ends and stalls 40 s, so the next one
    # arrived during its stall; before the fix L was paused 40 times without progress
    rows = [job("L", 0.0, 8, 600.0)] + [job(f"s{i}", 5.0 + 50 * i, 8, 15.0) for i in range(40)]
    jobs = by_id(simulate(rows, cluster([8]), Checked(build(Consolidate())), STALL))
    _bounded(jobs, PAUSE_S)
    # L restarts at 20 and may be paused from 60 + 40: s1 (arrived at 55) waits for that instant
    assert jobs.loc["s1", "first_start_s"] == 100.0 and jobs.loc["s1", "end_s"] == 115.0
    assert jobs.loc["L", "end_s"] < jobs["end_s"].drop("L").max()  # L progressed during the stream


@pytest.mark.parametrize("build", [classic.srtf, lambda placer: Tiresias(placer, thresholds_gpu_s=(320.0, 3200.0))],
                         ids=["srtf", "tiresias"])  # fmt: skip
def test_under_the_kill_model_a_run_reaches_a_checkpoint_before_it_is_paused(build) -> None:
    # a pause kills: L restarts from its last 100 s checkpoint. A 15 s job every 50 s leaves L
    # about 35 s between them, so without the guard L lost every run until the stream ended
    rows = [job("L", 0.0, 8, 600.0, checkpoint_interval_s=100.0)]
    rows += [job(f"s{i}", 5.0 + 50 * i, 8, 15.0) for i in range(40)]
    config = SimConfig(checkpoint_model="kill", horizon_s=1e5)
    jobs = by_id(simulate(rows, cluster([8]), Checked(build(Consolidate())), config))
    assert jobs["finished"].all()
    assert jobs.loc["L", "end_s"] < jobs["end_s"].drop("L").max()  # L progressed during the stream
    assert jobs.loc["L", "preemptions"] <= 600.0 / 100.0  # every run kept a checkpoint's work


def test_without_restart_costs_nothing_is_guarded() -> None:
    rows = [job("L", 0.0, 8, 600.0)] + [job(f"s{i}", 5.0 + 50 * i, 8, 15.0) for i in range(4)]
    free = SimConfig(checkpoint_s=0.0, restore_s=0.0, restart_s=0.0)
    jobs = by_id(simulate(rows, cluster([8]), classic.srtf(Consolidate()), free))
    assert jobs["first_start_s"].drop("L").tolist() == [5.0, 55.0, 105.0, 155.0]  # each at arrival
    assert jobs.loc["L", "preemptions"] == 4


def _spot_stream(policy: Policy) -> None:
    # an HP job arrives every 30 s, less than the spot job's restore: the spot job may be
    # evicted at each, by design, but only HP starts evict and HP jobs run once (GFS then
    # keeps it off the node until the node's eviction count decays, about a day)
    rows = [job("spot", 0.0, 4, 600.0, priority_class="spot")]
    rows += [job(f"h{i}", 10.0 + 30 * i, 4, 20.0, priority_class="hp") for i in range(30)]
    config = SimConfig(checkpoint_s=10.0, restore_s=30.0, checkpoint_interval_s=math.inf, horizon_s=1e6)
    jobs = by_id(simulate(rows, cluster([4]), Checked(policy), config))
    assert jobs["finished"].all()
    assert 1 <= jobs.loc["spot", "preemptions"] <= 30
    assert (jobs["preemptions"].drop("spot") == 0).all()


def test_yarn_cs_preempt_evictions_are_bounded_by_hp_starts() -> None:
    _spot_stream(YarnCsPreempt(BestFit()))


def test_gfs_evictions_are_bounded_by_hp_starts() -> None:
    _spot_stream(build_gfs("gfs", {"forecaster": "weekly-peak"}))
