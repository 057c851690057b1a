"""The run's bookkeeping: the clock, the arrived and running jobs, their rates, finish events
and time-shared GPUs, and what a policy may ask of them.

:class:`RunLedger` holds what a run knows at ``now`` and keeps it consistent as jobs start and
stop; :class:`schedlab.sim.actions.Actions` adds the checked actions that call it, and
:class:`schedlab.sim.engine.Simulation` the event loop. A finish event carries the job's
version: any rate change (start, stop, a GPU becoming shared or exclusive) bumps the version
and pushes a new finish, so a stale one is skipped when popped.
"""

from __future__ import annotations

import heapq
import itertools
from typing import TYPE_CHECKING, Any

from schedlab.cluster.spec import ClusterSpec
from schedlab.cluster.state import ClusterState, Group
from schedlab.sim.checkpoint import CheckpointModel
from schedlab.sim.config import SimConfig
from schedlab.sim.job import RUNNING, Job
from schedlab.sim.perf import PerfModel

if TYPE_CHECKING:
    from schedlab.sim.policy import Context, Policy

FINISH, TIMER, NODE_ON = 0, 1, 2
Event = tuple[float, int, int, Any, int]  # (time, sequence, kind, payload, job version)


class RunLedger:
    """Jobs, rates and events of one run of ``policy`` on ``cluster``."""

    def __init__(self, cluster: ClusterSpec, policy: Policy, config: SimConfig, seed: int,
                 perf: PerfModel | None) -> None:  # fmt: skip
        if policy.jobs_per_gpu > cluster.max_jobs_per_gpu:
            cluster = cluster.with_sharing(policy.jobs_per_gpu)
        self.config = config
        self.cluster = cluster
        self._partitioned = cluster.partitioned
        self.policy = policy
        self.seed = seed
        self.state = ClusterState(cluster)
        c = config
        self.checkpoints = CheckpointModel(c.checkpoint_model, checkpoint_s=c.checkpoint_s, restore_s=c.restore_s,
                                           restart_s=c.restart_s, transparent_speedup=c.transparent_speedup,
                                           seed=seed)  # fmt: skip
        self.perf = perf or policy.perf_model(cluster, config) or PerfModel(
            cluster, cross_node_factor=config.cross_node_factor, colocation_factor=config.colocation_factor
        )
        self.now = 0.0
        self.running: dict[int, Job] = {}
        self.active: dict[int, Job] = {}
        self.pending_count = 0
        self.arrived = 0
        self.actions = 0
        self._finished = 0
        self._heap: list[Event] = []
        self._seq = itertools.count()
        self._colocated: dict[tuple[int, int], list[Job]] = {}

    _ctx: Context  # what the policy's callbacks are handed: set by the run (itself, or a guard around it)

    # ----- what a policy may ask -----------------------------------------------------------------
    @property
    def policy_name(self) -> str:
        return getattr(self.policy, "name", type(self.policy).__name__)

    def remaining(self, job: Job) -> float:
        """Work left now, in reference-GPU seconds."""
        if job.state != RUNNING:
            return job.remaining
        t0 = job.last_update if job.last_update >= job.stall_until else job.stall_until
        dt = self.now - t0
        return job.remaining - job.rate * (dt if dt > 0.0 else 0.0)

    def attained(self, job: Job) -> float:
        """GPU-seconds of service the job has received so far: GPUs x :meth:`executed`."""
        return job.num_gpus * self.executed(job)

    def executed(self, job: Job) -> float:
        """Wall seconds the job has run so far outside stalls (restores, migrations): time
        it could progress. ``job.run_s`` and ``job.gpu_seconds`` count the stalls too."""
        if job.state == RUNNING and self.now > job.stall_until:
            return job.served_s + (self.now - job.stall_until)
        return job.served_s

    def migration_cost(self, job: Job) -> tuple[float, float]:
        """What migrating running ``job`` now would cost under the run's checkpoint model: the
        stall on its new GPUs (seconds) and the work it would lose (reference-GPU seconds;
        nonzero only under ``kill``)."""
        cost = self.checkpoints.migration(job)
        if not cost.kill:
            return cost.stall_s, 0.0
        progress = job.work - self.remaining(job)
        return cost.stall_s, progress - job.checkpointed(progress)

    @property
    def pause_kills(self) -> bool:
        return self.checkpoints.pause_kills

    def pool_of(self, job: Job) -> str:
        """The node pool a job may use: its tenant in a partitioned cluster, else the shared pool."""
        return job.tenant if self._partitioned else ""

    def groups_of(self, job: Job) -> tuple[Group, ...]:
        return self.state.groups_for(job.tenant if self._partitioned else "", job.gpu_type)

    # ----- running jobs ------------------------------------------------------------------------
    def _begin_run(self, job: Job) -> None:
        now = self.now
        job.state = RUNNING
        job.run_since = now
        job.last_update = now
        job.stall_until = now + job.restart_cost
        job.restart_cost = 0.0
        self.running[job.idx] = job
        self.actions += 1
        job.rate = self._alone_rate(job)  # as _set_rate, with nothing to advance: it starts now
        self._push_finish(job)

    def _alone_rate(self, job: Job) -> float:
        """A job's rate on its allocation; a forked job's is the sum of its copies' rates."""
        if job.copies:
            return sum(self.perf.rate(job, nodes) for nodes in job.copies)
        return self.perf.rate(job, job.nodes)

    def _set_rate(self, job: Job, rate: float) -> None:
        """Apply a new rate from now on and reschedule the finish."""
        self._advance(job)
        job.rate = rate
        self._push_finish(job)

    def _push_finish(self, job: Job) -> None:
        """A new version of the job's finish event, at its rate from now (or its stall's end)."""
        job.version = version = job.version + 1
        now = self.now
        begin = job.stall_until if job.stall_until > now else now
        heapq.heappush(self._heap, (begin + job.remaining / job.rate, next(self._seq), FINISH, job, version))

    def _advance(self, job: Job) -> None:
        now = self.now
        t0 = job.last_update if job.last_update > job.stall_until else job.stall_until
        if now > t0 and job.rate > 0:
            done = job.rate * (now - t0)
            job.remaining -= done
            job.work_done += done
        job.last_update = now

    def _stop_run(self, job: Job) -> None:
        """Bookkeeping shared by finish, pause, preempt and migrate: the job leaves its GPUs."""
        self._advance(job)
        now = self.now
        elapsed = now - job.run_since
        job.run_s += elapsed
        served = now - job.stall_until
        job.served_s += served if served > 0.0 else 0.0
        job.gpu_seconds += job.held_gpus * elapsed
        self._release(job)
        job.copies = ()
        job.rate = 0.0
        job.version += 1
        del self.running[job.idx]

    def _release(self, job: Job) -> None:
        s = self.state
        for node, gids in job.alloc:
            s.release(node, gids, job.milli)
        if job.colocated:
            self._leave_colocation(job)
        job.alloc = ()

    # ----- time-shared GPUs --------------------------------------------------------------------
    def _sharers(self, job: Job) -> list[Job]:
        out: list[Job] = []
        for node, gids in job.alloc:
            for g in gids:
                for other in self._colocated.get((node, g), ()):
                    if other is not job and other not in out:
                        out.append(other)
        return out

    def _rerate_sharers(self, job: Job) -> None:
        for j in [job, *self._sharers(job)]:
            others = self._sharers(j)
            base = self.perf.rate(j, j.nodes)
            self._set_rate(j, self.perf.colocated_rate(j, j.nodes, others) if others else base)
            self._mark_shared(j, bool(others))

    def _mark_shared(self, job: Job, shared: bool) -> None:
        """Set ``job.colocated`` and count the wall seconds it spends sharing (``shared_s``)."""
        if shared and not job.colocated:
            job.shared_since = self.now
        elif job.colocated and not shared:
            job.shared_s += self.now - job.shared_since
        job.colocated = shared

    def _leave_colocation(self, job: Job) -> None:
        partners = self._sharers(job)
        for node, gids in job.alloc:
            for g in gids:
                group = self._colocated.get((node, g))
                if group is not None:
                    group.remove(job)
                    if len(group) < 2:
                        del self._colocated[(node, g)]
        self._mark_shared(job, False)
        for other in partners:
            others = self._sharers(other)
            self._mark_shared(other, bool(others))
            rate = self.perf.colocated_rate(other, other.nodes, others) if others else self.perf.rate(other, other.nodes)
            self._set_rate(other, rate)
