"""A plain run (synthetic workload, built-in cluster, a policy without a predictor) is built,
simulated, summarised and written from columns: it never imports pandas, and every step gives
what the DataFrame path gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedlab.cluster.presets import load_cluster
from schedlab.experiments.run import RunSpec, WorkloadSpec, build_run, execute
from schedlab.metrics import summarize
from schedlab.policies.registry import make_policy
from schedlab.sim.engine import Simulation
from schedlab.workload.schema import COLUMNS, FLOAT_COLUMNS, STR_COLUMNS, Workload, canonical_frame
from schedlab.workload.synthetic import generate


def test_a_plain_simulate_never_imports_pandas_nor_pyarrow_compute(tmp_path: Path) -> None:
    code = f"""
import sys
from schedlab.cli import app
app(["simulate", "--synthetic", "simple", "--jobs", "100", "--policy", "fifo", "--no-progress",
     "--out", {str(tmp_path / "run")!r}], standalone_mode=False)
print("pandas" in sys.modules, "pyarrow.compute" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False False"
    jobs = pd.read_parquet(tmp_path / "run" / "jobs.parquet")
    assert len(jobs) == 100 and jobs["finished"].all()


def test_the_generated_columns_make_the_canonical_frame() -> None:
    w = generate("venus", 400, seed=3)
    frame = w.jobs
    assert list(frame.columns) == list(COLUMNS)
    assert all(str(frame[c].dtype) == "str" for c in STR_COLUMNS)
    assert all(frame[c].dtype == np.float64 for c in FLOAT_COLUMNS)
    pd.testing.assert_frame_equal(frame, canonical_frame(frame, source="again"))


@pytest.mark.parametrize("policy", ["fifo", "tiresias", "srtf"])
def test_columns_and_frame_workloads_simulate_alike(policy: str) -> None:
    w = generate("venus", 600, seed=5)
    from_frame = Workload(w.jobs.copy(), w.source, w.origin)
    cluster = load_cluster("venus")
    results = []
    for workload in (w, from_frame):
        sim = Simulation(workload, cluster, make_policy(policy, placer=None, rng=np.random.default_rng(0)), seed=0)
        results.append(sim.run())
    pd.testing.assert_frame_equal(results[0].jobs, results[1].jobs)
    pd.testing.assert_frame_equal(results[0].timeseries, results[1].timeseries)


def test_a_run_summarised_from_columns_equals_its_summary_from_frames() -> None:
    spec = RunSpec(WorkloadSpec(synthetic="venus", jobs=800, seed=2), cluster=None, policy="tiresias")
    result, summary = execute(build_run(spec))
    again = summarize(result.jobs, result.timeseries, policy="tiresias", extra={k: summary[k] for k in summary
                      if k not in summarize(result.job_columns, result.series_columns, policy="tiresias")})  # fmt: skip
    assert again == summary
    assert summary["tenants"] and summary["classes"] and summary["finished"] == 800


def test_a_workload_needs_exactly_one_table() -> None:
    frame = generate("simple", 10, seed=0).jobs
    with pytest.raises(TypeError):
        Workload(source="x")
    with pytest.raises(TypeError):
        Workload(frame, "x", columns={c: frame[c].to_numpy() for c in COLUMNS})


def test_once_built_the_frame_is_the_table() -> None:
    w = generate("simple", 50, seed=1)
    assert w.column("duration_s")[0] > 0
    w.jobs["duration_s"] = 7.0  # an edit to the DataFrame is what the engine reads
    assert w.column("duration_s").tolist() == [7.0] * 50
    assert w.rows("job_id", 0, 2) == ["simple-0", "simple-1"]
