"""Summary metrics on hand-built tables whose answers are known."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from metrics_builders import build_jobs, build_ts

from schedlab.errors import ConfigError, InputError
from schedlab.metrics.catalogue import BY_KEY, HEADLINE_KEYS
from schedlab.metrics.summary import (
    DURATION_LABELS,
    SIZE_LABELS,
    duration_bucket,
    read_summary,
    size_bucket,
    summarize,
    write_summary,
)

IDLE_TS = build_ts([0.0], [0.0])


def test_jct_statistics_over_finished_jobs_only() -> None:
    jobs = build_jobs(
        submit_s=[0.0, 10.0, 20.0, 30.0],
        end_s=[10.0, 30.0, 80.0, np.nan],
        finished=[True, True, True, False],
    )
    summary = summarize(jobs, IDLE_TS, policy="fifo")
    assert summary["jobs"] == 4
    assert summary["finished"] == 3
    assert summary["unfinished"] == 1
    assert summary["jct_mean_s"] == pytest.approx(30.0)
    assert summary["jct_p50_s"] == pytest.approx(20.0)
    # linear interpolation between the order statistics 20 and 60
    assert summary["jct_p95_s"] == pytest.approx(20.0 + 0.9 * 40.0)
    assert summary["jct_p99_s"] == pytest.approx(20.0 + 0.98 * 40.0)


def test_queue_statistics_cover_all_jobs() -> None:
    jobs = build_jobs(
        queue_s=[0.0, 0.0, 30.0, 90.0],
        end_s=[10.0, 10.0, 10.0, np.nan],
        finished=[True, True, True, False],
    )
    summary = summarize(jobs, IDLE_TS, policy="fifo")
    assert summary["queue_mean_s"] == pytest.approx(30.0)
    assert summary["queue_p50_s"] == pytest.approx(15.0)
    assert summary["queue_p99_s"] == pytest.approx(30.0 + 0.97 * 60.0)
    assert summary["queued_jobs"] == 2


def test_slowdown_is_jct_over_work_and_skips_zero_work() -> None:
    jobs = build_jobs(
        submit_s=[0.0, 0.0, 0.0, 0.0],
        end_s=[20.0, 40.0, 5.0, np.nan],
        duration_s=[10.0, 10.0, 0.0, 10.0],
        finished=[True, True, True, False],
    )
    assert summarize(jobs, IDLE_TS, policy="p")["slowdown_mean"] == pytest.approx(3.0)


def test_makespan_and_preemptions() -> None:
    jobs = build_jobs(
        submit_s=[5.0, 10.0, 50.0],
        end_s=[20.0, 125.0, np.nan],
        finished=[True, True, False],
        preemptions=[1, 0, 2],
    )
    summary = summarize(jobs, IDLE_TS, policy="p")
    assert summary["makespan_s"] == pytest.approx(120.0)
    assert summary["preemptions"] == 3


def test_gpu_alloc_rate_run_is_time_weighted() -> None:
    ts = build_ts([0.0, 50.0, 100.0], [5.0, 10.0, 0.0])
    jobs = build_jobs(end_s=[100.0])
    assert summarize(jobs, ts, policy="p")["gpu_alloc_rate_run"] == pytest.approx(0.75)


def test_gpu_alloc_rate_run_last_row_lasts_until_last_job_end() -> None:
    ts = build_ts([0.0, 25.0], [5.0, 10.0])
    jobs = build_jobs(end_s=[100.0])
    # 25 s at 50 %, then 75 s at 100 %
    assert summarize(jobs, ts, policy="p")["gpu_alloc_rate_run"] == pytest.approx((25 * 0.5 + 75 * 1.0) / 100)


def test_gpu_alloc_rate_run_skips_intervals_without_gpus() -> None:
    ts = build_ts([0.0, 50.0, 100.0], [0.0, 4.0, 0.0], gpus_total=[0.0, 8.0, 8.0])
    jobs = build_jobs(end_s=[100.0])
    assert summarize(jobs, ts, policy="p")["gpu_alloc_rate_run"] == pytest.approx(0.5)


def test_gpu_alloc_rate_covers_the_arrival_window_only() -> None:
    ts = build_ts([0.0, 20.0, 50.0, 100.0], [0.0, 4.0, 8.0, 2.0])
    ts["gpus_busy[A]"], ts["gpus_total[A]"] = [0.0, 1.0, 1.0, 0.0], 2.0
    jobs = build_jobs(submit_s=[10.0, 60.0], end_s=[50.0, 200.0])
    summary = summarize(jobs, ts, policy="p")
    # arrivals 10..60: 10 s at 0 %, 30 s at 40 %, 10 s at 80 %
    assert summary["gpu_alloc_rate"] == pytest.approx((30 * 0.4 + 10 * 0.8) / 50)
    # whole run 0..200 (the last row lasts until the last job end)
    assert summary["gpu_alloc_rate_run"] == pytest.approx((30 * 0.4 + 50 * 0.8 + 100 * 0.2) / 200)
    # per model over the arrival window: 10 s at 0 %, 40 s at 50 %
    assert summary["gpu_alloc_rate_by_model"] == {"A": pytest.approx(40 * 0.5 / 50)}


def test_gpu_alloc_rate_window_stops_where_the_series_does() -> None:
    # the last job arrives after the run stopped (a horizon): the window ends at the series' end
    ts = build_ts([0.0, 20.0], [4.0, 8.0])
    jobs = build_jobs(submit_s=[10.0, 500.0], end_s=[100.0, np.nan], finished=[True, False])
    assert summarize(jobs, ts, policy="p")["gpu_alloc_rate"] == pytest.approx((10 * 0.4 + 80 * 0.8) / 90)


def test_gpu_alloc_rate_is_none_when_all_jobs_arrive_at_once() -> None:
    ts = build_ts([0.0, 50.0], [5.0, 10.0])
    summary = summarize(build_jobs(submit_s=[0.0, 0.0], end_s=[100.0, 100.0]), ts, policy="p")
    assert summary["gpu_alloc_rate"] is None
    assert summary["gpu_alloc_rate_run"] == pytest.approx(0.75)


def test_eviction_rate_is_evictions_over_runs() -> None:
    jobs = build_jobs(
        priority_class=["spot", "spot", "spot", "hp"],
        preemptions=[2, 1, 0, 4],
        first_start_s=[0.0, 1.0, np.nan, 0.0],
        end_s=[10.0, 10.0, np.nan, 10.0],
        finished=[True, True, False, True],
    )
    classes = summarize(jobs, IDLE_TS, policy="p")["classes"]
    # spot: 3 evictions; runs = 3 evictions + 2 jobs that started
    assert classes["spot"]["eviction_rate"] == pytest.approx(3 / 5)
    assert classes["spot"]["preemptions"] == 3
    assert classes["spot"]["jobs"] == 3
    assert classes["spot"]["finished"] == 2
    assert "eviction_rate" not in classes["hp"]
    custom = summarize(jobs, IDLE_TS, policy="p", evictable_classes=("hp",))["classes"]
    assert custom["hp"]["eviction_rate"] == pytest.approx(4 / 5)
    assert "eviction_rate" not in custom["spot"]


def test_class_statistics() -> None:
    jobs = build_jobs(
        priority_class=["a", "a", "b"],
        submit_s=[0.0, 0.0, 0.0],
        end_s=[10.0, 30.0, 7.0],
        queue_s=[1.0, 3.0, 5.0],
    )
    classes = summarize(jobs, IDLE_TS, policy="p")["classes"]
    assert set(classes) == {"a", "b"}
    assert classes["a"]["jct_mean_s"] == pytest.approx(20.0)
    assert classes["a"]["jct_p99_s"] == pytest.approx(10.0 + 0.99 * 20.0)
    assert classes["a"]["queue_mean_s"] == pytest.approx(2.0)
    assert classes["b"]["jct_mean_s"] == pytest.approx(7.0)


def test_single_default_class_is_listed() -> None:
    summary = summarize(build_jobs(end_s=[10.0, 20.0]), IDLE_TS, policy="p")
    assert list(summary["classes"]) == ["default"]
    assert summary["classes"]["default"]["jobs"] == 2


def test_tenant_breakdown() -> None:
    jobs = build_jobs(
        tenant=["x", "x", "y"],
        end_s=[10.0, np.nan, 40.0],
        finished=[True, False, True],
        queue_s=[2.0, 6.0, 1.0],
        gpu_seconds=[100.0, 50.0, 7.0],
    )
    tenants = summarize(jobs, IDLE_TS, policy="p")["tenants"]
    assert tenants["x"] == {"jobs": 2, "jct_mean_s": 10.0, "queue_mean_s": 4.0, "gpu_seconds": 150.0}
    assert tenants["y"] == {"jobs": 1, "jct_mean_s": 40.0, "queue_mean_s": 1.0, "gpu_seconds": 7.0}


def test_size_bucket_edges() -> None:
    gpus = np.array([0.25, 1, 1.5, 2, 4, 5, 8, 9, 32, 33, 1024, np.nan])
    labels = [SIZE_LABELS[code] if code >= 0 else None for code in size_bucket(gpus)]
    assert labels == ["<1", "1", "2-4", "2-4", "2-4", "5-8", "5-8", "9-32", "9-32", ">32", ">32", None]


def test_duration_bucket_edges() -> None:
    work = np.array([0.0, 899.0, 900.0, 21600.0, 21601.0, np.nan])
    labels = [DURATION_LABELS[code] if code >= 0 else None for code in duration_bucket(work)]
    assert labels == ["short", "short", "middle", "middle", "long", None]


def test_bucket_breakdowns_list_every_bucket() -> None:
    jobs = build_jobs(
        num_gpus=[1.0, 8.0, 8.0],
        duration_s=[60.0, 3600.0, 3600.0],
        submit_s=[0.0, 0.0, 0.0],
        end_s=[60.0, 4000.0, 5000.0],
    )
    summary = summarize(jobs, IDLE_TS, policy="p")
    assert list(summary["sizes"]) == list(SIZE_LABELS)
    assert summary["sizes"]["5-8"] == {"jobs": 2, "jct_mean_s": 4500.0, "queue_mean_s": 0.0}
    assert summary["sizes"]["1"]["jobs"] == 1
    assert summary["sizes"][">32"] == {"jobs": 0, "jct_mean_s": None, "queue_mean_s": None}
    assert list(summary["duration_buckets"]) == list(DURATION_LABELS)
    assert summary["duration_buckets"]["middle"]["jobs"] == 2
    assert summary["duration_buckets"]["short"]["jct_mean_s"] == pytest.approx(60.0)
    assert summary["duration_buckets"]["long"]["jobs"] == 0


def test_no_finished_jobs_gives_nulls() -> None:
    jobs = build_jobs(end_s=[np.nan, np.nan], finished=[False, False], first_start_s=[np.nan, np.nan])
    summary = summarize(jobs, build_ts([], []), policy="p")
    nulls = ("jct_mean_s", "jct_p50_s", "jct_p99_s", "slowdown_mean", "makespan_s", "gpu_alloc_rate",
             "gpu_alloc_rate_run")  # fmt: skip
    for key in nulls:
        assert summary[key] is None, key
    assert summary["finished"] == 0
    assert summary["queue_mean_s"] == 0.0


def test_empty_tables_give_nulls() -> None:
    jobs = build_jobs(end_s=[10.0]).iloc[:0]
    summary = summarize(jobs, build_ts([], []), policy="p")
    assert summary["jobs"] == 0
    assert summary["queue_mean_s"] is None
    assert summary["classes"] == {}
    assert summary["sizes"]["1"]["jobs"] == 0
    json.dumps(summary, allow_nan=False)


def test_summary_has_headline_keys_and_is_strict_json() -> None:
    jobs = build_jobs(end_s=[10.0, np.nan], finished=[True, False])
    summary = summarize(jobs, IDLE_TS, policy="p")
    assert set(HEADLINE_KEYS) <= set(summary)
    json.dumps(summary, allow_nan=False)


def test_summary_keys_are_catalogued_in_catalogue_order() -> None:
    jobs = build_jobs(end_s=[10.0, 20.0], priority_class=["hp", "spot"])
    summary = summarize(jobs, IDLE_TS, policy="p", extra={"placer": "best-fit", "sim_wall_s": 1.0})
    assert list(summary) == [key for key in BY_KEY if key in summary]
    assert [key for stats in summary["classes"].values() for key in stats if key not in BY_KEY] == []


def test_nan_becomes_null_in_json_round_trip(tmp_path) -> None:
    jobs = build_jobs(end_s=[np.nan], finished=[False])
    summary = summarize(jobs, IDLE_TS, policy="p", extra={"sim_wall_s": np.float64(1.5), "peak_rss_mb": math.nan})
    path = write_summary(tmp_path / "summary.json", {**summary, "nested": {"v": [math.inf, np.float32(2.0)]}})

    def reject(constant: str) -> None:
        raise AssertionError(f"non-standard JSON constant {constant}")

    loaded = json.loads(path.read_text(), parse_constant=reject)
    assert loaded["peak_rss_mb"] is None
    assert loaded["jct_mean_s"] is None
    assert loaded["sim_wall_s"] == 1.5
    assert loaded["nested"] == {"v": [None, 2.0]}
    assert read_summary(path) == loaded


def test_extra_keys_are_merged_and_may_not_clash() -> None:
    jobs = build_jobs(end_s=[10.0])
    summary = summarize(jobs, IDLE_TS, policy="p", extra={"placer": "best-fit", "workload": "philly"})
    assert summary["placer"] == "best-fit"
    assert summary["workload"] == "philly"
    with pytest.raises(ConfigError, match="jobs"):
        summarize(jobs, IDLE_TS, policy="p", extra={"jobs": 3})


def test_missing_column_names_the_field() -> None:
    jobs = build_jobs(end_s=[10.0]).drop(columns="queue_s")
    with pytest.raises(InputError) as info:
        summarize(jobs, IDLE_TS, policy="p")
    assert info.value.field == "queue_s"


def test_read_summary_reports_bad_json(tmp_path) -> None:
    path = tmp_path / "summary.json"
    path.write_text("{not json")
    with pytest.raises(InputError, match="summary.json"):
        read_summary(path)


def test_window_classes_count_only_jobs_submitted_inside_the_window() -> None:
    from schedlab.metrics.summary import window_classes

    jobs = build_jobs(
        priority_class=["spot", "spot", "spot"],
        submit_s=[0.0, 50.0, 200.0],
        first_start_s=[0.0, 60.0, 200.0],
        end_s=[10.0, 80.0, 210.0],
        queue_s=[0.0, 10.0, 0.0],
        preemptions=[5, 1, 0],
    )
    spot = window_classes(jobs, 40.0, 100.0)["spot"]
    assert spot["jobs"] == 1 and spot["queue_mean_s"] == pytest.approx(10.0)
    assert spot["jct_mean_s"] == pytest.approx(30.0)
    assert spot["eviction_rate"] == pytest.approx(1 / 2)  # the warm-up job's 5 evictions left out
