"""The incremental rounds of PreemptiveScheduler (issue 15, part 2): its shortcuts take the same
decisions as ranking every job in every round, and they are what makes a round cheap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from simkit import by_id, cluster, job, simulate

from schedlab.cluster.presets import load_cluster
from schedlab.cluster.state import ClusterState
from schedlab.policies.classic import orders
from schedlab.policies.classic.tiresias import Tiresias
from schedlab.policies.common.placers import BestFit, Consolidate, FirstFit
from schedlab.policies.common.preemptive import PreemptiveScheduler
from schedlab.policies.registry import POLICIES, make_policy
from schedlab.sim.config import SimConfig
from schedlab.sim.engine import Simulation
from schedlab.workload.synthetic import generate


def _run(policy: PreemptiveScheduler, jobs: int = 600, load: float = 1.3) -> pd.DataFrame:
    cluster = load_cluster("uniform:32x8")
    workload = generate("venus", jobs, seed=3, cluster_gpus=cluster.total_gpus, load=load)
    return Simulation(workload, cluster, policy, seed=3).run().jobs


def _always_full(policy: PreemptiveScheduler) -> PreemptiveScheduler:
    """The same policy with every shortcut off: each round with a pending job ranks all running
    jobs afresh (not from the scheduler's index), walks them one by one and searches victims by
    trial placements."""
    policy._behind_running = lambda ctx, pool: False  # type: ignore[method-assign]
    policy.demand = _NeverFits()

    def ranked_afresh(ctx, pool, heads, cap):
        running = [job for job in ctx.running.values() if ctx.pool_of(job) == pool]
        return sorted((policy.priority(ctx, job), job.idx, job.num_gpus) for job in running), cap

    policy._boundary_rows = ranked_afresh  # type: ignore[method-assign]
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


def test_a_job_moved_under_kill_is_rekeyed() -> None:
    """A ``kill`` migration (``+defrag``) loses work, so the moved job's remaining time rises:
    the engine tells the policy (``on_migrated``) and its index is re-keyed, so the decisions
    stay those of ranking every running job afresh."""
    cluster = load_cluster("uniform:32x8")
    workload = generate("venus", 800, seed=5, cluster_gpus=cluster.total_gpus, load=1.3)
    config = SimConfig(checkpoint_model="kill", checkpoint_interval_s=1800.0)
    params = POLICIES["srtf+defrag"].parse({"gain_ratio": 0.2})
    fast = make_policy("srtf+defrag", rng=np.random.default_rng(0), params=params)
    full = make_policy("srtf+defrag", rng=np.random.default_rng(0), params=params)
    _always_full(full.inner)
    moved = Simulation(workload, cluster, fast, config=config, seed=0).run().jobs
    assert moved["migrations"].sum() > 0 and moved["lost_work_s"].sum() > 0
    pd.testing.assert_frame_equal(moved, Simulation(workload, cluster, full, config=config, seed=0).run().jobs)


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


def _long_and_short(short: int, gap_s: float) -> list[dict]:
    """512 long 1-GPU jobs, ``gap_s`` apart in length, fill 64 nodes at 0; ``short`` 100-s jobs
    then arrive one at a time, 1,000 s apart, each ranking before every running one."""
    long = [job(f"long{i}", 0.0, 1, 100_000.0 + gap_s * i) for i in range(512)]
    return long + [job(f"short{k}", 1_000.0 * (k + 1), 1, 100.0) for k in range(short)]


def test_a_round_rekeys_only_the_lowest_ranked_running_jobs() -> None:
    """srtf's running keys fall with time; the index keeps the keys last computed (upper
    bounds), and a round recomputes only those of the lowest ranked running jobs it must
    compare: the victim is found among a few of the 512, not by ranking them all."""
    policy = _Counting()
    jobs = by_id(simulate(_long_and_short(90, 10_000.0), cluster([8] * 64), policy))
    shorts = jobs.loc[[f"short{k}" for k in range(90)]]
    assert (shorts["first_start_s"] == shorts["submit_s"]).all()  # each preempts on arrival
    assert jobs["preemptions"].sum() == 90
    assert jobs.loc["long511", "preemptions"] == 90  # always the longest remaining
    ranking = _always_full(_Counting())
    simulate(_long_and_short(90, 10_000.0), cluster([8] * 64), ranking)
    assert ranking.calls > 10 * policy.calls, (ranking.calls, policy.calls)


def test_an_index_rebuilt_at_once_decides_as_full_rounds() -> None:
    """Keys a second apart that fall 1,000 s between rounds: nearly every key would be
    recomputed one by one, so the index is rebuilt in one sort, with the same decisions."""
    policy = orders.srtf(Consolidate())
    rebuilds = []
    rekey_all = policy.index.rekey_all
    policy.index.rekey_all = lambda ctx, ranked: rebuilds.append(ctx.now) or rekey_all(ctx, ranked)  # type: ignore[method-assign]
    fast = simulate(_long_and_short(90, 1.0), cluster([8] * 64), policy).jobs
    full = simulate(_long_and_short(90, 1.0), cluster([8] * 64), _always_full(orders.srtf(Consolidate()))).jobs
    assert len(rebuilds) >= 80
    assert fast["preemptions"].sum() == 90
    pd.testing.assert_frame_equal(fast, full)


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
    ranking = _always_full(_CountingTiresias())
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
                holders.append(((node, state.take_whole(node, take)),))
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
