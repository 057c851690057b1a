"""Trace characterisation: table functions on hand-built workloads, the report files, the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from schedlab.analysis.characterize import characterize
from schedlab.analysis.tables import (
    NO_QUEUE_BASIS,
    QUEUE_BASIS,
    demand_buckets,
    duration_summary,
    final_state_gpu_time,
    final_states_by_demand,
    gpu_demand,
    gpu_seconds_per_bin,
    hourly_profile,
    monthly_trends,
    queue_over_time,
    queue_summary,
    running_intervals,
    top_user_share,
    user_gpu_time,
    user_queueing,
    vc_daily_usage,
    vc_queueing,
)
from schedlab.cli import app
from schedlab.cluster.presets import partitioned
from schedlab.errors import ConfigError
from schedlab.workload.loaders import load_trace
from schedlab.workload.schema import Workload, canonical_frame
from schedlab.workload.synthetic import generate

ALL_PNGS = {f"{k}.png" for k in ("hourly", "monthly", "vc_usage", "durations", "gpu_demand", "final_states",
                                 "user_gpu_time", "user_queueing", "vc_queueing", "queue_over_time")}  # fmt: skip


def _jobs(**columns: list) -> pd.DataFrame:
    """A canonical job table from column lists (job ids numbered)."""
    n = len(next(iter(columns.values())))
    return canonical_frame(pd.DataFrame({"job_id": [f"j{i}" for i in range(n)], **columns}), source="test")


def _workload(origin: str | None = "2024-01-01", **columns: list) -> Workload:
    return Workload(_jobs(**columns), source="test", origin=None if origin is None else pd.Timestamp(origin))


# ---------------------------------------------------------------- tables


def test_gpu_seconds_per_bin_splits_running_time_across_bins() -> None:
    start, end, gpus = np.array([0.0, 1800.0]), np.array([3600.0, 5400.0]), np.array([2.0, 1.0])
    used = gpu_seconds_per_bin(start, end, gpus, np.array([0.0, 3600.0, 7200.0]))
    np.testing.assert_allclose(used, [2 * 3600 + 1800, 1800])


def test_running_intervals_use_recorded_queueing_when_present() -> None:
    jobs = _jobs(submit_s=[0.0, 10.0], num_gpus=[1, 1], duration_s=[5.0, 5.0])
    start, end, recorded = running_intervals(jobs)
    assert not recorded and list(start) == [0, 10] and list(end) == [5, 15]
    jobs["queue_s"] = [3.0, np.nan]
    start, end, recorded = running_intervals(jobs)
    assert recorded and list(start) == [3, 10] and list(end) == [8, 15]


def test_hourly_profile_averages_over_days_on_the_wall_clock() -> None:
    # Origin 10:30; the submissions span 10:30 day 1 .. 10:30 day 2 = 25 clock-hour bins, hour 10 twice.
    jobs = _jobs(submit_s=[0.0, 600.0, 3600.0, 86400.0], num_gpus=[4, 1, 2, 1],
                 duration_s=[1800.0, 600.0, 3600.0, 7200.0])  # fmt: skip
    table = hourly_profile(jobs, pd.Timestamp("2024-01-01 10:30"), capacity_gpus=10)
    assert list(table.index) == list(range(24))
    assert table.loc[10, "submissions"] == pytest.approx(1.5)
    assert table.loc[11, "submissions"] == 1 and table.loc[12, "submissions"] == 0
    # Hour 10: 4x1800 + 1x600 on day 1 and 1x1800 on day 2 (the window ends at 11:00 on day 2).
    assert table.loc[10, "gpus_running"] == pytest.approx((7200 + 600 + 1800) / 3600 / 2)
    assert table.loc[11, "gpus_running"] == pytest.approx(1.0)
    assert table.loc[12, "utilisation"] == pytest.approx(0.1)
    assert table.loc[13, "gpus_running"] == 0


def test_monthly_trends_count_jobs_and_split_gpu_time_at_month_ends() -> None:
    jobs = _jobs(submit_s=[0.0, 86400.0, 30 * 86400.0], num_gpus=[1, 2, 1], duration_s=[86400.0, 3600.0, 60.0])
    table = monthly_trends(jobs, pd.Timestamp("2024-01-31 12:00"), capacity_gpus=2)
    assert list(table.index) == ["2024-01", "2024-02", "2024-03"]
    assert list(table["jobs"]) == [1, 1, 1] and list(table["multi_gpu_jobs"]) == [0, 1, 0]
    np.testing.assert_allclose(table["gpu_hours"], [12.0, 14.0, 1 / 60])
    assert table.loc["2024-01", "utilisation"] == pytest.approx(12.0 / (2 * 31 * 24))


def test_vc_daily_usage_as_shares_and_relative_to_vc_size() -> None:
    jobs = _jobs(submit_s=[0.0, 0.0, 86400.0], tenant=["a", "b", "a"], num_gpus=[2, 1, 1],
                 duration_s=[43200.0, 86400.0, 3600.0])  # fmt: skip
    shares = vc_daily_usage(jobs, None)
    assert list(shares.index) == ["day 0", "day 1"]
    assert shares.loc["day 0", "a"] == pytest.approx(0.5) and shares.loc["day 1", "a"] == pytest.approx(1.0)
    util = vc_daily_usage(jobs, pd.Timestamp("2024-01-01"), vc_gpus={"a": 4})
    assert list(util.columns) == ["a"] and list(util.index) == ["2024-01-01", "2024-01-02"]
    np.testing.assert_allclose(util["a"], [0.25, 1 / 96])


def test_duration_summary_splits_single_and_multi_gpu_jobs() -> None:
    table = duration_summary(_jobs(submit_s=[0.0] * 4, num_gpus=[1, 1, 0.5, 8], duration_s=[10.0, 20.0, 30.0, 100.0]))
    assert table.loc["all GPU jobs", "jobs"] == 4 and table.loc["single-GPU", "jobs"] == 3
    assert table.loc["single-GPU", "p50_s"] == 20 and table.loc["multi-GPU", "mean_s"] == 100


def test_gpu_demand_shares_by_jobs_and_by_gpu_time() -> None:
    table = gpu_demand(_jobs(submit_s=[0.0] * 4, num_gpus=[1, 1, 1, 4], duration_s=[100.0] * 4))
    assert list(table.index) == [1.0, 4.0]
    np.testing.assert_allclose(table["job_share"], [0.75, 0.25])
    np.testing.assert_allclose(table["gpu_time_share"], [3 / 7, 4 / 7])
    np.testing.assert_allclose(table["cum_gpu_time_share"], [3 / 7, 1.0])


def test_demand_buckets() -> None:
    got = demand_buckets(np.array([0.5, 1, 2, 3, 4, 5, 8, 9, 64, 65]))
    assert list(got) == ["<1", "1", "2", "3-4", "3-4", "5-8", "5-8", "9-16", "33-64", ">64"]


def test_final_state_shares_by_gpu_demand() -> None:
    jobs = _jobs(submit_s=[0.0] * 6, num_gpus=[1, 1, 1, 1, 8, 8], duration_s=[10.0] * 4 + [100.0] * 2,
                 final_state=["completed", "failed", "completed", "cancelled", "failed", "failed"])  # fmt: skip
    table = final_states_by_demand(jobs)
    assert list(table.index) == ["1", "5-8"]
    assert list(table.columns) == ["jobs", "completed", "cancelled", "failed"]
    assert list(table.loc["1"]) == [4, 0.5, 0.25, 0.25]
    assert list(table.loc["5-8"]) == [2, 0.0, 0.0, 1.0]
    by_time = final_state_gpu_time(jobs)  # GPU-seconds: completed 20, cancelled 10, failed 10 + 1600
    assert by_time["failed"] == pytest.approx(1610 / 1640) and by_time["completed"] == pytest.approx(20 / 1640)


def test_gpu_time_share_of_top_users() -> None:
    users = [f"u{i:02d}" for i in range(20)]
    jobs = _jobs(submit_s=[0.0] * 21, user=[*users, ""], num_gpus=[1] * 21,
                 duration_s=[100 * 3600.0] + [3600.0] * 19 + [1e6])  # fmt: skip
    table = user_gpu_time(jobs)  # the job without a user is left out
    assert len(table) == 20 and table.index[0] == "u00"
    assert top_user_share(table, 0.01) == pytest.approx(100 / 119)  # at least one user
    assert top_user_share(table, 0.05) == pytest.approx(100 / 119)  # 1 of 20
    assert top_user_share(table, 0.10) == pytest.approx(101 / 119)  # 2 of 20
    assert top_user_share(table, 1.0) == pytest.approx(1.0)


def test_user_queueing_needs_recorded_delays() -> None:
    jobs = _jobs(submit_s=[0.0] * 4, user=["a", "a", "b", "c"], num_gpus=[1] * 4, duration_s=[10.0] * 4)
    with pytest.raises(ConfigError, match="queueing"):
        user_queueing(jobs)
    jobs["queue_s"] = [10.0, 30.0, 60.0, np.nan]
    table = user_queueing(jobs)
    assert list(table.index) == ["b", "a"]  # c has no recorded delay
    assert table.loc["a", "mean_queue_s"] == 20 and table.loc["a", "share"] == pytest.approx(0.4)


def test_queue_summary_and_vc_queueing_by_hand() -> None:
    jobs = _jobs(submit_s=[0.0, 0.0, 0.0, 0.0, 0.0], tenant=["a", "a", "b", "b", "b"], num_gpus=[1] * 5,
                 duration_s=[100.0, 300.0, 10.0, 10.0, 40.0])  # fmt: skip
    with pytest.raises(ConfigError, match="queueing"):
        vc_queueing(jobs)
    jobs["queue_s"] = [0.0, 100.0, 30.0, 60.0, np.nan]
    overall = queue_summary(jobs)
    assert overall["jobs"] == 4 and overall["mean_queue_s"] == pytest.approx(47.5)
    assert overall["queued_share"] == pytest.approx(0.75)
    assert overall["queue_share_of_jct"] == pytest.approx(190 / (190 + 420))  # job 5 has no delay: left out
    table = vc_queueing(jobs)
    assert list(table.index) == ["a", "b"]  # by mean delay: a 50 s, b 45 s
    assert table.loc["a", "mean_queue_s"] == 50 and table.loc["a", "mean_duration_s"] == 200
    assert table.loc["b", "jobs"] == 2 and table.loc["b", "p50_queue_s"] == 45
    assert table.loc["a", "queued_share"] == 0.5 and table.loc["b", "queued_share"] == 1.0
    assert table.loc["b", "queue_share_of_jct"] == pytest.approx(90 / 110)


def test_queue_over_time_bins_by_day_or_hour() -> None:
    day = 86400.0
    jobs = _jobs(submit_s=[0.0, 100.0, day + 5, 3 * day], num_gpus=[1] * 4, duration_s=[10.0] * 4)
    jobs["queue_s"] = [0.0, 60.0, 30.0, 90.0]
    table = queue_over_time(jobs, pd.Timestamp("2024-01-01"))
    assert table.index.name == "day" and list(table.index) == ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]
    assert list(table["jobs"]) == [2, 1, 0, 1]
    assert table["mean_queue_s"].iloc[0] == 30 and table["queued_share"].iloc[0] == 0.5
    assert np.isnan(table["mean_queue_s"].iloc[2])  # a day without submissions
    hourly = queue_over_time(jobs.iloc[:2], None)
    assert hourly.index.name == "hour" and list(hourly.index) == ["hour 0"]


# ---------------------------------------------------------------- the report


def _images(html: str) -> set[str]:
    return set(re.findall(r'<img src="([^"]+)"', html))


def test_characterize_writes_every_plot_for_a_synthetic_venus_workload(tmp_path: Path) -> None:
    w = generate("venus", 3000, seed=3)
    w.jobs["queue_s"] = np.random.default_rng(0).exponential(600.0, len(w))
    cluster = partitioned({"vcJsw": 25, "vcvGl": 20}, name="two-vcs")
    paths = characterize(w, tmp_path, cluster=cluster)
    assert {p.name for p in paths} == ALL_PNGS | {"summary.json", "index.html"}
    assert all(p.stat().st_size > 0 for p in paths)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["running_basis"] == QUEUE_BASIS and summary["cluster_gpus"] == 360
    analyses = summary["analyses"]
    assert analyses["vc_usage"]["relative_to_size"] and set(analyses["vc_usage"]["median_by_vc"]) == {"vcJsw", "vcvGl"}
    assert 0 < analyses["user_gpu_time"]["top_5pct_users_gpu_time_share"] <= 1
    assert analyses["gpu_demand"]["single_gpu_job_share"] == pytest.approx((w.jobs["num_gpus"] == 1).mean())
    html = (tmp_path / "index.html").read_text()
    assert _images(html) == ALL_PNGS and "Skipped" not in html
    assert "GPU-time share of the top 5 % users" in html


def test_characterize_skips_what_the_trace_lacks_and_removes_stale_plots(tmp_path: Path) -> None:
    (tmp_path / "user_gpu_time.png").write_bytes(b"old")
    w = _workload(None, submit_s=[0.0, 50.0, 90.0], num_gpus=[1, 2, 8], duration_s=[10.0, 20.0, 30.0])
    w.skipped["cpu_job"] = 7
    paths = characterize(w, tmp_path)
    assert {p.name for p in paths} == {"durations.png", "gpu_demand.png", "summary.json", "index.html"}
    assert not (tmp_path / "user_gpu_time.png").exists()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["running_basis"] == NO_QUEUE_BASIS
    assert summary["analyses"]["durations"]["cpu_jobs_skipped"] == 7
    html = (tmp_path / "index.html").read_text()
    for note in ("no wall-clock dates", "1 tenant", "no final states", "no user column", "no queueing delay",
                 "skipped 7 CPU jobs"):  # fmt: skip
        assert note in html
    with pytest.raises(ConfigError, match="no jobs"):
        characterize(w.with_jobs(w.jobs.iloc[:0]), tmp_path)


@pytest.mark.shared_data
def test_characterize_the_pollux_philly_trace(shared_data: Path, tmp_path: Path) -> None:
    w = load_trace(shared_data / "pollux" / "simulator" / "traces" / "philly.csv", "pollux-philly")
    paths = characterize(w, tmp_path)
    pngs = {p.name for p in paths if p.suffix == ".png"}
    assert pngs == {"hourly.png", "monthly.png", "vc_usage.png", "durations.png", "gpu_demand.png"}
    analyses = json.loads((tmp_path / "summary.json").read_text())["analyses"]
    assert list(analyses["monthly"]["table"]) == ["2017-09", "2017-10", "2017-11", "2017-12"]
    assert analyses["gpu_demand"]["single_gpu_job_share"] == pytest.approx(0.9317, abs=1e-3)
    assert analyses["durations"]["table"]["all GPU jobs"]["p50_s"] == pytest.approx(1144, rel=0.01)
    assert analyses["vc_usage"]["vcs"] == 15
    assert _images((tmp_path / "index.html").read_text()) == pngs


def test_cli_characterize_end_to_end(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "char"
    result = runner.invoke(app, ["characterize", "--synthetic", "venus", "--jobs", "1500", "--cluster", "venus",
                                 "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (out / "index.html").is_file() and (out / "final_states.png").is_file()
    assert json.loads((out / "summary.json").read_text())["jobs"] == 1500
    for args in (["--out", str(out)], ["--synthetic", "venus", "--cluster", "nope", "--out", str(out)],
                 [str(tmp_path / "missing.csv"), "--format", "helios", "--out", str(out)]):  # fmt: skip
        bad = runner.invoke(app, ["characterize", *args])
        assert bad.exit_code == 2 and bad.output.count("error:") == 1, bad.output


@pytest.mark.parametrize("fmt", ["helios", "philly", "tiresias", "pollux-philly", "gfs", "pai", "openb", "elasticflow",
                                 "csv"])  # fmt: skip
def test_queue_views_on_every_loader(tmp_path: Path, fmt: str) -> None:
    from trace_samples import SAMPLES, write_sample

    w = load_trace(write_sample(fmt, tmp_path), fmt, **({"skip": ("cpu",)} if fmt == "csv" else {}))
    characterize(w, tmp_path / "out")
    analyses = json.loads((tmp_path / "out" / "summary.json").read_text())["analyses"]
    html = (tmp_path / "out" / "index.html").read_text()
    if not SAMPLES[fmt][2]:
        for key in ("vc_queueing", "queue_over_time"):
            assert analyses[key]["figure"] is None and "records no start times" in analyses[key]["text"]
            assert not (tmp_path / "out" / f"{key}.png").exists()
        return
    q = analyses["vc_queueing"]
    assert q["figure"] == "vc_queueing.png" and (tmp_path / "out" / "vc_queueing.png").stat().st_size > 0
    assert q["jobs"] == 3 and q["mean_queue_s"] == pytest.approx((5 + 30 + 5) / 3)  # every sample waits 5, 30, 5
    assert analyses["queue_over_time"]["figure"] == "queue_over_time.png"
    assert {"vc_queueing.png", "queue_over_time.png"} <= _images(html)
