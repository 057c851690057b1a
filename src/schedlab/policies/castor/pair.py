"""Scheduling one job pair (Castor §5.1, Theorem 1) and batch-size scaling (§5.2.3, Algorithm 2).

Job A runs, job B waits; alone they need ``t_A``, ``t_B`` seconds per iteration and ``i_A``
(remaining), ``i_B`` iterations; sharing, ``t_hat = t * xi`` (Eq. 14-15). Theorem 1: the
pair's mean completion time (from now) is lowest either sequentially (B starts when A ends,
``kappa = t_A i_A``) or concurrently (``kappa = 0``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass


def sequential_mean(t_a: float, i_a: float, t_b: float, i_b: float) -> float:
    """Mean JCT with ``kappa = t_A i_A``: T_A = t_A i_A, T_B = t_A i_A + t_B i_B."""
    return t_a * i_a + t_b * i_b / 2


def concurrent_times(t_a: float, i_a: float, xi_a: float, t_b: float, i_b: float, xi_b: float) -> tuple[float, float]:
    """(T_A, T_B) with ``kappa = 0``: both share until the first ends, the other then runs alone
    (Eq. 16-17 when B ends first, Eq. 20-21 at kappa = 0 when A does)."""
    ta_hat, tb_hat = t_a * xi_a, t_b * xi_b
    if ta_hat * i_a >= tb_hat * i_b:  # case 1
        t_b_end = tb_hat * i_b
        return t_b_end + t_a * (i_a - t_b_end / ta_hat), t_b_end
    t_a_end = ta_hat * i_a  # case 2
    return t_a_end, t_a_end + t_b * (i_b - t_a_end / tb_hat)


def theorem1(t_a: float, i_a: float, xi_a: float, t_b: float, i_b: float, xi_b: float) -> tuple[bool, float]:
    """Theorem 1: (share, mean JCT of the pair under the better of the two schedules).

    Case 1 (``t_hat_A i_A >= t_hat_B i_B``): Eq. 19's concurrent mean against the sequential
    one. Case 2: Eq. 23 is linear in kappa; concurrent execution wins iff its coefficient
    ``2 xi_B + xi_A - 2 xi_A xi_B`` is positive. A tie keeps the jobs sequential."""
    seq = sequential_mean(t_a, i_a, t_b, i_b)
    ta_hat, tb_hat = t_a * xi_a, t_b * xi_b
    if ta_hat * i_a >= tb_hat * i_b:
        conc = tb_hat * i_b + t_a * i_a / 2 - tb_hat * i_b / (2 * xi_a)  # Eq. 19
        return (True, conc) if conc < seq else (False, seq)
    if 2 * xi_b + xi_a - 2 * xi_a * xi_b > 0:  # Eq. 23 increasing in kappa: kappa = 0
        return True, (1 - 1 / (2 * xi_b)) * ta_hat * i_a + t_b * i_b / 2
    return False, seq


@dataclass(frozen=True)
class SharePlan:
    """Algorithm 2's output: share or not, the new job's per-step batch and the pair's mean JCT."""

    share: bool
    batch: float
    mean_jct: float


def scale_batch(batch: float, evaluate: Callable[[float], tuple[bool, float] | None]) -> SharePlan:
    """Algorithm 2: halve the new job's per-step batch from ``batch`` while ``ceil(b) != 1``
    (line 5), keeping the last ``b`` whose Theorem 1 time is at most the best so far (line 7,
    so ties go to the smaller batch). ``evaluate(b)`` returns Theorem 1's ``(SF, t_share)``
    or None when the pair does not fit in one GPU's memory at ``b`` (that ``b`` is skipped)."""
    best = SharePlan(False, batch, math.inf)
    b = batch
    while math.ceil(b) != 1:
        result = evaluate(b)
        if result is not None and result[1] <= best.mean_jct:
            best = SharePlan(result[0], b, result[1])
        b /= 2
    return best
