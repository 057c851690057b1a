"""Summary and comparison tables: units in the labels, best values highlighted, and layouts
that fit the console without cutting any value."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from schedlab.metrics.catalogue import HEADLINE_KEYS, SUMMARY_KEYS
from schedlab.metrics.tables import (
    BEST_STYLE,
    breakdown_table,
    comparison_frame,
    comparison_table,
    comparison_view,
    format_seconds,
    format_value,
    metrics_table,
    summary_table,
)

# the CLI's TABLE_COLUMNS before it switched to passing the whole frame
CLI_COLUMNS = ["policy", "finished", "jct_mean_s", "jct_p50_s", "jct_p99_s", "queue_mean_s", "makespan_s",
               "gpu_alloc_rate", "preemptions", "sim_wall_s"]  # fmt: skip
POLICIES = ("fifo", "fifo-backfill", "sjf-backfill", "tiresias", "yarn-cs-preempt")


def _summary(policy: str, jct: float, alloc: float, classes: dict | None = None, **extra: object) -> dict:
    summary = {key: 0 for key in HEADLINE_KEYS}
    summary.update(policy=policy, jobs=10, jct_mean_s=jct, gpu_alloc_rate=alloc, makespan_s=None)
    summary["classes"] = classes if classes is not None else {"default": {"jobs": 10}}
    summary["tenants"] = {"t": {"jobs": 10}}
    summary.update(extra)
    return summary


def _five_policies() -> list[dict]:
    """Large and small values: JCT means of 15 h, 2 h, 25 h ...; queueing of 5 s to 10 h."""
    jct = (54_000.0, 7_200.0, 90_000.0, 36_000.0, 18_000.0)
    queue = (5.0, 36_000.0, 1_800.0, 720.0, 0.0)
    return [
        _summary(p, j, 0.8 - i / 10, finished=152_345 - i, queue_mean_s=q, jct_p99_s=40 * 86400.0,
                 preemptions=1_234 * i, makespan_s=45 * 86400.0, sim_wall_s=1.5 + i)
        for i, (p, j, q) in enumerate(zip(POLICIES, jct, queue))
    ]  # fmt: skip


def _render(renderable: object, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), force_terminal=False)
    console.print(renderable)
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
    assert format_value("gpu_alloc_rate_run", 0.25) == "25.0%"
    assert format_value("jobs", 12345) == "12,345"
    assert format_value("jct_mean_s", None) == "-"
    assert format_value("slowdown_mean", 2.345) == "2.35"
    assert format_value("policy", "fifo") == "fifo"


def test_summary_table_lists_every_headline_metric() -> None:
    assert sorted(SUMMARY_KEYS) == sorted(HEADLINE_KEYS[1:])


def test_summary_table_names_units_and_shows_a_class_block() -> None:
    classes = {
        "hp": {"jobs": 4, "finished": 4, "jct_mean_s": 60.0, "jct_p99_s": 90.0, "queue_mean_s": 1.0, "preemptions": 0},
        "spot": {"jobs": 6, "finished": 5, "jct_mean_s": 600.0, "jct_p99_s": 900.0, "queue_mean_s": 30.0,
                 "preemptions": 3, "eviction_rate": 0.25},
    }  # fmt: skip
    summary = _summary("fifo", 7200.0, 0.5, classes, gpu_alloc_rate_run=0.125)
    text = _render(summary_table(summary), 60)
    lines = text.splitlines()
    assert "schedlab run: fifo" in text
    assert any(line.split() == ["JCT", "mean", "(h)", "2"] for line in lines)
    assert any(line.split() == ["GPU", "alloc", "(%)", "50"] for line in lines)
    assert any(line.split() == ["GPU", "alloc,", "whole", "run", "(%)", "12.5"] for line in lines)
    assert "by priority class" in text
    assert any(line.split() == ["hp", "spot"] for line in lines)
    assert any(line.split() == ["JCT", "mean", "(min)", "1", "10"] for line in lines)
    assert any(line.split() == ["eviction", "rate", "(%)", "-", "25"] for line in lines)
    assert "…" not in text and max(map(len, lines)) <= 60


def test_summary_table_has_no_class_block_for_a_single_class() -> None:
    assert "priority class" not in _render(summary_table(_summary("fifo", 10.0, 0.5)), 80)


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


def test_wide_comparison_is_one_row_per_policy_with_the_best_highlighted() -> None:
    frame = comparison_frame([_summary("fifo", 100.0, 0.5), _summary("sjf", 50.0, 0.7), _summary("las", 80.0, 0.7)])
    [table] = comparison_view(frame, 200)
    assert [str(column.header) for column in table.columns] == [
        "policy", "finished", "JCT mean\n(s)", "JCT p99\n(s)", "queue mean\n(s)", "GPU alloc\n(%)", "preemptions",
        "makespan\n(s)",
    ]  # fmt: skip
    assert _column_cells(table, "policy") == ["fifo", "sjf", "las"]
    jct = _column_cells(table, "JCT mean\n(s)")
    alloc = _column_cells(table, "GPU alloc\n(%)")
    assert [BEST_STYLE in cell for cell in jct] == [False, True, False]
    assert [BEST_STYLE in cell for cell in alloc] == [False, True, True]
    assert "70" in alloc[1]
    # ties everywhere and unranked columns are not highlighted
    assert not any(BEST_STYLE in cell for cell in _column_cells(table, "finished"))
    assert not any(BEST_STYLE in cell for cell in _column_cells(table, "policy"))


def test_comparison_picks_one_unit_per_metric_from_its_largest_value() -> None:
    frame = comparison_frame(_five_policies())
    text = _render(comparison_table(frame), 200)
    lines = text.splitlines()
    row = next(line.split() for line in lines if line.startswith("tiresias"))
    # finished, JCT mean (h), JCT p99 (d), queue mean (h), GPU alloc (%), preemptions, makespan (d), sim wall (s)
    assert row == ["tiresias", "152,342", "10", "40", "0.2", "50", "3,702", "45", "4.5"]
    fifo = next(line.split() for line in lines if line.startswith("fifo "))
    assert fifo[4] == "0.00139"  # 5 s of queueing in hours
    assert "JCT mean" in text and "(h)" in text and "(d)" in text


@pytest.mark.parametrize("width", [80, 60])
def test_narrow_comparison_turns_to_metric_rows_and_cuts_nothing(width: int) -> None:
    frame = comparison_frame(_five_policies())
    text = _render(comparison_table(frame), width)
    lines = text.splitlines()
    assert "…" not in text and max(map(len, lines)) <= width
    heads = [line.split() for line in lines if line.split() and set(line.split()) <= set(POLICIES)]
    assert [name for head in heads for name in head] == list(POLICIES)
    assert len(heads) == (1 if width == 80 else 2)
    finished = [v for line in lines if line.startswith("finished") for v in line.split()[1:]]
    assert finished == ["152,345", "152,344", "152,343", "152,342", "152,341"]
    jct = [v for line in lines if line.startswith("JCT mean (h)") for v in line.split()[3:]]
    assert jct == ["15", "2", "25", "10", "5"]
    assert "GPU alloc: share of GPUs allocated from the first to the last job" in " ".join(text.split())


def test_comparison_table_takes_the_old_cli_subset() -> None:
    frame = comparison_frame(_five_policies())
    text = _render(comparison_table(frame[CLI_COLUMNS]), 80)
    assert "…" not in text
    assert all(name in text for name in POLICIES)
    assert "JCT p99 (d)" in text and "sim wall (s)" in text


def test_breakdown_table_units_in_headers_and_tenants_by_jobs() -> None:
    summary = {"tenants": {f"t{i}": {"jobs": i, "jct_mean_s": 3600.0 * i, "queue_mean_s": 60.0} for i in range(1, 5)}}
    table = breakdown_table(summary, "tenants", title="by tenant", limit=3)
    assert _column_cells(table, "") == ["t4", "t3", "t2"]
    assert _column_cells(table, "JCT mean\n(h)") == ["4", "3", "2"]
    assert _column_cells(table, "queue mean\n(s)") == ["60", "60", "60"]
    assert table.caption == "1 more in summary.json"


def test_metrics_table_rows_when_they_fit_else_metric_rows() -> None:
    rows = {
        "CES": {"node utilisation after (%)": 86.94, "wake-ups per day": 12.0, "energy saved (kWh)": 15234.5},
        "vanilla DRS": {"node utilisation after (%)": 94.6, "wake-ups per day": None, "energy saved (kWh)": 0.00042},
    }
    wide = _render(metrics_table(rows, "CES replay"), 200).splitlines()
    row = next(line.split() for line in wide if line.startswith("vanilla"))
    assert row == ["vanilla", "DRS", "94.6", "-", "<0.001"]
    narrow = _render(metrics_table(rows, "CES replay"), 50)
    lines = narrow.splitlines()
    assert "…" not in narrow and max(map(len, lines)) <= 50
    assert any(line.split() == ["node", "utilisation", "after", "(%)", "86.9", "94.6"] for line in lines)
    assert any(line.split() == ["energy", "saved", "(kWh)", "15,234", "<0.001"] for line in lines)
