"""Duration predictor of QSSF (Helios §4.2): rolling estimate rules, LightGBM path, no names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedlab.predict.duration import DurationPredictor, DurationSettings, LightGBMDuration, RollingEstimate
from schedlab.predict.framework import ITEM_COLUMNS, TRAIN_COLUMNS


def frame(rows: list[dict], *, train: bool = True) -> pd.DataFrame:
    """Rows with defaults for every column a predictor reads."""
    base = {"job_id": "", "submit_s": 0.0, "user": "", "tenant": "vc", "name": "", "num_gpus": 1.0,
            "num_cpus": 4.0, "gpu_type": "", "priority_class": "default", "model": "", "duration_s": 1.0,
            "end_s": 0.0}  # fmt: skip
    out = pd.DataFrame([{**base, "job_id": f"j{i}", **r} for i, r in enumerate(rows)])
    return out[list(TRAIN_COLUMNS if train else ITEM_COLUMNS)]


HISTORY = frame([
    {"user": "alice", "name": "resnet50_train-1", "duration_s": 100.0, "end_s": 10.0},
    {"user": "alice", "name": "resnet50_train-2", "duration_s": 300.0, "end_s": 20.0},
    {"user": "alice", "name": "bert_eval", "duration_s": 5000.0, "end_s": 15.0, "num_gpus": 2.0},
    {"user": "bob", "name": "resnet50_train-9", "duration_s": 40.0, "end_s": 5.0},
    {"user": "bob", "name": "gan", "duration_s": 60.0, "end_s": 6.0, "num_gpus": 2.0},
])  # fmt: skip


def test_known_user_similar_names_give_the_decayed_mean_most_recent_first() -> None:
    est = RollingEstimate(name_similarity=0.8, decay=0.5)
    est.fit(HISTORY)
    got = est.predict(frame([{"user": "alice", "name": "resnet50_train-3"}], train=False))
    assert got[0] == pytest.approx((0.5 * 100.0 + 1.0 * 300.0) / 1.5)  # bob's similar job is not alice's


def test_new_user_gets_the_mean_of_past_jobs_with_the_same_gpu_demand() -> None:
    est = RollingEstimate()
    est.fit(HISTORY)
    got = est.predict(frame([{"user": "carol", "name": "resnet50_train-3", "num_gpus": 2.0},
                             {"user": "", "name": "x", "num_gpus": 1.0}], train=False))  # fmt: skip
    assert got[0] == pytest.approx((5000.0 + 60.0) / 2)
    assert got[1] == pytest.approx((100.0 + 300.0 + 40.0) / 3)


def test_known_user_without_similar_names_gets_the_users_mean_for_that_gpu_demand() -> None:
    est = RollingEstimate(name_similarity=0.9)
    est.fit(HISTORY)
    got = est.predict(frame([{"user": "alice", "name": "totally_different", "num_gpus": 2.0}], train=False))
    assert got[0] == pytest.approx(5000.0)


def test_without_names_the_name_rules_are_skipped_and_flagged() -> None:
    nameless = HISTORY.assign(name="")
    predictor = DurationPredictor(DurationSettings(min_train_rows=1, n_estimators=5), origin=None, seed=0)
    predictor.fit(nameless)
    assert predictor.info()["names_used"] is False
    assert "name_cluster" not in predictor.lightgbm._features(nameless).columns
    rolling = predictor.rolling.predict(frame([{"user": "alice", "name": "resnet50_train-3"}], train=False))
    assert rolling[0] == pytest.approx(200.0)  # alice's mean for one GPU, not the name-based 233


def lightgbm_history(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    gpus = rng.choice([1.0, 8.0], n)
    tenant = rng.choice(["short", "long"], n)
    base = np.where(tenant == "long", 20000.0, 200.0) * np.where(gpus == 8.0, 3.0, 1.0)
    rows = [{"user": f"u{i % 7}", "tenant": t, "num_gpus": g, "duration_s": float(d), "submit_s": 60.0 * i,
             "end_s": 60.0 * i + float(d), "name": f"job{i % 5}"}
            for i, (t, g, d) in enumerate(zip(tenant, gpus, base * rng.lognormal(0, 0.2, n), strict=True))]  # fmt: skip
    return frame(rows)


def test_lightgbm_trains_predicts_and_is_deterministic() -> None:
    history = lightgbm_history(400, seed=1)
    items = frame([{"tenant": "short", "num_gpus": 1.0, "user": "u1"}, {"tenant": "long", "num_gpus": 8.0,
                   "user": "u1"}], train=False)  # fmt: skip
    preds = []
    for _ in range(2):
        model = LightGBMDuration(origin=pd.Timestamp("2020-09-01"), seed=3, n_estimators=50)
        model.fit(history)
        preds.append(model.predict(items))
    assert np.array_equal(preds[0], preds[1])
    short, long = preds[0]
    assert short == pytest.approx(200.0, rel=0.3) and long == pytest.approx(60000.0, rel=0.3)


def test_blend_weights_rolling_and_lightgbm() -> None:
    history = lightgbm_history(300, seed=2)
    items = frame([{"tenant": "long", "num_gpus": 8.0, "user": "u1", "name": "job1"}], train=False)
    settings = DurationSettings(rolling_weight=0.25, n_estimators=30)
    predictor = DurationPredictor(settings, origin=None, seed=0)
    predictor.fit(history)
    expect = 0.25 * predictor.rolling.predict(items) + 0.75 * predictor.lightgbm.predict(items)
    assert predictor.predict(items) == pytest.approx(expect)
    assert predictor.info()["lightgbm_used"] is True
