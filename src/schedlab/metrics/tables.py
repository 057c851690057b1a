"""Readable tables of run summaries, laid out for the console's width.

Which metrics each table shows, their labels, units and better directions come from
:mod:`schedlab.metrics.catalogue`. Each metric is shown in one unit, named in its label
(``JCT mean (h)``), chosen from the largest value it shows. Values are never cut: a
comparison too wide for the console becomes metric rows x policy columns, split into blocks
of policies when even that is too wide.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from rich import box
from rich.console import Console, ConsoleOptions
from rich.markup import escape
from rich.table import Table

from schedlab.metrics.catalogue import BY_KEY, COMPARISON_KEYS, HEADLINE_KEYS, METRICS, SUMMARY_KEYS, Unit

if TYPE_CHECKING:
    import pandas as pd

BEST_STYLE = "bold green"


@dataclass(frozen=True)
class Cells:
    """One metric: its name, its unit (``""`` for counts) and its values as text in that unit."""

    name: str
    unit: str
    texts: list[str]

    def label(self, sep: str = " ") -> str:
        return f"{self.name}{sep}({self.unit})" if self.unit else self.name

    def part(self, start: int, stop: int) -> Cells:
        return Cells(self.name, self.unit, self.texts[start:stop])


def format_seconds(seconds: float) -> str:
    """A duration in the largest unit that keeps it readable: s, min, h or d."""
    unit, factor = _time_unit(abs(seconds))
    return f"{seconds / factor:.{1 if factor < 3600 else 2}f} {unit}"


def format_value(key: str, value: Any) -> str:
    """One metric value as text with its unit, by the unit the catalogue gives its key."""
    unit = BY_KEY[key].unit
    if _missing(value):
        return "-"
    if not _is_number(value) or unit is Unit.NAME:
        return str(value)
    if unit is Unit.SECONDS:
        return format_seconds(float(value))
    if unit is Unit.RATE:
        return f"{float(value):.1%}"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{float(value):,.2f}"


def summary_table(summary: Mapping[str, Any]) -> _Fitted:
    """One run's metrics (one row each); then, with several priority classes, metric rows x
    class columns."""
    keys = [key for key in SUMMARY_KEYS if key in summary]
    run = _metric_rows(["value"], [_metric_cells(k, [summary[k]]) for k in keys], "metric")
    run.title, run.caption = f"schedlab run: {escape(str(summary.get('policy', '?')))}", _notes(keys)
    classes = summary.get("classes") or {}
    class_keys = [m.key for m in METRICS if any(m.key in stats for stats in classes.values())]
    by_class = [_metric_cells(k, [stats.get(k) for stats in classes.values()]) for k in class_keys]

    def layout(width: int) -> list[Table]:
        return [run] + (_blocks(list(classes), by_class, width, "by priority class") if len(classes) > 1 else [])

    return _Fitted(layout)


def breakdown_table(summary: Mapping[str, Any], key: str, *, title: str, limit: int = 12) -> Table:
    """Per-tenant (``tenants``) or per-size (``sizes``, ``duration_buckets``) rows of a summary;
    tenants are listed by job count, the first ``limit`` of them."""
    rows = list((summary.get(key) or {}).items())
    if key == "tenants":
        rows = sorted(rows, key=lambda kv: -(kv[1].get("jobs") or 0))
    shown = rows[:limit]
    cells = [_metric_cells(m, [stats.get(m) for _, stats in shown]) for m in ("jobs", "jct_mean_s", "queue_mean_s")]
    table = _name_rows([str(name) for name, _ in shown], cells, "", title)
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
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


def comparison_table(frame: pd.DataFrame) -> _Fitted:
    """A comparison frame (:func:`comparison_frame`, whole or some of its columns), laid out by
    :func:`comparison_view` for the width of the console it is printed on."""
    return _Fitted(lambda width: comparison_view(frame, width))


def comparison_view(frame: pd.DataFrame, width: int) -> list[Table]:
    """The :data:`COMPARISON_KEYS` in ``frame`` as tables at most ``width`` characters wide: one
    row per policy when that fits, else metric rows x policy columns, in as many blocks as
    needed. The best value of each ranked metric is highlighted."""
    keys = [key for key in COMPARISON_KEYS if key in frame.columns]
    cells = [_metric_cells(key, [_scalar(v) for v in frame[key]], rank=True) for key in keys]
    tables = _fit([str(name) for name in frame["policy"]], cells, width, "schedlab policy comparison", "policy")
    tables[-1].caption = _notes(keys)
    return tables


def metrics_table(rows: Mapping[str, Mapping[str, Any]], title: str) -> _Fitted:
    """Named rows (e.g. models) x metrics whose labels name their units (``MAE (GPUs)``), numbers
    to three significant digits; laid out like :func:`comparison_view`."""
    metrics = list(dict.fromkeys(metric for row in rows.values() for metric in row))
    cells = [Cells(metric, "", [_text(row.get(metric)) for row in rows.values()]) for metric in metrics]
    return _Fitted(lambda width: _fit(list(rows), cells, width, title, ""))


class _Fitted:
    """Tables laid out when printed, for the width the console offers."""

    def __init__(self, layout: Callable[[int], list[Table]]) -> None:
        self.layout = layout

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Table]:
        yield from self.layout(options.max_width)


def _metric_cells(key: str, values: Sequence[Any], *, rank: bool = False) -> Cells:
    """A metric in the unit of its largest value; with ``rank`` the best values highlighted."""
    metric = BY_KEY[key]
    numbers = [float(v) for v in values if _is_number(v) and not _missing(v)]
    unit, factor = "", 1.0
    if metric.unit is Unit.SECONDS:
        unit, factor = _time_unit(max((abs(v) for v in numbers), default=0.0))
    elif metric.unit is Unit.RATE:
        unit, factor = "%", 0.01
    elif metric.unit is Unit.MB:
        unit = "MB"
    texts = [_text(v / factor if _is_number(v) and not _missing(v) else v) for v in values]
    best = _best_mask(values, metric.better) if rank else [False] * len(values)
    return Cells(metric.label, unit, [f"[{BEST_STYLE}]{text}[/]" if hit else text for text, hit in zip(texts, best)])


def _name_rows(names: Sequence[str], cells: Sequence[Cells], head: str, title: str) -> Table:
    """One row per name, one column per metric (its unit on the header's second line)."""
    table = _table(title)
    table.add_column(head)
    for metric in cells:
        table.add_column(metric.label("\n"), justify="right")
    for index, name in enumerate(names):
        table.add_row(escape(name), *(metric.texts[index] for metric in cells))
    return table


def _metric_rows(names: Sequence[str], cells: Sequence[Cells], head: str = "", title: str = "") -> Table:
    """One row per metric, one column per name."""
    table = _table(title)
    table.add_column(head)
    for name in names:
        table.add_column(escape(name), justify="right")
    for metric in cells:
        table.add_row(metric.label(), *metric.texts)
    return table


def _fit(names: Sequence[str], cells: Sequence[Cells], width: int, title: str, head: str) -> list[Table]:
    """One row per name when that fits ``width``, else metric rows x name columns in blocks."""
    wide = _name_rows(names, cells, head, title)
    return [wide] if _fits(wide, width) or not names else _blocks(names, cells, width, title)


def _blocks(names: Sequence[str], cells: Sequence[Cells], width: int, title: str) -> list[Table]:
    """Metric rows x name columns, as many consecutive names per block as fit ``width`` (at
    least one); the first block titled."""
    blocks: list[Table] = []
    start = 0
    while start < len(names):
        stop = start + 1
        while stop < len(names) and _fits(_metric_rows(names[start : stop + 1], _part(cells, start, stop + 1)), width):
            stop += 1
        blocks.append(_metric_rows(names[start:stop], _part(cells, start, stop), title="" if blocks else title))
        start = stop
    return blocks


def _part(cells: Sequence[Cells], start: int, stop: int) -> list[Cells]:
    return [metric.part(start, stop) for metric in cells]


def _table(title: str) -> Table:
    return Table(title=title or None, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)


def _fits(table: Table, width: int) -> bool:
    """Whether the table is at most ``width`` characters wide with no cell wrapped."""
    return Console(width=10_000, file=io.StringIO()).measure(table).maximum <= width


def _notes(keys: Sequence[str]) -> str | None:
    """The catalogue's notes on the metrics shown, as one caption."""
    return " ".join(BY_KEY[key].note for key in keys if BY_KEY[key].note) or None


def _time_unit(magnitude: float) -> tuple[str, float]:
    """s below 2 min, min below 2 h, h below 2 days, else d; with seconds per unit."""
    for limit, unit, factor in ((120.0, "s", 1.0), (7200.0, "min", 60.0), (172800.0, "h", 3600.0)):
        if magnitude < limit:
            return unit, factor
    return "d", 86400.0


def _number(value: float) -> str:
    """Whole numbers and values from 100 up without decimals (thousands separated), others to
    three significant digits, those nearer zero than 0.001 as ``<0.001``."""
    magnitude = abs(value)
    if value.is_integer() or magnitude >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if magnitude >= 0.001 else "<0.001"


def _text(value: Any) -> str:
    """A cell: ``-`` when missing, a number by :func:`_number`, anything else as text."""
    if _missing(value):
        return "-"
    return _number(float(value)) if _is_number(value) else escape(str(value))


def _best_mask(values: Sequence[Any], better: str | None) -> list[bool]:
    """True where a ranked metric (``better`` lower or higher) holds its best value; nothing
    when all values tie."""
    numbers = np.array([float(v) if _is_number(v) else math.nan for v in values], dtype=float)
    finite = numbers[np.isfinite(numbers)]
    if better is None or np.unique(finite).size < 2:
        return [False] * len(values)
    target = finite.min() if better == "lower" else finite.max()
    best: list[bool] = (numbers == target).tolist()
    return best


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_))


def _missing(value: Any) -> bool:
    return value is None or type(value).__name__ == "NAType" or (isinstance(value, (float, np.floating)) and math.isnan(value))


def _scalar(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
