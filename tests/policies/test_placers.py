"""Placers: each test fails if the placer's defining choice is removed."""

from __future__ import annotations

import numpy as np
import pytest
from simkit import cluster, job, make_job, workload

from schedlab.cluster.spec import ClusterSpec
from schedlab.sim.policy import Policy
from schedlab.policies.common.placers import BestFit, Consolidate, FirstFit, RandomFit, make_placer
from schedlab.sim.engine import Simulation


def context(spec: ClusterSpec, used: dict[int, int] | None = None) -> Simulation:
    """A simulation to place against, with ``used[node]`` whole GPUs already taken."""
    sim = Simulation(workload([job("x", 0, 1, 1.0)]), spec, Policy())
    for node, count in (used or {}).items():
        sim.state.take_whole(node, count)
    return sim


# Four 8-GPU nodes with 8, 3, 5 and 8 free GPUs.
def mixed() -> Simulation:
    return context(cluster([8, 8, 8, 8]), {1: 5, 2: 3})


def test_consolidate_takes_the_best_fitting_single_node() -> None:
    ctx = mixed()
    assert Consolidate().place(ctx, make_job(4)) == [(2, 4)]
    assert Consolidate().place(ctx, make_job(6)) == [(0, 6)]


def test_consolidate_never_splits_a_job_that_fits_on_one_node() -> None:
    ctx = context(cluster([8, 8]), {0: 5, 1: 5})
    assert Consolidate().place(ctx, make_job(4)) is None
    assert BestFit().place(ctx, make_job(4)) == [(0, 3), (1, 1)]


def test_consolidate_gives_multi_node_jobs_whole_free_nodes_and_the_remainder_to_the_most_free_node() -> None:
    ctx = mixed()
    assert Consolidate().place(ctx, make_job(16)) == [(0, 8), (3, 8)]
    assert Consolidate().place(ctx, make_job(12)) == [(0, 8), (3, 4)]  # Helios: next node by most free
    assert Consolidate().place(context(cluster([8, 8, 8]), {1: 5, 2: 3}), make_job(12)) == [(0, 8), (2, 4)]
    assert Consolidate().place(context(cluster([8, 8, 8, 8]), {1: 5, 2: 3, 3: 1}), make_job(16)) is None


def test_consolidate_spreads_a_job_no_whole_node_shape_can_ever_hold() -> None:
    two_types = context(cluster([8, 8], types=["A", "B"]))
    assert Consolidate().place(two_types, make_job(16)) == [(0, 8), (1, 8)]
    uneven = context(cluster([8, 4, 4]))
    assert sorted(Consolidate().place(uneven, make_job(16))) == [(0, 8), (1, 4), (2, 4)]


def test_best_fit_picks_the_fullest_node_that_fits_and_spreads_most_free_first() -> None:
    ctx = mixed()
    assert BestFit().place(ctx, make_job(2)) == [(1, 2)]
    assert BestFit().place(ctx, make_job(4)) == [(2, 4)]
    assert BestFit().place(ctx, make_job(20)) == [(0, 8), (3, 8), (2, 4)]


def test_first_fit_picks_the_lowest_id_node_and_spreads_from_low_ids() -> None:
    ctx = mixed()
    assert FirstFit().place(ctx, make_job(2)) == [(0, 2)]
    assert FirstFit().place(context(cluster([8, 8, 8]), {0: 7}), make_job(2)) == [(1, 2)]
    assert FirstFit().place(ctx, make_job(20)) == [(0, 8), (1, 3), (2, 5), (3, 4)]


def test_random_is_reproducible_per_seed_and_differs_across_seeds() -> None:
    ctx = context(cluster([8] * 8), {3: 8})

    def draws(seed: int) -> list[int]:
        placer = RandomFit(np.random.default_rng(seed))
        return [placer.place(ctx, make_job(2))[0][0] for _ in range(30)]

    assert draws(1) == draws(1)
    assert draws(1) != draws(2)
    assert 3 not in draws(1) and len(set(draws(1))) > 3
    spread = RandomFit(np.random.default_rng(5)).place(ctx, make_job(24))
    assert sum(c for _, c in spread) == 24 and len({n for n, _ in spread}) == 3


@pytest.mark.parametrize("name", ["best-fit", "first-fit", "random"])
def test_gang_workers_are_never_split_across_nodes(name: str) -> None:
    ctx = context(cluster([4, 4, 4]), {0: 1, 1: 1, 2: 1})
    alloc = make_placer(name, np.random.default_rng(0)).place(ctx, make_job(4, gpw=2))
    assert alloc is not None and all(c % 2 == 0 for _, c in alloc) and sum(c for _, c in alloc) == 4


def test_consolidate_keeps_gang_workers_whole_when_whole_nodes_cannot() -> None:
    ctx = context(cluster([4, 4, 2]))
    assert Consolidate().place(ctx, make_job(6, gpw=3)) == [(0, 3), (1, 3)]


@pytest.mark.parametrize("name", ["best-fit", "first-fit", "random", "consolidate"])
def test_placers_respect_gpu_type_and_full_nodes(name: str) -> None:
    ctx = context(cluster([2, 2, 2], types=["A", "B", "B"]), {1: 2})
    placer = make_placer(name, np.random.default_rng(0))
    assert placer.place(ctx, make_job(2, gpu_type="B")) == [(2, 2)]
    assert placer.place(ctx, make_job(4, gpu_type="B")) is None


def test_fractional_jobs_fill_a_partly_used_gpu_first() -> None:
    ctx = context(cluster([1, 2]))
    ctx.state.take_fraction(1, 500)
    assert BestFit().place(ctx, make_job(0.5)) == [(1, 1)]
    assert BestFit().place(ctx, make_job(0.75)) == [(0, 1)]
