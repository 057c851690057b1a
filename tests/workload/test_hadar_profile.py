"""The Hadar §IV-A workload: categories by GPU-hours, Table II models, all jobs at time 0, under
both readings (each trace job keeps its GPU-hours; or the category is drawn uniformly)."""

from __future__ import annotations

import pytest

from schedlab.errors import ConfigError
from schedlab.sim.throughputs import GAVEL_BUILTIN
from schedlab.workload.hadar import CATEGORIES, HadarProfile, generate_hadar, read_trace


def test_trace_jobs_keep_their_gpu_hours_and_the_category_picks_the_model(shared_data):
    trace_csv = shared_data / "pollux" / "simulator" / "traces" / "philly.csv"
    w = generate_hadar(480, seed=3, profile=HadarProfile(trace_csv=str(trace_csv)))
    jobs = w.jobs
    assert len(jobs) == 480 and (jobs["submit_s"] == 0).all()
    # every job is a distinct busy-hours trace job with its own GPUs and duration
    trace = read_trace(trace_csv)
    busy = trace[(trace["hour"] >= 3) & (trace["hour"] <= 10)]
    pairs = busy.groupby(["num_gpus", "duration_s"]).size()
    drawn = jobs.groupby(["num_gpus", "duration_s"]).size()
    assert (drawn <= pairs.reindex(drawn.index).fillna(0)).all()
    assert set(jobs["num_gpus"]) <= {1, 2, 4, 8}
    gpu_h = jobs["num_gpus"] * jobs["duration_s"] / 3600
    for cat, lo, hi, models in CATEGORIES:
        part = jobs[jobs["priority_class"] == cat]
        assert ((gpu_h[part.index] > lo) & (gpu_h[part.index] <= hi)).all(), cat  # the category is the job's own
        assert set(part["model"]) <= {m for _, m in models}
    assert (jobs["priority_class"] == "S").sum() > 240  # most trace jobs are short: not uniform over categories
    assert 500 < w.meta["gpu_hours"] < 2000 and w.meta["reading"] == "trace"
    assert generate_hadar(480, seed=3, profile=HadarProfile(trace_csv=str(trace_csv))).jobs.equals(jobs)


def test_unknown_reading_is_a_config_error():
    with pytest.raises(ConfigError, match="reading"):
        generate_hadar(10, seed=0, profile=HadarProfile(reading="both"))


def test_jobs_follow_their_category(shared_data):
    profile = HadarProfile(reading="uniform",
                           distribution_csv=str(shared_data / "gavel" / "philly_job_distribution.csv"))  # fmt: skip
    w = generate_hadar(480, seed=3, profile=profile)
    jobs = w.jobs
    assert len(jobs) == 480 and (jobs["submit_s"] == 0).all()
    gpu_h = jobs["num_gpus"] * jobs["duration_s"] / 3600
    for cat, lo, hi, models in CATEGORIES:
        part = jobs[jobs["priority_class"] == cat]
        assert len(part) > 60  # uniform over four categories
        assert ((gpu_h[part.index] > lo) & (gpu_h[part.index] <= hi)).all(), cat
        assert set(part["model"]) == {m for _, m in models}
    assert all(m in GAVEL_BUILTIN for m in jobs["model"])
    again = generate_hadar(480, seed=3, profile=profile)
    assert again.jobs.equals(jobs)


def test_missing_distribution_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="philly job distribution|Philly job distribution"):
        generate_hadar(10, seed=0, profile=HadarProfile(reading="uniform", distribution_csv=str(tmp_path / "none.csv")))
    with pytest.raises(ConfigError, match="Philly trace excerpt"):
        generate_hadar(10, seed=0, profile=HadarProfile(trace_csv=str(tmp_path / "none.csv")))
