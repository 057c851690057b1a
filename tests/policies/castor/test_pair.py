"""Theorem 1 and Algorithm 2 (Castor §5.1, §5.2.3) on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from schedlab.policies.castor.pair import SharePlan, concurrent_times, scale_batch, sequential_mean, theorem1


def test_case1_short_newcomer_shares() -> None:
    # t_hat_A i_A = 120 >= t_hat_B i_B = 30. Eq. 19: 30 + 100/2 - 30/2.4 = 67.5; sequential 100 + 20/2 = 110.
    assert theorem1(1.0, 100, 1.2, 1.0, 20, 1.5) == (True, pytest.approx(67.5))
    t_a, t_b = concurrent_times(1.0, 100, 1.2, 1.0, 20, 1.5)
    assert (t_a, t_b) == (pytest.approx(105.0), pytest.approx(30.0))  # A: 30 + (100 - 25) at full speed


def test_case1_heavy_interference_runs_sequentially() -> None:
    # 30 >= 27. Eq. 19: 27 + 5 - 27/6 = 27.5 > sequential 10 + 4.5 = 14.5.
    assert theorem1(1.0, 10, 3.0, 1.0, 9, 3.0) == (False, pytest.approx(14.5))


def test_case2_sign_of_the_kappa_coefficient() -> None:
    # 12 < 150; 2*1.5 + 1.2 - 2*1.2*1.5 = 0.6 > 0: start now. Eq. 23 at kappa 0: (1 - 1/3)*12 + 50 = 58.
    assert theorem1(1.0, 10, 1.2, 1.0, 100, 1.5) == (True, pytest.approx(58.0))
    t_a, t_b = concurrent_times(1.0, 10, 1.2, 1.0, 100, 1.5)
    assert (t_a + t_b) / 2 == pytest.approx(58.0)
    # xi 2 and 2: 4 + 2 - 8 < 0, wait; sequential 10 + 50 = 60 (concurrent would be 0.75*20 + 50 = 65).
    assert theorem1(1.0, 10, 2.0, 1.0, 100, 2.0) == (False, pytest.approx(60.0))
    assert sum(concurrent_times(1.0, 10, 2.0, 1.0, 100, 2.0)) / 2 == pytest.approx(65.0)


@pytest.mark.parametrize("xi", [1.0, 1.3, 1.7, 2.5])
def test_theorem1_picks_the_better_endpoint(xi: float) -> None:
    for t_a, i_a, t_b, i_b in [(1.0, 50, 2.0, 10), (0.5, 10, 1.0, 300), (2.0, 40, 2.0, 40)]:
        share, best = theorem1(t_a, i_a, xi, t_b, i_b, xi * 1.1)
        conc = sum(concurrent_times(t_a, i_a, xi, t_b, i_b, xi * 1.1)) / 2
        seq = sequential_mean(t_a, i_a, t_b, i_b)
        assert best == pytest.approx(min(conc, seq))
        assert share == (conc < seq - 1e-9)


def test_algorithm2_halves_down_to_two_and_ties_go_to_the_smaller_batch() -> None:
    seen: list[float] = []
    table = {8.0: (False, 10.0), 4.0: (True, 9.0), 2.0: (True, 9.0)}

    def evaluate(b: float) -> tuple[bool, float]:
        seen.append(b)
        return table[b]

    assert scale_batch(8, evaluate) == SharePlan(True, 2.0, 9.0)
    assert seen == [8, 4, 2]  # line 5: b = 1 is not evaluated


def test_algorithm2_skips_batches_that_do_not_fit() -> None:
    table = {8.0: None, 4.0: (True, 12.0), 2.0: (True, 13.0)}
    assert scale_batch(8, table.__getitem__) == SharePlan(True, 4.0, 12.0)
    assert scale_batch(1, table.__getitem__) == SharePlan(False, 1, math.inf)
