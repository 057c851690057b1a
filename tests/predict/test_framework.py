"""No look-ahead: a job's duration never reaches the model before the job has finished."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedlab.cluster.presets import load_cluster
from schedlab.policies.common.placers import Consolidate
from schedlab.policies.helios.qssf import QSSF
from schedlab.predict.duration import DurationPredictor, DurationSettings
from schedlab.predict.framework import TRAIN_COLUMNS, UpdateEngine, accuracy
from schedlab.sim.engine import Simulation
from schedlab.workload import transforms
from schedlab.workload.synthetic import generate

DAY = 86400.0


class Spy:
    """Wraps a predictor; records every training table and every batch of items."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.fits: list[pd.DataFrame] = []
        self.calls: list[tuple[int, pd.DataFrame]] = []  # (fits so far, items)

    def fit(self, history: pd.DataFrame) -> None:
        self.fits.append(history.copy())
        self.inner.fit(history)

    def predict(self, items: pd.DataFrame) -> np.ndarray:
        self.calls.append((len(self.fits), items.copy()))
        return self.inner.predict(items)


def test_every_training_row_finished_before_its_fit_and_no_ranked_job_is_in_its_training_set() -> None:
    w = generate("venus", 1500, seed=4, cluster_gpus=256)
    split_at = 2 * DAY
    history, evaluation = transforms.split_history(w, split_at)
    spy = Spy(DurationPredictor(DurationSettings(n_estimators=20), origin=w.origin, seed=0))
    policy = QSSF(Consolidate(), submissions=evaluation.jobs, history=history, predictor=spy, refit_every_s=DAY / 2)
    Simulation(evaluation, load_cluster("uniform:16x8"), policy).run()

    engine = policy.engine
    assert len(spy.fits) == len(engine.fits) >= 3
    for table, (fit_time, rows) in zip(spy.fits, engine.fits, strict=True):
        assert len(table) == rows
        assert (table["end_s"] <= fit_time).all()
    assert (spy.fits[0]["end_s"] <= split_at).all()  # the warm start is history only
    assert len(spy.fits[-1]) > len(history)  # and jobs finished in the simulation were added
    ranked = 0
    for fits_so_far, items in spy.calls:
        assert "duration_s" not in items.columns and "final_state" not in items.columns
        fit_time = engine.fits[fits_so_far - 1][0]
        assert (items["submit_s"] >= fit_time).all()  # ranked at arrival, after the fit it uses
        assert not set(items["job_id"]) & set(spy.fits[fits_so_far - 1]["job_id"])
        ranked += len(items)
    assert ranked == len(evaluation)


def test_training_table_refuses_a_job_that_finishes_after_the_fit_time() -> None:
    jobs = generate("simple", 5, seed=0).jobs
    engine = UpdateEngine(Spy(None), jobs, refit_every_s=DAY)
    engine.record_finish(0, end_s=500.0, duration_s=400.0)
    assert list(engine.training_table(500.0).columns) == list(TRAIN_COLUMNS)
    with pytest.raises(RuntimeError, match="look-ahead"):
        engine.training_table(499.0)


def test_split_history_keeps_finished_jobs_as_history_and_later_submits_for_evaluation() -> None:
    w = generate("venus", 400, seed=1)
    cut = float(w.jobs["submit_s"].median())
    history, evaluation = transforms.split_history(w, cut)
    h, e = history.jobs, evaluation.jobs
    assert (h["submit_s"] + h["duration_s"] <= cut).all() and (e["submit_s"] >= cut).all()
    running = int(((w.jobs["submit_s"] < cut) & (w.jobs["submit_s"] + w.jobs["duration_s"] > cut)).sum())
    assert evaluation.meta["transforms"][-1]["dropped_running"] == running
    assert len(h) + len(e) + running == len(w)
    assert history.origin == evaluation.origin == w.origin


def test_accuracy_reports_mae_and_spearman_of_gpu_time() -> None:
    got = accuracy(np.array([10.0, 20.0, np.nan]), np.array([12.0, 30.0, 5.0]), np.array([1.0, 2.0, 1.0]))
    assert got == {"jobs": 2, "mae_s": 6.0, "spearman_gpu_time": 1.0}
