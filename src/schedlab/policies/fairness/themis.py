"""Themis-style finish-time fairness (Mahajan et al., "Themis: Fair and Efficient GPU Cluster
Scheduling", NSDI'20), on the lease frame (:mod:`schedlab.policies.fairness.lease`).

Themis' metric (§3): ρ = T_sh / T_id, the finish time in the shared cluster over the finish time
in a private 1/N share of it, N = the contending apps. At each lease end Themis offers the GPUs
to the 1 - f fraction of apps with the largest ρ (the fairness knob f) in a partial-allocation
auction, and leftovers to the rest (§4-5).

Simplified to its documented core: one app per job; at every round the GPUs go to the
candidates in decreasing estimated ρ. The estimate for a candidate is
ρ̂ = (now - submit + remaining) / (duration x max(1, GPUs x N / G)), N = arrived unfinished jobs,
G = the cluster's GPUs: its time so far plus its remaining time if it ran from now on. The
auction, which trades GPUs among the visible apps for efficiency through their bids, is left
out, and with it the knob f (without bids, offering to the worst ρ first and leftovers to the
rest orders jobs exactly by ρ). Remaining time is the oracle ``ctx.remaining`` (Themis asks the
app's hyper-parameter agent for it). No tenant phase: Themis is app-level, so tenant weights
do not enter.
"""

from __future__ import annotations

from schedlab.policies.common.placers import Placer
from schedlab.policies.fairness.lease import LeaseScheduler
from schedlab.sim.job import Job
from schedlab.sim.policy import Context


class Themis(LeaseScheduler):
    """Largest estimated finish-time fairness ρ first, re-decided at lease ends."""

    def __init__(self, placer: Placer, *, lease_s: float = 900.0, tick_s: float = 10.0) -> None:
        super().__init__("themis", placer, lease_s=lease_s, tick_s=tick_s)

    def group_of(self, job: Job) -> str:
        return ""

    def group_key(self, ctx: Context, group: str, next_gpus: float) -> float:
        return 0.0

    def rho(self, ctx: Context, job: Job) -> float:
        """Estimated finish-time fairness of ``job`` if it ran from now on."""
        gpus = float(ctx.cluster.total_gpus)
        ideal = job.work * max(1.0, job.num_gpus * len(ctx.active) / gpus) if gpus > 0 else float("inf")
        return (ctx.now - job.submit + ctx.remaining(job)) / ideal if ideal > 0 else 0.0

    def job_key(self, ctx: Context, job: Job) -> tuple[float, float, int]:
        return (-self.rho(ctx, job), job.submit, job.idx)
