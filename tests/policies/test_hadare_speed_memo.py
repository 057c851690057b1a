"""Hadar's memoised search (knapsack transitions, searches per job on the kinds of its servers,
kinds moved in place) gives exactly what the plain search gives."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.policies.hetero.allocator import Allocator, JobView
from tests.simkit import cluster


def _plain_cheapest(a: Allocator, gpus: int, servers: list[int], state: tuple[int, ...], per_server: float):
    """The knapsack of ``Allocator._cheapest`` without memo or skips: every server in order."""
    best: list[tuple[float, list[tuple[int, int]]] | None] = [(0.0, [])] + [None] * gpus
    for h in servers:
        c, free = a.cap[h], state[h]
        steps = a.prices[a.types[h], c][c - free : c - free + gpus]
        nxt = list(best)
        for n, entry in enumerate(best):
            if entry is None:
                continue
            total = entry[0] + per_server
            for x, p in enumerate(steps[: gpus - n], start=1):
                total += p
                cur = nxt[n + x]
                if cur is None or total < cur[0]:
                    nxt[n + x] = (total, [*entry[1], (h, x)])
        best = nxt
    last = best[gpus]
    return last[1] if last is not None else None


def _case(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 10))
    sizes = rng.choice([2, 4, 8], n).tolist()
    types = rng.choice(["V100", "P100", "K80"], n).tolist()
    spec = cluster(sizes, types=types)
    rate = {"V100": 8.0, "P100": float(rng.choice([4.0, 8.0])), "K80": 1.5}  # equal rates interleave types
    views = [JobView(i, int(rng.choice([1, 2, 3, 4, 8])), 1000.0, float(rng.uniform(100, 1000)),
                     float(rng.uniform(0, 500)), rate) for i in range(4)]  # fmt: skip
    a = Allocator(spec, views, eta=float(rng.choice([0.01, 1.0, 100.0])), comm_fraction=float(rng.choice([0.0, 0.3])),
                  horizon=float(rng.uniform(500, 5000)), mix_types=bool(rng.random() < 0.7))  # fmt: skip
    return rng, sizes, views, a


@pytest.mark.parametrize("seed", range(40))
def test_memoised_knapsack_is_the_plain_one(seed):
    """Memoised transitions and skipped servers change no allocation, rising prices or not
    (eta 0.01 makes them fall), on states met again and new ones."""
    rng, sizes, views, a = _case(seed)
    for _ in range(30):
        state = tuple(int(rng.integers(0, c + 1)) for c in sizes)
        servers = [h for h in rng.permutation(len(sizes)).tolist() if state[h]]
        for v in views:
            per_server = a.comm_fraction * float(rng.choice([0.5, 1.0]))
            plain = _plain_cheapest(a, v.gpus, servers, state, per_server)
            assert a._cheapest(v.gpus, servers, state, per_server) == plain


@pytest.mark.parametrize("seed", range(40))
def test_memoised_searches_and_kinds_placed_in_place_are_the_fresh_ones(seed):
    """Copies placed as HadarE places them, on one allocator (searches memoised, kinds moved in
    place): each search equals a fresh allocator's on the same state, and the kinds are the state's."""
    rng, sizes, views, a = _case(seed)

    def fresh() -> Allocator:  # keeps no searches (Hadar's), so each one is computed afresh
        return Allocator(cluster(sizes, types=a.types), views, eta=1.0, comm_fraction=a.comm_fraction, horizon=1.0,
                         mix_types=a.mix_types, memo=False)  # fmt: skip

    state = tuple(sizes)
    free = list(state)
    kinds = {kind: list(hs) for kind, hs in a.kinds(state).items()}
    used: dict[int, set[int]] = {v.idx: set() for v in views}
    for _ in range(3 * len(sizes)):
        v = views[int(rng.integers(len(views)))]
        ref = fresh()
        ref.prices, ref.rising = a.prices, a.rising  # the same prices
        got = a.search(v, free, a.usable(v, kinds, used[v.idx]))
        assert got == ref.search(v, free, ref.usable(v, ref.kinds(tuple(free)), used[v.idx]))
        assert got[1] == a.find_alloc(v, tuple(free), used[v.idx])
        if got[1] is not None:
            used[v.idx].update(h for h, _ in got[1][1])
            a.place(free, kinds, got[1][1])
            assert kinds == fresh().kinds(tuple(free))


def test_a_memoised_search_tells_apart_states_with_other_server_counts() -> None:
    """Two states with the same kinds of servers, one and two empty 4-GPU servers: a 4-GPU job
    fills the one, and spreads over the two where prices rise steeply. The memo must not hand the
    first answer to the second search."""
    spec = cluster([4, 4, 4], types=["V100"] * 3)
    v = JobView(0, 4, 1000.0, 1000.0, 0.0, {"V100": 10.0})
    other = JobView(1, 1, 10.0, 10.0, 0.0, {"V100": 10.0})  # widens U / L so that prices rise steeply
    a = Allocator(spec, [v, other], eta=1.0, comm_fraction=0.05, horizon=1000.0)
    one, two = (4, 0, 0), (4, 4, 0)
    assert a.search(v, one, a.usable(v, a.kinds(one)))[1][1] == [(0, 4)]
    found = a.search(v, two, a.usable(v, a.kinds(two)))[1]
    assert sorted(found[1]) == [(0, 2), (1, 2)]
    assert found == a.find_alloc(v, two) == Allocator(spec, [v, other], eta=1.0, comm_fraction=0.05, horizon=1000.0,
                                                      memo=False).find_alloc(v, two)  # fmt: skip
