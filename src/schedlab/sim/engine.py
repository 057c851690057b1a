"""The discrete-event engine: the event loop of one run, and its results.

Time jumps from event to event (arrivals, finishes, policy timers, node boots); nothing is
stepped through idle time. After all events of one timestamp are applied the engine calls
``policy.schedule(ctx)`` once, where ``ctx`` is the :class:`Simulation` itself (a
:class:`~schedlab.sim.policy.Context`): the policy reads the run through it and acts with its
checked actions (:mod:`schedlab.sim.actions`); the jobs' bookkeeping is
:mod:`schedlab.sim.ledger`. Arrivals come from the sorted workload through a cursor, not the
heap; the rest (finishes, timers, boots) from one heap.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from schedlab import arrow
from schedlab.cluster.spec import ClusterSpec
from schedlab.errors import ConfigError
from schedlab.sim.actions import Actions
from schedlab.sim.config import SimConfig
from schedlab.sim.job import FINISHED, PENDING, RUNNING, Job
from schedlab.sim.ledger import FINISH, TIMER
from schedlab.sim.perf import PerfModel
from schedlab.sim.recorders import JobRecorder, SeriesRecorder
from schedlab.workload.schema import Workload, check_fits

if TYPE_CHECKING:
    import pandas as pd

    from schedlab.sim.policy import Context, Policy

INF = math.inf
# Workload columns in the order of Job's arguments after its index; NaN checkpoint intervals
# take the engine's default.
JOB_ARGS = ("job_id", "submit_s", "user", "tenant", "name", "priority_class", "num_gpus", "gpus_per_worker",
            "gpu_type", "duration_s", "checkpoint_interval_s", "model", "deadline_s", "gpu_mem_gib", "time_limit_s")  # fmt: skip
CKPT_ARG = JOB_ARGS.index("checkpoint_interval_s")
ROW_BLOCK = 16_384


class RunProgress(NamedTuple):
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


class SimResult:
    """Per-job table, cluster time series and run facts of one simulation.

    The tables are held as columns (``job_columns``, ``series_columns``: NumPy arrays, text as
    Arrow arrays); ``jobs`` and ``timeseries`` are the same as pandas DataFrames, built on first use."""

    def __init__(self, job_columns: dict[str, Any], series_columns: dict[str, Any], meta: dict[str, Any]) -> None:
        self.job_columns = job_columns
        self.series_columns = series_columns
        self.meta = meta
        self._jobs: pd.DataFrame | None = None
        self._timeseries: pd.DataFrame | None = None

    @property
    def jobs(self) -> pd.DataFrame:
        if self._jobs is None:
            self._jobs = _frame(self.job_columns)
        return self._jobs

    @property
    def timeseries(self) -> pd.DataFrame:
        if self._timeseries is None:
            self._timeseries = _frame(self.series_columns)
        return self._timeseries


def _frame(columns: dict[str, Any]) -> pd.DataFrame:
    """Columns as a DataFrame (Arrow text as pandas ``str``)."""
    import pandas as pd

    return pd.DataFrame({k: v if isinstance(v, np.ndarray) else pd.array(v, dtype="str") for k, v in columns.items()})


class Simulation(Actions):
    """One run of ``policy`` over ``workload`` on ``cluster``; also the policy's context.

    With ``strict``, the policy is handed a :class:`~schedlab.sim.strict.StrictContext` instead,
    which raises on anything a :class:`~schedlab.sim.policy.Context` does not offer and on any
    write (a check for policy authors; the default hands the run itself, at no cost)."""

    def __init__(
        self,
        workload: Workload,
        cluster: ClusterSpec,
        policy: Policy,
        *,
        config: SimConfig | None = None,
        seed: int = 0,
        perf: PerfModel | None = None,
        strict: bool = False,
    ) -> None:
        super().__init__(cluster, policy, config or SimConfig(), seed, perf)
        self._ctx = self._context(strict)
        self._workload = workload
        self._check_workload(workload, self.cluster)
        self._n = len(workload)
        self._submit: list[float] = workload.column("submit_s").tolist()
        self._block: list[Job] = []  # the jobs of the block of rows from _row0 on
        self._row0 = 0
        self._out = JobRecorder(self._n)
        self._ts = SeriesRecorder(self.state.type_names)

    @property
    def origin(self) -> pd.Timestamp | None:
        return self._workload.origin

    def _context(self, strict: bool) -> Context:
        if strict:
            from schedlab.sim.strict import StrictContext

            return StrictContext(self)
        return self

    # ----- setup -------------------------------------------------------------------------------
    @staticmethod
    def _check_workload(workload: Workload, cluster: ClusterSpec) -> None:
        source = workload.source
        check_fits(workload, max_gpus=cluster.total_gpus, gpu_types=set(cluster.gpu_types))
        tenant = arrow.call("dictionary_encode", workload.column("tenant"))
        tenants: list[str] = tenant.dictionary.to_pylist()  # in order of first appearance
        missing = cluster.unpartitioned(tenants)
        t_code = arrow.to_numpy(tenant.indices).astype(np.int64)
        gpus = workload.column("num_gpus")
        if missing:
            lacking = np.isin(t_code, [tenants.index(t) for t in missing])
            row = workload.column("source_row")[workload.first(lacking)]
            field = workload.fields.get("tenant", "tenant")
            message = cluster.unpartitioned_message(missing, jobs=int(lacking.sum()), field=field)
            raise ConfigError(f"{source}: row {row}: {message}")
        gtype = arrow.call("dictionary_encode", workload.column("gpu_type"))
        gtypes: list[str] = gtype.dictionary.to_pylist()
        pair = t_code * len(gtypes) + arrow.to_numpy(gtype.indices)
        keys, first, inverse = np.unique(pair, return_index=True, return_inverse=True)
        need = np.full(keys.size, -np.inf)
        np.maximum.at(need, inverse, gpus)
        for k in np.argsort(first, kind="stable").tolist():  # (tenant, GPU type) pairs in order of first appearance
            tenant_name, type_name = tenants[keys[k] // len(gtypes)], gtypes[keys[k] % len(gtypes)]
            cap = cluster.max_job_gpus(tenant_name, type_name)
            if need[k] > cap:
                i = workload.first((inverse == k) & (gpus > cap))
                assert i is not None
                where = f"partition '{tenant_name}'" if cluster.partitioned else "pool"
                kind = f" of type {type_name}" if type_name else ""
                raise ConfigError(
                    f"{source}: row {workload.column('source_row')[i]}: job '{workload.column('job_id')[i].as_py()}' "
                    f"of tenant '{tenant_name}' needs {gpus[i]:g} GPUs{kind} but the {where} of cluster "
                    f"'{cluster.name}' has {cap}"
                )
        gpw = workload.column("gpus_per_worker")
        i = workload.first((gpw < 1) & (gpus > gpw))
        if i is not None:
            raise ConfigError(
                f"{source}: row {workload.column('source_row')[i]}: gang jobs with fractional GPUs per worker are not supported"
            )

    def _make_job(self, i: int) -> Job:
        """The job of workload row ``i``; rows are asked for in order, and turned into jobs a
        block at a time (not all at once: a million of them take half a GB)."""
        k = i - self._row0
        if k == len(self._block):
            stop = min(i + ROW_BLOCK, self._n)
            cols = [self._workload.rows(c, i, stop) for c in JOB_ARGS]
            ckpt, default = cols[CKPT_ARG], self.config.checkpoint_interval_s
            cols[CKPT_ARG] = [default if x != x else x for x in ckpt]
            self._block = list(map(Job, range(i, stop), *cols))
            self._row0, k = i, 0
        return self._block[k]

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
        ctx = self._ctx
        state = self.state
        running = self.running
        record = self._ts.add
        policy.setup(ctx)
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
                if kind == FINISH:
                    if payload.version == version and payload.state == RUNNING:
                        self._finish(payload)
                        changed = True
                elif kind == TIMER:
                    if policy.on_timer(ctx, payload) is not False:
                        changed = True
                else:
                    self._node_up(payload)
                    changed = True
            while nxt < n and submit[nxt] <= t:
                job = self._make_job(nxt)
                self.active[nxt] = job
                self.arrived = nxt + 1
                self.pending_count += 1
                policy.on_arrival(ctx, job)
                nxt += 1
                changed = True
            if changed:
                last_change = t
                policy.schedule(ctx)
                record(t, state.gpus_on, state.busy_gpus, len(running), self.pending_count, state.nodes_on,
                       state.type_busy, state.type_gpus_on)  # fmt: skip
        result = self._collect(nxt, time.perf_counter() - wall0)
        if progress is not None:
            progress(RunProgress(self.now, nxt, self._finished, n, horizon))
        return result

    @property
    def arrivals_left(self) -> int:
        return self._n - self.arrived

    def _finish(self, job: Job) -> None:
        self._stop_run(job)
        job.work_done += job.remaining
        job.remaining = 0.0
        job.state = FINISHED
        job.end = self.now
        self._finished += 1
        del self.active[job.idx]
        self._out.store(job)
        self.policy.on_finish(self._ctx, job)

    def _node_up(self, node: int) -> None:
        self.state.booting.discard(node)
        self.state.power_on(node)
        self.policy.on_node_on(self._ctx, node)

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
        jobs = self._out.columns(self._workload)
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
        return SimResult(jobs, self._ts.columns(), meta)
