"""``fgd``: fragmentation gradient descent placement (Weng et al., USENIX ATC '23), adapted
from GPU-sharing (in-card) fragmentation to whole GPUs in a node, as a GFS baseline (Duan et
al., ASPLOS '26, §4.1).

FGD measures a node's fragmentation against the target workload, the popularity of the task
shapes expected to arrive, and places a task where the expected fragmentation grows least
(steepest descent). Adaptation assumed here:

* task shape = the GPU unit a job needs on one node: its GPU count when it fits on one node of
  its groups, else its GPUs per worker (1 when unset); fractional jobs count as 1;
* target workload = the shares of these units among the last ``window`` arrivals of the same
  GPU model (all arrivals for jobs that accept any model), which covers the pending jobs;
* fragmentation of a node with ``f`` free GPUs = ``sum_u p_u * (f mod u)``: the free GPUs that
  the units cannot fill (all ``f`` when ``f < u``);
* a single-node job goes to the node minimising ``frag(f - need) - frag(f)``, ties broken by
  best fit (fewer free GPUs) then lowest id.

Speed: the score depends only on a node's free count, so one candidate per free-count bucket
of each eligible (pool, model) group is scored (the lowest id of the bucket): at most
``max_gpus`` scores per group, never a scan of the nodes. Jobs spanning nodes and fractional
jobs use the placer's rule (best fit by default), unscored. Queueing and eviction (FCFS,
HP first, HP evicts the newest spot jobs of the best-fitting node, ``evict`` kill or pause)
are those of :mod:`schedlab.policies.spot.spot_fcfs`.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass
from typing import ClassVar

from schedlab.policies.params import help_field
from schedlab.policies.common.placers import Alloc, Placer, worker_size
from schedlab.policies.spot.spot_fcfs import QuotaParams, SpotFCFS, evict_mode
from schedlab.sim.job import Job
from schedlab.sim.policy import Context


def fragmentation(free: int, units: Counter[int]) -> int:
    """Free GPUs that jobs drawn from ``units`` (unit -> count of recent arrivals) cannot use,
    times the number of arrivals: the expected fragmentation, kept integral so ties are exact."""
    return sum(count * (free % unit) for unit, count in units.items())


@dataclass(frozen=True)
class FgdParams(QuotaParams):
    """How many recent arrivals define the expected job sizes; how a spot victim is stopped;
    the spot quota (:mod:`schedlab.policies.spot.spot_fcfs`)."""

    policy: ClassVar[str] = "fgd"
    window: int = help_field(1000, "recent arrivals whose GPU sizes define the fragmentation measure")
    evict: str = help_field("kill", "how a spot victim is stopped: kill (the paper) or pause (checkpointed by the cost model)")

    def __post_init__(self) -> None:
        evict_mode(self.policy, self.evict)
        super().__post_init__()


class FGD(SpotFCFS):
    """FCFS + fragmentation-gradient placement + newest-spot-first eviction."""

    name = "fgd"

    def __init__(self, placer: Placer, *, window: int = 1000, evict: str = "kill", spot_quota: str = "none",
                 quota_forecaster: str = "orglinear", quota_eta_every_s: float | None = None,
                 quota_wait_reading: str = "longest", seed: int = 0) -> None:  # fmt: skip
        super().__init__(placer, evict=evict, spot_quota=spot_quota, quota_forecaster=quota_forecaster,
                         quota_eta_every_s=quota_eta_every_s, quota_wait_reading=quota_wait_reading, seed=seed)  # fmt: skip
        self.window = window
        self.recent: dict[str, deque[int]] = {}
        self.units: dict[str, Counter[int]] = {}

    def on_arrival(self, ctx: Context, job: Job) -> None:
        unit = self._unit(ctx, job)
        for model in {job.gpu_type, ""}:
            recent = self.recent.setdefault(model, deque())
            counts = self.units.setdefault(model, Counter())
            recent.append(unit)
            counts[unit] += 1
            if len(recent) > self.window:
                old = recent.popleft()
                counts[old] -= 1
                if not counts[old]:
                    del counts[old]
        super().on_arrival(ctx, job)

    @staticmethod
    def _unit(ctx: Context, job: Job) -> int:
        if job.fractional:
            return 1
        if any(job.num_gpus <= g.max_gpus for g in ctx.groups_of(job)):
            return int(job.num_gpus)
        return worker_size(job)

    def place(self, ctx: Context, job: Job) -> Alloc | None:
        groups = ctx.groups_of(job)
        need = int(job.num_gpus)
        if job.fractional or not any(need <= g.max_gpus for g in groups):
            return self.placer.place(ctx, job)
        units = self.units.get(job.gpu_type, Counter())
        best: tuple[int, int, int] | None = None
        for g in groups:
            for free in range(need, g.max_gpus + 1):
                bucket = g.buckets[free]
                if bucket:
                    rank = (fragmentation(free - need, units) - fragmentation(free, units), free, bucket[0])
                    if best is None or rank < best:
                        best = rank
        return None if best is None else [(best[2], need)]
