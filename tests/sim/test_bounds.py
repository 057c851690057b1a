"""The fluid makespan bound on measured throughputs (schedlab.sim.bounds), by hand."""

from __future__ import annotations

import pytest

from schedlab.sim.bounds import fluid_makespan_bound
from schedlab.sim.throughputs import GAVEL_BUILTIN
from tests.simkit import cluster, job, workload

R50 = "ResNet-50 (batch size 64)"


def test_one_job_is_bounded_by_its_fastest_type_and_the_area_by_all_types():
    spec = cluster([1, 1], types=["V100", "K80"])
    w = workload([job("a", 0, 1, 3600, model=R50)])
    k80 = GAVEL_BUILTIN.speedup(R50, 1, "K80")
    # one GPU at a time: the whole hour on the V100
    assert fluid_makespan_bound(w, spec, GAVEL_BUILTIN) == pytest.approx(3600)
    # without the per-job limit the work spreads over both GPUs: 3600 / (1 + k80)
    assert fluid_makespan_bound(w, spec, GAVEL_BUILTIN, per_job=False) == pytest.approx(3600 / (1 + k80))


def test_many_jobs_are_bounded_by_the_cluster_capacity():
    spec = cluster([2, 2], types=["V100", "K80"])
    w = workload([job(str(i), 0, 1, 3600, model=R50) for i in range(8)])
    k80 = GAVEL_BUILTIN.speedup(R50, 1, "K80")
    # 8 V100-hours of work on 2 V100s + 2 K80s doing 2 + 2 * k80 V100-hours an hour
    expected = 8 * 3600 / (2 + 2 * k80)
    assert fluid_makespan_bound(w, spec, GAVEL_BUILTIN) == pytest.approx(expected)
