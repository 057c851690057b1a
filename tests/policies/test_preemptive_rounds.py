"""The incremental rounds of PreemptiveScheduler (issue 15, part 2): its shortcuts take the same
decisions as ranking every job in every round, and they are what makes a round cheap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedlab.cluster.presets import load_cluster
from schedlab.cluster.state import ClusterState
from schedlab.policies.classic import orders
from schedlab.policies.classic.tiresias import Tiresias
from schedlab.policies.common.placers import BestFit, Consolidate, FirstFit
from schedlab.policies.common.queues import PreemptiveScheduler
from schedlab.sim.engine import Simulation
from schedlab.workload.synthetic import generate


def _run(policy: PreemptiveScheduler, jobs: int = 600, load: float = 1.3) -> pd.DataFrame:
    cluster = load_cluster("uniform:32x8")
    workload = generate("venus", jobs, seed=3, cluster_gpus=cluster.total_gpus, load=load)
    return Simulation(workload, cluster, policy, seed=3).run().jobs


def _always_full(policy: PreemptiveScheduler) -> PreemptiveScheduler:
    """The same policy with every shortcut off: each round with a pending job ranks all running
    jobs, walks them one by one and searches victims by trial placements."""
    policy._behind_running = lambda pool: False  # type: ignore[method-assign]
    policy.demand = _NeverFits()
    policy.static_keys = False  # type: ignore[misc]
    walk = policy._merge
    policy._merge = lambda rows, heads, cap, admitted, waiting, sums: walk(  # type: ignore[method-assign]
        rows, heads, cap, admitted, waiting, None)
    policy.placer.fewest_releases = lambda *args: False  # type: ignore[method-assign]
    return policy


class _NeverFits(dict):
    """A demand table under which no pool ever looks unsaturated (so no 'all fit' shortcut)."""

    def items(self):  # type: ignore[override]
        return [("", float("inf"))]

    def __getitem__(self, key):
        return 0.0

    def __setitem__(self, key, value) -> None:
        pass

    def get(self, key, default=None):
        return 0.0


BUILDERS = {
    "srtf": lambda placer: orders.srtf(placer),
    "srsf": lambda placer: orders.srsf(placer),
    "tiresias": lambda placer: Tiresias(placer, thresholds_gpu_s=(2000.0, 20000.0)),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize("placer", [Consolidate, BestFit])
def test_shortcuts_decide_as_full_rounds(name: str, placer) -> None:
    fast = _run(BUILDERS[name](placer()))
    full = _run(_always_full(BUILDERS[name](placer())))
    assert fast["preemptions"].sum() > 0  # the workload exercises preemption
    pd.testing.assert_frame_equal(fast, full)


class _Counting(PreemptiveScheduler):
    def __init__(self) -> None:
        super().__init__("srtf", self._key, Consolidate())
        self.calls = 0

    def _key(self, ctx, job):
        self.calls += 1
        return (ctx.remaining(job), job.submit)


def test_a_saturated_round_does_not_rank_the_backlog() -> None:
    """On a saturated cluster the priority is evaluated a bounded number of times per job, not
    once per active job per round (which grows with the backlog)."""
    policy = _Counting()
    jobs = _run(policy, jobs=1500, load=1.6)
    assert jobs["finished"].all()
    assert policy.calls < 60 * len(jobs), policy.calls


class _CountingTiresias(Tiresias):
    def __init__(self) -> None:
        super().__init__(Consolidate(), thresholds_gpu_s=(2000.0, 20000.0))
        self.priority = self._counted
        self.calls = 0

    def _counted(self, ctx, job):
        self.calls += 1
        return self.queue_key(ctx, job)


def test_static_keys_are_not_ranked_in_every_round() -> None:
    """Tiresias' keys change only where it re-keys a job, so its running jobs stay sorted between
    rounds: the key is computed a few times per start, pause and queue change, not once per
    running job per full round."""
    policy = _CountingTiresias()
    jobs = _run(policy, jobs=1500, load=1.6)
    changes = int(jobs["preemptions"].sum()) * 2 + len(jobs) * 6
    assert jobs["finished"].all()
    assert policy.calls < changes, (policy.calls, changes)
    ranking = _CountingTiresias()
    ranking.static_keys = False  # type: ignore[misc]
    _run(ranking, jobs=1500, load=1.6)
    assert ranking.calls > 3 * policy.calls  # the same run, ranking the running jobs each round


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("placer", [Consolidate, FirstFit, BestFit])
def test_placers_count_victims_as_trial_placements_would(placer, seed: int) -> None:
    """fewest_releases (free-GPU arithmetic) gives the fewest leading victims whose release lets
    the placer place a job, as releasing them one by one and trying does."""
    rng = np.random.default_rng(seed)
    state = ClusterState(load_cluster("uniform:12x8"))
    holders = []
    for node in range(12):
        left = 8
        while left:
            take = int(min(left, rng.choice([1, 2, 4, 8])))
            if rng.random() < 0.7:
                holders.append([(node, state.take_whole(node, take))])
            else:
                state.take_whole(node, take)  # held by a job that is no candidate
            left -= take
    victims = [holders[i] for i in rng.permutation(len(holders))]
    for _ in range(int(rng.integers(0, len(victims)))):  # some free GPUs to start from
        node, gids = victims.pop()[0]
        state.release(node, gids, 1000)
    need = int(rng.choice([3, 8, 9, 12, 16, 20, 24, 32, 40, 56, 72]))
    placer = placer()
    groups = state.groups_for("", "")

    class _Ctx:
        def __init__(self):
            self.state = state

        def groups_of(self, job):
            return groups

    job = type("J", (), {"fractional": False, "num_gpus": float(need), "gpus_per_worker": float("nan")})()
    counted = placer.fewest_releases(state, groups, need, 1, victims)
    if placer.place(_Ctx(), job) is not None:
        assert counted is False
        return
    if counted is False:  # Consolidate leaves a job that fits on one node to another count
        assert isinstance(placer, Consolidate) and need <= 8
        return
    expected = None
    with state.what_if() as release:
        for k, alloc in enumerate(victims):
            release(alloc, 1000)
            if placer.place(_Ctx(), job) is not None:
                expected = k + 1
                break
    assert counted == expected, (counted, expected)


def test_a_promoted_job_is_requeued() -> None:
    """Tiresias' starvation promotion changes a pending job's key: without rekey its queue
    entry would keep the old level and it would be admitted later than it should."""

    class Stale(Tiresias):
        def rekey(self, ctx, job):  # forget every key change
            pass

    fresh = _run(Tiresias(Consolidate(), thresholds_gpu_s=(2000.0, 20000.0), promote_knob=2.0))
    stale = _run(Stale(Consolidate(), thresholds_gpu_s=(2000.0, 20000.0), promote_knob=2.0))
    assert not fresh.equals(stale)
    assert np.isfinite(fresh["end_s"]).all()
