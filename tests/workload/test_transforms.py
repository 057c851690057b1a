"""Workload transforms: bounds, counts recorded in meta, load and class scaling."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedlab.errors import ConfigError
from schedlab.workload.schema import canonical_frame
from schedlab.workload.synthetic import generate
from schedlab.workload.transforms import sample, scale_arrivals, scale_class, shift_to_zero, time_window


@pytest.fixture(scope="module")
def simple():
    return generate("simple", 3000, seed=7)


@pytest.fixture(scope="module")
def gfs():
    return generate("gfs", 4000, seed=8)


def _is_canonical(w) -> None:
    pd.testing.assert_frame_equal(canonical_frame(w.jobs, source="check"), w.jobs)


def test_time_window_keeps_the_half_open_range_and_counts_the_rest(simple) -> None:
    s = simple.jobs["submit_s"]
    start, end = s.quantile(0.25), s.quantile(0.75)
    w = time_window(simple, start, end)
    assert w.jobs["submit_s"].min() >= start and w.jobs["submit_s"].max() < end
    rec = w.meta["transforms"][-1]
    assert rec["removed_before"] == (s < start).sum() and rec["removed_after"] == (s >= end).sum()
    assert len(w) + rec["removed_before"] + rec["removed_after"] == len(simple)
    assert w.origin == simple.origin and len(simple) == 3000
    with pytest.raises(ConfigError):
        time_window(simple, 10.0, 5.0)


def test_sample_by_count_and_fraction_is_seeded(simple) -> None:
    a = sample(simple, n=500, seed=1)
    assert len(a) == 500 and a.meta["transforms"][-1]["removed"] == 2500
    assert set(a.jobs["job_id"]) <= set(simple.jobs["job_id"])
    pd.testing.assert_frame_equal(a.jobs, sample(simple, n=500, seed=1).jobs)
    assert not a.jobs["job_id"].equals(sample(simple, n=500, seed=2).jobs["job_id"])
    assert len(sample(simple, frac=0.1, seed=1)) == 300
    _is_canonical(a)
    with pytest.raises(ConfigError):
        sample(simple, n=10, frac=0.1, seed=1)


@pytest.mark.parametrize("k", [2.0, 0.5])
def test_scale_arrivals_divides_the_span(simple, k: float) -> None:
    w = scale_arrivals(simple, k)
    span = simple.jobs["submit_s"].max() - simple.jobs["submit_s"].min()
    assert w.jobs["submit_s"].max() - w.jobs["submit_s"].min() == pytest.approx(span / k)
    assert w.jobs["submit_s"].min() == simple.jobs["submit_s"].min()
    assert list(w.jobs["job_id"]) == list(simple.jobs["job_id"])
    assert w.meta["transforms"][-1] == {"op": "scale_arrivals", "k": k, "removed": 0}


def test_deadlines_move_with_their_jobs(simple) -> None:
    jobs = simple.jobs.copy()
    jobs["deadline_s"] = jobs["submit_s"] + 100.0
    w = shift_to_zero(scale_arrivals(simple.with_jobs(jobs), 4.0))
    assert np.allclose(w.jobs["deadline_s"] - w.jobs["submit_s"], 100.0)


@pytest.mark.parametrize("k", [2, 4])
def test_scale_class_by_an_integer_copies_the_class(gfs, k: int) -> None:
    w = scale_class(gfs, "spot", k, seed=3)
    before = gfs.jobs["priority_class"].value_counts()
    after = w.jobs["priority_class"].value_counts()
    assert after["spot"] == k * before["spot"] and after["hp"] == before["hp"]
    assert w.meta["transforms"][-1]["added"] == (k - 1) * before["spot"]
    assert w.jobs["job_id"].is_unique and w.jobs["job_id"].str.contains("~").sum() == (k - 1) * before["spot"]
    assert w.jobs["submit_s"].is_monotonic_increasing
    spot = gfs.jobs.loc[gfs.jobs["priority_class"] == "spot", "submit_s"]
    copies = w.jobs.loc[w.jobs["job_id"].str.contains("~"), "submit_s"]
    assert copies.min() >= spot.min() and copies.max() <= spot.max()
    assert not np.isin(copies.to_numpy(), spot.to_numpy()).all()  # jittered
    _is_canonical(w)


def test_scale_class_by_a_fraction_samples(gfs) -> None:
    n_spot = int((gfs.jobs["priority_class"] == "spot").sum())
    up = scale_class(gfs, "spot", 1.5, seed=3)
    assert (up.jobs["priority_class"] == "spot").sum() == n_spot + round(0.5 * n_spot)
    down = scale_class(gfs, "spot", 0.5, seed=3)
    assert (down.jobs["priority_class"] == "spot").sum() == round(0.5 * n_spot)
    assert down.meta["transforms"][-1]["removed"] == n_spot - round(0.5 * n_spot)
    assert (down.jobs["priority_class"] == "hp").sum() == (gfs.jobs["priority_class"] == "hp").sum()


def test_shift_to_zero_moves_the_origin(simple) -> None:
    late = time_window(simple, 50_000.0, np.inf)
    w = shift_to_zero(late)
    first = late.jobs["submit_s"].min()
    assert w.jobs["submit_s"].min() == 0.0
    assert w.origin == simple.origin + pd.Timedelta(seconds=first)
    assert [r["op"] for r in w.meta["transforms"]] == ["time_window", "shift_to_zero"]
