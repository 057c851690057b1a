"""What a run records: per-job results and the cluster time series, in columnar arrays."""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from schedlab.sim.job import FINISHED, Job
from schedlab.workload.schema import Workload

# The workload's columns a run's jobs table repeats (before its results; final_state after them).
SPEC_COLUMNS = ("job_id", "user", "tenant", "priority_class", "num_gpus", "gpu_type", "submit_s", "duration_s")


class JobRecorder:
    """Columnar per-job results, filled when a job finishes or the run ends."""

    def __init__(self, n: int) -> None:
        nan = np.full(n, np.nan)
        self.first_start = nan.copy()
        self.end = nan.copy()
        self.queue_s = nan.copy()  # stays NaN for jobs submitted after the horizon
        self.run_s = np.zeros(n)
        self.gpu_seconds = np.zeros(n)
        self.lost_work = np.zeros(n)
        self.work_done = np.zeros(n)
        self.shared_s = np.zeros(n)
        self.pause_s = np.zeros(n)
        self.restore_s = np.zeros(n)
        self.migration_s = np.zeros(n)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.migrations = np.zeros(n, dtype=np.int64)
        self.finished = np.zeros(n, dtype=bool)

    def store(self, job: Job) -> None:
        i = job.idx
        self.first_start[i] = job.first_start
        self.end[i] = job.end
        self.queue_s[i] = job.queue_s
        self.run_s[i] = job.run_s
        self.gpu_seconds[i] = job.gpu_seconds
        self.lost_work[i] = job.lost_work
        self.work_done[i] = job.work_done
        self.shared_s[i] = job.shared_s
        self.pause_s[i] = job.pause_s
        self.restore_s[i] = job.restore_s
        self.migration_s[i] = job.migration_s
        self.preemptions[i] = job.preemptions
        self.migrations[i] = job.migrations
        self.finished[i] = job.state == FINISHED

    def columns(self, spec: Workload) -> dict[str, Any]:
        """The jobs table: the workload's :data:`SPEC_COLUMNS`, the results, then ``final_state``."""
        out: dict[str, Any] = {c: spec.column(c) for c in SPEC_COLUMNS}
        out.update({
            "first_start_s": self.first_start,
            "end_s": self.end,
            "finished": self.finished,
            "queue_s": self.queue_s,
            "run_s": self.run_s,
            "preemptions": self.preemptions,
            "migrations": self.migrations,
            "lost_work_s": self.lost_work,
            "work_done_s": self.work_done,
            "gpu_seconds": self.gpu_seconds,
            "colocated_s": self.shared_s,
            "pause_s": self.pause_s,
            "restore_s": self.restore_s,
            "migration_s": self.migration_s,
            "final_state": spec.column("final_state"),
        })  # fmt: skip
        return out


class SeriesRecorder:
    """Cluster time series as a step function; a row is kept only when something changed.

    Besides the totals, each GPU model gets ``gpus_busy[<model>]`` and ``gpus_total[<model>]``
    columns (busy and powered-on GPUs of that model)."""

    def __init__(self, types: tuple[str, ...]) -> None:
        self.types = types
        self.time = array("d")
        self.total = array("d")
        self.busy = array("d")
        self.running = array("q")
        self.pending = array("q")
        self.nodes_on = array("q")
        self.type_busy = [array("d") for _ in types]
        self.type_total = [array("d") for _ in types]
        self._multi = len(types) > 1  # with one model its columns are the totals (see frame)
        self._last: tuple[float, float, int, int, int] | None = None
        self._last_types: list[float] = []

    def add(
        self, t: float, total: float, busy: float, running: int, pending: int, nodes_on: int,
        type_busy: list[float], type_total: list[int],
    ) -> None:  # fmt: skip
        key = (total, busy, running, pending, nodes_on)
        if key == self._last and (not self._multi or type_busy == self._last_types):
            return
        self._last = key
        self.time.append(t)
        self.total.append(total)
        self.busy.append(busy)
        self.running.append(running)
        self.pending.append(pending)
        self.nodes_on.append(nodes_on)
        if self._multi:
            self._last_types = list(type_busy)
            for column, value in zip(self.type_busy, type_busy):
                column.append(value)
            for column, gpus in zip(self.type_total, type_total):
                column.append(gpus)

    def columns(self) -> dict[str, Any]:
        """The series as NumPy columns (no copy of the recorded values)."""
        busy, total = (self.type_busy, self.type_total) if self._multi else ([self.busy], [self.total])
        return {
            "time_s": np.frombuffer(self.time, dtype=np.float64),
            "gpus_total": np.frombuffer(self.total, dtype=np.float64),
            "gpus_busy": np.frombuffer(self.busy, dtype=np.float64),
            "running_jobs": np.frombuffer(self.running, dtype=np.int64),
            "pending_jobs": np.frombuffer(self.pending, dtype=np.int64),
            "nodes_on": np.frombuffer(self.nodes_on, dtype=np.int64),
            **{f"gpus_busy[{name}]": np.frombuffer(col, dtype=np.float64)
               for name, col in zip(self.types, busy)},
            **{f"gpus_total[{name}]": np.frombuffer(col, dtype=np.float64)
               for name, col in zip(self.types, total)},
        }  # fmt: skip
