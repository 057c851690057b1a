"""The Hadar §IV-A workload: categories by GPU-hours, Table II models, all jobs at time 0."""

from __future__ import annotations

import pytest

from schedlab.errors import ConfigError
from schedlab.sim.throughputs import GAVEL_BUILTIN
from schedlab.workload.hadar import CATEGORIES, HadarProfile, generate_hadar


def test_jobs_follow_their_category(shared_data):
    profile = HadarProfile(distribution_csv=str(shared_data / "gavel" / "philly_job_distribution.csv"))
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
        generate_hadar(10, seed=0, profile=HadarProfile(distribution_csv=str(tmp_path / "none.csv")))
