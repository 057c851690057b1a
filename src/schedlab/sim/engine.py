"""The discrete-event engine and the context a policy acts through.

Time jumps from event to event (arrivals, finishes, policy timers, node boots); nothing is
stepped through idle time. After all events of one timestamp are applied the engine calls
``policy.schedule(ctx)`` once, where ``ctx`` is the :class:`Simulation` itself: the policy reads
the cluster state and acts with :meth:`Simulation.start`, :meth:`~Simulation.preempt`,
:meth:`~Simulation.pause`, :meth:`~Simulation.migrate`, :meth:`~Simulation.colocate`,
:meth:`~Simulation.fork`,
:meth:`~Simulation.set_timer`, :meth:`~Simulation.power_off` and :meth:`~Simulation.power_on`.
Every action is checked; an impossible one raises :class:`ActionError` naming the policy and
the job.

Finish events carry the job's version; any rate change (start, preemption, migration, a GPU
becoming shared or exclusive) bumps the version and schedules a new finish, so stale events
are skipped. Arrivals come from the sorted workload through a cursor, not the heap.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from schedlab.cluster.spec import ClusterSpec
from schedlab.cluster.state import ClusterState
from schedlab.errors import ActionError, ConfigError
from schedlab.sim.checkpoint import FLOWGPU_MIGRATION_SPEEDUP, MODELS, CheckpointModel, StopCost
from schedlab.sim.perf import PerfModel
from schedlab.sim.recorders import JobRecorder, SeriesRecorder
from schedlab.sim.job import FINISHED, PENDING, RUNNING, Job
from schedlab.workload.schema import Workload, check_fits

if TYPE_CHECKING:
    from schedlab.sim.policy import Policy

_FINISH, _TIMER, _NODE_ON = 0, 1, 2
INF = math.inf


@dataclass(frozen=True)
class SimConfig:
    """Engine settings. Costs are in seconds.

    * ``checkpoint_model``: what a pause or a migration costs (:mod:`schedlab.sim.checkpoint`):
      ``fixed`` (default: ``checkpoint_s`` and ``restore_s`` for every job), ``framework``
      (iteration-boundary wait, then the whole state, scaled by the job's GPU memory),
      ``transparent`` (FlowGPU style: active GPU memory, ``transparent_speedup`` times cheaper
      than ``framework``) or ``kill`` (a pause or migration kills the job: it loses the work
      since its last periodic checkpoint and pays ``restart_s``);
    * ``transparent_speedup``: the ``transparent`` model's gain over ``framework``; default 1.7,
      the low end of the "1.7x to 4.5x" migration gain FlowGPU reports over PyTorch
      framework-level checkpointing;
    * ``checkpoint_s``: time to save a checkpoint when a job is paused or migrated (the
      ``framework`` and ``transparent`` models scale it by the job's GPU memory);
    * ``restore_s``: time to restore from a checkpoint when a paused or migrated job starts again;
    * ``restart_s``: time for an evicted (killed) job to run again once it is given GPUs:
      rescheduling, image pull and restore from its last checkpoint. Default 10 s, the
      checkpoint-restart delay of the Hadar evaluation (§IV); production restarts that pull a
      large image take longer, so studies of eviction cost should set it;
    * ``checkpoint_interval_s``: periodic checkpoints, in seconds of work, for jobs whose
      row does not set one; an eviction (:meth:`Simulation.preempt`) loses the work since the
      last of them (``inf`` = never checkpointed: an evicted job restarts from zero);
    * ``boot_s``: time for a powered-off node to come back;
    * ``horizon_s``: stop the simulation at this time (jobs not done are reported unfinished).

    The GPUs of a paused, preempted or migrated job are freed at once; the save and restore
    time is charged as a stall when the job runs again.
    """

    checkpoint_model: str = "fixed"
    transparent_speedup: float = FLOWGPU_MIGRATION_SPEEDUP[0]
    checkpoint_s: float = 10.0
    restore_s: float = 30.0
    restart_s: float = 10.0
    checkpoint_interval_s: float = 1800.0
    boot_s: float = 300.0
    horizon_s: float = INF
    cross_node_factor: float = 1.0
    colocation_factor: float = 0.75

    def __post_init__(self) -> None:
        for name in ("checkpoint_s", "restore_s", "restart_s", "boot_s"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ConfigError(f"{name} must be a non-negative number, got {value!r}")
        if self.checkpoint_model not in MODELS:
            raise ConfigError(f"unknown checkpoint model '{self.checkpoint_model}'; choose one of {', '.join(MODELS)}")
        if not (self.transparent_speedup > 0 and math.isfinite(self.transparent_speedup)):
            raise ConfigError(f"transparent_speedup must be a positive number, got {self.transparent_speedup!r}")
        if not self.checkpoint_interval_s > 0:
            raise ConfigError("checkpoint_interval_s must be positive (inf for never)")
        if not self.horizon_s > 0:
            raise ConfigError("horizon_s must be positive")


@dataclass(frozen=True)
class RunProgress:
    """Where a run stands: simulated time, jobs arrived and finished, and how far along it is.

    ``fraction`` is simulated time over the horizon when one is set, else finished jobs over
    all jobs, so it moves through the whole run, the drain after the last arrival included."""

    now: float
    arrived: int
    finished: int
    total: int
    horizon_s: float

    @property
    def fraction(self) -> float:
        if math.isfinite(self.horizon_s):
            return min(1.0, self.now / self.horizon_s)
        return self.finished / self.total if self.total else 1.0


@dataclass
class SimResult:
    """Per-job table, cluster time series and run facts of one simulation."""

    jobs: pd.DataFrame
    timeseries: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)


class Simulation:
    """One run of ``policy`` over ``workload`` on ``cluster``; also the policy's context."""

    def __init__(
        self,
        workload: Workload,
        cluster: ClusterSpec,
        policy: "Policy",
        *,
        config: SimConfig | None = None,
        seed: int = 0,
        perf: PerfModel | None = None,
    ) -> None:
        self.config = config or SimConfig()
        if policy.jobs_per_gpu > cluster.max_jobs_per_gpu:
            cluster = cluster.with_sharing(policy.jobs_per_gpu)
        self.cluster = cluster
        self.policy = policy
        self.seed = seed
        self.state = ClusterState(cluster)
        c = self.config
        self.checkpoints = CheckpointModel(c.checkpoint_model, checkpoint_s=c.checkpoint_s, restore_s=c.restore_s,
                                           restart_s=c.restart_s, transparent_speedup=c.transparent_speedup,
                                           seed=seed)  # fmt: skip
        self.perf = perf or policy.perf_model(cluster, self.config) or PerfModel(
            cluster, cross_node_factor=self.config.cross_node_factor, colocation_factor=self.config.colocation_factor
        )
        self._workload = workload
        self.origin = workload.origin
        self._check_workload(workload, cluster)
        jobs = workload.jobs
        self._n = len(jobs)
        self._submit: list[float] = jobs["submit_s"].tolist()
        self._cols = {c: jobs[c].tolist() for c in (
            "job_id", "user", "tenant", "name", "priority_class", "num_gpus", "gpus_per_worker", "gpu_type",
            "duration_s", "checkpoint_interval_s", "model", "deadline_s", "gpu_mem_gib", "time_limit_s")}  # fmt: skip
        self.now = 0.0
        self.running: dict[int, Job] = {}
        self.active: dict[int, Job] = {}
        self.pending_count = 0
        self.arrived = 0
        self._finished = 0
        self._heap: list[tuple[float, int, int, Any, int]] = []
        self._seq = itertools.count()
        self._colocated: dict[tuple[int, int], list[Job]] = {}
        self._out = JobRecorder(self._n)
        self._ts = SeriesRecorder(self.state.type_names)
        self.actions = 0

    # ----- setup -------------------------------------------------------------------------------
    @staticmethod
    def _check_workload(workload: Workload, cluster: ClusterSpec) -> None:
        jobs = workload.jobs
        source = workload.source
        check_fits(workload, max_gpus=cluster.total_gpus, gpu_types=set(cluster.gpu_types))
        missing = cluster.unpartitioned(jobs["tenant"].unique())
        if missing:
            lacking = jobs["tenant"].isin(missing).to_numpy()
            row = jobs["source_row"].iat[workload.first(lacking)]
            field = workload.fields.get("tenant", "tenant")
            message = cluster.unpartitioned_message(missing, jobs=int(lacking.sum()), field=field)
            raise ConfigError(f"{source}: row {row}: {message}")
        need = jobs.groupby(["tenant", "gpu_type"], sort=False)["num_gpus"].max()
        for (tenant, gtype), gpus in need.items():
            cap = cluster.max_job_gpus(tenant, gtype)
            if gpus > cap:
                mask = (jobs["tenant"] == tenant) & (jobs["gpu_type"] == gtype) & (jobs["num_gpus"] > cap)
                i = workload.first(mask.to_numpy())
                where = f"partition '{tenant}'" if cluster.partitioned else "pool"
                kind = f" of type {gtype}" if gtype else ""
                raise ConfigError(
                    f"{source}: row {jobs['source_row'].iat[i]}: job '{jobs['job_id'].iat[i]}' of tenant '{tenant}' "
                    f"needs {jobs['num_gpus'].iat[i]:g} GPUs{kind} but the {where} of cluster '{cluster.name}' has {cap}"
                )
        gpw = jobs["gpus_per_worker"].to_numpy()
        i = workload.first((gpw < 1) & (jobs["num_gpus"].to_numpy() > gpw))
        if i is not None:
            raise ConfigError(
                f"{source}: row {jobs['source_row'].iat[i]}: gang jobs with fractional GPUs per worker are not supported"
            )

    def _make_job(self, i: int) -> Job:
        c = self._cols
        ckpt = c["checkpoint_interval_s"][i]
        return Job(
            i, c["job_id"][i], self._submit[i], c["user"][i], c["tenant"][i], c["name"][i], c["priority_class"][i],
            c["num_gpus"][i], c["gpus_per_worker"][i], c["gpu_type"][i], c["duration_s"][i],
            self.config.checkpoint_interval_s if ckpt != ckpt else ckpt, c["model"][i], c["deadline_s"][i],
            c["gpu_mem_gib"][i], c["time_limit_s"][i],
        )  # fmt: skip

    # ----- main loop ---------------------------------------------------------------------------
    def run(self, progress: Callable[[RunProgress], None] | None = None) -> SimResult:
        """Run to the end of the workload (or the horizon) and return the results.

        ``progress`` is called with a :class:`RunProgress` about ten times a wall second."""
        wall0 = time.perf_counter()
        policy = self.policy
        heap = self._heap
        submit = self._submit
        n = self._n
        horizon = self.config.horizon_s
        nxt = 0
        steps = 0
        next_report = wall0
        last_change = self.now
        policy.setup(self)
        while True:
            steps += 1
            if progress is not None and steps % 256 == 0 and time.perf_counter() >= next_report:
                progress(RunProgress(self.now, nxt, self._finished, n, horizon))
                next_report = time.perf_counter() + 0.1
            t_arr = submit[nxt] if nxt < n else INF
            t_evt = heap[0][0] if heap else INF
            t = t_arr if t_arr < t_evt else t_evt
            if t == INF:
                self.now = last_change  # stale finish events after the last change end nothing
                break
            if t > horizon:
                self.now = horizon
                break
            self.now = t
            changed = False
            while heap and heap[0][0] <= t:
                _, _, kind, payload, version = heapq.heappop(heap)
                if kind == _FINISH:
                    if payload.version == version and payload.state == RUNNING:
                        self._finish(payload)
                        changed = True
                elif kind == _TIMER:
                    if policy.on_timer(self, payload) is not False:
                        changed = True
                else:
                    self._node_up(payload)
                    changed = True
            while nxt < n and submit[nxt] <= t:
                job = self._make_job(nxt)
                self.active[nxt] = job
                self.arrived = nxt + 1
                self.pending_count += 1
                policy.on_arrival(self, job)
                nxt += 1
                changed = True
            if changed:
                last_change = t
                policy.schedule(self)
                self._record()
        result = self._collect(nxt, time.perf_counter() - wall0)
        if progress is not None:
            progress(RunProgress(self.now, nxt, self._finished, n, horizon))
        return result

    def _record(self) -> None:
        s = self.state
        self._ts.add(self.now, s.gpus_on, s.busy_gpus, len(self.running), self.pending_count, s.nodes_on,
                     s.type_busy, s.type_gpus_on)

    # ----- context: queries --------------------------------------------------------------------
    @property
    def arrivals_left(self) -> int:
        return self._n - self.arrived

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
        return job.tenant if self.cluster.partitioned else ""

    def groups_of(self, job: Job):
        return self.state.groups_for(self.pool_of(job), job.gpu_type)

    # ----- context: actions --------------------------------------------------------------------
    def _reject(self, job: Job | None, message: str) -> ActionError:
        return ActionError(self.policy_name, job.id if job is not None else None, message)

    def start(self, job: Job, alloc: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> None:
        """Start a pending job on ``alloc``: (node, GPUs) pairs; a fractional job gives one (node, 1)."""
        if job.state != PENDING:
            raise self._reject(job, f"cannot start a job that is {('pending', 'running', 'finished')[job.state]}")
        self._claim(job, self._validated(job, alloc))
        self.pending_count -= 1
        job.queue_s += self.now - job.queued_since
        if job.first_start != job.first_start:
            job.first_start = self.now
        self._begin_run(job)

    def fork(self, job: Job, copies: list[list[tuple[int, int]]], overhead_s: float = 0.0) -> None:
        """Start a pending job as forked copies (HadarE §V): each copy is an allocation of the
        job's whole GPU count, no node holds two copies, and the job progresses at the sum of its
        copies' rates (the tracker merges their steps). ``overhead_s`` (forking and merging) is
        stalled before it progresses, on top of any restore it owes."""
        if job.state != PENDING:
            raise self._reject(job, f"cannot fork a job that is {('pending', 'running', 'finished')[job.state]}")
        if job.fractional or not copies:
            raise self._reject(job, "a fork needs whole-GPU copies and at least one of them")
        if not (overhead_s >= 0 and math.isfinite(overhead_s)):
            raise self._reject(job, f"fork overhead must be a non-negative number of seconds, got {overhead_s!r}")
        checked = [self._validated(job, c) for c in copies]
        nodes = [n for c in checked for n, _ in c]
        if len(set(nodes)) != len(nodes):
            raise self._reject(job, "a node appears in two copies of the fork")
        job.alloc = tuple((node, self.state.take_whole(node, count)) for c in checked for node, count in c)
        job.copies = tuple(tuple(n for n, _ in c) for c in checked)
        self.pending_count -= 1
        job.queue_s += self.now - job.queued_since
        if job.first_start != job.first_start:
            job.first_start = self.now
        job.restart_cost += overhead_s
        self._begin_run(job)

    def _validated(self, job: Job, alloc, *, elastic: bool = False) -> list[tuple[int, int]]:
        s = self.state
        if not alloc:
            raise self._reject(job, "empty allocation")
        pool = self.pool_of(job)
        seen: set[int] = set()
        total = 0
        gpw = job.gpus_per_worker
        for node, count in alloc:
            if not 0 <= node < s.num_nodes:
                raise self._reject(job, f"node {node} does not exist")
            if node in seen:
                raise self._reject(job, f"node {node} appears twice in the allocation")
            seen.add(node)
            if not s.on[node]:
                raise self._reject(job, f"node {node} is powered off")
            if s.node_pool[node] != pool:
                raise self._reject(job, f"node {node} belongs to pool '{s.node_pool[node]}', the job may use '{pool}'")
            if job.gpu_type and s.node_type[node] != job.gpu_type:
                raise self._reject(job, f"node {node} has {s.node_type[node]} GPUs, the job needs {job.gpu_type}")
            if count <= 0 or count != int(count):
                raise self._reject(job, f"GPU count {count!r} on node {node} must be a positive whole number")
            if job.fractional:
                if not s.fraction_room(node, job.milli):
                    raise self._reject(job, f"node {node} has no room for {job.milli / 1000:g} of a GPU")
            elif s.free[node] < count:
                raise self._reject(job, f"node {node} has {s.free[node]} free GPUs, asked for {count}")
            if gpw == gpw and gpw >= 1 and count % gpw:
                raise self._reject(job, f"gang workers need {gpw:g} GPUs each on one node; got {count} on node {node}")
            total += count
        if job.fractional:
            if len(alloc) != 1 or total != 1:
                raise self._reject(job, "a fractional job takes exactly one GPU slot: [(node, 1)]")
        elif total != job.num_gpus and not elastic:
            raise self._reject(job, f"allocation has {total} GPUs, the job needs {job.num_gpus:g} (all or nothing)")
        return list(alloc)

    def _claim(self, job: Job, alloc: list[tuple[int, int]]) -> None:
        s = self.state
        if job.fractional:
            node = alloc[0][0]
            job.alloc = ((node, (s.take_fraction(node, job.milli),)),)
        else:
            job.alloc = tuple((node, s.take_whole(node, count)) for node, count in alloc)

    def _begin_run(self, job: Job) -> None:
        now = self.now
        job.state = RUNNING
        job.run_since = now
        job.last_update = now
        job.stall_until = now + job.restart_cost
        job.restart_cost = 0.0
        self.running[job.idx] = job
        self.actions += 1
        self._set_rate(job, self._alone_rate(job))

    def _alone_rate(self, job: Job) -> float:
        """A job's rate on its allocation; a forked job's is the sum of its copies' rates."""
        if job.copies:
            return sum(self.perf.rate(job, nodes) for nodes in job.copies)
        return self.perf.rate(job, job.nodes)

    def _set_rate(self, job: Job, rate: float) -> None:
        """Apply a new rate from now on and reschedule the finish."""
        self._advance(job)
        job.rate = rate
        job.version += 1
        begin = job.stall_until if job.stall_until > self.now else self.now
        finish = begin + job.remaining / rate
        heapq.heappush(self._heap, (finish, next(self._seq), _FINISH, job, job.version))

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
        job.served_s += max(0.0, now - job.stall_until)
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

    def _finish(self, job: Job) -> None:
        self._stop_run(job)
        job.work_done += job.remaining
        job.remaining = 0.0
        job.state = FINISHED
        job.end = self.now
        self._finished += 1
        del self.active[job.idx]
        self._out.store(job)
        self.policy.on_finish(self, job)

    def _requeue(self, job: Job) -> None:
        job.state = PENDING
        job.queued_since = self.now
        self.pending_count += 1
        self.actions += 1
        self.policy.on_stopped(self, job)

    def _running_or_fail(self, job: Job, what: str) -> None:
        if job.state != RUNNING:
            raise self._reject(job, f"cannot {what} a job that is {('pending', 'running', 'finished')[job.state]}")

    def _charge(self, job: Job, cost: StopCost) -> None:
        """Set what a stopped job's next start costs: a checkpoint keeps all its work, a kill
        keeps the work up to its last periodic checkpoint (or explicit save)."""
        progress = job.work - job.remaining
        if cost.kill:
            saved = job.checkpointed(progress)
            job.lost_work += progress - saved
            job.remaining = job.work - saved
            progress = saved
        job.saved_progress = progress
        job.restart_cost = cost.stall_s

    def preempt(self, job: Job) -> None:
        """Evict a running job: it loses the work since its last periodic checkpoint and
        returns to pending; the next start pays ``restart_s`` (under every checkpoint model)."""
        self._running_or_fail(job, "preempt")
        self._stop_run(job)
        cost = self.checkpoints.eviction(job)
        self._charge(job, cost)
        job.restore_s += cost.restore_s
        job.preemptions += 1
        self._requeue(job)

    def pause(self, job: Job) -> None:
        """Suspend a running job; its next start pays the checkpoint model's save and restore
        (``fixed``: ``checkpoint_s + restore_s``). No work is lost, except under ``kill``, where
        a pause is an eviction."""
        self._running_or_fail(job, "pause")
        self._stop_run(job)
        cost = self.checkpoints.pause(job)
        self._charge(job, cost)
        job.pause_s += cost.save_s
        job.restore_s += cost.restore_s
        job.preemptions += 1
        self._requeue(job)

    def migrate(self, job: Job, alloc: list[tuple[int, int]]) -> None:
        """Move a running job to ``alloc``; it stalls there for the checkpoint model's save and
        restore (``fixed``: ``checkpoint_s + restore_s``). No work is lost, except under
        ``kill``, where the job is killed and restarted on ``alloc`` from its last periodic
        checkpoint. The new allocation may reuse the job's own GPUs."""
        self._running_or_fail(job, "migrate")
        self._stop_run(job)
        checked = self._validated(job, alloc)  # a failure here aborts the run: no state to restore
        cost = self.checkpoints.migration(job)
        self._charge(job, cost)
        job.migration_s += cost.stall_s
        job.migrations += 1
        self._claim(job, checked)
        self._begin_run(job)
        self.policy.on_migrated(self, job)

    def resize(self, job: Job, alloc: list[tuple[int, int]]) -> None:
        """Give a whole-GPU job an allocation of any size (elastic training, as Pollux does): a
        pending job starts on it; a running one is checkpointed and restarted on it (no work is
        lost; it stalls ``checkpoint_s + restore_s``, counted in ``migrations``), and the new
        allocation may reuse its own GPUs. The job then holds the allocation's GPUs
        (``held_gpus``) and runs at the perf model's rate on it."""
        if job.fractional or job.colocated or job.copies:
            raise self._reject(job, "only a whole-GPU job that runs alone and unforked can be resized")
        if job.state == PENDING:
            checked = self._validated(job, alloc, elastic=True)
            job.elastic = True
            self._claim(job, checked)
            self.pending_count -= 1
            job.queue_s += self.now - job.queued_since
            if job.first_start != job.first_start:
                job.first_start = self.now
            self._begin_run(job)
            return
        self._running_or_fail(job, "resize")
        self._stop_run(job)
        checked = self._validated(job, alloc, elastic=True)  # a failure here aborts the run
        job.saved_progress = job.work - job.remaining
        job.migrations += 1
        job.restart_cost = self.config.checkpoint_s + self.config.restore_s
        job.elastic = True
        self._claim(job, checked)
        self._begin_run(job)

    def colocate(self, job: Job, host: Job) -> None:
        """Start pending ``job`` time-sharing the GPUs of running ``host`` (same GPU count)."""
        if job.state != PENDING:
            raise self._reject(job, "only a pending job can be colocated")
        if host.state != RUNNING:
            raise self._reject(job, f"host job '{host.id}' is not running")
        if job.num_gpus != host.num_gpus or job.fractional or host.copies:
            raise self._reject(job, f"colocation needs the same whole GPU count as host '{host.id}'")
        if job.gpu_type and any(self.state.node_type[n] != job.gpu_type for n in host.nodes):
            raise self._reject(job, f"host '{host.id}' runs on another GPU type than the job needs")
        if any(self.state.node_pool[n] != self.pool_of(job) for n in host.nodes):
            raise self._reject(job, f"host '{host.id}' runs outside the job's pool")
        cap = self.cluster.max_jobs_per_gpu
        for node, gids in host.alloc:
            if any(self.state.gpu_jobs[node][g] >= cap for g in gids):
                raise self._reject(job, f"a GPU of host '{host.id}' already holds {cap} jobs (max_jobs_per_gpu)")
        for node, gids in host.alloc:
            self.state.share(node, gids, job.milli)
        job.alloc = host.alloc
        self.pending_count -= 1
        job.queue_s += self.now - job.queued_since
        if job.first_start != job.first_start:
            job.first_start = self.now
        for node, gids in job.alloc:
            for g in gids:
                self._colocated.setdefault((node, g), [host]).append(job)
        self._begin_run(job)
        self._rerate_sharers(job)

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

    def set_timer(self, at: float, payload: Any = None) -> None:
        """Call ``policy.on_timer(ctx, payload)`` at absolute time ``at`` (>= now)."""
        if not at >= self.now:
            raise self._reject(None, f"timer at {at!r} is in the past (now {self.now:g})")
        heapq.heappush(self._heap, (at, next(self._seq), _TIMER, payload, 0))

    def power_off(self, node: int) -> None:
        """Power an idle node down; it leaves placement until powered on again."""
        s = self.state
        if not 0 <= node < s.num_nodes:
            raise self._reject(None, f"node {node} does not exist")
        if not s.on[node]:
            raise self._reject(None, f"node {node} is already off")
        if not s.idle(node) or any(s.gpu_used[node]):
            raise self._reject(None, f"node {node} is not idle and cannot be powered off")
        s.power_off(node)
        self.actions += 1

    def power_on(self, node: int) -> None:
        """Boot a powered-off node; it is usable ``boot_s`` later."""
        s = self.state
        if not 0 <= node < s.num_nodes:
            raise self._reject(None, f"node {node} does not exist")
        if s.on[node] or node in s.booting:
            raise self._reject(None, f"node {node} is already on or booting")
        s.booting.add(node)
        heapq.heappush(self._heap, (self.now + self.config.boot_s, next(self._seq), _NODE_ON, node, 0))
        self.actions += 1

    def _node_up(self, node: int) -> None:
        self.state.booting.discard(node)
        self.state.power_on(node)
        self.policy.on_node_on(self, node)

    # ----- results -----------------------------------------------------------------------------
    def _collect(self, arrived: int, wall_s: float) -> SimResult:
        now = self.now
        for job in list(self.running.values()):
            self._advance(job)
            elapsed = now - job.run_since
            job.run_s += elapsed
            job.gpu_seconds += job.held_gpus * elapsed
        for job in self.active.values():
            if job.state == PENDING:
                job.queue_s += now - job.queued_since
            self._mark_shared(job, False)
            self._out.store(job)
        jobs = self._out.frame(self._workload.jobs)
        meta = {
            "policy": self.policy_name,
            "cluster": self.cluster.name,
            "cluster_gpus": self.cluster.total_gpus,
            "seed": self.seed,
            "arrived": arrived,
            "not_arrived": self._n - arrived,
            "stalled": sum(1 for j in self.active.values() if j.state == PENDING),
            "end_time_s": now,
            "engine_wall_s": wall_s,
            "actions": self.actions,
        }
        return SimResult(jobs, self._ts.frame(), meta)
