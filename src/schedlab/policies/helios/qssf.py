"""QSSF, Quasi-Shortest-Service-First (Helios: Hu et al., SC'21, §4.2, Algorithm 1).

Non-preemptive; one queue per VC (per pool of a partitioned cluster), ordered by the job's
*predicted* GPU time (GPU demand x predicted duration), computed once when the job arrives;
like Helios' QSSF the queue blocks at its head; consolidate placement by default.

Durations come from :class:`schedlab.predict.duration.DurationPredictor`, fed through a
:class:`schedlab.predict.framework.UpdateEngine`: warm-started on a ``history`` workload (jobs
finished before the evaluation, e.g. from :func:`schedlab.workload.transforms.split_history`),
extended with each job as it finishes and refitted every ``refit_every_s`` of simulated time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from schedlab.policies.base import QueueScheduler
from schedlab.policies.placers import Placer
from schedlab.predict.duration import DurationPredictor, DurationSettings
from schedlab.predict.framework import DAY_S, Predictor, UpdateEngine, accuracy, finished_table
from schedlab.sim.job import Job
from schedlab.workload.schema import Workload


class QSSF(QueueScheduler):
    """QSSF over ``placer``. ``predictor`` defaults to a :class:`DurationPredictor` with
    ``settings``, the workload's calendar origin and ``seed``."""

    def __init__(
        self,
        placer: Placer,
        *,
        history: Workload | None = None,
        predictor: Predictor | None = None,
        settings: DurationSettings | None = None,
        refit_every_s: float = DAY_S,
        seed: int = 0,
    ) -> None:
        super().__init__("qssf", self._predicted_gpu_time, placer)
        self.history = history
        self.predictor = predictor
        self.settings = settings
        self.refit_every_s = refit_every_s
        self.seed = seed
        self.engine: UpdateEngine | None = None
        self.predicted = np.empty(0)

    def setup(self, ctx) -> None:
        workload: Workload = ctx.workload
        if self.predictor is None:
            self.predictor = DurationPredictor(self.settings, origin=workload.origin, seed=self.seed)
        history = finished_table(self.history) if self.history is not None else None
        self.engine = UpdateEngine(self.predictor, workload.jobs, history=history, refit_every_s=self.refit_every_s)
        self.predicted = np.full(len(workload.jobs), np.nan)

    def _predicted_gpu_time(self, ctx, job: Job) -> float:
        duration = self.engine.predict(job.idx, ctx.now)
        self.predicted[job.idx] = duration
        return job.num_gpus * duration

    def on_finish(self, ctx, job: Job) -> None:
        self.engine.record_finish(job.idx, ctx.now, job.work)

    def report(self, jobs: pd.DataFrame) -> dict[str, Any]:
        """``{"predictor": ...}``: accuracy of the durations predicted at arrival against the
        run's ``jobs`` table, the number of refits and what the predictor used."""
        block: dict[str, Any] = accuracy(self.predicted, jobs["duration_s"].to_numpy(), jobs["num_gpus"].to_numpy())
        block["refits"] = len(self.engine.fits) if self.engine else 0
        info = getattr(self.predictor, "info", None)
        if info is not None:
            block.update(info())
        return {"predictor": block}
