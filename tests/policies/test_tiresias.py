"""Tiresias' queue order and starvation rule (NSDI'19 §3.2), each on a hand-computed scenario."""

from __future__ import annotations

import math

import pytest
from simkit import ZERO_COST, Checked, by_id, cluster, job, simulate

from schedlab.errors import ConfigError
from schedlab.policies.classic.tiresias import Tiresias, TiresiasParams
from schedlab.policies.common.placers import FirstFit
from schedlab.sim.config import SimConfig


class _Promotions(Tiresias):
    """Tiresias that records (time, job) at every promotion."""

    def __init__(self, **kwargs) -> None:
        super().__init__(FirstFit(), **kwargs)
        self.promotions: list[tuple[float, str]] = []

    def _promote(self, ctx, job) -> bool:
        promoted = super()._promote(ctx, job)
        if promoted:
            self.promotions.append((ctx.now, job.id))
        return promoted


def one_queue(**kwargs) -> Tiresias:
    return Tiresias(FirstFit(), thresholds_gpu_s=(1e9,), promote_knob=math.inf, **kwargs)


def test_a_running_job_stays_ahead_of_an_older_waiting_job_of_its_queue() -> None:
    # b (2 GPUs) cannot start beside a; c (1 GPU, newer) can. When a ends, c is running and b
    # waiting in the same queue: c keeps its GPU and b starts when c ends (FIFO by submission
    # would pause c for b at 100)
    rows = [job("a", 0, 1, 100.0), job("b", 1, 2, 100.0), job("c", 2, 1, 100.0)]
    out = by_id(simulate(rows, cluster([2]), Checked(one_queue()), ZERO_COST))
    assert out["preemptions"].sum() == 0
    assert out.loc["c", "first_start_s"] == 2.0 and out.loc["c", "end_s"] == 102.0
    assert out.loc["b", "first_start_s"] == 102.0


def test_a_queue_is_fifo_by_entry_not_by_submission() -> None:
    # 3 GPUs. b (2 GPUs, submitted after a) crosses 100 GPU-s at 51 and enters Q1 before a (at
    # 100). At 120 c (1 GPU, Q0) needs a GPU: in Q1 order b, a, so b's 2 GPUs are kept and a,
    # the later entry, is paused (by submission a would stay and b be paused)
    rows = [job("a", 0, 1, 1000.0), job("b", 1, 2, 1000.0), job("c", 120, 1, 10.0)]
    policy = Tiresias(FirstFit(), thresholds_gpu_s=(100.0,), promote_knob=math.inf)
    out = by_id(simulate(rows, cluster([3]), Checked(policy), ZERO_COST))
    assert out["preemptions"].to_dict() == {"a": 1, "b": 0, "c": 0}
    assert out.loc["c", "first_start_s"] == 120.0
    assert out.loc["b", "end_s"] == 1001.0
    assert out.loc["a", "end_s"] == 130.0 + 880.0


def test_a_demoted_job_enters_its_new_queue_behind_the_jobs_waiting_there() -> None:
    # 2 GPUs, Q0 = 100 GPU-s. w (2 GPUs) is demoted at 50 and paused for v (1 GPU, Q0); v is
    # demoted at 150 and, behind w in Q1 for that round, paused for it
    rows = [job("w", 0, 2, 1000.0), job("v", 10, 1, 1000.0)]
    policy = Tiresias(FirstFit(), thresholds_gpu_s=(100.0,), promote_knob=math.inf)
    out = by_id(simulate(rows, cluster([2]), Checked(policy), ZERO_COST))
    assert out["preemptions"].to_dict() == {"w": 1, "v": 1}
    assert out.loc["v", "first_start_s"] == 50.0
    assert out.loc["w", "end_s"] == 150.0 + 950.0  # w resumed at 150 with 950 s left
    assert out.loc["v", "end_s"] == 1100.0 + 900.0


def test_running_jobs_of_a_queue_stand_in_the_order_they_restarted() -> None:
    # 3 GPUs, Q0 = 100 GPU-s; x (1 GPU) and y (2 GPUs) are in Q1 from 100 and 50. a (Q0) pauses
    # x at 110; b (Q0, 1 GPU) pauses y at 120 (the lowest ranked) and x restarts beside it; y
    # restarts at 160 when a and b end. At 170 c (Q0, 1 GPU) pauses the last restarted, y, as
    # Tiresias' simulator does (its queue lists keep running jobs in the order they started;
    # by their places while waiting, y, paused later, would rank before x and x be paused)
    rows = [job("x", 0, 1, 10_000.0), job("y", 0, 2, 10_000.0), job("a", 110, 1, 50.0), job("b", 120, 1, 40.0),
            job("c", 170, 1, 10.0)]  # fmt: skip
    policy = Tiresias(FirstFit(), thresholds_gpu_s=(100.0,), promote_knob=math.inf)
    out = by_id(simulate(rows, cluster([3]), Checked(policy), ZERO_COST))
    assert out["preemptions"].to_dict() == {"x": 1, "y": 2, "a": 0, "b": 0, "c": 0}
    assert out.loc["x", "end_s"] == 10_010.0  # paused 110-120
    assert out.loc["y", "end_s"] == 10_050.0  # paused 120-160 and 170-180


def test_a_paused_job_waits_ahead_of_the_jobs_already_waiting_in_its_queue() -> None:
    # 2 GPUs, Q0 = 100 GPU-s. j1 (2 GPUs) is demoted at 60 and paused for j0 (1 GPU, Q0); j0 is
    # demoted at 160 and kept (j3 and j1 need 2 GPUs, one is free); at 220 j3 (2 GPUs, Q0)
    # pauses j0. In Tiresias' simulator a paused job keeps its place ahead of the queue's
    # waiting jobs (after every round the waiting jobs move behind the running ones), so at
    # 250 j0 (10 s left) resumes before j1, which entered Q1 earlier
    rows = [job("j1", 10, 2, 240.0), job("j0", 60, 1, 170.0), job("j2", 120, 1, 100.0), job("j3", 150, 2, 30.0)]
    policy = Tiresias(FirstFit(), thresholds_gpu_s=(100.0,), promote_knob=math.inf)
    out = by_id(simulate(rows, cluster([2]), Checked(policy), ZERO_COST))
    assert out["preemptions"].to_dict() == {"j1": 1, "j0": 1, "j2": 0, "j3": 0}
    assert out.loc["j3", "first_start_s"] == 220.0
    assert out.loc["j0", "end_s"] == 260.0  # by order of entry, j1 would run 250-440 and j0 end at 450
    assert out.loc["j1", "end_s"] == 260.0 + 190.0


def test_a_demoted_job_kept_running_goes_behind_the_running_jobs_of_its_new_queue() -> None:
    # 3 GPUs, Q0 = 100 GPU-s. j3 (2 GPUs) reaches Q1 at 100 and is paused at 110 for j1 (Q0).
    # At 160 j0 and j1 are demoted behind j3, which waits in Q1: j3 restarts, j0 is kept and
    # j1 paused. j0 entered Q1 before j3 restarted, but in Tiresias' simulator it was appended
    # behind j3, so at 180 j2 (Q0, 1 GPU) pauses j0, not j3
    rows = [job("j3", 50, 2, 110.0), job("j0", 60, 1, 280.0), job("j1", 110, 2, 280.0), job("j2", 180, 1, 50.0)]
    policy = Tiresias(FirstFit(), thresholds_gpu_s=(100.0,), promote_knob=math.inf)
    out = by_id(simulate(rows, cluster([3]), Checked(policy), ZERO_COST))
    assert out["preemptions"].to_dict() == {"j3": 1, "j0": 1, "j1": 1, "j2": 0}
    assert out.loc["j3", "end_s"] == 210.0  # 60 s run, paused 110-160, 50 s left
    assert out.loc["j0", "end_s"] == 370.0  # paused 180-210


def test_starvation_compares_all_waiting_with_all_executed_time_since_promotion() -> None:
    # 1 GPU, Q0 = 100 GPU-s, PROMOTEKNOB 1.2. a runs 0-100 and 200-260 (t_a = 160 s) and
    # waited 100-200 (delta_a = 100 s) before c pauses it at 260: it is promoted when
    # delta_a = 1.2 x 160, at 260 + 192 - 100 = 352 (its last run alone, 60 s, would give 332).
    # b runs 100-200 and is paused at 200: promoted at 200 + 1.2 x 100 = 320.
    rows = [job("a", 0, 1, 10_000.0), job("b", 10, 1, 10_000.0), job("c", 260, 1, 10_000.0)]
    policy = _Promotions(thresholds_gpu_s=(100.0,), promote_knob=1.2)
    simulate(rows, cluster([1]), policy, SimConfig(checkpoint_s=0.0, restore_s=0.0, restart_s=0.0, horizon_s=400.0))
    assert policy.promotions == [(320.0, "b"), (352.0, "a")]


def test_infinite_knob_never_promotes() -> None:
    rows = [job("a", 0, 1, 10_000.0), job("b", 10, 1, 10_000.0), job("c", 260, 1, 10_000.0)]
    policy = _Promotions(thresholds_gpu_s=(100.0,), promote_knob=math.inf)
    simulate(rows, cluster([1]), policy, SimConfig(checkpoint_s=0.0, restore_s=0.0, restart_s=0.0, horizon_s=2000.0))
    assert policy.promotions == []


def test_defaults_are_the_simulators_queues_with_promotion() -> None:
    params = TiresiasParams()
    assert params.thresholds_gpu_s == (3250.0, 7200.0) and params.promote_knob == 8.0
    default = Tiresias(FirstFit())
    assert default.thresholds == params.thresholds_gpu_s and default.promote_knob == 8.0


@pytest.mark.parametrize("knob", [0.0, -1.0, math.nan])
def test_a_knob_that_is_not_positive_is_refused(knob: float) -> None:
    with pytest.raises(ConfigError, match="promote_knob must be positive"):
        Tiresias(FirstFit(), promote_knob=knob)
