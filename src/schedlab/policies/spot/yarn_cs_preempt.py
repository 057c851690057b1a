"""``yarn-cs-preempt``: the YARN capacity scheduler as the GFS paper uses it as a baseline
(Duan et al., ASPLOS '26, §4.1): FCFS, best-fit placement, and HP jobs that cannot be placed
evict spot jobs, newest first on the best-fitting node; spot jobs never evict HP jobs.

Deviation from ``yarn-cs`` (:mod:`schedlab.policies.classic.yarn_cs`): no per-tenant capacity limits
(the GFS baseline is described by its preemption rule only, so none are assumed) and backfill
across job shapes instead of a queue that blocks at its head, to match GFS's own queueing.
The mechanics are in :mod:`schedlab.policies.spot.spot_fcfs`; parameter ``evict``: ``kill``
(default) or ``pause`` (the victim is checkpointed by the run's cost model).
"""

from __future__ import annotations

from schedlab.policies.spot.spot_fcfs import SpotFCFS


class YarnCsPreempt(SpotFCFS):
    """FCFS + best fit + newest-spot-first eviction on the best-fitting node."""

    name = "yarn-cs-preempt"
