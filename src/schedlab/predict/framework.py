"""The prediction framework of Helios (Hu et al., SC'21, §4.1): models learn from the jobs
that have finished and are retrained on a schedule while the cluster runs.

* :class:`Predictor` - what a model offers: ``fit(history)`` on finished jobs,
  ``predict(items)`` for jobs described only by what is known at submission.
* :class:`UpdateEngine` - feeds a predictor inside a simulation. It starts from a warm-start
  history (jobs finished before the evaluation), adds each job when it finishes (the policy
  calls :meth:`UpdateEngine.record_finish` from ``on_finish``) and refits at the first
  prediction on or after each boundary of ``refit_every_s`` (default: every simulated day),
  on every job finished by then. A job's duration therefore never reaches the model before
  the job has finished; items handed to ``predict`` carry no duration and no final state.
* :func:`accuracy` - MAE of the predicted duration and Spearman rank correlation of the
  predicted and true GPU time.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
import pandas as pd

from schedlab.units import DAY_S
from schedlab.workload.schema import SUBMITTED_COLUMNS, Workload

# What is known about a job when it is submitted: the columns a predictor may read.
ITEM_COLUMNS = SUBMITTED_COLUMNS
# Training rows add the outcome and the time it became known.
TRAIN_COLUMNS = (*ITEM_COLUMNS, "duration_s", "end_s")


class Predictor(Protocol):
    """A job-duration model: fit on finished jobs, predict seconds for submitted ones."""

    def fit(self, history: pd.DataFrame) -> None:
        """Learn from finished jobs (:data:`TRAIN_COLUMNS`, ``end_s`` = when each finished)."""

    def predict(self, items: pd.DataFrame) -> np.ndarray:
        """Predicted durations (s) of jobs given as :data:`ITEM_COLUMNS` rows."""


def finished_table(w: Workload) -> pd.DataFrame:
    """A history workload as training rows; a trace job finished at ``submit_s + duration_s``."""
    jobs = w.jobs
    table = jobs.loc[:, list(TRAIN_COLUMNS[:-1])].copy()
    table["end_s"] = jobs["submit_s"].to_numpy() + jobs["duration_s"].to_numpy()
    return table.reset_index(drop=True)


class UpdateEngine:
    """Keeps the finished-job table of one simulation and refits ``predictor`` on schedule.

    ``jobs`` is the evaluation job table (the simulation's rows, sorted by submit time); only
    its :data:`ITEM_COLUMNS` are kept. Predictions for the jobs submitted before the next
    refit are computed in one batch by the current model: each is the value a call at the
    job's arrival would return, since the model does not change before then.
    """

    def __init__(
        self,
        predictor: Predictor,
        jobs: pd.DataFrame,
        *,
        history: pd.DataFrame | None = None,
        refit_every_s: float = DAY_S,
    ) -> None:
        if not refit_every_s > 0:
            raise ValueError(f"refit_every_s must be positive, got {refit_every_s!r}")
        self.predictor = predictor
        self.refit_every_s = refit_every_s
        self._items = jobs.loc[:, list(ITEM_COLUMNS)].reset_index(drop=True)
        self._submit = self._items["submit_s"].to_numpy()
        self._history = history if history is not None else pd.DataFrame(columns=list(TRAIN_COLUMNS))
        self._finished: list[tuple[int, float, float]] = []  # (row, end_s, duration_s)
        self._fitted_rows = -1
        self._next_fit = -math.inf
        self._pred = np.full(len(self._items), np.nan)
        self._pred_until = 0
        self.fits: list[tuple[float, int]] = []  # (time, training rows) of every refit

    def record_finish(self, row: int, end_s: float, duration_s: float) -> None:
        """Job ``row`` of the evaluation table finished at ``end_s`` after ``duration_s`` of work."""
        self._finished.append((row, end_s, duration_s))

    def training_table(self, now: float) -> pd.DataFrame:
        """Every job finished by ``now``: the warm-start history plus the simulation's finishes."""
        if self._finished:
            rows, ends, durations = (np.asarray(v) for v in zip(*self._finished, strict=True))
            done = self._items.iloc[rows.astype(np.int64)].copy()
            done["duration_s"] = durations
            done["end_s"] = ends
            table = pd.concat([self._history, done], ignore_index=True) if len(self._history) else done
        else:
            table = self._history
        late = table["end_s"].to_numpy(dtype=float) > now
        if late.any():
            raise RuntimeError(f"training row finished after the fit time {now:g}: look-ahead")
        return table.reset_index(drop=True)

    def predict(self, row: int, now: float) -> float:
        """Predicted duration (s) of evaluation job ``row``, which arrives at ``now``."""
        if now >= self._next_fit:
            self._refit(now)
            self._pred_until = row
        if row >= self._pred_until:
            end = max(row + 1, int(np.searchsorted(self._submit, self._next_fit, side="left")))
            self._pred[row:end] = self.predictor.predict(self._items.iloc[row:end].reset_index(drop=True))
            self._pred_until = end
        return float(self._pred[row])

    def _refit(self, now: float) -> None:
        self._next_fit = (math.floor(now / self.refit_every_s) + 1) * self.refit_every_s
        known = len(self._history) + len(self._finished)
        if known == self._fitted_rows:
            return
        table = self.training_table(now)
        self.predictor.fit(table)
        self._fitted_rows = known
        self.fits.append((now, len(table)))


def accuracy(predicted_s: np.ndarray, true_s: np.ndarray, gpus: np.ndarray) -> dict[str, float | int | None]:
    """MAE (s) of predicted durations and Spearman correlation of predicted and true GPU time,
    over the jobs with a prediction."""
    predicted_s, true_s, gpus = (np.asarray(a, dtype=float) for a in (predicted_s, true_s, gpus))
    ok = np.isfinite(predicted_s)
    n = int(ok.sum())
    if n == 0:
        return {"jobs": 0, "mae_s": None, "spearman_gpu_time": None}
    mae = float(np.mean(np.abs(predicted_s[ok] - true_s[ok])))
    rho = spearman(predicted_s[ok] * gpus[ok], true_s[ok] * gpus[ok]) if n > 1 else math.nan
    return {"jobs": n, "mae_s": round(mae, 3), "spearman_gpu_time": None if math.isnan(rho) else round(float(rho), 4)}


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks from 1, tied values sharing the mean of their ranks (``scipy.stats.rankdata``'s
    default)."""
    order = np.argsort(x, kind="mergesort")
    ordered = x[order]
    first = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # where each run of ties starts
    ends = np.r_[first[1:], len(x)]
    ranks = np.empty(len(x))
    ranks[order] = np.repeat((first + ends + 1) / 2.0, ends - first)
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation: Pearson's of the average ranks, NaN when either side is
    constant (as ``scipy.stats.spearmanr``, without importing SciPy's stats for one number)."""
    if (x[0] == x).all() or (y[0] == y).all():
        return math.nan
    ranked = np.column_stack((average_ranks(x), average_ranks(y)))
    return float(np.corrcoef(ranked, rowvar=False)[1, 0])
