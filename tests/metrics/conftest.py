"""Fixtures of the metrics tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from metrics_builders import build_jobs, build_ts

from schedlab.metrics.summary import summarize, write_summary


@pytest.fixture
def write_run() -> Callable[[Path, str, float], Path]:
    """Write a small complete run directory (jobs, time series, summary) for one policy."""

    def write(run_dir: Path, policy: str, slowness: float = 1.0) -> Path:
        run_dir.mkdir(parents=True, exist_ok=True)
        jobs = build_jobs(
            submit_s=[0.0, 5.0, 10.0, 20.0],
            end_s=[10.0 * slowness, 40.0 * slowness, 300.0 * slowness, np.nan],
            finished=[True, True, True, False],
            queue_s=[0.0, 5.0, 50.0, 100.0],
        )
        ts = build_ts([0.0, 10.0, 200.0], [4.0, 10.0, 0.0], pending_jobs=[0, 2, 1])
        jobs.to_parquet(run_dir / "jobs.parquet")
        ts.to_parquet(run_dir / "timeseries.parquet")
        write_summary(run_dir / "summary.json", summarize(jobs, ts, policy=policy))
        return run_dir

    return write
