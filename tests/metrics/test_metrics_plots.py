"""Plots and the report of run and comparison directories."""

from __future__ import annotations

import numpy as np
import pytest

from schedlab.errors import InputError
from schedlab.metrics.plots import (
    RUN_FILES,
    cdf_points,
    load_run,
    plot_jct_cdf,
    report,
    resample_step,
)

PNGS = ("jct_cdf.png", "queue_length.png", "gpu_allocation.png", "queue_cdf.png")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _assert_pngs(written, directory) -> None:
    assert sorted(path.name for path in written) == sorted(PNGS)
    for name in PNGS:
        path = directory / name
        assert path.read_bytes()[:8] == PNG_SIGNATURE, name


def test_report_single_run(tmp_path, write_run) -> None:
    run_dir = write_run(tmp_path / "run", "fifo")
    _assert_pngs(report(run_dir), run_dir)


def test_report_comparison_directory(tmp_path, write_run) -> None:
    write_run(tmp_path / "fifo", "fifo")
    write_run(tmp_path / "sjf", "sjf", slowness=0.5)
    (tmp_path / "comparison.csv").write_text("policy\nfifo\nsjf\n")
    _assert_pngs(report(tmp_path), tmp_path)
    assert not (tmp_path / "fifo" / "jct_cdf.png").exists()


def test_jct_cdf_draws_one_line_per_policy(tmp_path, write_run) -> None:
    runs = [load_run(write_run(tmp_path / name, name), label=name) for name in ("fifo", "sjf")]
    axes = plot_jct_cdf(runs).axes[0]
    assert axes.get_legend_handles_labels()[1] == ["fifo", "sjf"]
    assert axes.get_xscale() == "log"
    assert "s" in axes.get_xlabel()


@pytest.mark.parametrize("missing", RUN_FILES)
def test_run_directory_missing_a_file_names_it(tmp_path, write_run, missing) -> None:
    run_dir = write_run(tmp_path / "run", "fifo")
    (run_dir / missing).unlink()
    with pytest.raises(InputError, match=missing) as info:
        report(run_dir)
    assert info.value.file.endswith(missing)


def test_comparison_run_missing_jobs_names_it(tmp_path, write_run) -> None:
    write_run(tmp_path / "fifo", "fifo")
    (write_run(tmp_path / "sjf", "sjf") / "jobs.parquet").unlink()
    with pytest.raises(InputError, match=r"sjf.jobs\.parquet"):
        report(tmp_path)


def test_empty_directory_is_not_a_run(tmp_path) -> None:
    with pytest.raises(InputError, match="jobs.parquet"):
        report(tmp_path)


def test_cdf_points_count_zeros_in_the_fractions() -> None:
    x, y = cdf_points(np.array([20.0, 0.0, np.nan, 10.0, 0.0]), total=4)
    assert x.tolist() == [10.0, 20.0]
    assert y.tolist() == [0.75, 1.0]


def test_cdf_points_thin_long_inputs() -> None:
    x, y = cdf_points(np.arange(1, 10_001, dtype=float), total=10_000, points=100)
    assert x.size <= 100
    assert x[0] == 1.0 and x[-1] == 10_000.0 and y[-1] == 1.0


def test_resample_step_time_weighted_bin_means() -> None:
    edges, means = resample_step(np.array([0.0, 30.0, 60.0, 90.0]), np.array([1.0, 2.0, 3.0, 4.0]), 100.0, points=2)
    assert edges.tolist() == [0.0, 50.0, 100.0]
    # [0, 50): 30 s at 1, 20 s at 2; [50, 100): 10 s at 2, 30 s at 3, 10 s at 4
    assert means == pytest.approx([70 / 50, 150 / 50])


def test_resample_step_keeps_short_series() -> None:
    edges, values = resample_step(np.array([0.0, 10.0]), np.array([1.0, 2.0]), 25.0, points=5)
    assert edges.tolist() == [0.0, 10.0, 25.0]
    assert values.tolist() == [1.0, 2.0]
