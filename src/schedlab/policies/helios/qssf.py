"""QSSF, Quasi-Shortest-Service-First (Helios: Hu et al., SC'21, §4.2, Algorithm 1).

Non-preemptive; one queue per VC (per pool of a partitioned cluster), ordered by the job's
*predicted* GPU time (GPU demand x predicted duration), computed once when the job arrives;
like Helios' QSSF the queue blocks at its head; consolidate placement by default.

Durations come from :class:`schedlab.predict.duration.DurationPredictor`, fed through a
:class:`schedlab.predict.framework.UpdateEngine`: warm-started on a ``history`` workload (jobs
finished before the evaluation, e.g. from :func:`schedlab.workload.transforms.split_history`),
extended with each job as it finishes and refitted every ``refit_every_s`` of simulated time.

``submissions`` are the run's jobs as known at submission (:data:`SUBMITTED_COLUMNS`, no
outcome), given when the policy is built: the update engine scores the jobs submitted before
its next refit in one batch, each with the model a call at the job's arrival would use (the
same value; a per-job call costs about 20 ms). Nothing else of the future is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from schedlab.policies.common.queues import QueueScheduler
from schedlab.policies.common.placers import Placer
from schedlab.predict.duration import DurationPredictor
from schedlab.predict.framework import Predictor, UpdateEngine, accuracy, finished_table
from schedlab.predict.settings import DurationSettings
from schedlab.sim.job import Job
from schedlab.sim.policy import Context
from schedlab.units import DAY_S
from schedlab.workload.schema import Workload


class QSSF(QueueScheduler):
    """QSSF over ``placer``. ``predictor`` defaults to a :class:`DurationPredictor` with
    ``settings``, the workload's calendar origin and ``seed``."""

    def __init__(
        self,
        placer: Placer,
        *,
        submissions: pd.DataFrame,
        history: Workload | None = None,
        predictor: Predictor | None = None,
        settings: DurationSettings | None = None,
        refit_every_s: float = DAY_S,
        seed: int = 0,
    ) -> None:
        super().__init__("qssf", self._predicted_gpu_time, placer)
        self.submissions = submissions
        self.history = history
        self.predictor = predictor
        self.settings = settings
        self.refit_every_s = refit_every_s
        self.seed = seed
        self.engine: UpdateEngine | None = None
        self.predicted = np.empty(0)

    def setup(self, ctx: Context) -> None:
        if self.predictor is None:
            self.predictor = DurationPredictor(self.settings, origin=ctx.origin, seed=self.seed)
        history = finished_table(self.history) if self.history is not None else None
        self.engine = UpdateEngine(self.predictor, self.submissions, history=history, refit_every_s=self.refit_every_s)
        self.predicted = np.full(len(self.submissions), np.nan)

    def _predicted_gpu_time(self, ctx: Context, job: Job) -> float:
        assert self.engine is not None, "setup() makes the engine"
        duration = self.engine.predict(job.idx, ctx.now)
        self.predicted[job.idx] = duration
        return job.num_gpus * duration

    def on_finish(self, ctx: Context, job: Job) -> None:
        assert self.engine is not None, "setup() makes the engine"
        self.engine.record_finish(job.idx, ctx.now, job.work)

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        """``{"predictor": ...}``: accuracy of the durations predicted at arrival against the
        run's ``jobs`` table, the number of refits and what the predictor used."""
        block: dict[str, Any] = accuracy(self.predicted, np.asarray(jobs["duration_s"]), np.asarray(jobs["num_gpus"]))
        block["refits"] = len(self.engine.fits) if self.engine else 0
        info = getattr(self.predictor, "info", None)
        if info is not None:
            block.update(info())
        return {"predictor": block}
