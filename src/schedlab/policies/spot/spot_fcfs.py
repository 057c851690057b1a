"""The FCFS spot/HP skeleton shared by the GFS baselines (Duan et al., ASPLOS '26, §4.1):
``yarn-cs-preempt``, ``fgd`` and ``lyra``.

Queues: one per class (HP = every class but "spot") and job shape, each FIFO by submission;
a round serves HP jobs first, then spot jobs; a shape whose head cannot start is passed over
for the round (backfill across shapes, as in :mod:`schedlab.policies.gfs.policy`, so that the
baselines differ from GFS only in what the paper compares). An HP job that fits nowhere asks
:meth:`SpotFCFS.make_room` to evict spot jobs; spot jobs never evict anything and HP jobs
are never evicted. Evicted spot jobs lose the work since their last checkpoint
(``ctx.preempt``) and go back to their queue in submission order. An HP shape for which no
eviction helps is not tried again until a job finishes.

Default eviction (the GFS paper's description of its YARN-CS baseline, assumed here): the
best-fitting node, i.e. the fewest free plus spot-held GPUs that still hold the job, lowest
id on ties, and on it the newest spot jobs first until the job fits. A job larger than one
node evicts every spot job of the nodes holding the most spot GPUs until enough GPUs are free
in its groups (an assumption). Fractional spot jobs are never victims (evicting one may free
no whole GPU). Only nodes that hold spot jobs are looked at, and only when an HP job fits
nowhere.

Spot quota: ``spot_quota="none"`` (the default, the paper text: §4.1 gives the
baselines no quota) or ``"forecast"`` (the authors' public simulator's setting): a spot job
starts only if the spot GPUs in use on its model plus its request stay within GFS's forecast
quota (eqs. 9-11, updated every 300 s, :class:`schedlab.policies.spot.quota.QuotaGate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, ClassVar


from schedlab.cluster.state import Held
from schedlab.errors import ConfigError
from schedlab.policies.params import help_field

from schedlab.sim.policy import Context, Policy
from schedlab.policies.common.queues import ClassQueues, Key, job_shape
from schedlab.policies.common.placers import Alloc, Placer
from schedlab.policies.spot.quota import FORECASTERS, SPOT_QUOTAS, check_quota, make_gate
from schedlab.sim.job import Job

SPOT = "spot"
EVICT_MODES = ("kill", "pause")
QUOTA_HELP = (f"spot admission: {' or '.join(SPOT_QUOTAS)}; none = no quota (the paper text, §4.1), forecast = "
              "GFS's spot quota of eqs. 9-11 (the authors' public simulator)")
FORECASTER_HELP = f"HP demand forecaster of spot_quota=forecast: {' or '.join(FORECASTERS)} (as gfs, gfs-e)"
ETA_EVERY_HELP = "spot_quota=forecast: eq. 11 interval, seconds; none = once per H (as gfs; the authors' simulator: 300)"
WAIT_HELP = "spot_quota=forecast: l of eq. 11, 'longest' spot wait over H (as gfs) or the queue 'head' now (the authors' simulator)"


@dataclass(frozen=True)
class QuotaParams:
    """The spot quota of the baselines (:mod:`schedlab.policies.spot.quota`); ``policy`` names
    the baseline in error messages."""

    policy: ClassVar[str] = "spot-fcfs"
    spot_quota: str = help_field("none", QUOTA_HELP)
    quota_forecaster: str = help_field("orglinear", FORECASTER_HELP)
    quota_eta_every_s: float | None = help_field(None, ETA_EVERY_HELP)
    quota_wait_reading: str = help_field("longest", WAIT_HELP)

    def __post_init__(self) -> None:
        check_quota(self.policy, self.spot_quota, self.quota_forecaster, self.quota_eta_every_s, self.quota_wait_reading)


@dataclass(frozen=True)
class SpotEvictParams(QuotaParams):
    """How a spot victim is stopped, and the spot quota."""

    policy: ClassVar[str] = "yarn-cs-preempt"
    evict: str = help_field("kill", "how a spot victim is stopped: kill (the paper) or pause (checkpointed by the cost model)")

    def __post_init__(self) -> None:
        evict_mode(self.policy, self.evict)
        super().__post_init__()


def evict_mode(policy: str, evict: str) -> str:
    """``evict`` checked against :data:`EVICT_MODES`."""
    if evict not in EVICT_MODES:
        raise ConfigError(f"{policy}: evict must be one of {', '.join(EVICT_MODES)} (got {evict!r})")
    return evict


class SpotFCFS(Policy):
    """HP-first FCFS over a placer; subclasses change :meth:`place` and :meth:`make_room`."""

    name = "spot-fcfs"

    def __init__(self, placer: Placer, *, evict: str = "kill", spot_quota: str = "none",
                 quota_forecaster: str = "orglinear", quota_eta_every_s: float | None = None,
                 quota_wait_reading: str = "longest", seed: int = 0) -> None:  # fmt: skip
        self.placer = placer
        self.evict_mode = evict_mode(self.name, evict)
        self.gate = make_gate(self.name, spot_quota, quota_forecaster, quota_eta_every_s, quota_wait_reading, seed)
        self.pending = ClassQueues()
        self.blocked: set[Key] = set()  # HP shapes no eviction could place, until a finish
        self.alloc_of: dict[int, Held] = {}  # running jobs' allocation
        self.spot_on: dict[int, dict[int, Job]] = {}  # node -> whole-GPU spot jobs on it
        self.spot_gpus: dict[int, int] = {}  # node -> GPUs those jobs hold there
        self.evictions = 0

    # ----- callbacks -----------------------------------------------------------------------
    def setup(self, ctx: Context) -> None:
        if self.gate is not None:
            self.gate.setup(ctx, self.pending.waiting.values())

    def on_timer(self, ctx: Context, payload: object) -> bool | None:
        if self.gate is None:
            return False
        return self.gate.on_timer(ctx, payload, self.pending.waiting.values())

    def on_arrival(self, ctx: Context, job: Job) -> None:
        self._enqueue(job)

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.blocked.clear()
        if self.gate is not None:
            self.gate.ended(ctx, job, evicted=False)
        self.released(ctx, job, self.alloc_of.pop(job.idx))

    def schedule(self, ctx: Context) -> None:
        self._drain(ctx, spot=False)
        self._drain(ctx, spot=True)

    # ----- hooks -----------------------------------------------------------------------------
    def place(self, ctx: Context, job: Job) -> Alloc | None:
        """Where ``job`` starts now without evicting anything (None: it waits)."""
        return self.placer.place(ctx, job)

    def make_room(self, ctx: Context, job: Job) -> Alloc | None:
        """Evict spot jobs so that HP ``job`` fits; its allocation, or None (nothing evicted)."""
        state = ctx.state
        groups = ctx.groups_of(job)
        gids = {state.node_group[g.nodes[0]] for g in groups}
        nodes = [n for n in self.spot_on if state.node_group[n] in gids]
        need = 1 if job.fractional else int(job.num_gpus)
        if any(need <= g.max_gpus for g in groups):
            fitting = [(state.free[n] + self.spot_gpus[n], n) for n in nodes if state.free[n] + self.spot_gpus[n] >= need]
            if not fitting:
                return None
            _, node = min(fitting)
            newest = sorted(self.spot_on[node].values(), key=lambda j: (j.run_since, j.idx), reverse=True)
            for victim in newest:
                if state.free[node] >= need:
                    break
                self.evict(ctx, victim)
            return [(node, need)] if not job.fractional else self.place(ctx, job)
        if state.free_in(groups) + sum(self.spot_gpus[n] for n in nodes) < need:
            return None
        for node in sorted(nodes, key=lambda n: (-self.spot_gpus[n], n)):
            if state.free_in(groups) >= need:
                break
            for victim in list(self.spot_on.get(node, {}).values()):  # a gang victim leaves other nodes too
                self.evict(ctx, victim)
        return self.place(ctx, job)

    def evictable(self) -> bool:
        """Whether any spot job runs that :meth:`make_room` could evict."""
        return bool(self.spot_on)

    def started(self, ctx: Context, job: Job) -> None:
        """Hook: ``job`` just started on ``job.alloc``."""

    def released(self, ctx: Context, job: Job, alloc: Held) -> None:
        """Hook: ``job`` finished or was evicted, leaving the GPUs of ``alloc``."""
        if job.cls == SPOT and not job.fractional:
            for node, gids in alloc:
                jobs = self.spot_on[node]
                del jobs[job.idx]
                self.spot_gpus[node] -= len(gids)
                if not jobs:
                    del self.spot_on[node], self.spot_gpus[node]

    # ----- mechanics ---------------------------------------------------------------------------
    def _enqueue(self, job: Job) -> None:
        self.pending.add(job, job_shape(job), spot=job.cls == SPOT)

    def _drain(self, ctx: Context, *, spot: bool) -> None:
        shapes = self.pending.queues[spot]
        if ctx.state.free_total() == 0 and not self.evictable() and all(key[0] >= 1 for key in shapes):
            if not spot:
                self.blocked.update(shapes)  # as trying each shape's head would
            return  # no free GPU, no spot job to evict, no job that shares a GPU: nothing starts
        self.pending.drain(lambda job, key: self._try_start(ctx, job, key, spot), spot=spot)

    def _try_start(self, ctx: Context, job: Job, key: Key, spot: bool) -> bool:
        if spot and self.gate is not None and not self.gate.admits(job):
            return False  # over its model's spot quota (the authors' simulator setting)
        if not (job.fractional or self.evictable()) and ctx.state.free_in(ctx.groups_of(job)) < job.num_gpus:
            if not spot:
                self.blocked.add(key)
            return False  # too few free GPUs and no spot job to evict: placing and making room fail
        alloc = self.place(ctx, job)
        if alloc is None and not spot and key not in self.blocked:
            alloc = self.make_room(ctx, job)
            if alloc is None:
                self.blocked.add(key)
        if alloc is None:
            return False
        self.start(ctx, job, alloc)
        return True

    def start(self, ctx: Context, job: Job, alloc: Alloc) -> None:
        ctx.start(job, alloc)
        self.alloc_of[job.idx] = job.alloc
        if self.gate is not None:
            self.gate.started(ctx, job)
        if job.cls == SPOT and not job.fractional:
            for node, gids in job.alloc:
                self.spot_on.setdefault(node, {})[job.idx] = job
                self.spot_gpus[node] = self.spot_gpus.get(node, 0) + len(gids)
        self.started(ctx, job)

    def evict(self, ctx: Context, victim: Job) -> None:
        if self.evict_mode == "pause":
            ctx.pause(victim)
        else:
            ctx.preempt(victim)
        self.evictions += 1
        if self.gate is not None:
            self.gate.ended(ctx, victim, evicted=True)
        self.released(ctx, victim, self.alloc_of.pop(victim.idx))
        self._enqueue(victim)

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        """``{<name>: {"evict": ..., "evictions": ...}}``: how and how often spot jobs were evicted for HP jobs."""
        out = {"evict": self.evict_mode, "evictions": self.evictions}
        return {self.name: out if self.gate is None else {**out, **self.gate.report()}}
