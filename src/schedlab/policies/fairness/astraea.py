"""ASTRAEA (Ye et al., "ASTRAEA: A Fair Deep Learning Scheduler for Multi-tenant GPU Clusters";
the post https://yezhisheng.me/post/astraea/ is the specification here, the artifact
github.com/yzs981130/Astraea_Artifacts ``simulation/alg/scheduler/lease.py`` the secondary
reference for what the post leaves open).

Long-term GPU-time fairness (post, "Long-Term GPU-Time Fairness"): a tenant's fairness index is
the GPU-time it received over a window divided by the GPU-time it deserved, its weighted share
of the cluster capped at its demand; a job's, its GPU-time received since arrival divided by its
deserved GPU-time, min(its GPUs, its tenant's share / the tenant's jobs with demand).

Scheduling (post, "How ASTRAEA Schedules"), on the lease frame of
:mod:`schedlab.policies.fairness.lease`:

1. *tenant phase*: the tenant with the lowest tenant-level fairness index is served first;
2. *job phase*: inside it, the candidate with the lowest job-level fairness index (ties: earlier
   submission);
3. *lease-based*: a running job keeps its GPUs for ``lease_s`` (the artifact's evaluation runs
   900 s, ``run.sh``); at lease ends the order is repaired;
4. *starvation threshold*: inside its tenant, a job pending ``starvation_s`` (the artifact's
   evaluation: 21,600 s) goes first, ahead of the job ranking, and one that does not fit
   blocks its tenant for the round (the artifact's ``user_stave_jobs``); with ``block="any"``
   any job that is not taken blocks its tenant, as the artifact's ``run.sh`` sets it
   (``--block_scheduling 1``: a user's loop stops at its first failed quota check or
   placement). The post does not describe either rule;
5. *consolidate placement* (the artifact's ``--placement consolidate``): the default placer.

Where this differs from the artifact, and why:

* The tenant index ranks by used / deserved over the window (the post's "lowest tenant-level
  fairness index"); the artifact's ``fair`` quota ranks by used / weighted quota and serves a
  tenant below 20 % of its quota first.
* Within a round a grant is counted forward: the rank of a tenant is (window used + GPUs it
  will hold over the next lease x lease) / (window deserved + fair share x lease), so one round
  gives max-min-fair grants (the artifact adds a whole lease per grant to the used side too).
* Deserved GPU-time redistributes the share a tenant cannot use (water-filling), as the
  run metrics do (``docs/fairness.md``); the artifact caps at min(demand, static quota).
* The window is ``window_s`` with hourly marks (the artifact: 24 hourly buckets).
* No "delay" preemption of just-restarted jobs for new arrivals and no job-reward tie-break
  (the artifact's ``delay_threshold`` and ``job_reward`` options); the post names neither.
* A lease expiry checkpoints (``ctx.pause``, no work lost; the engine charges the restart cost,
  which the artifact does not) only when the job is not chosen again, and a job chosen again
  keeps its GPUs; the artifact releases every expired job and places the chosen ones afresh,
  which also defragments the cluster at every lease end (moving a job is free in its model).
  ``repack=True`` does as the artifact does, each move paying the engine's costs.
* A pending job the placer cannot place is passed over for the next in rank (the artifact
  counts GPUs when granting and may leave a grant unplaced).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from schedlab.errors import ConfigError
from schedlab.policies.common.placers import Placer
from schedlab.policies.fairness.lease import LeaseScheduler
from schedlab.policies.fairness.ledger import Ledger
from schedlab.policies.params import help_field
from schedlab.sim.job import Job
from schedlab.sim.policy import Context

ARTIFACT_LEASE_S = 900.0  # run.sh: --lease_term_interval 900
ARTIFACT_STARVATION_S = 21600.0  # run.sh: --stavation_threshold 21600
ARTIFACT_WINDOW_S = 24 * 3600.0  # lease.py: long_term_interval_cnt = 24 hourly buckets
ARTIFACT_TICK_S = 10.0  # options.py: check_time_interval


@dataclass(frozen=True)
class AstraeaParams:
    """ASTRAEA's lease term, starvation threshold and fairness window."""

    lease_s: float = help_field(ARTIFACT_LEASE_S, "lease term, seconds of progress (artifact run.sh: 900)")
    starvation_s: float = help_field(ARTIFACT_STARVATION_S,
                                     "a job pending this long goes first in its tenant (artifact: 21600)")
    window_s: float = help_field(ARTIFACT_WINDOW_S, "window of the tenant fairness index (artifact: 24 h)")
    tick_s: float = help_field(ARTIFACT_TICK_S, "lease ends are rounded up to this grid (artifact: 10 s ticks)")
    block: str = help_field("starving", "which job that is not taken stops its tenant for the round: starving "
                            "(one past starvation_s) or any (artifact run.sh: --block_scheduling 1)")
    repack: bool = help_field(False, "at a lease end pause every expired job and place the chosen ones afresh, "
                              "re-packing their GPUs (the artifact; each move pays checkpoint and restore)")


class Astraea(LeaseScheduler):
    """Lowest tenant LTGF index first, then lowest job LTGF index, on leases."""

    ledger: Ledger  # made by setup

    def __init__(self, placer: Placer, *, lease_s: float = ARTIFACT_LEASE_S,
                 starvation_s: float = ARTIFACT_STARVATION_S, window_s: float = ARTIFACT_WINDOW_S,
                 tick_s: float = ARTIFACT_TICK_S, shares: Mapping[str, float] | None = None,
                 block: str = "starving", repack: bool = False) -> None:  # fmt: skip
        super().__init__("astraea", placer, lease_s=lease_s, tick_s=tick_s, starvation_s=starvation_s, shares=shares,
                         block=block, repack=repack)
        if not window_s > 0:
            raise ConfigError(f"astraea: window_s must be > 0, got {window_s!r}")
        self.window_s = window_s

    def setup(self, ctx: Context) -> None:
        self.ledger = Ledger(float(ctx.cluster.total_gpus), self.weight, window_s=self.window_s)

    def advance(self, ctx: Context) -> None:
        self.ledger.advance(ctx.now)

    def arrived(self, ctx: Context, job: Job) -> None:
        st = self.states[job.idx]
        st.baseline = self.ledger.arrive(st.group, job.num_gpus)

    def finished(self, ctx: Context, job: Job) -> None:
        self.ledger.leave(self.states[job.idx].group, job.num_gpus)

    def holds(self, ctx: Context, job: Job, gpus: float) -> None:
        self.ledger.hold(self.states[job.idx].group, gpus)

    def tenant_index(self, tenant: str, next_gpus: float = 0.0) -> float:
        """Window used / deserved GPU-time, with the next lease counted at ``next_gpus`` held."""
        used, deserved = self.ledger.window(tenant)
        used += next_gpus * self.lease_s
        deserved += self.ledger.fair.get(tenant, 0.0) * self.lease_s
        return used / deserved if deserved > 0 else (0.0 if used <= 0 else math.inf)

    def job_index(self, ctx: Context, job: Job) -> float:
        """GPU-time served since arrival / deserved since arrival (0 before anything is deserved)."""
        st = self.states[job.idx]
        deserved = self.ledger.job_deserved(st.group, job.num_gpus, st.baseline)
        return ctx.attained(job) / deserved if deserved > 0 else 0.0

    def group_key(self, ctx: Context, group: str, next_gpus: float) -> float:
        return self.tenant_index(group, next_gpus)

    def job_key(self, ctx: Context, job: Job) -> tuple[float, float, int]:
        return (self.job_index(ctx, job), job.submit, job.idx)
