"""``schedlab compare`` adds a per-class table when the jobs have several priority classes."""

from __future__ import annotations

from typer.testing import CliRunner

from schedlab.cli import _class_rows, app


def test_per_class_rows_only_with_several_classes() -> None:
    two = {"policy": "a", "classes": {"hp": {"queue_mean_s": 1.0, "jct_mean_s": 10.0},
                                      "spot": {"queue_mean_s": 5.0, "jct_mean_s": 20.0, "eviction_rate": 0.25}}}  # fmt: skip
    assert _class_rows([two]) == {"a": {"hp JQT (s)": 1.0, "hp JCT (s)": 10.0, "spot JQT (s)": 5.0,
                                        "spot JCT (s)": 20.0, "spot evicted (%)": 25.0}}  # fmt: skip
    one = {"policy": "b", "classes": {"default": {"queue_mean_s": 1.0, "jct_mean_s": 10.0}}}
    assert _class_rows([one]) == {}


def test_compare_prints_the_class_table_for_a_spot_workload() -> None:
    runner = CliRunner()
    spot = runner.invoke(app, ["compare", "--synthetic", "gfs-a100", "--jobs", "150", "-p", "yarn-cs-preempt",
                               "-p", "fgd", "--no-progress", "-j", "1"], env={"COLUMNS": "160"})  # fmt: skip
    assert spot.exit_code == 0, spot.output
    assert "per priority class" in spot.output and "spot evicted (%)" in spot.output
    plain = runner.invoke(app, ["compare", "--synthetic", "simple", "--jobs", "30", "-p", "fifo", "-p", "sjf",
                                "--no-progress", "-j", "1"])  # fmt: skip
    assert plain.exit_code == 0, plain.output
    assert "per priority class" not in plain.output
