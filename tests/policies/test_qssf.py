"""QSSF (Helios §4.2): queues ordered by predicted GPU time, warm-started on history."""

from __future__ import annotations

import json

import numpy as np
import pytest
from simkit import ZERO_COST, Checked, by_id, cluster, job, simulate, workload
from typer.testing import CliRunner

from schedlab.cli import app
from schedlab.errors import ConfigError
from schedlab.experiments.run import RunSpec, WorkloadSpec, simulate_run
from schedlab.policies.common.placers import Consolidate
from schedlab.policies.helios.qssf import QSSF
from schedlab.policies.registry import POLICIES, PolicyOptions, make_policy

# Past jobs, all finished by t=1000: "slow" runs long 1-GPU jobs, "quick" short 2-GPU ones,
# "wide" 2-GPU jobs of 300 s (600 GPU-s), "narrow" 1-GPU jobs of 500 s (500 GPU-s).
HISTORY = workload([
    job("h1", 0, 1, 900.0, user="slow", name="long_train"),
    job("h2", 10, 2, 10.0, user="quick", name="tiny_eval"),
    job("h3", 20, 2, 300.0, user="wide", name="mid"),
    job("h4", 30, 1, 500.0, user="narrow", name="mid"),
])  # fmt: skip


def qssf(rows: list[dict]) -> Checked:
    return Checked(QSSF(Consolidate(), submissions=workload(rows).jobs, history=HISTORY))


def test_qssf_starts_the_job_with_the_least_predicted_gpu_time_not_the_first_submitted() -> None:
    rows = [job("blocker", 1000, 2, 100.0), job("a", 1001, 1, 900.0, user="slow", name="long_train"),
            job("b", 1002, 2, 10.0, user="quick", name="tiny_eval")]  # fmt: skip
    out = by_id(simulate(rows, cluster([2]), qssf(rows), ZERO_COST))
    assert out.loc["b", "first_start_s"] == 1100.0
    assert out.loc["a", "first_start_s"] == 1110.0
    fifo = by_id(simulate(rows, cluster([2]), Checked(make_policy("fifo", rng=np.random.default_rng(0)))))
    assert fifo.loc["a", "first_start_s"] == 1100.0  # the scenario separates QSSF from FIFO


def test_priority_is_gpu_demand_times_predicted_duration() -> None:
    rows = [job("blocker", 1000, 2, 100.0), job("wide", 1001, 2, 300.0, user="wide", name="mid"),
            job("narrow", 1002, 1, 500.0, user="narrow", name="mid")]  # fmt: skip
    out = by_id(simulate(rows, cluster([2]), qssf(rows), ZERO_COST))
    assert out.loc["narrow", "first_start_s"] == 1100.0  # 500 GPU-s before 600, though it runs longer
    assert out.loc["wide", "first_start_s"] == 1600.0


def test_qssf_blocks_at_the_head_of_its_queue() -> None:
    rows = [job("blocker", 1000, 1, 100.0), job("b", 1002, 2, 10.0, user="quick", name="tiny_eval"),
            job("a", 1003, 1, 900.0, user="slow", name="long_train")]  # fmt: skip
    out = by_id(simulate(rows, cluster([2]), qssf(rows), ZERO_COST))
    assert out.loc["a", "first_start_s"] == 1110.0  # one GPU was free, but "b" heads the queue


def test_registry_passes_options_and_refuses_bad_ones() -> None:
    submissions = HISTORY.jobs
    policy = make_policy("qssf", rng=np.random.default_rng(0),
                         params=POLICIES["qssf"].parse({"rolling_weight": "0.5", "refit_every_s": 3600}),
                         options=PolicyOptions(history=HISTORY, seed=3, submissions=submissions))  # fmt: skip
    assert isinstance(policy, QSSF) and policy.refit_every_s == 3600 and policy.settings.rolling_weight == 0.5
    with pytest.raises(ConfigError, match="rolling_weight"):
        POLICIES["qssf"].parse({"rolling_weight": 2})
    with pytest.raises(ConfigError, match="has no parameters"):
        POLICIES["fifo"].parse({"x": 1})


def test_simulate_run_with_a_split_reports_the_predictor() -> None:
    spec = RunSpec(WorkloadSpec(synthetic="venus", jobs=700, seed=2, train_until_s=86400.0), "uniform:16x8", "qssf")
    summary = simulate_run(spec, None)
    block = summary["predictor"]
    assert summary["history_jobs"] > 0 and block["names_used"] is True and block["jobs"] == summary["jobs"]
    assert block["mae_s"] > 0 and -1 <= block["spearman_gpu_time"] <= 1


def test_cli_compare_with_train_until(tmp_path) -> None:
    args = ["compare", "--synthetic", "venus", "--jobs", "500", "--cluster", "uniform:16x8", "--train-until", "24",
            "-p", "fifo", "-p", "qssf", "-j", "1", "--out", str(tmp_path)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    fifo = json.loads((tmp_path / "fifo" / "summary.json").read_text())
    qssf_summary = json.loads((tmp_path / "qssf" / "summary.json").read_text())
    assert fifo["jobs"] == qssf_summary["jobs"] and "predictor" in qssf_summary and "predictor" not in fifo
