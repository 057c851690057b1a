"""Readable tables of run summaries: one run's headline, and a policy comparison."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from rich.table import Table

from schedlab.metrics.summary import HEADLINE_KEYS

LOWER_IS_BETTER = frozenset(
    {
        "unfinished",
        "jct_mean_s",
        "jct_p50_s",
        "jct_p95_s",
        "jct_p99_s",
        "queue_mean_s",
        "queue_p50_s",
        "queue_p99_s",
        "queued_jobs",
        "slowdown_mean",
        "makespan_s",
        "preemptions",
        "sim_wall_s",
        "peak_rss_mb",
    }
)
HIGHER_IS_BETTER = frozenset({"finished", "gpu_alloc_rate"})

LABELS = {
    "policy": "policy",
    "jobs": "jobs",
    "finished": "finished",
    "unfinished": "unfinished",
    "jct_mean_s": "JCT mean",
    "jct_p50_s": "JCT p50",
    "jct_p95_s": "JCT p95",
    "jct_p99_s": "JCT p99",
    "queue_mean_s": "queue mean",
    "queue_p50_s": "queue p50",
    "queue_p99_s": "queue p99",
    "queued_jobs": "jobs that queued",
    "slowdown_mean": "slowdown mean",
    "makespan_s": "makespan",
    "gpu_alloc_rate": "GPU allocation",
    "preemptions": "preemptions",
    "sim_wall_s": "sim wall time",
    "peak_rss_mb": "peak RSS (MB)",
}
BEST_STYLE = "bold green"


def format_seconds(seconds: float) -> str:
    """A duration in the largest unit that keeps it readable: s, min, h or d."""
    magnitude = abs(seconds)
    if magnitude < 120:
        return f"{seconds:.1f} s"
    if magnitude < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    if magnitude < 2 * 86400:
        return f"{seconds / 3600:.2f} h"
    return f"{seconds / 86400:.2f} d"


def format_value(key: str, value: Any) -> str:
    """One metric value as text, by the unit its key names."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return str(value)
    if key.endswith("_s"):
        return format_seconds(float(value))
    if key.endswith("_rate"):
        return f"{float(value):.1%}"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{float(value):,.2f}"


def summary_table(summary: Mapping[str, Any]) -> Table:
    """Headline metrics of one run, then one row per priority class when there are several."""
    table = Table(title=f"schedlab run: {summary.get('policy', '?')}", show_header=True)
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right")
    for key in HEADLINE_KEYS[1:]:
        if key in summary:
            table.add_row(LABELS[key], format_value(key, summary[key]))
    classes = summary.get("classes") or {}
    if len(classes) > 1:
        table.add_section()
        for name, stats in classes.items():
            table.add_row(f"class {name}", _class_line(stats))
    return table


def breakdown_table(summary: Mapping[str, Any], key: str, *, title: str, limit: int = 12) -> Table:
    """Per-tenant (``tenants``) or per-size (``sizes``, ``duration_buckets``) rows of a summary;
    tenants are listed by job count, the first ``limit`` of them."""
    rows = list((summary.get(key) or {}).items())
    if key == "tenants":
        rows = sorted(rows, key=lambda kv: -(kv[1].get("jobs") or 0))
    table = Table(title=title)
    for column in ("", "jobs", "JCT mean", "queue mean"):
        table.add_column(column, justify="left" if not column else "right")
    for name, stats in rows[:limit]:
        table.add_row(
            str(name), format_value("jobs", stats.get("jobs")), format_value("jct_mean_s", stats.get("jct_mean_s")),
            format_value("queue_mean_s", stats.get("queue_mean_s")),
        )  # fmt: skip
    if len(rows) > limit:
        table.caption = f"{len(rows) - limit} more in summary.json"
    return table


def comparison_frame(summaries: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run: the headline keys, then any other scalar keys (e.g. ``sim_wall_s``)."""
    columns = list(HEADLINE_KEYS)
    for summary in summaries:
        columns += [
            key for key, value in summary.items() if key not in columns and not isinstance(value, (Mapping, list))
        ]
    rows = [{key: summary.get(key) for key in columns} for summary in summaries]
    return pd.DataFrame(rows, columns=columns)


def comparison_table(frame: pd.DataFrame) -> Table:
    """The comparison frame as a table, the best value of each ranked column highlighted."""
    table = Table(title="schedlab policy comparison", show_header=True)
    for column in frame.columns:
        justify = "left" if column == "policy" else "right"
        table.add_column(LABELS.get(column, column), justify=justify)
    best = {column: _best_mask(frame[column], column) for column in frame.columns}
    for index in range(len(frame)):
        cells = []
        for column in frame.columns:
            text = format_value(column, _scalar(frame[column].iloc[index]))
            cells.append(f"[{BEST_STYLE}]{text}[/]" if best[column][index] else text)
        table.add_row(*cells)
    return table


def _class_line(stats: Mapping[str, Any]) -> str:
    parts = [
        f"{format_value('jobs', stats.get('jobs'))} jobs, {format_value('finished', stats.get('finished'))} finished",
        f"JCT mean {format_value('jct_mean_s', stats.get('jct_mean_s'))}, "
        f"p99 {format_value('jct_p99_s', stats.get('jct_p99_s'))}",
        f"queue mean {format_value('queue_mean_s', stats.get('queue_mean_s'))}",
        f"{format_value('preemptions', stats.get('preemptions'))} preemptions",
    ]
    if "eviction_rate" in stats:
        parts.append(f"eviction rate {format_value('eviction_rate', stats['eviction_rate'])}")
    return " | ".join(parts)


def _best_mask(column: pd.Series, name: str) -> np.ndarray:
    """True where a ranked column holds its best value; nothing when all values tie."""
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    if name not in LOWER_IS_BETTER | HIGHER_IS_BETTER or np.unique(finite).size < 2:
        return np.zeros(len(values), dtype=bool)
    target = finite.min() if name in LOWER_IS_BETTER else finite.max()
    return values == target


def _scalar(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
