"""Summary and comparison tables."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from schedlab.metrics.summary import HEADLINE_KEYS
from schedlab.metrics.tables import (
    BEST_STYLE,
    comparison_frame,
    comparison_table,
    format_seconds,
    format_value,
    summary_table,
)


def _summary(policy: str, jct: float, alloc: float, classes: dict | None = None, **extra: object) -> dict:
    summary = {key: 0 for key in HEADLINE_KEYS}
    summary.update(policy=policy, jobs=10, jct_mean_s=jct, gpu_alloc_rate=alloc, makespan_s=None)
    summary["classes"] = classes if classes is not None else {"default": {"jobs": 10}}
    summary["tenants"] = {"t": {"jobs": 10}}
    summary.update(extra)
    return summary


def _render(table: Table) -> str:
    console = Console(file=io.StringIO(), width=220, color_system=None)
    console.print(table)
    return console.file.getvalue()


def _column_cells(table: Table, header: str) -> list[str]:
    column = next(column for column in table.columns if column.header == header)
    return [str(cell) for cell in column.cells]


def test_format_seconds_picks_a_readable_unit() -> None:
    assert format_seconds(42.0) == "42.0 s"
    assert format_seconds(600.0) == "10.0 min"
    assert format_seconds(3 * 3600.0) == "3.00 h"
    assert format_seconds(3 * 86400.0) == "3.00 d"


def test_format_value_by_key() -> None:
    assert format_value("gpu_alloc_rate", 0.755) == "75.5%"
    assert format_value("jobs", 12345) == "12,345"
    assert format_value("jct_mean_s", None) == "-"
    assert format_value("slowdown_mean", 2.345) == "2.35"
    assert format_value("policy", "fifo") == "fifo"


def test_summary_table_shows_headline_and_class_rows() -> None:
    classes = {
        "hp": {"jobs": 4, "finished": 4, "jct_mean_s": 60.0, "jct_p99_s": 90.0, "queue_mean_s": 1.0, "preemptions": 0},
        "spot": {
            "jobs": 6,
            "finished": 5,
            "jct_mean_s": 600.0,
            "jct_p99_s": 900.0,
            "queue_mean_s": 30.0,
            "preemptions": 3,
            "eviction_rate": 0.25,
        },
    }
    text = _render(summary_table(_summary("fifo", 7200.0, 0.5, classes)))
    assert "fifo" in text
    assert "JCT mean" in text and "2.00 h" in text
    assert "GPU allocation" in text and "50.0%" in text
    assert "class hp" in text and "class spot" in text
    assert "eviction rate 25.0%" in text


def test_summary_table_omits_class_rows_for_a_single_class() -> None:
    assert "class default" not in _render(summary_table(_summary("fifo", 10.0, 0.5)))


def test_comparison_frame_one_row_per_policy() -> None:
    frame = comparison_frame(
        [_summary("fifo", 100.0, 0.5, sim_wall_s=3.0), _summary("sjf", 50.0, 0.7, sim_wall_s=4.0, placer="bf")]
    )
    assert list(frame["policy"]) == ["fifo", "sjf"]
    assert list(frame.columns[: len(HEADLINE_KEYS)]) == list(HEADLINE_KEYS)
    assert list(frame.columns[len(HEADLINE_KEYS) :]) == ["sim_wall_s", "placer"]
    assert list(frame["jct_mean_s"]) == [100.0, 50.0]
    assert frame["placer"].isna().tolist() == [True, False]
    assert "classes" not in frame.columns and "tenants" not in frame.columns


def test_comparison_table_highlights_best_per_column() -> None:
    frame = comparison_frame([_summary("fifo", 100.0, 0.5), _summary("sjf", 50.0, 0.7), _summary("las", 80.0, 0.7)])
    table = comparison_table(frame)
    jct = _column_cells(table, "JCT mean")
    alloc = _column_cells(table, "GPU allocation")
    assert [BEST_STYLE in cell for cell in jct] == [False, True, False]
    assert [BEST_STYLE in cell for cell in alloc] == [False, True, True]
    # ties everywhere and unranked columns are not highlighted
    assert not any(BEST_STYLE in cell for cell in _column_cells(table, "jobs"))
    assert not any(BEST_STYLE in cell for cell in _column_cells(table, "policy"))
    assert not any(BEST_STYLE in cell for cell in _column_cells(table, "makespan"))
