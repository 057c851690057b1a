"""The report of a sweep directory: ``report.html`` (one self-contained page, plots as inline
SVG) and ``tables.md`` (the spec's ``[[report.tables]]`` in Markdown).

The page shows, per workload, the comparison table (the mean over the seeds with its spread:
the lowest and highest seed below :data:`MIN_SEEDS_FOR_CI` seeds, else the 95 % confidence
interval, Student's t, clipped to what the metric can be), the CDFs of JCT and queueing delay
(jobs of every seed pooled) and, when the grid varies a load axis, each headline metric against
it, in the table's units.
"""

from __future__ import annotations

import html
import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from schedlab.errors import InputError
from schedlab.experiments.spec import TABLE_UNITS, SweepSpec, Table, load_spec
from schedlab.experiments.sweep import CELLS, RESULTS, SPEC_COPY
from schedlab.tables import read_parquet

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PAGE = "report.html"
TABLES = "tables.md"
# Metrics of the comparison table, and of the plots against load.
COMPARED = ("jct_mean_s", "jct_p99_s", "queue_mean_s", "queued_jobs", "finished", "gpu_alloc_rate", "preemptions",
            "makespan_s")  # fmt: skip
AGAINST_LOAD = ("jct_mean_s", "queue_mean_s", "jct_p99_s", "gpu_alloc_rate")
LOAD_AXES = ("arrival_scale", "load", "spot_scale", "jobs")
MAX_CDF_PLOTS = 12


def write_report(run_dir: Path) -> list[Path]:
    """Write ``report.html`` and ``tables.md`` into the sweep directory ``run_dir``."""
    run_dir = Path(run_dir)
    results_path = run_dir / RESULTS
    if not results_path.is_file():
        raise InputError("no results.parquet: not a sweep directory, or no cell has finished", file=str(run_dir))
    spec = load_spec(run_dir / SPEC_COPY)
    results = read_parquet(results_path)
    if results.empty:
        raise InputError("results.parquet has no rows: no cell has finished", file=str(results_path))
    tables = [(t, spec_table(results, t)) for t in spec.tables]
    markdown = "\n".join(f"### {t.title}\n\n{to_markdown(frame)}" for t, frame in tables)
    (run_dir / TABLES).write_text(markdown)
    page = _page(run_dir, spec, results, tables)
    (run_dir / PAGE).write_text(page, encoding="utf-8")
    return [run_dir / PAGE, run_dir / TABLES]


# --- the spec's tables -------------------------------------------------------------------------------


def spec_table(results: pd.DataFrame, table: Table) -> pd.DataFrame:
    """One ``[[report.tables]]`` entry as text cells: a row per value of its ``rows`` keys (in
    grid order), a column per metric, each the mean over the cells that share the row (the
    seeds); with ``ratio_to``, the baseline row's mean divided by this row's. A metric with
    ``paper`` values gets a column "LABEL, paper" beside it ("-" for rows without one)."""
    frame = _where(results, table.where)
    missing = [c for c in (*table.rows, *table.metrics) if c not in results.columns]
    if missing:
        raise InputError(f"table '{table.title}': no column '{missing[0]}' in results.parquet", file=RESULTS)
    means = frame.groupby(list(table.rows), sort=False, dropna=False)[list(table.metrics)].agg(_mean)
    if table.ratio_to:
        keys = [r for r in table.rows if r not in table.ratio_to]
        base_cells = _where(results, {**table.where, **table.ratio_to})
        for idx in means.index:
            row = dict(zip(table.rows, idx if isinstance(idx, tuple) else (idx,)))
            same = base_cells[np.logical_and.reduce([base_cells[k] == row[k] for k in keys])] if keys else base_cells
            ref = same[list(table.metrics)].agg(_mean)
            pairs = [(ref[m], means.loc[idx, m]) for m in table.metrics]
            if table.ratio == "row/baseline":
                pairs = [(value, base) for base, value in pairs]
            means.loc[idx] = [_ratio(top, bottom) for top, bottom in pairs]
    labels = list(table.labels) or [f"{m} ({table.units[m]})" if m in table.units else m for m in table.metrics]
    index = means.index.to_frame(index=False).astype(str)
    rows = [tuple(r) for r in index.itertuples(index=False)]
    body = {}
    for label, m in zip(labels, table.metrics):
        unit = table.units.get(m, "x" if table.ratio_to else "")
        body[label] = [_cell(v, unit, table.digits) for v in means[m]]
        if any(m in values for values in table.paper.values()):  # the published value beside ours
            body[f"{label}, paper"] = [_cell(table.paper.get(row, {}).get(m), unit, table.digits) for row in rows]
    return pd.concat([index, pd.DataFrame(body)], axis=1)


def _where(results: pd.DataFrame, where: dict[str, Any]) -> pd.DataFrame:
    keep = np.ones(len(results), dtype=bool)
    for key, value in where.items():
        if key not in results.columns:
            raise InputError(f"no column '{key}' in results.parquet", file=RESULTS)
        keep &= results[key].isin(value if isinstance(value, list) else [value]).to_numpy()
    return results[keep]


def _mean(values: pd.Series) -> Any:
    present = values.dropna()
    if present.empty:
        return None
    if not pd.api.types.is_numeric_dtype(present) or pd.api.types.is_bool_dtype(present):
        return present.iloc[0] if present.nunique() == 1 else "/".join(map(str, present.unique()))
    return float(present.mean())


def _ratio(top: Any, bottom: Any) -> float | None:
    if not isinstance(top, float) or not isinstance(bottom, float) or not bottom:
        return None
    return top / bottom


def _cell(value: Any, unit: str, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    scaled = value / TABLE_UNITS[unit]
    if unit == "x":
        return f"{scaled:.{digits}f}x"
    if unit == "" and float(value).is_integer():
        return f"{int(value):,}"
    return f"{scaled:,.{digits}f}"


def to_markdown(frame: pd.DataFrame) -> str:
    keys = _key_columns(frame)
    right = [c not in keys for c in frame.columns]
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |",
             "|" + "|".join("---:" if r else "---" for r in right) + "|"]  # fmt: skip
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def _key_columns(frame: pd.DataFrame) -> list[str]:
    """The leading text columns of a spec table (its row keys)."""
    keys = []
    for c in frame.columns:
        if frame[c].map(lambda v: isinstance(v, str) and not _looks_numeric(v)).all():
            keys.append(c)
        else:
            break
    return keys


def _looks_numeric(text: str) -> bool:
    return text == "-" or text.replace(",", "").replace(".", "").replace("x", "").replace("-", "").isdigit()


# --- mean and spread ---------------------------------------------------------------------------------

MIN_SEEDS_FOR_CI = 5  # below this, a t-interval is mostly the t quantile (12.7 for 2 seeds): show min-max


def metric_range(metric: str) -> tuple[float, float]:
    """What a compared metric can be: a rate in [0, 1], any other (times, counts) >= 0."""
    from schedlab.metrics.catalogue import BY_KEY, Unit

    return (0.0, 1.0) if BY_KEY[metric].unit is Unit.RATE else (0.0, math.inf)


def mean_spread(values: np.ndarray, bounds: tuple[float, float] = (-math.inf, math.inf)) -> tuple[float, float, float]:
    """Mean, low and high of the seeds' values: min and max below :data:`MIN_SEEDS_FOR_CI`
    values, else the 95 % t-interval clipped to ``bounds``; low and high are NaN for one value."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return math.nan, math.nan, math.nan
    mean = float(values.mean())
    if len(values) == 1:
        return mean, math.nan, math.nan
    if len(values) < MIN_SEEDS_FOR_CI:
        return mean, float(values.min()), float(values.max())
    half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
    return mean, max(mean - half, bounds[0]), min(mean + half, bounds[1])


def comparison(results: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows: the cells grouped by ``keys`` (every key but the seed); columns: each compared
    metric's mean, low and high (``M``, ``M lo``, ``M hi``) over the group, and the number of seeds."""
    metrics = [m for m in COMPARED if m in results.columns and pd.api.types.is_numeric_dtype(results[m])
               and not pd.api.types.is_bool_dtype(results[m])]  # fmt: skip
    rows = []
    for idx, group in results.groupby(keys, sort=False, dropna=False):
        row = dict(zip(keys, idx if isinstance(idx, tuple) else (idx,)))
        row["seeds"] = len(group)
        for m in metrics:
            row[m], row[m + " lo"], row[m + " hi"] = mean_spread(group[m].to_numpy(), metric_range(m))
        rows.append(row)
    return pd.DataFrame(rows)


def spread_note() -> str:
    return (f"Each value is the mean over the seeds with its spread in brackets: the lowest and highest seed "
            f"below {MIN_SEEDS_FOR_CI} seeds, else the 95 % confidence interval (Student's t) clipped to what "
            "the metric can be (no negative time, no rate above 100 %); none for one seed.")


# --- the page ----------------------------------------------------------------------------------------


def _page(run_dir: Path, spec: SweepSpec, results: pd.DataFrame, tables: list[tuple[Table, pd.DataFrame]]) -> str:
    axes = [a for a in spec.axes if a in results.columns]
    keys = ["workload", "policy", *axes]
    parts = [f"<h1>{_e(spec.name)}</h1>"]
    if spec.description:
        parts.append(f"<p>{_e(spec.description)}</p>")
    seeds = sorted(results["seed"].unique())
    parts.append(f"<p>{len(results)} finished cells; seeds {', '.join(map(str, seeds))}; "
                 f"axes: {_e(', '.join(axes) or 'none')}. {_e(spread_note())}</p>")  # fmt: skip
    for table, frame in tables:
        parts.append(f"<h2>{_e(table.title)}</h2>" + _html_table(frame, "spec-table"))
    compared = comparison(results, keys)
    load_axis = spec.load_axis or next((a for a in LOAD_AXES if a in axes), None)
    for workload, rows in compared.groupby("workload", sort=False):
        parts.append(f"<h2>workload {_e(str(workload))}</h2>")
        parts.append(_comparison_html(rows.drop(columns="workload")))
        parts += _cdf_figures(run_dir, results[results["workload"] == workload], [k for k in keys if k != "workload"])
        if load_axis is not None and load_axis in rows.columns:
            parts.append(_against_load(rows, load_axis, [a for a in axes if a != load_axis]))
    style = ("body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #bbb;padding:3px 8px;text-align:right;white-space:nowrap}th{background:#eee}"
             "td.key{text-align:left}figure{display:inline-block;margin:0.5em}")  # fmt: skip
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{_e(spec.name)}: sweep report</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")  # fmt: skip


def _comparison_html(rows: pd.DataFrame) -> str:
    from schedlab.metrics.catalogue import BY_KEY

    keys = [c for c in rows.columns if c != "seeds" and not c.endswith((" lo", " hi")) and c not in COMPARED]
    metrics = [c for c in COMPARED if c in rows.columns]
    head = "".join(f"<th>{_e(k)}</th>" for k in keys) + "<th>seeds</th>"
    scales = {}
    for m in metrics:
        unit, scale = display_unit(rows, m)
        scales[m] = scale
        head += f"<th>{_e(BY_KEY[m].label)}{f' ({unit})' if unit else ''}</th>"
    body = []
    for _, row in rows.iterrows():
        cells = "".join(f"<td class='key'>{_e(_plain(row[k]))}</td>" for k in keys) + f"<td>{row['seeds']}</td>"
        for m in metrics:
            mean, low, high = row[m], row[m + " lo"], row[m + " hi"]
            text = "-" if pd.isna(mean) else _num(mean / scales[m])
            if not (pd.isna(mean) or pd.isna(low)):
                text += f" [{_num(low / scales[m])}, {_num(high / scales[m])}]"
            cells += f"<td>{text}</td>"
        body.append(f"<tr>{cells}</tr>")
    return f"<table class='comparison'><tr>{head}</tr>{''.join(body)}</table>"


def display_unit(rows: pd.DataFrame, metric: str) -> tuple[str, float]:
    """The unit a metric is shown in, table and plot alike, and the divisor into it: times in
    s, min, h or d by the largest value, rates in %."""
    from schedlab.metrics.catalogue import BY_KEY, Unit

    if BY_KEY[metric].unit is Unit.SECONDS:
        values = rows[metric].to_numpy(dtype=float)
        return _time_unit(float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 0.0)
    if BY_KEY[metric].unit is Unit.RATE:
        return "%", 0.01
    return "", 1.0


def _cdf_figures(run_dir: Path, results: pd.DataFrame, keys: list[str]) -> list[str]:
    """JCT and queueing CDFs, one figure pair per combination of the non-policy axes."""
    from schedlab.figures import grid, new_figure

    others = [k for k in keys if k != "policy"]
    groups = list(results.groupby(others, sort=False, dropna=False)) if others else [((), results)]
    figures = []
    for idx, group in groups[:MAX_CDF_PLOTS]:
        title = ", ".join(f"{k}={_plain(v)}" for k, v in zip(others, idx if isinstance(idx, tuple) else (idx,)))
        fig = new_figure((10, 3.6))
        jct_ax, queue_ax = fig.subplots(1, 2)
        for policy, cells in group.groupby("policy", sort=False):
            jobs = pd.concat([read_parquet(run_dir / CELLS / c / "jobs.parquet",
                                           columns=["submit_s", "end_s", "queue_s", "finished"])
                              for c in cells["cell"]])  # fmt: skip
            done = jobs[jobs["finished"]]
            _cdf(jct_ax, (done["end_s"] - done["submit_s"]).to_numpy() / 3600, str(policy))
            _cdf(queue_ax, jobs["queue_s"].to_numpy() / 3600, str(policy))
        for ax, what in ((jct_ax, "JCT (h)"), (queue_ax, "queueing delay (h)")):
            ax.set_xscale("symlog", linthresh=0.01)
            ax.set_xlabel(what)
            ax.set_ylabel("share of jobs")
            grid(ax)
        jct_ax.legend(fontsize=8)
        fig.suptitle(f"CDFs {title}".strip(), fontsize=10)
        figures.append(f"<figure class='cdf'>{_svg(fig)}</figure>")
    if len(groups) > MAX_CDF_PLOTS:
        figures.append(f"<p>CDFs of the first {MAX_CDF_PLOTS} of {len(groups)} combinations shown.</p>")
    return figures


def _cdf(ax: Axes, values: np.ndarray, label: str) -> None:
    values = np.sort(values[~np.isnan(values)])
    if len(values):
        ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post", label=label)


def _against_load(rows: pd.DataFrame, axis: str, others: list[str]) -> str:
    """Each headline metric against the load axis: a line per policy (and other axis values),
    error bars the spread of the table, in the table's units."""
    from schedlab.figures import grid, new_figure
    from schedlab.metrics.catalogue import BY_KEY

    metrics = [m for m in AGAINST_LOAD if m in rows.columns]
    columns = min(2, len(metrics))
    lines = math.ceil(len(metrics) / columns)
    fig = new_figure((10, 3.4 * lines))
    axs = [list(fig.subplots(lines, columns, squeeze=False).flat)]
    units = {m: display_unit(rows, m) for m in metrics}
    for (label, line) in rows.groupby(["policy", *others], sort=False, dropna=False):
        name = " ".join(_plain(v) for v in (label if isinstance(label, tuple) else (label,)))
        line = line.sort_values(axis)
        for ax, m in zip(axs[0], metrics):
            scale = units[m][1]
            mean = line[m].to_numpy(dtype=float)
            low = np.nan_to_num(mean - line[m + " lo"].to_numpy(dtype=float))
            high = np.nan_to_num(line[m + " hi"].to_numpy(dtype=float) - mean)
            ax.errorbar(line[axis].astype(float), mean / scale, yerr=[low / scale, high / scale], marker="o",
                        capsize=3, label=name)  # fmt: skip
    for ax, m in zip(axs[0], metrics):
        ax.set_xlabel(axis)
        ax.set_ylabel(BY_KEY[m].label + (f" ({units[m][0]})" if units[m][0] else ""))
        grid(ax)
    axs[0][0].legend(fontsize=8)
    return f"<h3>against {_e(axis)}</h3><figure class='load'>{_svg(fig)}</figure>"


def _svg(fig: Figure) -> str:
    """The figure as inline SVG markup (no date, so the page repeats)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _html_table(frame: pd.DataFrame, css: str) -> str:
    keys = _key_columns(frame)
    head = "".join(f"<th>{_e(str(c))}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td{' class=key' if c in keys else ''}>{_e(str(v))}</td>"
                                    for c, v in zip(frame.columns, row)) + "</tr>"
                   for row in frame.itertuples(index=False))  # fmt: skip
    return f"<table class='{css}'><tr>{head}</tr>{body}</table>"


def _time_unit(magnitude: float) -> tuple[str, float]:
    for limit, unit, factor in ((120.0, "s", 1.0), (7200.0, "min", 60.0), (172800.0, "h", 3600.0)):
        if magnitude < limit:
            return unit, factor
    return "d", 86400.0


def _num(value: float) -> str:
    magnitude = abs(value)
    if float(value).is_integer() or magnitude >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _plain(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _e(text: str) -> str:
    return html.escape(text, quote=True)
