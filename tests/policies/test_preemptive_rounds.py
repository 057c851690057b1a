"""The incremental rounds of PreemptiveScheduler (issue 15, part 2): its shortcuts take the same
decisions as ranking every job in every round, and they are what makes a round cheap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedlab.cluster.presets import load_cluster
from schedlab.policies.classic import orders
from schedlab.policies.classic.tiresias import Tiresias
from schedlab.policies.common.placers import BestFit, Consolidate
from schedlab.policies.common.queues import PreemptiveScheduler
from schedlab.sim.engine import Simulation
from schedlab.workload.synthetic import generate


def _run(policy: PreemptiveScheduler, jobs: int = 600, load: float = 1.3) -> pd.DataFrame:
    cluster = load_cluster("uniform:32x8")
    workload = generate("venus", jobs, seed=3, cluster_gpus=cluster.total_gpus, load=load)
    return Simulation(workload, cluster, policy, seed=3).run().jobs


def _always_full(policy: PreemptiveScheduler) -> PreemptiveScheduler:
    """The same policy with every shortcut off: each round with a pending job ranks all jobs."""
    policy._behind_running = lambda pool: False  # type: ignore[method-assign]
    policy.demand = _NeverFits()
    policy._one_node_victims = lambda ctx, job, candidates: False  # type: ignore[method-assign]
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
