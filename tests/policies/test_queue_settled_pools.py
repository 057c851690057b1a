"""QueueScheduler leaves a pool alone while nothing in it changes, with the same decisions."""

from __future__ import annotations

from collections import Counter

from schedlab.policies.classic.orders import fifo
from schedlab.policies.common.placers import Consolidate
from schedlab.policies.common.queues import Key, QueueScheduler
from schedlab.sim.policy import Context
from simkit import by_id, cluster, job, simulate

SPEC = cluster([8, 8], pools=["a", "b"], tenants={"a": None, "b": None}, partitioned=True)
ROWS = [job("a1", 0, 8, 1000, tenant="a"), job("a2", 1, 8, 10, tenant="a"),
        *(job(f"b{i}", 2 + i, 1, 0.5, tenant="b") for i in range(20))]  # fmt: skip


class _Counted(QueueScheduler):
    """FIFO that counts how often each pool is drained (a subclass: a compiled core calls it too)."""

    def __init__(self) -> None:
        super().__init__("fifo", fifo(Consolidate()).order, Consolidate())
        self.drained: Counter[str] = Counter()

    def _drain(self, ctx: Context, pool: str, shapes: dict[Key, list[Key]]) -> None:
        self.drained[pool] += 1
        super()._drain(ctx, pool, shapes)


def test_a_blocked_pool_is_drained_only_when_something_changes_in_it() -> None:
    policy = _Counted()
    drained = policy.drained
    jobs = by_id(simulate(ROWS, SPEC, policy))
    assert jobs.loc["a2", "first_start_s"] == 1000  # it waits for a1, in its own pool
    assert jobs.loc["b19", "first_start_s"] == 21
    # pool b changes 40 times (20 arrivals, 20 finishes); pool a at its two arrivals, once more
    # when a second pool first has jobs (a lone pool's rounds keep no record), and at a1's end
    assert drained["a"] == 4
    assert drained["b"] >= 40
